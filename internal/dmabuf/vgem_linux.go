//go:build linux

// Package dmabuf exports dma-buf file descriptors from a DRM driver with
// dumb buffers (vgem, the virtual GEM driver), for tests of the dma-buf
// registration path (ibv_reg_dmabuf_mr) on a real kernel without a GPU.
// Where the fd comes from is this package's business; registering it is
// pkg/verbs'.
package dmabuf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The DRM ioctls used, as include/uapi/drm/drm.h and drm_mode.h define
// them: _IOWR('d', 0xB2, struct drm_mode_create_dumb),
// _IOWR('d', 0x2d, struct drm_prime_handle), _IOW('d', 0x09, struct
// drm_gem_close), _IOWR('d', 0x00, struct drm_version).
const (
	ioctlModeCreateDumb  = 0xC02064B2
	ioctlPrimeHandleToFD = 0xC00C642D
	ioctlGEMClose        = 0x40086409
	ioctlVersion         = 0xC0406400
	drmCloexec           = unix.O_CLOEXEC
	drmRDWR              = unix.O_RDWR
	dumbWidth, dumbBPP   = 1024, 32 // a pitch of 4 KiB
	dumbPitch            = dumbWidth * dumbBPP / 8
)

type createDumb struct {
	Height, Width, BPP, Flags uint32
	Handle, Pitch             uint32
	Size                      uint64
}

type primeHandle struct {
	Handle, Flags uint32
	FD            int32
}

type gemClose struct{ Handle, Pad uint32 }

type drmVersion struct {
	Major, Minor, Patch int32
	NameLen             uint64
	Name                *byte
	DateLen             uint64
	Date                *byte
	DescLen             uint64
	Desc                *byte
}

// ErrNoExporter means no DRM card with dumb buffers is present
// (modprobe vgem makes one).
var ErrNoExporter = errors.New("no DRM card with dumb buffers (modprobe vgem)")

// Buffer is a dma-buf exported by a DRM driver.
type Buffer struct {
	// FD is the dma-buf file descriptor; Size its length in bytes;
	// Driver and Card the exporter ("vgem", "/dev/dri/card0").
	FD     int
	Size   uint64
	Driver string
	Card   string
	card   *os.File
	handle uint32
}

// Export allocates a dumb buffer of at least size bytes on the first DRM
// card whose driver is driver ("vgem"; empty: any), and exports it as a
// dma-buf. Equivalent to DRM_IOCTL_MODE_CREATE_DUMB then
// DRM_IOCTL_PRIME_HANDLE_TO_FD.
func Export(driver string, size uint64) (*Buffer, error) {
	cards, _ := filepath.Glob("/dev/dri/card*")
	var tried []string
	for _, path := range cards {
		f, err := os.OpenFile(path, os.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", path, err))
			continue
		}
		name := driverName(f)
		if driver != "" && name != driver {
			f.Close()
			tried = append(tried, fmt.Sprintf("%s is %s", path, name))
			continue
		}
		b, err := export(f, path, name, size)
		if err != nil {
			f.Close()
			return nil, err
		}
		return b, nil
	}
	if len(tried) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoExporter, strings.Join(tried, "; "))
	}
	return nil, ErrNoExporter
}

func export(f *os.File, path, name string, size uint64) (*Buffer, error) {
	c := createDumb{Width: dumbWidth, BPP: dumbBPP, Height: uint32((size + dumbPitch - 1) / dumbPitch)}
	if err := ioctl(f, ioctlModeCreateDumb, unsafe.Pointer(&c)); err != nil {
		return nil, fmt.Errorf("%s (%s): DRM_IOCTL_MODE_CREATE_DUMB: %w", path, name, err)
	}
	p := primeHandle{Handle: c.Handle, Flags: drmCloexec | drmRDWR, FD: -1}
	if err := ioctl(f, ioctlPrimeHandleToFD, unsafe.Pointer(&p)); err != nil {
		gc := gemClose{Handle: c.Handle}
		_ = ioctl(f, ioctlGEMClose, unsafe.Pointer(&gc))
		return nil, fmt.Errorf("%s (%s): DRM_IOCTL_PRIME_HANDLE_TO_FD: %w", path, name, err)
	}
	return &Buffer{FD: int(p.FD), Size: c.Size, Driver: name, Card: path, card: f, handle: c.Handle}, nil
}

// Close closes the dma-buf fd and frees the dumb buffer.
func (b *Buffer) Close() error {
	if b == nil || b.card == nil {
		return nil
	}
	unix.Close(b.FD)
	gc := gemClose{Handle: b.handle}
	err := ioctl(b.card, ioctlGEMClose, unsafe.Pointer(&gc))
	b.card.Close()
	b.card = nil
	return err
}

// driverName is the card's driver, as DRM_IOCTL_VERSION names it.
func driverName(f *os.File) string {
	name := make([]byte, 64)
	v := drmVersion{NameLen: uint64(len(name)), Name: &name[0]}
	if err := ioctl(f, ioctlVersion, unsafe.Pointer(&v)); err != nil {
		return "unknown"
	}
	return string(name[:min(v.NameLen, uint64(len(name)))])
}

func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	for {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), req, uintptr(arg))
		if e == unix.EINTR || e == unix.EAGAIN {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}
