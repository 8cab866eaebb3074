package workloads

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/settings"
)

func TestParseMem(t *testing.T) {
	good := map[string]MemSpec{
		"":                  {Kind: report.MemHost},
		"host":              {Kind: report.MemHost},
		"hugepages":         {Kind: report.MemHugePages, PageSize: HugePage2M},
		"hugepages:2M":      {Kind: report.MemHugePages, PageSize: HugePage2M},
		"hugepages:1G":      {Kind: report.MemHugePages, PageSize: HugePage1G},
		"cuda":              {Kind: report.MemCUDA},
		"cuda:1":            {Kind: report.MemCUDA, GPU: "1"},
		"cuda:0000:3b:00.0": {Kind: report.MemCUDA, GPU: "0000:3b:00.0"},
		"cuda:3b:00.0":      {Kind: report.MemCUDA, GPU: "3b:00.0"},
	}
	for in, want := range good {
		got, err := ParseMem(in)
		if err != nil || got != want {
			t.Errorf("ParseMem(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"gpu", "host:1", "hugepages:4M", "cuda:", "cuda:gpu0", "rocm"} {
		if _, err := ParseMem(in); err == nil {
			t.Errorf("ParseMem(%q) accepted", in)
		}
	}
}

// TestMemKinds: every word completion offers for --mem is one ParseMem
// takes, and every kind is among them.
func TestMemKinds(t *testing.T) {
	kinds := map[string]bool{}
	for _, w := range MemKinds {
		m, err := ParseMem(w)
		if err != nil {
			t.Errorf("%q: %v", w, err)
		}
		kinds[m.Kind] = true
	}
	for _, k := range []string{report.MemHost, report.MemHugePages, report.MemCUDA} {
		if !kinds[k] {
			t.Errorf("kind %s not among %q", k, MemKinds)
		}
	}
}

func TestMemValidate(t *testing.T) {
	bad := []struct {
		test string
		set  func(*Spec)
		want string
	}{
		{"write-lat", func(s *Spec) { s.Mem = "cuda:0" }, "write-lat polls the last byte of its buffer from the CPU"},
		{"write-bw", func(s *Spec) { s.Mem, s.ODP = "cuda", true }, "--odp applies to host memory and huge pages"},
		{"write-bw", func(s *Spec) { s.Mem = "hugepages:3M" }, "the huge page sizes are 2M and 1G"},
	}
	for _, c := range bad {
		s := NewSpec(c.test)
		c.set(&s)
		if err := s.Normalize(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: %v; want %q", c.test, s.Mem, err, c.want)
		}
	}
	for _, test := range []string{"send-lat", "read-lat", "write-bw", "atomic-bw"} {
		s := NewSpec(test)
		s.Mem = "cuda"
		if err := s.Normalize(); err != nil {
			t.Errorf("%s --mem cuda: %v", test, err)
		}
	}
	// A knob of the RDMA tests: refused by name for TCP, left out in a suite.
	asked := Spec{Buffers: settings.Buffers{Mem: "hugepages"}}
	if _, err := NewPlan(Request{Tests: []string{"tcp-bw"}, Spec: asked}); err == nil || !strings.Contains(err.Error(), "--mem does not apply to tcp-bw") {
		t.Errorf("tcp-bw --mem: %v", err)
	}
	asked.ODP = true
	r, err := NewPlan(Request{Tests: []string{"write-bw", "tcp-bw"}, Spec: asked, Suite: true})
	if err != nil {
		t.Fatal(err)
	}
	if sp := r.Specs(); sp[0].Mem != "hugepages" || !sp[0].ODP || sp[1].Mem != "" || sp[1].ODP {
		t.Errorf("suite specs: %+v / %+v", sp[0].Mem, sp[1].Mem)
	}
	if p := r.Params(); p.Mem != "hugepages" || !p.ODP {
		t.Errorf("params record mem %q odp %v", p.Mem, p.ODP)
	}
}

// TestHugePagesNeeded: the count is each end's registered buffer in whole
// pages, on every device; the refusal gives the figures.
func TestHugePagesNeeded(t *testing.T) {
	s := NewSpec("write-bw")
	s.Mem, s.Sizes, s.QPs = "hugepages", []int{65536}, 4
	if err := s.Normalize(); err != nil {
		t.Fatal(err)
	}
	// 2 x 68 KiB (one buffer, shared by the QPs) fits one 2 MiB page.
	if n := s.HugePages(); n != 1 {
		t.Errorf("64 KiB: %d pages, want 1", n)
	}
	s.Sizes = []int{8 << 20}
	if n := s.HugePages(); n != 9 { // 2 x (8 MiB + 4 KiB) = 16 MiB + 8 KiB
		t.Errorf("8 MiB: %d pages, want 9", n)
	}
	s.Device = "mlx5_0,mlx5_1"
	if n := s.HugePages(); n != 18 {
		t.Errorf("8 MiB on two devices: %d pages, want 18", n)
	}
	s.Mem = "hugepages:1G"
	if n := s.HugePages(); n != 2 {
		t.Errorf("1 GiB pages on two devices: %d, want 2", n)
	}
	s.Mem = ""
	if n := s.HugePages(); n != 0 {
		t.Errorf("host memory: %d huge pages", n)
	}
	s.Mem, s.Device = "hugepages", ""
	free, _, err := freeHugePages(HugePage2M)
	if err != nil {
		t.Skipf("no 2 MiB huge pages here: %v", err)
	}
	s.Sizes = []int{MaxSize} // 1025 pages per end
	if free >= 2*1025 {
		t.Skipf("this host has %d free huge pages", free)
	}
	err = s.checkMemory(0, 2, false)
	if !errors.Is(err, ErrOverLimit) || !strings.Contains(err.Error(), "needs 2050 huge pages of 2 MiB (1025 per end, 2 end(s) here)") ||
		!strings.Contains(err.Error(), "free_hugepages") {
		t.Errorf("refusal: %v", err)
	}
}
