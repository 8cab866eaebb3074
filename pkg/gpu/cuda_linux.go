//go:build linux && cgo

package gpu

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "cuda.h"
*/
import "C"

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

var load struct {
	mu   sync.Mutex
	path string // the library loaded and initialised
}

// loaded loads the driver library and initialises it (cuInit), once per
// process; a failure is tried again at the next call.
func loaded() (string, error) {
	load.mu.Lock()
	defer load.mu.Unlock()
	if load.path != "" {
		return load.path, nil
	}
	path := libraryPath()
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var msg [512]C.char
	switch rc := C.rbcu_load(cpath, &msg[0], C.size_t(len(msg))); {
	case rc == -1:
		return "", fmt.Errorf("%w: cannot load %s, the CUDA driver library (%s): is the NVIDIA driver installed?", ErrNoGPU, path, C.GoString(&msg[0]))
	case rc != 0:
		return "", fmt.Errorf("%w: cuInit: %s (%s loaded; is there a GPU, and is the nvidia module loaded?)", ErrNoGPU, errName(rc), path)
	}
	load.path = path
	return path, nil
}

func errName(rc C.int) string { return C.GoString(C.rbcu_error_name(rc)) }

func cuErr(call string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s", call, errName(rc))
}

// Device is a GPU whose primary context this process holds.
type Device struct {
	info Info
	dev  C.int
	ctx  unsafe.Pointer
}

// Open loads the driver library and opens the GPU asked: an index, a PCI
// bus id, or empty for the one nearest nicPCI (the NIC's PCI address as
// sysfs names it, empty when it has none). Without the library or a GPU,
// the error wraps ErrNoGPU and names what is missing.
func Open(asked, nic string) (*Device, error) {
	path, err := loaded()
	if err != nil {
		return nil, err
	}
	var n C.int
	if err := cuErr("cuDeviceGetCount", C.rbcu_device_count(&n)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoGPU, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: %s reports no GPU (cuDeviceGetCount 0)", ErrNoGPU, path)
	}
	d := &Device{info: Info{Library: path}}
	var rc C.int
	switch idx, ierr := strconv.Atoi(asked); {
	case asked == "":
		ids := make([]string, n)
		for i := range ids {
			var dev C.int
			if C.rbcu_device_get(C.int(i), &dev) == 0 {
				ids[i] = busID(dev)
			}
		}
		i, why := Nearest(nic, ids)
		d.info.Chosen = why
		rc = C.rbcu_device_get(C.int(i), &d.dev)
		d.info.Index = i
	case ierr == nil:
		if idx < 0 || idx >= int(n) {
			return nil, fmt.Errorf("%w: GPU %d asked; %s reports %d (0..%d)", ErrNoGPU, idx, path, n, n-1)
		}
		d.info.Chosen, d.info.Index = "asked by index", idx
		rc = C.rbcu_device_get(C.int(idx), &d.dev)
	default:
		cb := C.CString(asked)
		rc = C.rbcu_device_by_bus_id(cb, &d.dev)
		C.free(unsafe.Pointer(cb))
		if rc != 0 {
			return nil, fmt.Errorf("%w: no GPU at PCI bus id %s (cuDeviceGetByPCIBusId: %s)", ErrNoGPU, asked, errName(rc))
		}
		d.info.Chosen = "asked by PCI bus id"
		for i := 0; i < int(n); i++ {
			var dev C.int
			if C.rbcu_device_get(C.int(i), &dev) == 0 && dev == d.dev {
				d.info.Index = i
			}
		}
	}
	if err := cuErr("cuDeviceGet", rc); err != nil {
		return nil, err
	}
	d.info.PCIBusID = busID(d.dev)
	var name [256]C.char
	if C.rbcu_device_name(d.dev, &name[0], C.int(len(name))) == 0 {
		d.info.Name = C.GoString(&name[0])
	}
	var v, yes C.int
	if C.rbcu_driver_version(&v) == 0 {
		d.info.DriverVersion = int(v)
	}
	if C.rbcu_dmabuf_supported(d.dev, &yes) == 0 {
		d.info.DmabufSupported = yes != 0
	}
	if err := cuErr("cuDevicePrimaryCtxRetain", C.rbcu_ctx_retain(d.dev, &d.ctx)); err != nil {
		return nil, err
	}
	return d, nil
}

