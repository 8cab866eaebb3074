//go:build linux && cgo

package workloads

// Every RDMA test, run in loopback on a real device (see internal/testutil:
// inside the Soft-RoCE VM, RDMABENCH_TEST_DEVICE=rxe0 makes a missing device
// a failure). Invariants only: counts, bytes, sizes, directions, histogram
// round trips; never timings.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/report"
)

func loopback(t *testing.T, s Spec) (*endResult, error) {
	t.Helper()
	s.Device = testutil.Device(t)
	testutil.NoLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return runLoopback(ctx, &s, endOptions{})
}

func rdmaSpec(test string, mutate func(*Spec)) Spec {
	s := NewSpec(test)
	s.Iterations = 50
	s.Warmup = ptr(5)
	if mutate != nil {
		mutate(&s)
	}
	if err := s.Normalize(); err != nil {
		panic(err)
	}
	return s
}

func checkRDMALatency(t *testing.T, r report.Result, iters int, basis string) {
	t.Helper()
	l := r.Latency
	if l == nil {
		t.Fatalf("%s %d B: no latency: %+v", r.Test, r.Size, r)
	}
	if l.Count != int64(iters) || r.Iterations != iters || r.Warmup != 5 {
		t.Fatalf("%s %d B: %d samples, %d iterations, %d warm-up; want %d, %d, 5", r.Test, r.Size, l.Count, r.Iterations, r.Warmup, iters, iters)
	}
	if l.Basis != basis {
		t.Fatalf("%s: basis %s, want %s", r.Test, l.Basis, basis)
	}
	if !(l.MinNs > 0 && l.MinNs <= l.P50Ns && l.P50Ns <= l.P99Ns && l.P99Ns <= l.MaxNs && l.MinNs <= l.MeanNs && l.MeanNs <= l.MaxNs) {
		t.Fatalf("%s: statistics out of order: %+v", r.Test, l)
	}
	h, err := l.DecodeHistogram()
	if err != nil {
		t.Fatalf("%s: histogram does not decode: %v", r.Test, err)
	}
	if h.TotalCount() != l.Count {
		t.Fatalf("%s: histogram holds %d samples, statistics %d", r.Test, h.TotalCount(), l.Count)
	}
	if got := float64(h.Max()); math.Abs(got-l.MaxNs) > l.MaxNs/500+1 {
		t.Fatalf("%s: histogram max %.0f ns, statistics max %.0f ns", r.Test, got, l.MaxNs)
	}
}

func checkRDMABandwidth(t *testing.T, r report.Result, b *report.Bandwidth, msgs uint64) {
	t.Helper()
	if b == nil {
		t.Fatalf("%s %d B: no bandwidth: %+v", r.Test, r.Size, r)
	}
	if b.Messages != msgs || b.Bytes != msgs*uint64(r.Size) {
		t.Fatalf("%s %d B: %d messages, %d bytes; want %d and %d", r.Test, r.Size, b.Messages, b.Bytes, msgs, msgs*uint64(r.Size))
	}
	if b.DurationNs <= 0 || b.Gbps <= 0 || b.MiBps <= 0 || b.Mmsgps <= 0 {
		t.Fatalf("%s %d B: implausible figures %+v", r.Test, r.Size, b)
	}
	// The three figures must agree with each other.
	secs := float64(b.DurationNs) / 1e9
	if want := float64(b.Bytes) * 8 / 1e9 / secs; math.Abs(b.Gbps-want) > want*1e-9 {
		t.Fatalf("%s: %.6f Gbit/s, bytes and duration give %.6f", r.Test, b.Gbps, want)
	}
}

