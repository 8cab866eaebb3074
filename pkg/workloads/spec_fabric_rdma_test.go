//go:build linux && cgo

package workloads

// The fabric settings on a real device, in loopback: loop threads
// (--threads), pacing (--rate-limit), CPU placement (--cpu). Invariants
// only; the pacing test bounds the rate from above, which noise cannot
// break (a loaded machine only makes a run slower).

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// TestThreads: -q 4 --threads 2 runs two loop threads per end, each
// driving two QPs on its own CQs; every message is counted once, in its
// thread and in the total.
func TestThreads(t *testing.T) {
	cases := []struct {
		test  string
		bidir bool
		sizes []int
	}{
		{"write-bw", false, []int{2, 65536}},
		{"send-bw", false, []int{2, 4096}},
		{"write-bw", true, []int{4096}},
		{"read-bw", false, []int{4096}},
	}
	for _, c := range cases {
		name := c.test
		if c.bidir {
			name += "-bidirectional"
		}
		t.Run(name, func(t *testing.T) {
			res, err := loopback(t, rdmaSpec(c.test, func(s *Spec) {
				s.QPs, s.Threads, s.Sizes, s.Bidirectional = 4, 2, c.sizes, c.bidir
			}))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res.Results {
				checkRDMABandwidth(t, r, r.Bandwidth, 50*4)
				if r.Effective == nil || r.Effective.Threads != 2 {
					t.Fatalf("effective %+v: want threads 2", r.Effective)
				}
				ends := []string{"client"}
				if c.bidir {
					checkRDMABandwidth(t, r, r.Reverse, 50*4)
					ends = append(ends, "server")
				}
				if len(r.Threads) != 2*len(ends) {
					t.Fatalf("%d threads recorded, want %d: %+v", len(r.Threads), 2*len(ends), r.Threads)
				}
				sums := map[string]uint64{}
				for _, th := range r.Threads {
					want := []int{0, 1}
					if th.Index == 1 {
						want = []int{2, 3}
					}
					if !slices.Equal(th.QPs, want) || th.Bandwidth == nil || th.Bandwidth.Messages != 50*2 || th.Bandwidth.Bytes != 50*2*uint64(r.Size) {
						t.Fatalf("thread %+v (bandwidth %+v): want QPs %v, 100 messages", th, th.Bandwidth, want)
					}
					sums[th.End] += th.Bandwidth.Messages
				}
				for _, end := range ends {
					if sums[end] != 50*4 {
						t.Fatalf("the %s's threads sent %d messages, want 200", end, sums[end])
					}
				}
			}
		})
	}
}

// TestThreadsDuration: in duration mode each receiver thread waits for
// exactly what the sender's thread sent, though the counts differ.
func TestThreadsDuration(t *testing.T) {
	res, err := loopback(t, rdmaSpec("send-bw", func(s *Spec) {
		s.QPs, s.Threads, s.Sizes, s.Iterations = 3, 2, []int{1024}, 0
		s.Duration, s.Interval = 300e6, 100e6
	}))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Results[0]
	var sum uint64
	for _, th := range r.Threads {
		sum += th.Bandwidth.Messages
	}
	if len(r.Threads) != 2 || sum != r.Bandwidth.Messages || sum == 0 {
		t.Fatalf("threads %+v hold %d messages, the total %d", r.Threads, sum, r.Bandwidth.Messages)
	}
	if got := [][]int{r.Threads[0].QPs, r.Threads[1].QPs}; !slices.Equal(got[0], []int{0, 1}) || !slices.Equal(got[1], []int{2}) {
		t.Fatalf("3 QPs over 2 threads: %v, want [0 1] and [2]", got)
	}
}

