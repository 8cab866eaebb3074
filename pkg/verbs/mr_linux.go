//go:build linux && cgo

package verbs

/*
#include "rb.h"
*/
import "C"

import (
	"fmt"
	"syscall"
	"unsafe"
)

// MR is a registered memory region. Equivalent to what `rdma resource show
// mr` lists. Its memory is a buffer allocated in C (RegMR), or memory the
// caller owns and frees after Close (RegDmabufMR, RegAddr).
type MR struct {
	mr *C.struct_ibv_mr
	// buf is the host mapping of the memory; nil for memory this process
	// cannot touch (GPU memory).
	buf  unsafe.Pointer
	addr uint64 // the address peers target: the buffer's, or the iova
	len  uint64
	id   int
	// free releases the buffer RegMR allocated; nil for the caller's.
	free func()
}

// RegMR allocates a page-aligned, zeroed buffer of cfg.Length bytes outside
// the Go heap (huge pages with cfg.HugePageSize) and registers it (for
// on-demand paging with cfg.OnDemand).
func (pd *PD) RegMR(cfg MRConfig) (*MR, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pd.pd == nil {
		return nil, ErrClosed
	}
	var buf unsafe.Pointer
	var free func()
	if cfg.HugePageSize > 0 {
		var mapped C.size_t
		if rc := C.rb_alloc_huge(C.size_t(cfg.Length), C.size_t(cfg.HugePageSize), &buf, &mapped); rc != 0 {
			err := &Error{Op: "alloc huge pages", Errno: syscall.Errno(rc)}
			if rc == C.int(syscall.ENOMEM) {
				err.Hint = fmt.Sprintf("not enough free %d KiB huge pages (see /sys/kernel/mm/hugepages; reserve them with /proc/sys/vm/nr_hugepages)", cfg.HugePageSize>>10)
			}
			return nil, fmt.Errorf("%w (%d bytes)", err, cfg.Length)
		}
		free = func() { C.rb_free_huge(buf, mapped) }
	} else {
		if rc := C.rb_alloc(C.size_t(cfg.Length), &buf); rc != 0 {
			return nil, fmt.Errorf("%w (%d bytes)", newError("alloc buffer", syscall.Errno(rc)), cfg.Length)
		}
		free = func() { C.rb_free(buf) }
	}
	access := cfg.Access
	if cfg.OnDemand {
		access |= AccessOnDemand
	}
	mr, err := C.rb_reg_mr_addr(pd.pd, C.uintptr_t(uintptr(buf)), C.size_t(cfg.Length), C.int(access))
	if mr == nil {
		free()
		return nil, fmt.Errorf("%w (%d bytes)", pd.regError("reg mr", errnoOf(err)), cfg.Length)
	}
	return &MR{mr: mr, buf: buf, addr: uint64(uintptr(buf)), len: cfg.Length, id: track("mr"), free: free}, nil
}

// RegDmabufMR registers length bytes at offset of the dma-buf fd (memory
// another driver exported: a GPU's, vgem's), for peers to target at iova.
// The caller keeps the fd and the memory, and releases them after Close.
// Equivalent to perftest's --use_cuda_dmabuf registration.
func (pd *PD) RegDmabufMR(fd int, offset, length, iova uint64, access Access) (*MR, error) {
	if err := (MRConfig{Length: length}).Validate(); err != nil {
		return nil, err
	}
	if pd.pd == nil {
		return nil, ErrClosed
	}
	mr, err := C.ibv_reg_dmabuf_mr(pd.pd, C.uint64_t(offset), C.size_t(length), C.uint64_t(iova), C.int(fd), C.int(access))
	if mr == nil {
		return nil, fmt.Errorf("%w (%d bytes of dma-buf fd %d)", pd.regError("reg dmabuf mr", errnoOf(err)), length, fd)
	}
	return &MR{mr: mr, addr: iova, len: length, id: track("mr")}, nil
}