func TestEveryTestTwoSizes(t *testing.T) {
	cases := []struct {
		test, conn string
		sizes      []int
	}{
		{"write-lat", "RC", []int{2, 5000}},
		{"write-lat", "UC", []int{2, 5000}},
		{"read-lat", "RC", []int{2, 5000}},
		{"send-lat", "RC", []int{2, 5000}},
		{"send-lat", "UC", []int{2, 5000}},
		{"send-lat", "UD", []int{2, 1024}},
		{"atomic-lat", "RC", []int{8}},
		{"write-bw", "RC", []int{2, 65536}},
		{"write-bw", "UC", []int{2, 65536}},
		{"read-bw", "RC", []int{2, 65536}},
		{"send-bw", "RC", []int{2, 65536}},
		{"send-bw", "UC", []int{2, 4096}},
		{"send-bw", "UD", []int{2, 1024}},
		{"atomic-bw", "RC", []int{8}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s-%s", c.test, c.conn), func(t *testing.T) {
			s := rdmaSpec(c.test, func(s *Spec) { s.Connection, s.Sizes = c.conn, c.sizes })
			res, err := loopback(t, s)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Results) != len(c.sizes) {
				t.Fatalf("%d results for %d sizes", len(res.Results), len(c.sizes))
			}
			for i, r := range res.Results {
				if r.Size != c.sizes[i] || r.Test != c.test || r.Connection != c.conn || r.Error != "" {
					t.Fatalf("result %d: %+v", i, r)
				}
				info := s.Info()
				if info.Metric == Latency {
					checkRDMALatency(t, r, 50, info.Basis)
				} else if c.conn == "RC" {
					checkRDMABandwidth(t, r, r.Bandwidth, 50)
				} else if r.Bandwidth == nil || r.Bandwidth.Messages != 50 {
					// UC and UD do not retransmit: the sender's count holds;
					// what arrived is a warning when short.
					t.Fatalf("%s: sender figures %+v", c.conn, r.Bandwidth)
				}
			}
			if res.Host.Device == nil || res.Host.Device.Name != testutil.Device(t) || res.Peer == nil {
				t.Fatalf("host facts missing: %+v peer %+v", res.Host, res.Peer)
			}
		})
	}
}

func TestAtomicCompareAndSwap(t *testing.T) {
	res, err := loopback(t, rdmaSpec("atomic-lat", func(s *Spec) { s.AtomicType = CmpSwap }))
	if err != nil {
		t.Fatal(err)
	}
	checkRDMALatency(t, res.Results[0], 50, "rtt")
}

func TestSweepHasEverySize(t *testing.T) {
	sizes, err := ParseSizes("2..64K")
	if err != nil {
		t.Fatal(err)
	}
	res, err := loopback(t, rdmaSpec("write-lat", func(s *Spec) { s.Sizes = sizes; s.Iterations = 20 }))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != len(sizes) {
		t.Fatalf("%d results for %d sizes", len(res.Results), len(sizes))
	}
	for i, r := range res.Results {
		if r.Size != sizes[i] || r.Latency == nil || r.Latency.Count != 20 {
			t.Fatalf("size %d: %+v", sizes[i], r)
		}
	}
}

func TestBandwidthManyQPsPostList(t *testing.T) {
	res, err := loopback(t, rdmaSpec("write-bw", func(s *Spec) { s.QPs = 4; s.PostList = 4; s.CQMod = 16; s.Sizes = []int{4096} }))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Results[0]
	checkRDMABandwidth(t, r, r.Bandwidth, 50*4)
}

func TestBidirectional(t *testing.T) {
	for _, test := range []string{"write-bw", "send-bw"} {
		t.Run(test, func(t *testing.T) {
			res, err := loopback(t, rdmaSpec(test, func(s *Spec) { s.Bidirectional = true; s.Sizes = []int{8192} }))
			if err != nil {
				t.Fatal(err)
			}
			r := res.Results[0]
			checkRDMABandwidth(t, r, r.Bandwidth, 50)
			checkRDMABandwidth(t, r, r.Reverse, 50)
			if r.Total == nil || r.Total.Bytes != r.Bandwidth.Bytes+r.Reverse.Bytes {
				t.Fatalf("total %+v is not the sum of %+v and %+v", r.Total, r.Bandwidth, r.Reverse)
			}
		})
	}
}