func busID(dev C.int) string {
	var b [64]C.char
	if C.rbcu_device_bus_id(dev, &b[0], C.int(len(b))) != 0 {
		return ""
	}
	return strings.ToLower(C.GoString(&b[0]))
}

// Info describes the GPU.
func (d *Device) Info() Info { return d.info }

// Close releases the primary context.
func (d *Device) Close() error {
	if d == nil || d.ctx == nil {
		return nil
	}
	d.ctx = nil
	return cuErr("cuDevicePrimaryCtxRelease", C.rbcu_ctx_release(d.dev))
}

// allocAlign is the granularity of an allocation: the GPU page that a
// dma-buf export and the NIC's mapping work in (64 KiB).
const allocAlign = 64 << 10

// Memory is a cuMemAlloc allocation.
type Memory struct {
	d   *Device
	ptr uint64
	len uint64
}

// Alloc allocates at least n bytes (rounded up to 64 KiB) of GPU memory,
// zeroed.
func (d *Device) Alloc(n uint64) (*Memory, error) {
	n = (n + allocAlign - 1) / allocAlign * allocAlign
	var p C.uint64_t
	if err := cuErr(fmt.Sprintf("cuMemAlloc of %d bytes on GPU %d", n, d.info.Index), C.rbcu_mem_alloc(d.ctx, C.size_t(n), &p)); err != nil {
		return nil, err
	}
	m := &Memory{d: d, ptr: uint64(p), len: n}
	if err := cuErr("cuMemsetD8", C.rbcu_memset(d.ctx, p, C.size_t(n))); err != nil {
		m.Free()
		return nil, err
	}
	return m, nil
}

// Ptr is the device pointer; Len the allocated length.
func (m *Memory) Ptr() uint64 { return m.ptr }
func (m *Memory) Len() uint64 { return m.len }

// ExportDmabuf exports the whole allocation as a dma-buf fd
// (cuMemGetHandleForAddressRange), which the caller closes. An error
// wrapping ErrNoExport says why the driver cannot.
func (m *Memory) ExportDmabuf() (int, error) {
	if !m.d.info.DmabufSupported {
		return -1, fmt.Errorf("%w: GPU %d does not support dma-buf (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 0)", ErrNoExport, m.d.info.Index)
	}
	var fd C.int
	if rc := C.rbcu_export_dmabuf(m.d.ctx, C.uint64_t(m.ptr), C.size_t(m.len), &fd); rc != 0 {
		return -1, fmt.Errorf("%w: cuMemGetHandleForAddressRange: %s", ErrNoExport, errName(rc))
	}
	return int(fd), nil
}

// CopyToDevice copies src to the start of the memory (cuMemcpyHtoD).
func (m *Memory) CopyToDevice(src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return cuErr("cuMemcpyHtoD", C.rbcu_htod(m.d.ctx, C.uint64_t(m.ptr), unsafe.Pointer(&src[0]), C.size_t(min(uint64(len(src)), m.len))))
}

// CopyFromDevice copies the start of the memory to dst (cuMemcpyDtoH).
func (m *Memory) CopyFromDevice(dst []byte) error {
	if len(dst) == 0 {
		return nil
	}
	return cuErr("cuMemcpyDtoH", C.rbcu_dtoh(m.d.ctx, unsafe.Pointer(&dst[0]), C.uint64_t(m.ptr), C.size_t(min(uint64(len(dst)), m.len))))
}

// Free frees the memory.
func (m *Memory) Free() error {
	if m == nil || m.ptr == 0 {
		return nil
	}
	p := m.ptr
	m.ptr = 0
	return cuErr("cuMemFree", C.rbcu_mem_free(m.d.ctx, C.uint64_t(p)))
}