// RegAddr registers length bytes the caller owns at addr, which this
// process cannot touch from the CPU (a GPU's device pointer, which the
// kernel's peer-memory client, nvidia-peermem, resolves). The caller frees
// the memory after Close.
func (pd *PD) RegAddr(addr uintptr, length uint64, access Access) (*MR, error) {
	if err := (MRConfig{Length: length}).Validate(); err != nil {
		return nil, err
	}
	if pd.pd == nil {
		return nil, ErrClosed
	}
	mr, err := C.rb_reg_mr_addr(pd.pd, C.uintptr_t(addr), C.size_t(length), C.int(access))
	if mr == nil {
		return nil, fmt.Errorf("%w (%d bytes at 0x%x)", pd.regError("reg mr", errnoOf(err)), length, addr)
	}
	return &MR{mr: mr, addr: uint64(addr), len: length, id: track("mr")}, nil
}

// regError is a failed registration on this PD's device, named.
func (pd *PD) regError(op string, errno syscall.Errno) *Error {
	e := newError(op, errno)
	dev := "the device"
	if pd.ctx != nil {
		dev = pd.ctx.Name()
	}
	e.Op = op + " on " + dev
	switch {
	case op == "reg dmabuf mr" && (errno == syscall.EOPNOTSUPP || errno == syscall.ENOSYS || errno == syscall.EPROTONOSUPPORT):
		e.Hint = dev + " cannot register dma-buf memory (its driver has no dma-buf support)"
	case errno == syscall.EINVAL && op == "reg mr":
		if e.Hint == "" {
			e.Hint = "the device refused these access flags for this memory (on-demand paging or device memory it cannot reach?)"
		}
	}
	return e
}

// Buf is the registered memory as this process sees it; nil for memory it
// cannot touch (RegDmabufMR, RegAddr). It stays valid until Close.
func (m *MR) Buf() []byte {
	if m.buf == nil {
		return nil
	}
	return unsafe.Slice((*byte)(m.buf), m.len)
}

// Len is the registered length in bytes.
func (m *MR) Len() uint64 { return m.len }

// Addr is the address a peer targets: the buffer's virtual address, or
// the iova of a dma-buf registration.
func (m *MR) Addr() uint64 { return m.addr }

// LKey is the local key.
func (m *MR) LKey() uint32 { return uint32(m.mr.lkey) }

// RKey is the remote key.
func (m *MR) RKey() uint32 { return uint32(m.mr.rkey) }

// Remote describes the region for a peer: address, length and rkey.
func (m *MR) Remote() RemoteBuffer { return RemoteBuffer{Addr: m.Addr(), Len: m.len, RKey: m.RKey()} }

// Close deregisters the region and frees the buffer RegMR allocated.
func (m *MR) Close() error {
	if m == nil || m.mr == nil {
		return nil
	}
	rc := C.ibv_dereg_mr(m.mr)
	m.mr = nil
	if m.free != nil {
		m.free()
		m.free = nil
	}
	m.buf = nil
	untrack(m.id)
	if rc != 0 {
		return newError("dereg mr", syscall.Errno(rc))
	}
	return nil
}

// ODPCaps queries the device's on-demand paging capabilities
// (ibv_query_device_ex). Equivalent to the odp lines of `ibv_devinfo -v`.
func (c *Context) ODPCaps() (ODPCaps, error) {
	if c.ctx == nil {
		return ODPCaps{}, ErrClosed
	}
	var attr C.struct_ibv_device_attr_ex
	if r := C.rb_query_device_ex(c.ctx, &attr); r != 0 {
		return ODPCaps{}, newError("query device ex", syscall.Errno(r))
	}
	general, per := attr.odp_caps.general_caps, attr.odp_caps.per_transport_caps
	return ODPCaps{Supported: general&C.IBV_ODP_SUPPORT != 0, Implicit: general&C.IBV_ODP_SUPPORT_IMPLICIT != 0,
		RC: uint32(per.rc_odp_caps), UC: uint32(per.uc_odp_caps), UD: uint32(per.ud_odp_caps)}, nil
}
