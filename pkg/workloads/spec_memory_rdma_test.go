//go:build linux && cgo

package workloads

// Where the buffers live, on a real device (in the Soft-RoCE VM): huge
// pages carry write-bw, read-bw and send-lat through --validate, both ends
// recording the page size; too few free pages are refused with the
// figures before anything is allocated; --odp is refused by name where
// the device has no on-demand paging (rxe in Debian 12's kernel).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/gpu"
	"github.com/rdmabench/rdmabench/pkg/report"
)

const nrHugePages = "/proc/sys/vm/nr_hugepages"

// reserveHugePages makes n 2 MiB huge pages free: inside the VM it
// reserves them (and gives them back after the test); elsewhere it skips
// unless the host has them.
func reserveHugePages(t *testing.T, n int) {
	t.Helper()
	free, _, err := freeHugePages(HugePage2M)
	if err == nil && free >= uint64(n) {
		return
	}
	if os.Getenv("RDMABENCH_IN_VM") != "1" {
		t.Skipf("%d free 2 MiB huge pages needed (have %d: %v); reserve them with %s, or run under scripts/vm.sh", n, free, err, nrHugePages)
	}
	old, err := os.ReadFile(nrHugePages)
	if err != nil {
		t.Fatal(err)
	}
	total, _ := strconv.Atoi(strings.TrimSpace(string(old)))
	if err := os.WriteFile(nrHugePages, []byte(strconv.Itoa(total+n)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.WriteFile(nrHugePages, old, 0o644) })
	if free, _, err = freeHugePages(HugePage2M); err != nil || free < uint64(n) {
		t.Fatalf("reserved %d huge pages, %d free (%v)", n, free, err)
	}
}

