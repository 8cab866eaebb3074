package workloads

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/latency"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/settings"
	"github.com/rdmabench/rdmabench/pkg/verbs"
	"github.com/rdmabench/rdmabench/pkg/workloads/mux"
)

func TestThreadQPs(t *testing.T) {
	for qps := 1; qps <= 9; qps++ {
		for n := 1; n <= qps; n++ {
			next := 0
			for th := range n {
				lo, hi := threadQPs(qps, n, th)
				if lo != next || hi <= lo || hi-lo > qps/n+1 || hi-lo < qps/n {
					t.Fatalf("%d QPs over %d threads: thread %d has [%d,%d) after %d", qps, n, th, lo, hi, next)
				}
				next = hi
			}
			if next != qps {
				t.Fatalf("%d QPs over %d threads cover %d", qps, n, next)
			}
		}
	}
}

func TestCPUList(t *testing.T) {
	for in, want := range map[string][]int{"0": {0}, "0-3": {0, 1, 2, 3}, "3,1,2-2": {1, 2, 3}, " 8 , 0-1": {0, 1, 8}} {
		got, err := ParseCPUList(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a", "3-1", "-1", "0,,1", "1024", "0-5000"} {
		if got, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q) = %v, want an error", bad, got)
		}
	}
	if s := FormatCPUList([]int{8, 0, 1, 2, 5, 6}); s != "0-2,5-6,8" {
		t.Errorf("FormatCPUList = %q", s)
	}
}

