package workloads

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/verbs"
	"github.com/rdmabench/rdmabench/pkg/workloads/mux"
)

// A test may run several ends at once on each side, one per lane: one per
// device (-d A,B), and beside each latency end the end of its background
// load (--load). Every lane is a whole end (runEnd) with a Link of its
// own, multiplexed over the test's one transport; both sides derive the
// same lanes from the spec. On the client, the lanes of the devices start
// each size together, the latency waits for its load to be sending, and
// the results of a size on every device become one result (their sum).

// laneKind is what a lane runs.
type laneKind int

const (
	mainLane laneKind = iota // the test itself, on one device
	loadLane                 // the load of the main lane of its device
)

// lane is one end of a test on one side.
type lane struct {
	kind   laneKind
	dev    int // index of its device in the client's list
	spec   Spec
	device string // this side's device ("": the first)
	peer   string // the other side's device, for the record
}

// laneCount is the number of lanes of a spec, on either side.
func laneCount(s *Spec) int {
	n := max(1, len(splitDevices(s.Device)))
	if s.Load != nil {
		n *= 2
	}
	return n
}

// planLanes derives this side's lanes from the normalized spec. The
// client's devices are its list (-d); the server pairs them one by one
// with the client's --server-dev, else its own -d (o.device), else, for
// several, every device it has.
func planLanes(s *Spec, r role, o endOptions) ([]lane, error) {
	devs := splitDevices(s.Device)
	if len(devs) == 0 {
		devs = []string{""}
	}
	// The server's devices: as the client asks (--server-dev), else its
	// own -d (the first of them for one device), else, for several, every
	// one it has. The client records what it asked for.
	sdevs := splitDevices(s.ServerDevice)
	if r == serverEnd {
		own := len(sdevs) == 0
		if own {
			sdevs = splitDevices(o.device)
		}
		if slices.Equal(sdevs, []string{"all"}) || (len(sdevs) == 0 && len(devs) > 1) {
			names, err := verbs.DeviceNames()
			if err != nil {
				return nil, err
			}
			sdevs = names
		}
		if own && len(devs) == 1 && len(sdevs) > 1 {
			sdevs = sdevs[:1]
		}
	} else if slices.Equal(sdevs, []string{"all"}) || len(sdevs) != len(devs) {
		sdevs = nil
	}
	if len(sdevs) == 0 {
		sdevs = make([]string, len(devs))
	}
	if len(sdevs) != len(devs) {
		return nil, fmt.Errorf("the client runs on %d devices (%s), the server has %d to pair them with (%s): give --server-dev with %d",
			len(devs), strings.Join(devs, ","), len(sdevs), strings.Join(sdevs, ","), len(devs))
	}
	if len(devs) == 1 && s.Load == nil {
		l := lane{spec: *s, device: devs[0], peer: sdevs[0]}
		if r == serverEnd {
			l.device, l.peer = sdevs[0], devs[0]
		}
		return []lane{l}, nil
	}
	var lanes []lane
	for i := range devs {
		main := *s
		main.Device, main.ServerDevice, main.Load = devs[i], sdevs[i], nil
		l := lane{kind: mainLane, dev: i, spec: main, device: devs[i], peer: sdevs[i]}
		if r == serverEnd {
			l.device, l.peer = sdevs[i], devs[i]
		}
		lanes = append(lanes, l)
	}
	if s.Load != nil {
		for i := range devs {
			ld := loadSpec(s, lanes[i].spec)
			lanes = append(lanes, lane{kind: loadLane, dev: i, spec: ld, device: lanes[i].device, peer: lanes[i].peer})
		}
	}
	return lanes, nil
}

