package workloads

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// Where a test's buffers live (--mem): host pages (the default), huge
// pages, or GPU memory. Both ends take the same from the spec; an end
// that cannot give it refuses the test by name before it allocates.

// Huge page sizes --mem hugepages takes.
const (
	HugePage2M = 2 << 20
	HugePage1G = 1 << 30
)

// MemKinds are the words --mem takes as they are, without a GPU: what
// shell completion offers. ParseMem takes each (a test checks it), and
// cuda:GPU besides.
var MemKinds = []string{report.MemHost, report.MemHugePages, report.MemHugePages + ":1G", report.MemCUDA}

// MemSpec is --mem parsed.
type MemSpec struct {
	// Kind is report.MemHost, report.MemHugePages or report.MemCUDA.
	Kind string
	// PageSize is the huge page size (kind hugepages).
	PageSize uint64
	// GPU is the GPU asked for (kind cuda): an index, a PCI bus id, or
	// empty for the GPU nearest the NIC.
	GPU string
}

// ParseMem parses --mem: host, hugepages[:2M|:1G], cuda[:GPU] (GPU an
// index or a PCI bus id). Empty is host.
func ParseMem(s string) (MemSpec, error) {
	kind, arg, hasArg := strings.Cut(strings.TrimSpace(s), ":")
	switch strings.ToLower(kind) {
	case "", report.MemHost:
		if hasArg {
			return MemSpec{}, fmt.Errorf("--mem host takes no argument, not %q", arg)
		}
		return MemSpec{Kind: report.MemHost}, nil
	case report.MemHugePages:
		m := MemSpec{Kind: report.MemHugePages, PageSize: HugePage2M}
		switch strings.ToUpper(arg) {
		case "", "2M", "2MB", "2MIB":
		case "1G", "1GB", "1GIB":
			m.PageSize = HugePage1G
		default:
			if hasArg {
				return MemSpec{}, fmt.Errorf("--mem hugepages:%s: the huge page sizes are 2M and 1G", arg)
			}
		}
		return m, nil
	case report.MemCUDA:
		if hasArg && arg == "" {
			return MemSpec{}, errors.New("--mem cuda: give a GPU after the colon (an index such as 0, or a PCI bus id such as 0000:3b:00.0), or none for the GPU nearest the NIC")
		}
		if hasArg {
			if _, err := strconv.Atoi(arg); err != nil && !looksLikeBusID(arg) {
				return MemSpec{}, fmt.Errorf("--mem cuda:%s: want a GPU index (0, 1, ...) or a PCI bus id (0000:3b:00.0)", arg)
			}
		}
		return MemSpec{Kind: report.MemCUDA, GPU: arg}, nil
	}
	return MemSpec{}, fmt.Errorf("--mem %q: want host, hugepages[:2M|:1G] or cuda[:GPU]", s)
}

// looksLikeBusID tells whether s is a PCI address: [DDDD:]BB:DD.F in hex.
func looksLikeBusID(s string) bool {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return false
	}
	last := parts[len(parts)-1]
	dev, fn, ok := strings.Cut(last, ".")
	if !ok {
		return false
	}
	for _, p := range append(parts[:len(parts)-1], dev, fn) {
		if p == "" {
			return false
		}
		if _, err := strconv.ParseUint(p, 16, 32); err != nil {
			return false
		}
	}
	return true
}

// mem is the spec's --mem, parsed (host when it does not parse: Validate
// refuses that).
func (s *Spec) mem() MemSpec {
	m, err := ParseMem(s.Mem)
	if err != nil {
		return MemSpec{Kind: report.MemHost}
	}
	return m
}

// validateMem checks --mem and --odp against the test.
func (s *Spec) validateMem(t TestInfo, bad func(string, ...any)) {
	m, err := ParseMem(s.Mem)
	if err != nil {
		bad("%v", err)
		return
	}
	if !t.IsRDMA() {
		if m.Kind != report.MemHost || s.ODP {
			bad("--mem and --odp apply to RDMA tests (TCP buffers are the process's own)")
		}
		return
	}
	if m.Kind == report.MemCUDA && t.Op == OpWrite && t.Metric == Latency {
		// The receiver of the write ping-pong spins from the CPU on the
		// last byte of its buffer: not on GPU memory (perftest's
		// ib_write_lat refuses --use_cuda alike).
		bad("write-lat polls the last byte of its buffer from the CPU, which GPU memory does not allow (as perftest's ib_write_lat with --use_cuda); use send-lat, read-lat or the bandwidth tests with --mem cuda")
	}
	if m.Kind == report.MemCUDA && s.ODP {
		bad("--odp applies to host memory and huge pages, not GPU memory (--mem cuda)")
	}
}

// HugePages is how many huge pages one end of the test takes (0 unless
// --mem hugepages): each registered buffer, rounded up to whole pages, on
// every lane (device) of the end.
func (s *Spec) HugePages() int {
	m := s.mem()
	if m.Kind != report.MemHugePages || !s.Info().IsRDMA() {
		return 0
	}
	per := (s.RegisteredBytes() + m.PageSize - 1) / m.PageSize
	lanes := uint64(max(1, len(splitDevices(s.Device))))
	return int(per * lanes)
}

// pageName writes a huge page size: "2 MiB", "1 GiB".
func pageName(n uint64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}