// TestRateLimit: with a limit far below what the device does here, the
// rate measured lands within 10% of it. Above: each QP's schedule starts
// with its first measured message and no message is posted before its time
// in it (catching up after a stall only recovers lost time), so the n
// messages of a QP span at least n-1 intervals whatever the machine's
// noise: at most 1% over the limit with these counts, asserted of every
// run. Below: a busy machine can only slow a run down (a stall of more than
// 100 ms is forgiven, not caught up), so a run that falls more than 10%
// short is run again, up to five times, and one of them must land within
// 10%.
func TestRateLimit(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Spec)
		check  func(b *report.Bandwidth) (float64, float64) // measured, limit
	}{
		{"bandwidth", func(s *Spec) { s.Sizes, s.Iterations, s.RateLimitGbps = []int{65536}, 100, 0.1 },
			func(b *report.Bandwidth) (float64, float64) { return b.Gbps, 0.1 }},
		{"two-qps", func(s *Spec) { s.Sizes, s.Iterations, s.QPs, s.RateLimitGbps = []int{16384}, 100, 2, 0.05 },
			func(b *report.Bandwidth) (float64, float64) { return b.Gbps, 0.05 }},
		{"message-rate", func(s *Spec) { s.Sizes, s.Iterations, s.RateLimitMsgs = []int{2}, 400, 2000 },
			func(b *report.Bandwidth) (float64, float64) { return b.Mmsgps * 1e6, 2000 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const attempts = 5
			for a := 1; ; a++ {
				s := rdmaSpec("write-bw", c.mutate)
				res, err := loopback(t, s)
				if err != nil {
					t.Fatal(err)
				}
				r := res.Results[0]
				checkRDMABandwidth(t, r, r.Bandwidth, uint64(s.Iterations*s.QPs))
				got, limit := c.check(r.Bandwidth)
				if got > 1.1*limit {
					t.Fatalf("measured %g, more than 10%% over the limit %g", got, limit)
				}
				if e := r.Effective; e == nil || e.RateLimiter != LimiterSW || e.RateLimitGbps <= 0 {
					t.Fatalf("effective %+v: want the limit and its limiter recorded", e)
				}
				t.Logf("run %d: limit %g, measured %g (%.1f%%)", a, limit, got, 100*got/limit)
				if got >= 0.9*limit {
					return
				}
				if a == attempts {
					t.Fatalf("%d runs all more than 10%% below the limit %g", attempts, limit)
				}
			}
		})
	}
}

// TestRateLimiterHW: the device's rate limiter where it has one; on
// Soft-RoCE, which has none, a clear refusal before anything runs.
func TestRateLimiterHW(t *testing.T) {
	s := rdmaSpec("write-bw", func(s *Spec) { s.Sizes, s.RateLimitGbps, s.RateLimiter = []int{65536}, 0.1, LimiterHW })
	res, err := loopback(t, s)
	if err != nil {
		if !errors.Is(err, verbs.ErrNotSupported) && !strings.Contains(err.Error(), "--rate-limiter hw") {
			t.Fatalf("refused without saying why: %v", err)
		}
		t.Logf("refused: %v", err)
		return
	}
	r := res.Results[0]
	if r.Effective.RateLimiter != LimiterHW || r.Bandwidth.Gbps > 0.11 {
		t.Fatalf("hw limit 0.1 Gbit/s: %+v, %+v", r.Effective, r.Bandwidth)
	}
}