// runSide runs this side of the normalized spec over tr: one end, or one
// per lane.
func runSide(ctx context.Context, spec *Spec, r role, tr Transport, o endOptions) (*endResult, error) {
	lanes, err := planLanes(spec, r, o)
	if n := laneCount(spec); err == nil && n == 1 {
		o.device = lanes[0].device
		return runEnd(ctx, &lanes[0].spec, r, NewLink(tr), o)
	}
	m := mux.New(ctx, tr, laneCount(spec))
	defer m.Close()
	if err != nil {
		// Every lane of the peer waits at setup: tell each.
		for i := range m.Lanes() {
			tctx, cancel := context.WithTimeout(ctx, spec.IdleTimeout)
			_ = NewLink(m.Lane(i)).Exchange(tctx, "setup", Fail(err), nil)
			cancel()
		}
		return nil, err
	}
	return runLanes(ctx, lanes, r, m, o)
}

// runLanes runs every lane at once, each over its lane of m. The first
// lane to fail stops the others. The client's result merges the results
// of its devices, size by size.
func runLanes(ctx context.Context, lanes []lane, r role, m *mux.Mux, o endOptions) (*endResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	j := newLaneJoin(lanes, o)
	errs := make([]error, len(lanes))
	results := make([]*endResult, len(lanes))
	var wg sync.WaitGroup
	for i, l := range lanes {
		lo := j.options(l, r, o)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := runEnd(ctx, &l.spec, r, NewLink(m.Lane(i)), lo)
			results[i], errs[i] = res, err
			if l.kind == mainLane {
				j.bar.leave(l.dev)
				close(j.stops[l.dev]) // its load ends with it
			} else {
				j.probes[l.dev].end(err)
			}
			if err != nil {
				cancel(laneError(l, err))
			}
		}()
	}
	wg.Wait()
	out := &endResult{}
	for i, l := range lanes {
		if l.kind == mainLane && results[i] != nil && out.Host.Hostname == "" {
			out.Host, out.Peer = results[i].Host, results[i].Peer
		}
	}
	if r == clientEnd {
		out.Results = j.merge.flush()
	}
	return out, firstLaneError(ctx, lanes, errs)
}

// laneJoin is what joins the lanes of one side: the merge of the main
// lanes' results, the barrier they start each size at, and per device the
// probe of its load and the channel that stops the load.
type laneJoin struct {
	lanes  []lane
	mains  int
	merge  *laneMerge
	bar    *barrier
	probes []*loadProbe
	stops  []chan struct{}
}

func newLaneJoin(lanes []lane, o endOptions) *laneJoin {
	var mains int
	for _, l := range lanes {
		if l.kind == mainLane {
			mains++
		}
	}
	j := &laneJoin{lanes: lanes, mains: mains, bar: newBarrier(mains),
		probes: make([]*loadProbe, mains), stops: make([]chan struct{}, mains)}
	j.merge = &laneMerge{parent: o, lanes: lanes, mains: mains, sizes: len(lanes[0].spec.Sizes), results: map[int][]*report.Result{},
		hosts: make([]*report.Host, mains), peers: make([]*report.Host, mains), clocks: map[int]clockInfo{}}
	for i := range j.probes {
		j.probes[i] = newLoadProbe()
		j.stops[i] = make(chan struct{})
	}
	for _, l := range lanes {
		if l.kind == loadLane {
			j.probes[l.dev].spec = l.spec
		}
	}
	return j
}

// options are lane l's end options. On the client, a main lane reports
// its hosts and results to the merge and starts each size at the barrier
// (the first once its load is sending); a load lane tells its probe it is
// streaming, and stops when its main lane ends.
func (j *laneJoin) options(l lane, r role, o endOptions) endOptions {
	lo := endOptions{device: l.device, maxMem: o.maxMem, peerHost: o.peerHost, listenHost: o.listenHost, run: o.run}
	if r != clientEnd {
		return lo
	}
	probe := j.probes[l.dev]
	switch l.kind {
	case mainLane:
		lo.onHosts = func(local report.Host, peer *report.Host) { j.merge.hostsOf(l.dev, local, peer) }
		lo.onResult = func(res report.Result, c clockInfo) { j.merge.result(l.dev, res, c) }
		if j.mains == 1 {
			lo.progress = o.progress
		}
		if l.spec.Info().Metric == Latency && len(j.lanes) > j.mains {
			lo.load = probe
		}
		load := lo.load
		lo.beforeSize = func(ctx context.Context, i int) error {
			if load != nil && i == 0 {
				if err := probe.wait(ctx); err != nil {
					return err
				}
			}
			return j.bar.arrive(ctx, l.dev, i)
		}
	case loadLane:
		lo.stop = j.stops[l.dev]
		lo.streaming = func(s streamLoop) { probe.start(s) }
	}
	return lo
}

