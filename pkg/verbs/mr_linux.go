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

// MR is a registered memory region over a buffer allocated in C.
// Equivalent to what `rdma resource show mr` lists.
type MR struct {
	mr  *C.struct_ibv_mr
	buf unsafe.Pointer
	len uint64
	id  int
}

// RegMR allocates a page-aligned, zeroed buffer of cfg.Length bytes outside
// the Go heap and registers it.
func (pd *PD) RegMR(cfg MRConfig) (*MR, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pd.pd == nil {
		return nil, ErrClosed
	}
	var buf unsafe.Pointer
	if rc := C.rb_alloc(C.size_t(cfg.Length), &buf); rc != 0 {
		return nil, fmt.Errorf("%w (%d bytes)", newError("alloc buffer", syscall.Errno(rc)), cfg.Length)
	}
	mr, err := C.ibv_reg_mr(pd.pd, buf, C.size_t(cfg.Length), C.int(cfg.Access))
	if mr == nil {
		C.rb_free(buf)
		return nil, fmt.Errorf("%w (%d bytes)", newError("reg mr", errnoOf(err)), cfg.Length)
	}
	return &MR{mr: mr, buf: buf, len: cfg.Length, id: track("mr")}, nil
}

// Buf is the registered memory. It stays valid until Close.
func (m *MR) Buf() []byte { return unsafe.Slice((*byte)(m.buf), m.len) }

// Len is the registered length in bytes.
func (m *MR) Len() uint64 { return m.len }

// Addr is the buffer's virtual address, as a peer targets it.
func (m *MR) Addr() uint64 { return uint64(uintptr(m.buf)) }

// LKey is the local key.
func (m *MR) LKey() uint32 { return uint32(m.mr.lkey) }

// RKey is the remote key.
func (m *MR) RKey() uint32 { return uint32(m.mr.rkey) }

// Remote describes the region for a peer: address, length and rkey.
func (m *MR) Remote() RemoteBuffer { return RemoteBuffer{Addr: m.Addr(), Len: m.len, RKey: m.RKey()} }

// Close deregisters the region and frees its buffer.
func (m *MR) Close() error {
	if m == nil || m.mr == nil {
		return nil
	}
	rc := C.ibv_dereg_mr(m.mr)
	m.mr = nil
	C.rb_free(m.buf)
	m.buf = nil
	untrack(m.id)
	if rc != 0 {
		return newError("dereg mr", syscall.Errno(rc))
	}
	return nil
}