// TestPlacement: --cpu and --server-cpu pin each end's loop threads, as
// the result records and as where they were seen running proves; without
// them, a device with no NUMA node (Soft-RoCE) leaves them unpinned and
// says why.
func TestPlacement(t *testing.T) {
	allowed := allowedCPUs()
	if len(allowed) < 2 {
		t.Skipf("needs two cores, this process may use %v", allowed)
	}
	a, b := allowed[0], allowed[len(allowed)-1]
	for _, test := range []string{"write-lat", "send-bw"} {
		t.Run(test, func(t *testing.T) {
			res, err := loopback(t, rdmaSpec(test, func(s *Spec) { s.CPUs, s.ServerCPUs = []int{a}, []int{b} }))
			if err != nil {
				t.Fatal(err)
			}
			p := res.Results[0].Placement
			if p == nil || p.Client == nil || p.Server == nil {
				t.Fatalf("placement %+v", p)
			}
			for _, c := range []struct {
				e    *report.EndPlacement
				core int
			}{{p.Client, a}, {p.Server, b}} {
				if c.e.Policy != report.PlaceCPUList || !slices.Equal(c.e.CPUs, []int{c.core}) {
					t.Fatalf("placement %+v, want pinned to %d", c.e, c.core)
				}
				if len(c.e.Used) == 0 || slices.ContainsFunc(c.e.Used, func(u int) bool { return u != c.core }) {
					t.Fatalf("threads pinned to %d ran on %v", c.core, c.e.Used)
				}
			}
		})
	}
	t.Run("default", func(t *testing.T) {
		res, err := loopback(t, rdmaSpec("write-lat", nil))
		if err != nil {
			t.Fatal(err)
		}
		p := res.Results[0].Placement
		if p == nil || p.Client == nil || p.Server == nil {
			t.Fatalf("placement %+v", p)
		}
		node, _ := numaNode(res.Host.Device.Name)
		switch c := p.Client; {
		case node < 0 && (c.Policy != report.PlaceNone || c.Note == "" || c.CPUs != nil):
			t.Fatalf("no NUMA node: %+v, want none with a note", c)
		case node >= 0 && (c.Policy != report.PlaceNUMA || c.NUMANode == nil || *c.NUMANode != node):
			t.Fatalf("NUMA node %d: %+v", node, c)
		}
		t.Logf("%s: %+v", res.Host.Device.Name, *p.Client)
	})
}

// onDevices runs s in loopback on devices at once.
func onDevices(t *testing.T, s Spec, devices []string) (*endResult, error) {
	t.Helper()
	testutil.NoLeaks(t)
	s.Device = strings.Join(devices, ",")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var hosts []report.Host
	res, err := runLoopback(ctx, &s, endOptions{onHosts: func(l report.Host, _ *report.Host) { hosts = append(hosts, l) }})
	if err == nil && (len(hosts) != 1 || len(hosts[0].Devices) != len(devices)) {
		t.Fatalf("hosts told %d times: %+v; want once, with %d devices", len(hosts), hosts, len(devices))
	}
	return res, err
}

// TestTwoDevices: -d A,B runs the test on both devices at once, each in
// loopback with itself; each size is one result whose figures are the sum
// of the devices' (bandwidth) or all their samples (latency), each
// device's own under devices.
func TestTwoDevices(t *testing.T) {
	devs := testutil.Devices(t, 2)
	for _, c := range []struct {
		test   string
		mutate func(*Spec)
	}{
		{"write-bw", func(s *Spec) { s.Sizes = []int{2, 65536} }},
		{"send-bw", func(s *Spec) { s.QPs, s.Threads = 2, 2 }},
		{"write-lat", nil},
		{"read-lat", func(s *Spec) { s.Sizes = []int{2, 4096} }},
	} {
		t.Run(c.test, func(t *testing.T) {
			s := rdmaSpec(c.test, c.mutate)
			res, err := onDevices(t, s, devs)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Results) != len(s.Sizes) {
				t.Fatalf("%d results for %d sizes", len(res.Results), len(s.Sizes))
			}
			for _, r := range res.Results {
				if r.Error != "" || len(r.Devices) != 2 {
					t.Fatalf("result %+v", r)
				}
				for i, d := range r.Devices {
					if d.Device != devs[i] || d.ServerDevice != devs[i] || d.Error != "" {
						t.Fatalf("device %d: %+v, want %s paired with itself", i, d, devs[i])
					}
				}
				a, b := r.Devices[0], r.Devices[1]
				if s.Info().Metric == Bandwidth {
					perDev := uint64(50 * s.QPs)
					checkRDMABandwidth(t, r, a.Bandwidth, perDev)
					checkRDMABandwidth(t, r, b.Bandwidth, perDev)
					// The rates add, as the two directions of -b do.
					if tot := r.Bandwidth; tot.Messages != 2*perDev || tot.Bytes != 2*perDev*uint64(r.Size) {
						t.Fatalf("total %+v: want %d messages", tot, 2*perDev)
					}
					if sum := a.Bandwidth.Gbps + b.Bandwidth.Gbps; math.Abs(r.Bandwidth.Gbps-sum) > 1e-9*sum {
						t.Fatalf("total %g Gbit/s, the devices' sum %g", r.Bandwidth.Gbps, sum)
					}
					continue
				}
				checkRDMALatency(t, report.Result{Test: r.Test, Size: r.Size, Iterations: 50, Warmup: 5, Latency: a.Latency}, 50, s.Info().Basis)
				checkRDMALatency(t, report.Result{Test: r.Test, Size: r.Size, Iterations: 100, Warmup: 5, Latency: r.Latency}, 100, s.Info().Basis)
				if r.Latency.MinNs != math.Min(a.Latency.MinNs, b.Latency.MinNs) || r.Latency.MaxNs != math.Max(a.Latency.MaxNs, b.Latency.MaxNs) {
					t.Fatalf("merged min/max %g/%g, devices %g/%g and %g/%g", r.Latency.MinNs, r.Latency.MaxNs,
						a.Latency.MinNs, a.Latency.MaxNs, b.Latency.MinNs, b.Latency.MaxNs)
				}
			}
		})
	}
	t.Run("unpaired", func(t *testing.T) {
		s := rdmaSpec("write-bw", func(s *Spec) { s.ServerDevice = devs[0] })
		_, err := onDevices(t, s, devs)
		if err == nil || !strings.Contains(err.Error(), "pair") {
			t.Fatalf("two client devices, one server device: %v", err)
		}
	})
}