func TestDurationMode(t *testing.T) {
	for _, test := range []string{"write-bw", "send-lat"} {
		t.Run(test, func(t *testing.T) {
			res, err := loopback(t, rdmaSpec(test, func(s *Spec) {
				s.Iterations = 0
				s.Duration = 400 * time.Millisecond
				s.Interval = 100 * time.Millisecond
			}))
			if err != nil {
				t.Fatal(err)
			}
			r := res.Results[0]
			// The intervals tile the duration: each starts where the previous
			// one ended, and together they cover at least the duration.
			var sum uint64
			var covered float64
			for i, iv := range r.Intervals {
				covered += iv.DurationS
				if i > 0 && math.Abs(iv.StartS-(r.Intervals[i-1].StartS+r.Intervals[i-1].DurationS)) > 1e-3 {
					t.Fatalf("interval %d starts at %.4f s, not where interval %d ended", i, iv.StartS, i-1)
				}
				if test == "write-bw" {
					if iv.Bandwidth == nil || iv.Bandwidth.Messages == 0 {
						t.Fatalf("empty interval %+v", iv)
					}
					sum += iv.Bandwidth.Messages
				} else {
					if iv.Latency == nil || iv.Latency.Count == 0 {
						t.Fatalf("empty interval %+v", iv)
					}
					sum += uint64(iv.Latency.Count)
				}
			}
			if len(r.Intervals) == 0 || covered < 0.4-1e-3 {
				t.Fatalf("%d intervals cover %.3f s of a 0.4 s run", len(r.Intervals), covered)
			}
			if test == "write-bw" {
				// The last interval ends at the last completion: the
				// intervals hold every message.
				if r.Bandwidth.Messages != sum {
					t.Fatalf("total %d messages, intervals %d", r.Bandwidth.Messages, sum)
				}
			} else if uint64(r.Latency.Count) != sum {
				t.Fatalf("total %d samples, intervals %d", r.Latency.Count, sum)
			}
		})
	}
}

func TestEventDrivenCompletion(t *testing.T) {
	res, err := loopback(t, rdmaSpec("send-lat", func(s *Spec) { s.Events = true }))
	if err != nil {
		t.Fatal(err)
	}
	checkRDMALatency(t, res.Results[0], 50, "rtt_half")
}

func TestUDOverPathMTU(t *testing.T) {
	res, err := loopback(t, rdmaSpec("send-lat", func(s *Spec) { s.Connection = "UD"; s.Sizes = []int{64, 4096} }))
	if err == nil || !strings.Contains(err.Error(), "UD send is limited to the path MTU") {
		t.Fatalf("UD over the MTU: %v", err)
	}
	// The size before it keeps its result; the failing one records the error.
	if res == nil || len(res.Results) != 2 || res.Results[0].Latency == nil || res.Results[1].Error == "" {
		t.Fatalf("results %+v", res)
	}
}

func TestMissingDeviceAndGID(t *testing.T) {
	testutil.Device(t)
	testutil.NoLeaks(t)
	ctx := context.Background()
	s := rdmaSpec("write-lat", func(s *Spec) { s.Device = "mlx5_9" })
	_, err := runLoopback(ctx, &s, endOptions{})
	if err == nil || !strings.Contains(err.Error(), `"mlx5_9"`) || !strings.Contains(err.Error(), "this host has") {
		t.Fatalf("missing device: %v", err)
	}
	s = rdmaSpec("write-lat", func(s *Spec) { s.GIDIndex = ptr(42) })
	s.Device = testutil.Device(t)
	_, err = runLoopback(ctx, &s, endOptions{})
	if err == nil || !strings.Contains(err.Error(), "GID index 42 does not exist") {
		t.Fatalf("missing GID index: %v", err)
	}
}

