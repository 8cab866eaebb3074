//go:build linux && cgo

package workloads

import (
	"errors"
	"fmt"
	"os"

	"github.com/rdmabench/rdmabench/pkg/gpu"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/verbs"
	"golang.org/x/sys/unix"
)

// testBuffer is an end's registered buffer, wherever it lives (--mem):
// the MR, this process's view of its bytes, and what it recorded.
type testBuffer struct {
	mr *verbs.MR
	// host is the buffer's bytes as the CPU reaches them: the MR's own
	// memory, or for GPU memory a mirror that upload and download copy.
	host []byte
	dev  deviceBuffer // nil for host memory
	info report.Memory
}

// deviceBuffer is memory the CPU cannot touch (a GPU's), copied to and
// from a host mirror outside the timed loops (the data check, the clearing
// of a size).
type deviceBuffer interface {
	upload(src []byte) error
	download(dst []byte) error
	close() error
}

// odpOps are the ODP capabilities a test's operation needs, as perftest
// asks for them.
func odpOps(op Op) uint32 {
	switch op {
	case OpWrite:
		return verbs.ODPWrite
	case OpRead:
		return verbs.ODPRead
	case OpSend:
		return verbs.ODPSend | verbs.ODPRecv
	case OpAtomic:
		return verbs.ODPAtomic
	}
	return 0
}

// newTestBuffer allocates and registers length bytes where the spec asks,
// on dev and pd: refused by name where this end cannot give it.
func newTestBuffer(s *Spec, dev *verbs.Context, pd *verbs.PD, length uint64) (*testBuffer, error) {
	m, err := ParseMem(s.Mem)
	if err != nil {
		return nil, err
	}
	if s.ODP {
		caps, err := dev.ODPCaps()
		if err != nil {
			return nil, fmt.Errorf("--odp: %w", err)
		}
		typ, _ := verbs.ParseQPType(s.Connection)
		if err := caps.Check(dev.Name(), typ, odpOps(s.Info().Op)); err != nil {
			return nil, err
		}
	}
	b := &testBuffer{info: report.Memory{Kind: m.Kind, Registration: report.RegMR, ODP: s.ODP}}
	switch m.Kind {
	case report.MemCUDA:
		return b, b.openCUDA(s, m, dev, pd, length)
	case report.MemHugePages:
		b.info.PageBytes = m.PageSize
		b.info.Pages = int((length + m.PageSize - 1) / m.PageSize)
	default:
		b.info.PageBytes = uint64(os.Getpagesize())
	}
	b.mr, err = pd.RegMR(verbs.MRConfig{Length: length, Access: verbs.AccessAll, HugePageSize: m.PageSize, OnDemand: s.ODP})
	if err != nil {
		if m.Kind == report.MemHugePages {
			return nil, fmt.Errorf("--mem %s: %w", s.Mem, err)
		}
		return nil, err
	}
	b.host = b.mr.Buf()
	return b, nil
}

// upload copies the host mirror to device memory (nothing for host memory).
func (b *testBuffer) upload() error {
	if b.dev == nil {
		return nil
	}
	return b.dev.upload(b.host)
}

// download copies device memory to the host mirror.
func (b *testBuffer) download() error {
	if b.dev == nil {
		return nil
	}
	return b.dev.download(b.host)
}

func (b *testBuffer) close() {
	if b == nil {
		return
	}
	b.mr.Close()
	if b.dev != nil {
		b.dev.close()
	}
}

// openCUDA allocates the buffer in GPU memory (cuMemAlloc) and registers
// it: as a dma-buf (cuMemGetHandleForAddressRange, ibv_reg_dmabuf_mr)
// where the driver exports one and the device takes it, else the device
// pointer itself through ibv_reg_mr (the peer-memory path,
// nvidia-peermem), saying which and why. The CPU reaches it through a
// host mirror, copied outside the timed loops.
func (b *testBuffer) openCUDA(s *Spec, m MemSpec, dev *verbs.Context, pd *verbs.PD, length uint64) error {
	g, err := gpu.Open(m.GPU, gpu.NICPCI(dev.Name()))
	if err != nil {
		return fmt.Errorf("--mem %s: %w", orHost(s.Mem), err)
	}
	mem, err := g.Alloc(length)
	if err != nil {
		g.Close()
		return fmt.Errorf("--mem %s: %w", s.Mem, err)
	}
	d := &cudaBuffer{g: g, mem: mem}
	b.dev = d
	gi := g.Info()
	b.info.GPU = &report.GPU{Index: gi.Index, PCIBusID: gi.PCIBusID, Name: gi.Name, Chosen: gi.Chosen,
		Library: gi.Library, DriverVersion: gi.DriverVersion}
	fd, err := mem.ExportDmabuf()
	if err == nil {
		d.fd = fd
		b.mr, err = pd.RegDmabufMR(fd, 0, length, mem.Ptr(), verbs.AccessAll)
		if err == nil {
			b.info.Registration = report.RegDmabufMR
		} else if errors.Is(err, verbs.ErrNotSupported) {
			b.info.Note = fmt.Sprintf("the dma-buf was refused (%v); registered the device pointer (peer memory)", err)
		} else {
			return fmt.Errorf("--mem %s: %w", s.Mem, err)
		}
	} else {
		b.info.Note = fmt.Sprintf("%v; registered the device pointer (peer memory)", err)
	}
	if b.mr == nil {
		b.mr, err = pd.RegAddr(uintptr(mem.Ptr()), length, verbs.AccessAll)
		if err != nil {
			return fmt.Errorf("--mem %s: GPU %d's memory could not be registered, neither as a dma-buf (%s) nor as a device pointer (is nvidia-peermem loaded?): %w",
				s.Mem, gi.Index, b.info.Note, err)
		}
	}
	b.host = make([]byte, length)
	return nil
}

func orHost(s string) string {
	if s == "" {
		return report.MemHost
	}
	return s
}

// cudaBuffer is a test's buffer in GPU memory.
type cudaBuffer struct {
	g   *gpu.Device
	mem *gpu.Memory
	fd  int // the exported dma-buf, or 0
}

func (c *cudaBuffer) upload(src []byte) error   { return c.mem.CopyToDevice(src) }
func (c *cudaBuffer) download(dst []byte) error { return c.mem.CopyFromDevice(dst) }

func (c *cudaBuffer) close() error {
	if c.fd > 0 {
		unix.Close(c.fd)
	}
	err := c.mem.Free()
	c.g.Close()
	return err
}
