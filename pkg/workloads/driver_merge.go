package workloads

// The merge of the client's results on every device (-d A,B) into one
// result per size (driver_lanes.go).

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"github.com/rdmabench/rdmabench/pkg/latency"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// laneMerge gathers the client's results of every device, size by size,
// and hands each size on as one result once every device has it.
type laneMerge struct {
	mu      sync.Mutex
	parent  endOptions
	lanes   []lane
	mains   int
	sizes   int
	next    int                      // the next size to hand on
	results map[int][]*report.Result // by size: one per device (nil until it reports)
	out     []report.Result
	hosts   []*report.Host
	peers   []*report.Host
	clocks  map[int]clockInfo
	told    bool
}

func (m *laneMerge) hostsOf(dev int, local report.Host, peer *report.Host) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hosts[dev], m.peers[dev] = &local, peer
	for i := range m.mains {
		if m.hosts[i] == nil {
			return
		}
	}
	if m.told || m.parent.onHosts == nil {
		return
	}
	m.told = true
	l := *m.hosts[0]
	var p *report.Host
	if m.peers[0] != nil {
		pc := *m.peers[0]
		p = &pc
	}
	if m.mains > 1 {
		for i := range m.mains {
			if d := m.hosts[i].Device; d != nil {
				l.Devices = append(l.Devices, *d)
			}
			if p != nil && m.peers[i] != nil && m.peers[i].Device != nil {
				p.Devices = append(p.Devices, *m.peers[i].Device)
			}
		}
	}
	m.parent.onHosts(l, p)
}

func (m *laneMerge) result(dev int, r report.Result, c clockInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := slices.Index(m.lanes[0].spec.Sizes, r.Size)
	if i < 0 {
		return
	}
	if m.results[i] == nil {
		m.results[i] = make([]*report.Result, m.mains)
	}
	m.results[i][dev] = &r
	m.clocks[dev] = c
	for m.next < m.sizes && m.complete(m.next) {
		m.hand(m.next)
		m.next++
	}
}

func (m *laneMerge) complete(i int) bool {
	rs := m.results[i]
	if rs == nil {
		return false
	}
	for _, r := range rs {
		if r == nil {
			return false
		}
	}
	return true
}

// hand merges size i and hands it on.
func (m *laneMerge) hand(i int) {
	var rs []report.Result
	for _, r := range m.results[i] {
		if r != nil {
			rs = append(rs, *r)
		}
	}
	if len(rs) == 0 {
		return
	}
	merged := rs[0]
	if m.mains > 1 {
		peers := make([]string, m.mains)
		for j, p := range m.peers {
			if p != nil && p.Device != nil {
				peers[j] = p.Device.Name
			}
		}
		merged = mergeDevices(m.lanes[:m.mains], peers, m.results[i])
	}
	m.out = append(m.out, merged)
	if m.parent.onResult != nil {
		m.parent.onResult(merged, m.clocks[0])
	}
	if m.parent.progress != nil && m.mains > 1 {
		m.parent.progress(Progress{Run: m.parent.run, Test: merged.Test, Size: merged.Size, Done: merged.Error == "", Result: &merged})
	}
}

// flush hands on, once every lane has returned, the sizes some device
// never reached (it failed before): what the others measured.
func (m *laneMerge) flush() []report.Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	for ; m.next < m.sizes; m.next++ {
		if m.results[m.next] != nil {
			m.hand(m.next)
		}
	}
	return m.out
}

// mergeDevices makes one result of a size's results on every device: their
// bandwidths summed, their latency samples together, each device's own
// figures under devices.
func mergeDevices(lanes []lane, peers []string, rs []*report.Result) report.Result {
	var base *report.Result
	for _, r := range rs {
		if r != nil {
			base = r
			break
		}
	}
	out := report.Result{Test: base.Test, Connection: base.Connection, Size: base.Size, Run: base.Run, Warmup: base.Warmup,
		QPs: base.QPs, DurationS: base.DurationS, Clock: base.Clock, Effective: base.Effective, Direction: base.Direction}
	var lats []*report.Latency
	var cpu *report.CPUUse
	for i, r := range rs {
		l := lanes[i]
		peer := cmp.Or(peers[i], l.peer)
		if r == nil {
			out.Devices = append(out.Devices, report.DeviceResult{Device: l.device, ServerDevice: peer, Error: "did not run"})
			continue
		}
		out.Devices = append(out.Devices, report.DeviceResult{Device: l.device, ServerDevice: peer, Iterations: r.Iterations,
			Latency: r.Latency, Bandwidth: r.Bandwidth, Reverse: r.Reverse, Total: r.Total, Threads: r.Threads, Load: r.Load,
			Intervals: r.Intervals, Precision: r.Precision, Effective: r.Effective, Placement: r.Placement, PortCounters: r.PortCounters,
			Warnings: r.Warnings, Error: r.Error})
		out.Iterations += r.Iterations
		if r.Latency != nil {
			lats = append(lats, r.Latency)
		}
		if r.Bandwidth != nil {
			out.Bandwidth = report.Sum(out.Bandwidth, r.Bandwidth)
		}
		if r.Reverse != nil {
			out.Reverse = report.Sum(out.Reverse, r.Reverse)
		}
		if r.Total != nil {
			out.Total = report.Sum(out.Total, r.Total)
		}
		if r.CPU != nil {
			cpu = addCPU(cpu, r.CPU)
		}
		for _, w := range r.Warnings {
			out.Warnings = append(out.Warnings, l.device+": "+w)
		}
		if r.Error != "" && out.Error == "" {
			out.Error = r.Error
			if !strings.HasPrefix(r.Error, l.device+": ") {
				out.Error = l.device + ": " + r.Error
			}
		}
	}
	out.CPU = cpu
	if len(lats) > 0 {
		lat, err := latency.Merge(lats...)
		if err != nil {
			out.Warnings = append(out.Warnings, "the devices' latencies could not be merged: "+err.Error())
		}
		out.Latency = lat
	}
	return out
}

// addCPU adds the CPU time of two devices' loops, end by end.
func addCPU(a, b *report.CPUUse) *report.CPUUse {
	if a == nil {
		c := *b
		return &c
	}
	side := func(x, y *report.CPUSide) *report.CPUSide {
		if x == nil || y == nil {
			return cmpOr(x, y)
		}
		s := &report.CPUSide{UserS: x.UserS + y.UserS, SysS: x.SysS + y.SysS, WallS: max(x.WallS, y.WallS)}
		if s.WallS > 0 {
			s.Cores = (s.UserS + s.SysS) / s.WallS
		}
		return s
	}
	return &report.CPUUse{Client: side(a.Client, b.Client), Server: side(a.Server, b.Server)}
}

func cmpOr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}
