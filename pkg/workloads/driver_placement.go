package workloads

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// placement is where an end's loop threads run: pinned to cpus (nil: not
// pinned), chosen by policy, and why.
type placement struct {
	policy string // report.PlaceCPUList, PlaceNUMA or PlaceNone
	node   int    // the device's NUMA node (policy numa), else -1
	cpus   []int
	note   string
}

// sysfsRoot is where the device and NUMA facts are read (a test points it
// at a tree of its own).
var sysfsRoot = "/sys"

// placeLoops decides where one end's loop threads run: on the cores asked
// for (--cpu), else on the cores of the device's NUMA node, else anywhere;
// allowed are the cores this process may use. A core asked for that it
// may not use is an error naming the flag.
func placeLoops(flag string, asked []int, device string, allowed []int) (placement, error) {
	if len(asked) > 0 {
		var out []int
		for _, c := range asked {
			if !slices.Contains(allowed, c) {
				return placement{}, fmt.Errorf("%s %s: core %d is not one this process may use (%s)", flag, FormatCPUList(asked), c, FormatCPUList(allowed))
			}
			out = append(out, c)
		}
		slices.Sort(out)
		return placement{policy: report.PlaceCPUList, node: -1, cpus: slices.Compact(out)}, nil
	}
	if device == "" {
		return placement{policy: report.PlaceNone, node: -1, note: "no device: the loop threads may run on any core"}, nil
	}
	node, note := numaNode(device)
	if node < 0 {
		return placement{policy: report.PlaceNone, node: -1, note: note + ": the loop threads may run on any core"}, nil
	}
	list, err := os.ReadFile(filepath.Join(sysfsRoot, "devices", "system", "node", "node"+strconv.Itoa(node), "cpulist"))
	if err != nil {
		return placement{policy: report.PlaceNone, node: -1, note: fmt.Sprintf("%s is on NUMA node %d, whose cores cannot be read (%v): the loop threads may run on any core", device, node, err)}, nil
	}
	cores, err := ParseCPUList(strings.TrimSpace(string(list)))
	if err != nil {
		return placement{policy: report.PlaceNone, node: -1, note: fmt.Sprintf("NUMA node %d's cores: %v", node, err)}, nil
	}
	var in []int
	for _, c := range cores {
		if slices.Contains(allowed, c) {
			in = append(in, c)
		}
	}
	p := placement{policy: report.PlaceNUMA, node: node, cpus: in}
	switch {
	case len(in) == 0:
		return placement{policy: report.PlaceNone, node: -1, note: fmt.Sprintf("none of the cores of %s's NUMA node %d (%s) is one this process may use (%s): the loop threads may run on any of those",
			device, node, FormatCPUList(cores), FormatCPUList(allowed))}, nil
	case len(in) < len(cores):
		p.note = fmt.Sprintf("the cores of NUMA node %d this process may use", node)
	}
	return p, nil
}

// numaNode is the NUMA node of an RDMA device's PCI function, from
// sysfs, or -1 with the reason there is none.
func numaNode(device string) (int, string) {
	dir := filepath.Join(sysfsRoot, "class", "infiniband", device, "device")
	b, err := os.ReadFile(filepath.Join(dir, "numa_node"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, derr := os.Stat(dir); errors.Is(derr, os.ErrNotExist) {
			return -1, device + " has no PCI device (a software device such as Soft-RoCE), so no NUMA node"
		}
		return -1, device + " has no NUMA node in sysfs"
	case err != nil:
		return -1, fmt.Sprintf("%s's NUMA node cannot be read (%v)", device, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return -1, device + " reports no NUMA node (-1: the platform has one, or does not say)"
	}
	return n, ""
}

// report records the placement, with the cores the threads were seen on.
func (p placement) report(used []int) *report.EndPlacement {
	e := &report.EndPlacement{Policy: p.policy, CPUs: p.cpus, Used: used, Note: p.note}
	if p.policy == report.PlaceNUMA {
		n := p.node
		e.NUMANode = &n
	}
	return e
}

// ParseCPUList parses a list of cores as the kernel writes them: "0-3,8,10-11".
func ParseCPUList(s string) ([]int, error) {
	var out []int
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty list of cores")
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= maxCPU {
			return nil, fmt.Errorf("cores %q: want a list such as 0-3,8 (cores 0..%d)", s, maxCPU-1)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// FormatCPUList writes cores as the kernel does: "0-3,8".
func FormatCPUList(cores []int) string {
	if len(cores) == 0 {
		return "none"
	}
	return strings.Join(textfmt.IntRanges(cores), ",")
}

// mergeCores is the union of two sorted sets of cores.
func mergeCores(a, b []int) []int {
	if len(b) == 0 {
		return a
	}
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// cpuSpan is the CPU time one or more loop threads used over wall time,
// and the cores they were seen on.
type cpuSpan struct {
	user, sys, wall time.Duration
	cores           []int
	pinErr          error // pinning a thread to its cores failed
}

// add is the CPU of two threads that ran side by side.
func (a cpuSpan) add(b cpuSpan) cpuSpan {
	return cpuSpan{user: a.user + b.user, sys: a.sys + b.sys, wall: max(a.wall, b.wall),
		cores: mergeCores(a.cores, b.cores), pinErr: cmp.Or(a.pinErr, b.pinErr)}
}

func (a cpuSpan) report() *report.CPUSide {
	c := &report.CPUSide{UserS: a.user.Seconds(), SysS: a.sys.Seconds(), WallS: a.wall.Seconds()}
	if a.wall > 0 {
		c.Cores = (a.user + a.sys).Seconds() / a.wall.Seconds()
	}
	return c
}