// fakeSysfs makes a sysfs tree with devices: name -> numa_node ("" for a
// device with no PCI device), and nodes: node -> cpulist.
func fakeSysfs(t *testing.T, devices map[string]string, nodes map[string]string) {
	root := t.TempDir()
	for name, node := range devices {
		dir := filepath.Join(root, "class", "infiniband", name)
		if node != "" {
			dir = filepath.Join(dir, "device")
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if node != "" {
			if err := os.WriteFile(filepath.Join(dir, "numa_node"), []byte(node+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for node, list := range nodes {
		dir := filepath.Join(root, "devices", "system", "node", "node"+node)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cpulist"), []byte(list+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := sysfsRoot
	sysfsRoot = root
	t.Cleanup(func() { sysfsRoot = old })
}

func TestPlaceLoops(t *testing.T) {
	fakeSysfs(t, map[string]string{"mlx5_0": "1", "mlx5_1": "-1", "rxe0": "", "mlx5_2": "0"},
		map[string]string{"0": "0-3", "1": "4-7"})
	allowed := []int{0, 1, 2, 3, 4, 5}
	cases := []struct {
		asked  []int
		device string
		policy string
		cpus   []int
		note   string
	}{
		{[]int{3, 1}, "mlx5_0", report.PlaceCPUList, []int{1, 3}, ""},
		{nil, "mlx5_0", report.PlaceNUMA, []int{4, 5}, "may use"},
		{nil, "mlx5_2", report.PlaceNUMA, []int{0, 1, 2, 3}, ""},
		{nil, "mlx5_1", report.PlaceNone, nil, "reports no NUMA node"},
		{nil, "rxe0", report.PlaceNone, nil, "no PCI device"},
		{nil, "", report.PlaceNone, nil, "no device"},
	}
	for _, c := range cases {
		p, err := placeLoops("--cpu", c.asked, c.device, allowed)
		if err != nil || p.policy != c.policy || !slices.Equal(p.cpus, c.cpus) || !strings.Contains(p.note, c.note) {
			t.Errorf("placeLoops(%v, %q) = %+v, %v; want %s on %v, note with %q", c.asked, c.device, p, err, c.policy, c.cpus, c.note)
		}
	}
	if _, err := placeLoops("--server-cpu", []int{9}, "mlx5_0", allowed); err == nil || !strings.Contains(err.Error(), "--server-cpu 9") {
		t.Errorf("a core this process may not use: %v", err)
	}
	p, _ := placeLoops("--cpu", nil, "mlx5_0", []int{0, 1})
	if p.policy != report.PlaceNone || !strings.Contains(p.note, "node 1") {
		t.Errorf("no core of the node allowed: %+v", p)
	}
	e := placement{policy: report.PlaceNUMA, node: 1, cpus: []int{4, 5}}.report([]int{4})
	if e.NUMANode == nil || *e.NUMANode != 1 || !slices.Equal(e.Used, []int{4}) {
		t.Errorf("report %+v", e)
	}
}

func TestParseRateLimit(t *testing.T) {
	cases := []struct {
		in         string
		gbps, msgs float64
	}{
		{"5Gbps", 5, 0}, {"5", 5, 0}, {"2.5G", 2.5, 0}, {"800Mbps", 0.8, 0}, {"1GB/s", 8, 0},
		{"2Mpps", 0, 2e6}, {"100k msg/s", 0, 1e5}, {"500pps", 0, 500},
	}
	for _, c := range cases {
		g, m, err := ParseRateLimit(c.in)
		if err != nil || math.Abs(g-c.gbps) > 1e-12 || math.Abs(m-c.msgs) > 1e-9 {
			t.Errorf("ParseRateLimit(%q) = %g Gbit/s, %g msg/s, %v; want %g, %g", c.in, g, m, err, c.gbps, c.msgs)
		}
	}
	for _, bad := range []string{"", "fast", "-1Gbps", "0", "5 furlongs"} {
		if g, m, err := ParseRateLimit(bad); err == nil {
			t.Errorf("ParseRateLimit(%q) = %g, %g; want an error", bad, g, m)
		}
	}
}

func TestPaceFor(t *testing.T) {
	s := Spec{Queues: settings.Queues{QPs: 2}, Rate: settings.Rate{RateLimitGbps: 1}}
	gbps, ns := s.paceFor(1000) // 125000 msg/s, 62500 on each QP
	if gbps != 1 || math.Abs(ns-16000) > 1e-9 {
		t.Errorf("1 Gbit/s over 2 QPs at 1000 B: %g Gbit/s, %g ns", gbps, ns)
	}
	s = Spec{Queues: settings.Queues{QPs: 1}, Rate: settings.Rate{RateLimitMsgs: 1000}}
	gbps, ns = s.paceFor(8)
	if math.Abs(gbps-64e-6) > 1e-15 || ns != 1e6 {
		t.Errorf("1000 msg/s at 8 B: %g Gbit/s, %g ns", gbps, ns)
	}
	if g, n := (&Spec{Queues: settings.Queues{QPs: 1}}).paceFor(64); g != 0 || n != 0 {
		t.Errorf("no limit: %g, %g", g, n)
	}
	if b := paceBurst(1e6, 1); b != 100 {
		t.Errorf("burst at 1 ms: %d, want 100 (100 ms of schedule)", b)
	}
	if b := paceBurst(1e9, 4); b != 4 {
		t.Errorf("burst at 1 s: %d, want the post list 4", b)
	}
}

func TestFabricValidate(t *testing.T) {
	cases := []struct {
		test   string
		mutate func(*Spec)
		want   string // "" when valid
	}{
		{"write-bw", func(s *Spec) { s.QPs, s.Threads = 4, 2 }, ""},
		{"write-bw", func(s *Spec) { s.QPs, s.Threads = 2, 3 }, "--threads 3 must be within 1..the QP count 2"},
		{"write-bw", func(s *Spec) { s.RateLimitGbps, s.RateLimitMsgs = 1, 1 }, "not both"},
		{"write-bw", func(s *Spec) { s.RateLimiter = "hw" }, "needs --rate-limit"},
		{"write-bw", func(s *Spec) { s.RateLimitGbps, s.RateLimiter = 1, "fpga" }, `--rate-limiter "fpga"`},
		{"write-bw", func(s *Spec) { s.RateLimitGbps = 1 }, ""},
		{"write-lat", func(s *Spec) { s.Load = &LoadSpec{Test: "send-bw", QPs: 2, Size: 4096} }, ""},
		{"write-lat", func(s *Spec) { s.Load = &LoadSpec{QPs: 2} }, "need --load"},
		{"write-lat", func(s *Spec) { s.Load = &LoadSpec{Test: "tcp-bw"} }, "RDMA bandwidth test"},
		{"write-lat", func(s *Spec) { s.Load = &LoadSpec{Test: "atomic-bw", Size: 64} }, "8-byte"},
		{"write-bw", func(s *Spec) { s.Device = "a,b,a" }, "twice"},
		{"write-bw", func(s *Spec) { s.Device = "a,,b" }, "empty entry"},
		{"write-bw", func(s *Spec) { s.Device, s.ServerDevice = "a,b", "c" }, "one by one"},
		{"write-bw", func(s *Spec) { s.Device, s.ServerDevice = "a,b", "all" }, ""},
		{"write-bw", func(s *Spec) { s.Device, s.ServerDevice = "a,b", "c,d" }, ""},
		{"tcp-lat", func(s *Spec) { s.CPUs = []int{0, 1024} }, "core 1024"},
	}
	for _, c := range cases {
		s := NewSpec(c.test)
		c.mutate(&s)
		err := s.Normalize()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s %+v: %v; want %q", c.test, s, err, c.want)
		}
	}
	s := NewSpec("write-lat")
	s.Load = &LoadSpec{Test: "write-bw"}
	if err := s.Normalize(); err != nil || s.Load.QPs != 1 || s.Load.Size != 65536 {
		t.Errorf("load defaults: %+v, %v", s.Load, err)
	}
}

// fakeStream counts calls; fail makes round fail.
type fakeStream struct {
	msgs, first, last, sentN uint64
	calls                    atomic.Int32
	fail                     error
	stopped                  chan struct{}
}

func (f *fakeStream) warmup(int, bool) error { f.calls.Add(1); return nil }
func (f *fakeStream) round(n uint64) error {
	f.calls.Add(1)
	if f.fail != nil {
		return f.fail
	}
	if f.stopped != nil {
		<-f.stopped
		return verbs.ErrAborted
	}
	f.msgs += n
	f.sentN += n
	return nil
}
func (f *fakeStream) send(uint64) error                  { f.calls.Add(1); return nil }
func (f *fakeStream) finish() error                      { f.calls.Add(1); return nil }
func (f *fakeStream) end() error                         { f.calls.Add(1); return nil }
func (f *fakeStream) measured() (uint64, uint64, uint64) { return f.msgs, f.first, f.last }
func (f *fakeStream) sent() uint64                       { return f.sentN }

func TestParallelStream(t *testing.T) {
	a := &fakeStream{first: 100, last: 900}
	b := &fakeStream{first: 50, last: 1000}
	ps := newParallelStream([]streamLoop{a, b}, func() {}, nil, "client", 3)
	for _, f := range []func() error{func() error { return ps.warmup(1, false) }, func() error { return ps.round(10) }, ps.end} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	ps.close()
	if a.calls.Load() != 3 || b.calls.Load() != 3 {
		t.Fatalf("calls %d and %d, want 3 each", a.calls.Load(), b.calls.Load())
	}
	if m, f, l := ps.measured(); m != 20 || f != 50 || l != 1000 {
		t.Fatalf("measured %d from %d to %d", m, f, l)
	}
	th := ps.threads(64)
	if len(th) != 2 || !slices.Equal(th[0].QPs, []int{0, 1}) || !slices.Equal(th[1].QPs, []int{2}) ||
		th[0].Bandwidth.Bytes != 640 || th[1].Bandwidth.DurationNs != 950 || th[0].End != "client" {
		t.Fatalf("threads %+v", th)
	}
	if got := ps.sentPerThread(); !slices.Equal(got, []uint64{10, 10}) || ps.sent() != 20 {
		t.Fatalf("sent %v, %d", got, ps.sent())
	}

	// A thread that fails stops the others; its error is the one told.
	boom := errors.New("IBV_WC_RETRY_EXC_ERR")
	stop := make(chan struct{})
	c, d := &fakeStream{fail: boom}, &fakeStream{stopped: stop}
	var aborted atomic.Bool
	ps = newParallelStream([]streamLoop{d, c}, func() { aborted.Store(true); close(stop) }, nil, "server", 2)
	err := ps.round(5)
	ps.close()
	if !errors.Is(err, boom) || !aborted.Load() {
		t.Fatalf("round: %v, aborted %v; want the failing thread's error, the others stopped", err, aborted.Load())
	}
}

func TestRunPassives(t *testing.T) {
	boom := errors.New("boom")
	stop := make(chan struct{})
	var once atomic.Bool
	_, err := runPassives([]func() error{
		func() error { <-stop; return nil },
		func() error { return boom },
	}, func() {
		if once.CompareAndSwap(false, true) {
			close(stop)
		}
	}, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("passives: %v", err)
	}
}

func TestMux(t *testing.T) {
	ta, tb, hangA, hangB := pipeTransports()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ma, mb := mux.New(ctx, ta, 3), mux.New(ctx, tb, 3)
	defer ma.Close()
	defer mb.Close()
	// Each lane's exchange meets the peer's same lane, whatever the order.
	done := make(chan error, 6)
	for i := range 3 {
		go func() {
			var got string
			done <- NewLink(ma.Lane(i)).Exchange(ctx, "p", "a"+string(rune('0'+i)), &got)
			if got != "b"+string(rune('0'+i)) {
				done <- errors.New("lane " + string(rune('0'+i)) + " got " + got)
			}
		}()
		go func() {
			var got string
			done <- NewLink(mb.Lane(2-i)).Exchange(ctx, "p", "b"+string(rune('0'+2-i)), &got)
			if got != "a"+string(rune('0'+2-i)) {
				done <- errors.New("lane got " + got)
			}
		}()
	}
	for range 6 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-done:
		t.Fatal(err)
	default:
	}
	// The peer gone, every lane's exchange fails.
	hangB()
	if err := NewLink(ma.Lane(1)).Exchange(ctx, "q", nil, nil); err == nil {
		t.Fatal("exchange with a peer that has ended")
	}
	hangA()
}

func TestBarrier(t *testing.T) {
	b := newBarrier(2)
	ctx := context.Background()
	passed := make(chan int, 2)
	go func() {
		if b.arrive(ctx, 0, 0) == nil {
			passed <- 0
		}
	}()
	select {
	case <-passed:
		t.Fatal("passed the barrier alone")
	case <-time.After(50 * time.Millisecond):
	}
	if err := b.arrive(ctx, 1, 0); err != nil {
		t.Fatal(err)
	}
	<-passed
	// A lane that has returned holds nobody.
	b.leave(1)
	if err := b.arrive(ctx, 0, 1); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	b2 := newBarrier(2)
	if err := b2.arrive(cctx, 0, 0); err == nil {
		t.Fatal("a cancelled wait returned nil")
	}
}

func TestMergeDevices(t *testing.T) {
	rec := func(vals ...uint64) *report.Latency {
		r := latency.NewRecorder(report.BasisRTT)
		r.RecordBatch(vals)
		return r.Snapshot()
	}
	lanes := []lane{{device: "a"}, {device: "b"}}
	bw := func(msgs uint64, ns int64) *report.Bandwidth {
		return report.NewBandwidth(msgs*64, msgs, time.Duration(ns))
	}
	rs := []*report.Result{
		{Test: "write-bw", Size: 64, Iterations: 10, Bandwidth: bw(10, 1000), Warnings: []string{"slow"}},
		{Test: "write-bw", Size: 64, Iterations: 10, Bandwidth: bw(10, 2000), Error: "IBV_WC_RETRY_EXC_ERR"},
	}
	m := mergeDevices(lanes, []string{"x", ""}, rs)
	if len(m.Devices) != 2 || m.Devices[0].ServerDevice != "x" || m.Devices[1].Device != "b" {
		t.Fatalf("devices %+v", m.Devices)
	}
	if m.Bandwidth.Messages != 20 || math.Abs(m.Bandwidth.Gbps-(rs[0].Bandwidth.Gbps+rs[1].Bandwidth.Gbps)) > 1e-12 || m.Iterations != 20 {
		t.Fatalf("sum %+v, %d iterations", m.Bandwidth, m.Iterations)
	}
	if !slices.Equal(m.Warnings, []string{"a: slow"}) || m.Error != "b: IBV_WC_RETRY_EXC_ERR" {
		t.Fatalf("warnings %q, error %q", m.Warnings, m.Error)
	}
	rs = []*report.Result{{Test: "read-lat", Latency: rec(100, 200)}, {Test: "read-lat", Latency: rec(300)}}
	m = mergeDevices(lanes, []string{"", ""}, rs)
	if l := m.Latency; l == nil || l.Count != 3 || l.MinNs != 100 || l.MaxNs != 300 || l.MeanNs != 200 {
		t.Fatalf("merged latency %+v", m.Latency)
	}
}

func TestLanesPlan(t *testing.T) {
	s := NewSpec("write-lat")
	s.Device = "a,b"
	s.Load = &LoadSpec{Test: "send-bw"}
	if err := s.Normalize(); err != nil {
		t.Fatal(err)
	}
	if n := laneCount(&s); n != 4 {
		t.Fatalf("%d lanes, want 4", n)
	}
	ls, err := planLanes(&s, serverEnd, endOptions{device: "x,y"})
	if err != nil || len(ls) != 4 {
		t.Fatalf("plan: %v, %v", ls, err)
	}
	if ls[0].device != "x" || ls[1].device != "y" || ls[0].peer != "a" || ls[2].kind != loadLane || ls[3].device != "y" ||
		ls[2].spec.Test != "send-bw" || !ls[2].spec.openEnded() || ls[0].spec.Load != nil {
		t.Fatalf("lanes %+v", ls)
	}
	if _, err := planLanes(&s, serverEnd, endOptions{device: "x"}); err == nil || !strings.Contains(err.Error(), "--server-dev") {
		t.Fatalf("two client devices, one server device: %v", err)
	}
	one := NewSpec("write-bw")
	one.Device = "a"
	ls, err = planLanes(&one, serverEnd, endOptions{device: "x,y"})
	if err != nil || len(ls) != 1 || ls[0].device != "x" {
		t.Fatalf("one device, a server with two: %+v, %v", ls, err)
	}
}