// firstLaneError is the error of a side whose lanes ended with errs: the
// lane that failed first, not those it stopped.
func firstLaneError(ctx context.Context, lanes []lane, errs []error) error {
	var first error
	for i, err := range errs {
		if err != nil && first == nil {
			first = laneError(lanes[i], err)
		}
	}
	if c := context.Cause(ctx); first != nil && c != nil && !errors.Is(c, context.Canceled) {
		first = c // the lane that failed first, not those it stopped
	}
	return first
}

// laneError names the lane an error comes from.
func laneError(l lane, err error) error {
	var parts []string
	if l.device != "" {
		parts = append(parts, l.device)
	}
	if l.kind == loadLane {
		parts = append(parts, "the load ("+l.spec.Test+")")
	}
	if len(parts) == 0 {
		return err
	}
	return fmt.Errorf("%s: %w", strings.Join(parts, ", "), err)
}

// barrier lets the lanes of the devices start each size together; a lane
// that has returned no longer holds the others.
type barrier struct {
	mu      sync.Mutex
	n       int
	at      []int // the size each lane waits to start, -1 when it is not waiting
	gone    []bool
	changed chan struct{}
}

func newBarrier(n int) *barrier {
	b := &barrier{n: n, at: make([]int, n), gone: make([]bool, n), changed: make(chan struct{})}
	for i := range b.at {
		b.at[i] = -1
	}
	return b
}

func (b *barrier) signal() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// arrive waits until every lane still running has reached size i.
func (b *barrier) arrive(ctx context.Context, lane, i int) error {
	b.mu.Lock()
	b.at[lane] = i
	b.signal()
	for {
		ready := true
		for j := range b.n {
			if !b.gone[j] && b.at[j] < i {
				ready = false
			}
		}
		if ready {
			b.mu.Unlock()
			return nil
		}
		ch := b.changed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		b.mu.Lock()
	}
}

func (b *barrier) leave(lane int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gone[lane] = true
	b.signal()
}

// loadProbe joins a latency lane to its load: the latency waits until the
// load streams, and reads what it completed during each size.
type loadProbe struct {
	spec    Spec // the load's
	once    sync.Once
	started chan struct{} // closed once the load streams, or ended
	mu      sync.Mutex
	stream  progressor
	err     error
}

// progressor reads a running stream's completions from another thread.
type progressor interface {
	progress() (msgs, lastNs uint64)
}

func newLoadProbe() *loadProbe { return &loadProbe{started: make(chan struct{})} }

func (p *loadProbe) start(s streamLoop) {
	p.mu.Lock()
	if pr, ok := s.(progressor); ok {
		p.stream = pr
	}
	p.mu.Unlock()
	p.once.Do(func() { close(p.started) })
}

func (p *loadProbe) end(err error) {
	p.mu.Lock()
	if err == nil {
		err = errors.New("the load ended before the latency test")
	}
	p.err, p.stream = err, nil
	p.mu.Unlock()
	p.once.Do(func() { close(p.started) })
}

// wait waits until the load streams.
func (p *loadProbe) wait(ctx context.Context) error {
	select {
	case <-p.started:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stream == nil {
		return fmt.Errorf("the load did not start: %w", p.err)
	}
	return nil
}

// failure is why the load ended.
func (p *loadProbe) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// mark reads the load's completions so far; ok is false when it has ended.
func (p *loadProbe) mark() (msgs uint64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stream == nil {
		return 0, false
	}
	msgs, _ = p.stream.progress()
	return msgs, true
}

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
		lat, err := report.MergeLatency(lats...)
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
