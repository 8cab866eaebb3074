//go:build linux && cgo

package workloads

// The fabric settings on a real device, in loopback: loop threads
// (--threads), pacing (--rate-limit), CPU placement (--cpu). Invariants
// only; the pacing test bounds the rate from above, which noise cannot
// break (a loaded machine only makes a run slower).

import (
	"errors"
	"slices"
	"strings"
	"testing"

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
// rate measured stays within 10% above it. Pacing lets a QP post its m-th
// measured message no sooner than m-1-B intervals after its first, where
// B is what it may catch up after falling behind (10 ms of its schedule
// here: 20 messages at 2000/s, one at the bandwidths), so the measured
// span holds at least n-1-B intervals whatever the machine's noise: at
// most 5.5% over with these counts. A noisy machine may only fall below
// the limit, which the test does not bound.
func TestRateLimit(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Spec)
		check  func(b *report.Bandwidth) (float64, float64) // measured, limit
	}{
		{"bandwidth", func(s *Spec) { s.Sizes, s.Iterations, s.RateGbps = []int{65536}, 200, 0.1 },
			func(b *report.Bandwidth) (float64, float64) { return b.Gbps, 0.1 }},
		{"two-qps", func(s *Spec) { s.Sizes, s.Iterations, s.QPs, s.RateGbps = []int{16384}, 200, 2, 0.05 },
			func(b *report.Bandwidth) (float64, float64) { return b.Gbps, 0.05 }},
		{"message-rate", func(s *Spec) { s.Sizes, s.Iterations, s.RateMsgs = []int{2}, 400, 2000 },
			func(b *report.Bandwidth) (float64, float64) { return b.Mmsgps * 1e6, 2000 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
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
			t.Logf("limit %g, measured %g (%.1f%%)", limit, got, 100*got/limit)
		})
	}
}

// TestRateLimiterHW: the device's rate limiter where it has one; on
// Soft-RoCE, which has none, a clear refusal before anything runs.
func TestRateLimiterHW(t *testing.T) {
	s := rdmaSpec("write-bw", func(s *Spec) { s.Sizes, s.RateGbps, s.RateLimiter = []int{65536}, 0.1, LimiterHW })
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
