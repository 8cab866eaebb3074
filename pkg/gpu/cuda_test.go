//go:build linux && cgo

package gpu_test

// The loader and the driver calls against the stand-in library the tests
// build (internal/testutil): the plumbing, never a GPU.

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/gpu"
)

func TestMissingLibrary(t *testing.T) {
	t.Setenv(gpu.EnvLibrary, "/nonexistent/libcuda.so.1")
	_, err := gpu.Open("", "")
	if !errors.Is(err, gpu.ErrNoGPU) || !strings.Contains(err.Error(), "cannot load /nonexistent/libcuda.so.1, the CUDA driver library") {
		t.Fatalf("%v", err)
	}
}

func TestStandIn(t *testing.T) {
	lib, err := testutil.BuildCUDAStandIn(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(gpu.EnvLibrary, lib)
	t.Setenv("RDMABENCH_STANDIN_GPUS", "0")
	if _, err := gpu.Open("", ""); !errors.Is(err, gpu.ErrNoGPU) || !strings.Contains(err.Error(), "reports no GPU") {
		t.Fatalf("no GPU: %v", err)
	}
	t.Setenv("RDMABENCH_STANDIN_GPUS", "2")
	if _, err := gpu.Open("2", ""); !errors.Is(err, gpu.ErrNoGPU) || !strings.Contains(err.Error(), "GPU 2 asked; "+lib+" reports 2 (0..1)") {
		t.Fatalf("GPU 2: %v", err)
	}
	d, err := gpu.Open("0000:11:00.0", "")
	if err != nil {
		t.Fatal(err)
	}
	if i := d.Info(); i.Index != 1 || i.PCIBusID != "00000000:11:00.0" || i.Chosen != "asked by PCI bus id" || i.DriverVersion != 12040 || i.Library != lib {
		t.Fatalf("by bus id: %+v", i)
	}
	d.Close()
	d, err = gpu.Open("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if i := d.Info(); i.Index != 0 || !strings.HasPrefix(i.Chosen, "the first GPU") {
		t.Fatalf("default: %+v", i)
	}
	m, err := d.Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if m.Len() != 64<<10 || m.Ptr() == 0 {
		t.Fatalf("alloc: %d bytes at %x", m.Len(), m.Ptr())
	}
	in := []byte("rdmabench")
	if err := m.CopyToDevice(in); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, len(in)+1)
	if err := m.CopyFromDevice(out); err != nil || string(out[:len(in)]) != "rdmabench" || out[len(in)] != 0 {
		t.Fatalf("round trip %q, %v", out, err)
	}
	if _, err := m.ExportDmabuf(); !errors.Is(err, gpu.ErrNoExport) || !strings.Contains(err.Error(), "CUDA_ERROR_NOT_SUPPORTED") {
		t.Fatalf("export refused: %v", err)
	}
	t.Setenv("RDMABENCH_STANDIN_EXPORT", "ok")
	if fd, err := m.ExportDmabuf(); err != nil || fd < 0 {
		t.Fatalf("export: %d, %v", fd, err)
	}
}

func TestNearest(t *testing.T) {
	if i, why := gpu.Nearest("", []string{"0000:3b:00.0"}); i != 0 || !strings.Contains(why, "no PCI device") {
		t.Fatalf("%d %s", i, why)
	}
}