// runDoc runs tests as the command line does, in loopback or against a
// server end in this process, and returns the document.
func runDoc(t *testing.T, remote bool, tests []string, spec Spec) (*report.Document, error) {
	t.Helper()
	dev := testutil.Device(t)
	testutil.NoLeaks(t)
	spec.Device = dev
	r, err := NewPlan(Request{Tests: tests, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	var target Target
	if remote {
		target = Target{Remote: pipeRemote{&Server{Device: dev}}, Host: "127.0.0.1"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return r.Execute(ctx, target)
}

func askedSpec(mutate func(*Spec)) Spec {
	s := Spec{Warmup: ptr(5), Iterations: 50}
	mutate(&s)
	return s
}

func TestHugePagesValidate(t *testing.T) {
	reserveHugePages(t, 16)
	for _, remote := range []bool{false, true} {
		t.Run(fmt.Sprintf("remote=%v", remote), func(t *testing.T) {
			// Through a server end, one test is enough: the same code.
			tests := []string{"write-bw", "read-bw", "send-lat"}
			if remote {
				tests = tests[:1]
			}
			doc, err := runDoc(t, remote, tests, askedSpec(func(s *Spec) {
				s.Mem, s.CheckData, s.Sizes, s.Iterations = "hugepages", true, []int{65536}, 20
			}))
			if err != nil {
				t.Fatal(err)
			}
			if len(doc.Results) != len(tests) {
				t.Fatalf("%d results, want %d", len(doc.Results), len(tests))
			}
			// 2 x (64 KiB + 4 KiB) buffers: one page.
			want := report.Memory{Kind: report.MemHugePages, PageBytes: HugePage2M, Pages: 1, Registration: report.RegMR}
			for _, r := range doc.Results {
				if r.Error != "" || r.Validation == nil || !r.Validation.OK {
					t.Fatalf("%s %d B: error %q, validation %+v", r.Test, r.Size, r.Error, r.Validation)
				}
				e := r.Effective
				if e == nil || e.Memory == nil || *e.Memory != want || e.ServerMemory == nil || *e.ServerMemory != want {
					t.Fatalf("%s %d B: effective memory %+v, server's %+v; want %+v", r.Test, r.Size, e.Memory, e.ServerMemory, want)
				}
			}
			if m := doc.Hosts.Local.Memory; m == nil || *m != want {
				t.Fatalf("local host memory %+v", m)
			}
			if remote {
				if h := doc.Hosts.Remote; h == nil || h.Memory == nil || *h.Memory != want {
					t.Fatalf("remote host %+v", h)
				}
			}
			if p := doc.Params; p.Mem != "hugepages" {
				t.Fatalf("params mem %q", p.Mem)
			}
		})
	}
}

// TestHugePagesRefused: a test needing more huge pages than are free is
// refused before anything is allocated, with the figures, by the client
// for its ends and by the server for its own; 1 GiB pages where the host
// has none are refused by name.
func TestHugePagesRefused(t *testing.T) {
	reserveHugePages(t, 4)
	free, path, _ := freeHugePages(HugePage2M)
	big := askedSpec(func(s *Spec) { s.Mem, s.Sizes = "hugepages", []int{64 << 20} }) // 65 pages per end
	doc, err := runDoc(t, false, []string{"write-bw"}, big)
	want := fmt.Sprintf("write-bw at 67108864 B needs 130 huge pages of 2 MiB (65 per end, 2 end(s) here); this host has %d free (%s", free, path)
	if doc != nil || !errors.Is(err, ErrOverLimit) || !strings.Contains(err.Error(), want) {
		t.Fatalf("loopback: %v; want %q", err, want)
	}
	// The server refuses what it cannot give, by itself.
	s := big
	s.Test = "write-bw"
	s.Device = testutil.Device(t)
	if err := s.Normalize(); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(s)
	_, err = (&Server{}).Accept(raw)
	want = fmt.Sprintf("needs 65 huge pages of 2 MiB (65 per end, 1 end(s) here); this host has %d free", free)
	if !errors.Is(err, ErrOverLimit) || !strings.Contains(err.Error(), want) {
		t.Fatalf("server: %v; want %q", err, want)
	}
	if _, err := os.Stat("/sys/kernel/mm/hugepages/hugepages-1048576kB"); err == nil {
		return
	}
	_, err = runDoc(t, false, []string{"write-bw"}, askedSpec(func(s *Spec) { s.Mem = "hugepages:1G" }))
	if !errors.Is(err, ErrOverLimit) || !strings.Contains(err.Error(), "--mem hugepages:1G: this host has no 1.0 GiB") {
		t.Fatalf("1 GiB pages: %v", err)
	}
}

// TestODPRefused: rxe in Debian 12's kernel (6.1) has no on-demand paging:
// --odp is refused naming the device and the capability it lacks. A
// device with ODP (rxe from Linux 7.x) runs TestODP instead.
func TestODPRefused(t *testing.T) {
	if deviceODP(t).Supported {
		t.Skipf("%s has on-demand paging (rxe from Linux 7.x): TestODP runs the tests with it", testutil.Device(t))
	}
	for _, c := range []struct{ test, cap string }{
		{"write-bw", "IBV_ODP_SUPPORT_WRITE"}, {"read-bw", "IBV_ODP_SUPPORT_READ"},
		{"send-lat", "IBV_ODP_SUPPORT_SEND"}, {"atomic-lat", "IBV_ODP_SUPPORT_ATOMIC"},
	} {
		doc, err := runDoc(t, false, []string{c.test}, askedSpec(func(s *Spec) { s.ODP = true }))
		if err == nil {
			t.Fatalf("%s --odp ran on %s: %+v", c.test, testutil.Device(t), doc.Results)
		}
		dev := testutil.Device(t)
		if !strings.Contains(err.Error(), "--odp: "+dev+" has no on-demand paging") || !strings.Contains(err.Error(), c.cap) {
			t.Fatalf("%s: %v", c.test, err)
		}
	}
}

// TestCudaStandIn: --mem cuda through the stand-in driver library the
// tests build (internal/testutil), whose "GPU memory" is host memory, on
// a real device: the loader, the choice of registration and its fallback,
// the copies of --validate, and what both ends record. It proves the
// plumbing, never a GPU.
func TestCudaStandIn(t *testing.T) {
	t.Setenv(gpu.EnvLibrary, "/nonexistent/libcuda.so.1")
	doc, err := runDoc(t, false, []string{"write-bw"}, askedSpec(func(s *Spec) { s.Mem = "cuda" }))
	if doc != nil || !errors.Is(err, gpu.ErrNoGPU) || !strings.Contains(err.Error(), "write-bw --mem cuda: no GPU memory: cannot load /nonexistent/libcuda.so.1, the CUDA driver library") {
		t.Fatalf("without the library: %v", err)
	}
	lib, err := testutil.BuildCUDAStandIn(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(gpu.EnvLibrary, lib)
	t.Setenv("RDMABENCH_STANDIN_GPUS", "0")
	if _, err := runDoc(t, false, []string{"write-bw"}, askedSpec(func(s *Spec) { s.Mem = "cuda" })); !errors.Is(err, gpu.ErrNoGPU) || !strings.Contains(err.Error(), "reports no GPU") {
		t.Fatalf("without a GPU: %v", err)
	}
	t.Setenv("RDMABENCH_STANDIN_GPUS", "2")
	for _, c := range []struct {
		name, export, mem string
		remote            bool
		tests             []string
		index             int
		note              string
	}{
		{"no export", "fail", "cuda", false, []string{"write-bw", "read-bw", "send-lat"}, 0, "cuMemGetHandleForAddressRange: CUDA_ERROR_NOT_SUPPORTED; registered the device pointer"},
		{"export refused by the device", "ok", "cuda:1", true, []string{"write-bw"}, 1, "cannot register dma-buf memory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("RDMABENCH_STANDIN_EXPORT", c.export)
			doc, err := runDoc(t, c.remote, c.tests, askedSpec(func(s *Spec) {
				s.Mem, s.CheckData, s.Sizes, s.Iterations = c.mem, true, []int{4096}, 20
			}))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range doc.Results {
				if r.Error != "" || r.Validation == nil || !r.Validation.OK {
					t.Fatalf("%s: error %q, validation %+v", r.Test, r.Error, r.Validation)
				}
				for end, m := range map[string]*report.Memory{"client": r.Effective.Memory, "server": r.Effective.ServerMemory} {
					if m == nil || m.Kind != report.MemCUDA || m.Registration != report.RegMR || !strings.Contains(m.Note, c.note) ||
						m.GPU == nil || m.GPU.Index != c.index || m.GPU.Library != lib || m.GPU.PCIBusID == "" {
						t.Fatalf("%s: the %s's memory %+v (gpu %+v)", r.Test, end, m, m.GPU)
					}
				}
			}
			if m := doc.Hosts.Local.Memory; m == nil || m.Kind != report.MemCUDA {
				t.Fatalf("local host memory %+v", m)
			}
			if c.remote && (doc.Hosts.Remote == nil || doc.Hosts.Remote.Memory == nil || doc.Hosts.Remote.Memory.GPU == nil) {
				t.Fatalf("remote host %+v", doc.Hosts.Remote)
			}
		})
	}
}