// TestLoad: a latency test under a load runs the load's bandwidth test on
// QPs of its own between the same ends while each size's latency is
// measured, and records what the load moved meanwhile. A result records a
// load only when the load was streaming (past its warm-up, whose messages
// all completed) both when the size's measured samples began and when
// they ended; how much it moved in between depends on the machine (on a
// VM with fewer cores than busy-polling threads, it may be nothing).
func TestLoad(t *testing.T) {
	for _, c := range []struct {
		test, load string
		size       int
		cm         bool // the load connects with rdma_cm too, in the same traffic class
	}{{"write-lat", "write-bw", 1024, false}, {"send-lat", "send-bw", 2, false}, {"write-lat", "write-bw", 2, true}} {
		name := c.test + "+" + c.load
		if c.cm {
			name += "-R"
		}
		t.Run(name, func(t *testing.T) {
			s := rdmaSpec(c.test, func(s *Spec) {
				s.Iterations, s.Sizes = 100, []int{c.size}
				s.Load = &LoadSpec{Test: c.load, QPs: 2, Size: 16384}
				if c.cm {
					s.RDMACM, s.TClass = true, ptr(0x68)
				}
			})
			res, err := loopback(t, s)
			if err != nil {
				t.Fatal(err)
			}
			r := res.Results[0]
			checkRDMALatency(t, r, 100, s.Info().Basis)
			l := r.Load
			if l == nil || l.Test != c.load || l.Size != 16384 || l.QPs != 2 || l.Connection != "RC" {
				t.Fatalf("load %+v", l)
			}
			if b := l.Bandwidth; b == nil || b.Bytes != b.Messages*16384 || b.DurationNs <= 0 {
				t.Fatalf("load bandwidth %+v", b)
			}
			t.Logf("%d B: p50 %.1f us under %.3f Gbit/s of %s", r.Size, r.Latency.P50Ns/1e3, l.Bandwidth.Gbps, c.load)
		})
	}
	t.Run("refused", func(t *testing.T) {
		s := NewSpec("write-lat")
		s.Load = &LoadSpec{Test: "write-lat"}
		if err := s.Normalize(); err == nil || !strings.Contains(err.Error(), "bandwidth test") {
			t.Fatalf("a latency test as the load: %v", err)
		}
	})
}