func TestMaxMem(t *testing.T) {
	s := rdmaSpec("write-bw", func(s *Spec) { s.Sizes = []int{1 << 20} })
	s.Device = testutil.Device(t)
	testutil.NoLeaks(t)
	_, err := runLoopback(context.Background(), &s, endOptions{maxMem: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "--max-mem") {
		t.Fatalf("over --max-mem: %v", err)
	}
}

// TestCancel: a cancelled run stops promptly, frees everything, and says why.
func TestCancel(t *testing.T) {
	s := rdmaSpec("write-lat", func(s *Spec) { s.Iterations = 0; s.Duration = time.Minute })
	s.Device = testutil.Device(t)
	testutil.NoLeaks(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err := runLoopback(ctx, &s, endOptions{})
	if !errors.Is(err, context.Canceled) && !strings.Contains(fmt.Sprint(err), "canceled") && !strings.Contains(fmt.Sprint(err), "aborted") {
		t.Fatalf("cancelled run: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("cancelled run took %s to stop", d)
	}
}

// TestEffectiveValues: every result records what reached the device, not
// the flags: the queue depths each QP was made with, the signalling, the
// inline size granted, the path MTU agreed and the outstanding reads.
func TestEffectiveValues(t *testing.T) {
	dev := testutil.Device(t)
	cases := []struct {
		test   string
		mutate func(*Spec)
		want   func(e report.Effective, mtu int) string // "" when right
	}{
		{"write-lat", func(s *Spec) { s.TxDepth = 4 }, func(e report.Effective, mtu int) string {
			if e.TxDepth != 4 || e.CQMod != 1 || e.RxDepth != 0 || e.PostList != 0 || e.PathMTU != mtu || !e.Inline || e.InlineMax < DefaultInlineWrite {
				return "want tx-depth 4, every operation signalled, no receive queue, 2 B inline, the path MTU"
			}
			return ""
		}},
		{"send-bw", func(s *Spec) { s.RxDepth = 64; s.CQMod = 8; s.PostList = 2 }, func(e report.Effective, mtu int) string {
			if e.TxDepth != DefaultTxDepth || e.RxDepth != 64 || e.CQMod != 8 || e.PostList != 2 || e.Inline || e.PathMTU != mtu {
				return "want tx-depth 128, rx-depth 64, cq-mod 8, post list 2, nothing inline"
			}
			return ""
		}},
		{"read-lat", nil, func(e report.Effective, mtu int) string {
			if e.TxDepth != 1 || e.MaxRdAtomic < 1 || e.InlineMax != 0 || e.Inline || e.RxDepth != 0 {
				return "want tx-depth 1, outstanding reads recorded, no inline"
			}
			return ""
		}},
		{"atomic-bw", func(s *Spec) { s.AtomicType = CmpSwap }, func(e report.Effective, mtu int) string {
			if e.AtomicType != CmpSwap || e.MaxRdAtomic < 1 || e.CQMod != DefaultCQMod {
				return "want CMP_AND_SWAP, outstanding atomics recorded, cq-mod 100"
			}
			return ""
		}},
	}
	for _, c := range cases {
		t.Run(c.test, func(t *testing.T) {
			res, err := loopback(t, rdmaSpec(c.test, c.mutate))
			if err != nil {
				t.Fatal(err)
			}
			r := res.Results[0]
			mtu := res.Host.Device.ActiveMTU
			if r.Effective == nil || r.Clock == "" {
				t.Fatalf("no effective values or clock: %+v", r)
			}
			if msg := c.want(*r.Effective, mtu); msg != "" {
				t.Errorf("%s on %s: %+v: %s", c.test, dev, *r.Effective, msg)
			}
		})
	}
}

// TestTxDepthReachesTheQP: -t sizes the send queue of a latency test's QP,
// as the device reports it back.
func TestTxDepthReachesTheQP(t *testing.T) {
	s := rdmaSpec("write-lat", func(s *Spec) { s.TxDepth = 4 })
	testutil.NoLeaks(t)
	e := newRDMA(&s, clientEnd, endOptions{device: testutil.Device(t)}).(*rdmaRunner)
	defer e.close()
	if _, _, err := e.open(context.Background()); err != nil {
		t.Fatal(err)
	}
	caps, err := e.qps[0].QueryCaps()
	if err != nil {
		t.Fatal(err)
	}
	if caps.MaxSendWR < 4 || e.qps[0].Caps().MaxSendWR < 4 {
		t.Fatalf("the QP's send queue holds %d (created %d), want at least 4", caps.MaxSendWR, e.qps[0].Caps().MaxSendWR)
	}
	if eff := e.effective(2); eff.TxDepth != 4 {
		t.Fatalf("recorded tx-depth %d, want 4", eff.TxDepth)
	}
	t.Logf("write-lat -t 4: the device made a send queue of %d", caps.MaxSendWR)
}

// TestPrecisionMode: rounds until the cap (the target cannot be met),
// each an interval and nothing else (what a stream reaps after its last
// round is sent, not measured), every measured operation in a round; the
// SEND receiver, which cannot know the count beforehand, gets every
// message.
func TestPrecisionMode(t *testing.T) {
	for _, test := range []string{"write-lat", "read-lat", "write-bw", "send-bw"} {
		t.Run(test, func(t *testing.T) {
			res, err := loopback(t, rdmaSpec(test, func(s *Spec) {
				s.Iterations = 0
				s.Precision = 1e-9
				s.PrecisionCap = 500 * time.Millisecond
			}))
			if err != nil {
				t.Fatal(err)
			}
			r := res.Results[0]
			p := r.Precision
			if p == nil {
				t.Fatalf("no precision recorded: %+v", r)
			}
			if p.Met || p.Rounds < 1 || len(r.Intervals) != p.Rounds {
				t.Fatalf("precision %+v, %d intervals", p, len(r.Intervals))
			}
			var sum uint64
			for _, iv := range r.Intervals {
				if iv.Latency != nil {
					sum += uint64(iv.Latency.Count)
				} else {
					sum += iv.Bandwidth.Messages
				}
			}
			if r.Latency != nil && sum != uint64(r.Latency.Count) || r.Bandwidth != nil && sum != r.Bandwidth.Messages {
				t.Fatalf("rounds hold %d, the result %+v %+v", sum, r.Latency, r.Bandwidth)
			}
		})
	}
}

// checkPeak checks a one-way figure's BW peak: measured, and never below
// the figure's own average (the whole run is one of its stretches).
func checkPeak(t *testing.T, what string, b *report.Bandwidth) {
	t.Helper()
	if b == nil || !(b.PeakGbps >= b.Gbps) || math.IsInf(b.PeakGbps, 0) {
		t.Fatalf("%s: peak of %+v is not at least its average", what, b)
	}
}

// perftest's BW peak: a stream whose loop notes checkpoints (at least
// 10 µs apart, thinned past 256) sends every message it was asked to, and
// its peak is at least its average: in iterations mode, in duration mode,
// per direction of -b; a sum has none, nor has an interval.
func TestBandwidthPeak(t *testing.T) {
	res, err := loopback(t, rdmaSpec("write-bw", func(s *Spec) { s.Iterations = 3000; s.QPs = 2; s.CQMod = 10; s.Sizes = []int{2, 4096} }))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Results {
		checkRDMABandwidth(t, r, r.Bandwidth, 3000*2)
		checkPeak(t, fmt.Sprintf("write-bw %d B", r.Size), r.Bandwidth)
	}
	res, err = loopback(t, rdmaSpec("send-bw", func(s *Spec) { s.Bidirectional = true; s.Iterations = 1000; s.Sizes = []int{8192} }))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Results[0]
	checkRDMABandwidth(t, r, r.Bandwidth, 1000)
	checkPeak(t, "send-bw ->", r.Bandwidth)
	checkPeak(t, "send-bw <-", r.Reverse)
	if r.Total == nil || r.Total.PeakGbps != 0 {
		t.Fatalf("the sum of both directions has a peak: %+v", r.Total)
	}
	res, err = loopback(t, rdmaSpec("read-bw", func(s *Spec) {
		s.Iterations = 0
		s.Duration = 400 * time.Millisecond
		s.Interval = 100 * time.Millisecond
	}))
	if err != nil {
		t.Fatal(err)
	}
	checkPeak(t, "read-bw -D", res.Results[0].Bandwidth)
	for _, iv := range res.Results[0].Intervals {
		if iv.Bandwidth == nil || iv.Bandwidth.PeakGbps != 0 {
			t.Fatalf("an interval has a peak: %+v", iv.Bandwidth)
		}
	}
}
