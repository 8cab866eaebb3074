package workloads

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// These tests run both ends of the TCP baseline over loopback. They check
// invariants (counts, bytes, order, error propagation), never timings: the
// only time bounds are hang guards, far above what a working run takes.

const tcpHangGuard = 30 * time.Second

func tcpTestSpec(test string, sizes []int, iters, warmup int) Spec {
	s := NewSpec(test)
	s.Sizes = sizes
	s.Iterations = iters
	s.Warmup = ptr(warmup)
	return s
}

func tcpLoopback(t *testing.T, spec Spec, opt endOptions) *endResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), tcpHangGuard)
	defer cancel()
	res, err := runLoopback(ctx, &spec, opt)
	if err != nil {
		t.Fatalf("runLoopback(%s): %v", spec.Test, err)
	}
	if len(res.Results) != len(spec.Sizes) {
		t.Fatalf("%d results for %d sizes", len(res.Results), len(spec.Sizes))
	}
	for i, r := range res.Results {
		if r.Size != spec.Sizes[i] || r.Test != spec.Test || r.Connection != "TCP" || r.Error != "" {
			t.Errorf("result %d: test %q size %d connection %q error %q; want %s, %d B, TCP, no error",
				i, r.Test, r.Size, r.Connection, r.Error, spec.Test, spec.Sizes[i])
		}
	}
	if res.Peer == nil || res.Peer.Hostname != res.Host.Hostname {
		t.Errorf("peer host %+v, want this host %+v", res.Peer, res.Host)
	}
	return res
}

func checkTCPLatency(t *testing.T, l *report.Latency, count int64) {
	t.Helper()
	if l == nil {
		t.Fatal("no latency")
	}
	if l.Basis != report.BasisRTTHalf || l.Count != count {
		t.Errorf("latency basis %q count %d, want %q %d", l.Basis, l.Count, report.BasisRTTHalf, count)
	}
	if !(l.MinNs > 0 && l.MinNs <= l.P50Ns && l.P50Ns <= l.MaxNs) {
		t.Errorf("latency min %v p50 %v max %v: want 0 < min <= p50 <= max", l.MinNs, l.P50Ns, l.MaxNs)
	}
	h, err := l.DecodeHistogram()
	if err != nil {
		t.Fatal(err)
	}
	// The histogram holds ceil(rtt/2), within its 3 significant digits.
	if h.TotalCount() != count || !h.ValuesAreEquivalent(h.Max(), int64(math.Ceil(l.MaxNs))) {
		t.Errorf("histogram count %d max %d; want %d and %v", h.TotalCount(), h.Max(), count, l.MaxNs)
	}
}

func TestTCPLatency(t *testing.T) {
	spec := tcpTestSpec("tcp-lat", []int{2, 4096}, 50, 5)
	res := tcpLoopback(t, spec, endOptions{})
	for _, r := range res.Results {
		if r.Iterations != 50 || r.Warmup != 5 {
			t.Errorf("%d B: iterations %d warm-up %d, want 50 and 5", r.Size, r.Iterations, r.Warmup)
		}
		checkTCPLatency(t, r.Latency, 50)
		t.Logf("%s %d B: one-way p50 %.2f us, min %.2f us, max %.2f us", r.Test, r.Size, r.Latency.P50Ns/1e3, r.Latency.MinNs/1e3, r.Latency.MaxNs/1e3)
		if r.Bandwidth != nil || r.Intervals != nil {
			t.Errorf("%d B: bandwidth or intervals in a latency test", r.Size)
		}
		// A TCP result records TCP's settings and the clock it was timed
		// with, and none of RDMA's.
		if e := r.Effective; e == nil || e.Connections != 1 || !e.NoDelay || e.SendBuf <= 0 || e.RecvBuf <= 0 || e.TxDepth != 0 || e.CQMod != 0 || r.Clock != "go" {
			t.Errorf("%d B: settings %+v, clock %q; want one TCP_NODELAY connection with its socket buffers, timed by Go's clock", r.Size, e, r.Clock)
		}
	}
}

func TestTCPBandwidth(t *testing.T) {
	const size, iters = 65536, 200
	spec := tcpTestSpec("tcp-bw", []int{size}, iters, 10)
	r := tcpLoopback(t, spec, endOptions{}).Results[0]
	b := r.Bandwidth
	if b == nil {
		t.Fatal("no bandwidth")
	}
	if b.Bytes != size*iters || b.Messages != iters || r.Iterations != iters || r.Warmup != 10 {
		t.Errorf("bytes %d messages %d iterations %d warm-up %d; want %d, %d, %d, 10",
			b.Bytes, b.Messages, r.Iterations, r.Warmup, size*iters, iters, iters)
	}
	if b.DurationNs <= 0 || b.Gbps <= 0 {
		t.Errorf("duration %d ns, %v Gbit/s: want positive", b.DurationNs, b.Gbps)
	}
	if b.PeakGbps != 0 {
		t.Errorf("a TCP stream, timed as a whole, has a BW peak: %v Gbit/s", b.PeakGbps)
	}
	t.Logf("%s %d B: %.2f Gbit/s, %.0f MiB/s", r.Test, r.Size, b.Gbps, b.MiBps)
	if r.Latency != nil || r.Reverse != nil || r.Total != nil {
		t.Error("latency or reverse figures in a unidirectional bandwidth test")
	}
}

// TestTCPSweep runs odd sizes, a 1-byte message (the whole message is the
// marker) and one of several MiB, which takes many system calls.
func TestTCPSweep(t *testing.T) {
	sizes := []int{1, 2, 3, 1000, 65536, 1 << 20, 4<<20 + 12345}
	for _, test := range []string{"tcp-lat", "tcp-bw"} {
		t.Run(test, func(t *testing.T) {
			var mu sync.Mutex
			var done []int
			opt := endOptions{progress: func(p Progress) {
				mu.Lock()
				defer mu.Unlock()
				if p.Done {
					done = append(done, p.Size)
				}
			}}
			spec := tcpTestSpec(test, sizes, 5, 2)
			res := tcpLoopback(t, spec, opt)
			for _, r := range res.Results {
				if test == "tcp-lat" {
					checkTCPLatency(t, r.Latency, 5)
				} else if r.Bandwidth == nil || r.Bandwidth.Bytes != uint64(5*r.Size) || r.Bandwidth.Messages != 5 {
					t.Errorf("%d B: bandwidth %+v, want %d bytes in 5 messages", r.Size, r.Bandwidth, 5*r.Size)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(done) != len(sizes) {
				t.Fatalf("progress reported sizes %v, want %v", done, sizes)
			}
			for i := range sizes {
				if done[i] != sizes[i] {
					t.Errorf("progress reported sizes %v, want %v", done, sizes)
				}
			}
		})
	}
}

func TestTCPDuration(t *testing.T) {
	for _, test := range []string{"tcp-lat", "tcp-bw"} {
		t.Run(test, func(t *testing.T) {
			spec := tcpTestSpec(test, []int{64}, 0, 5)
			spec.Duration = 300 * time.Millisecond
			spec.Interval = 100 * time.Millisecond
			var mu sync.Mutex
			var progress []report.Interval
			opt := endOptions{progress: func(p Progress) {
				mu.Lock()
				defer mu.Unlock()
				if p.Interval != nil {
					progress = append(progress, *p.Interval)
				}
			}}
			r := tcpLoopback(t, spec, opt).Results[0]
			if r.DurationS != 0.3 || r.Warmup != 5 {
				t.Errorf("duration %v s, warm-up %d; want 0.3 and 5", r.DurationS, r.Warmup)
			}
			// A 300 ms run in 100 ms intervals: the intervals close at the
			// first operation past each boundary and the last one runs to
			// the end, so they tile the run: each starts where the previous one
			// ended, and together they cover at least the 300 ms (how many
			// there are depends on how slow one operation is here).
			var covered float64
			for k, iv := range r.Intervals {
				covered += iv.DurationS
				if k > 0 && math.Abs(iv.StartS-(r.Intervals[k-1].StartS+r.Intervals[k-1].DurationS)) > 1e-3 {
					t.Errorf("interval %d starts at %.4f s, not where interval %d ended", k, iv.StartS, k-1)
				}
			}
			if len(r.Intervals) == 0 || covered < 0.3-1e-3 {
				t.Fatalf("%d intervals cover %.3f s of a 0.3 s run", len(r.Intervals), covered)
			}
			mu.Lock()
			if len(progress) != len(r.Intervals) {
				t.Errorf("%d intervals reported as progress, %d in the result", len(progress), len(r.Intervals))
			}
			mu.Unlock()
			// The intervals partition the measured period: every sample
			// (latency) or message (bandwidth) is in exactly one.
			var sum, msgs uint64
			var count int64
			for k, iv := range r.Intervals {
				if iv.DurationS <= 0 || (k > 0 && iv.StartS <= r.Intervals[k-1].StartS) {
					t.Errorf("interval %d: start %v s, duration %v s", k, iv.StartS, iv.DurationS)
				}
				if test == "tcp-lat" {
					if iv.Latency == nil || iv.Latency.Count <= 0 {
						t.Fatalf("interval %d: latency %+v, want samples", k, iv.Latency)
					}
					count += iv.Latency.Count
					continue
				}
				if iv.Bandwidth == nil || iv.Bandwidth.Bytes == 0 {
					t.Fatalf("interval %d: bandwidth %+v, want bytes", k, iv.Bandwidth)
				}
				sum += iv.Bandwidth.Bytes
				msgs += iv.Bandwidth.Messages
			}
			if test == "tcp-lat" {
				checkTCPLatency(t, r.Latency, count)
				if r.Iterations != int(count) {
					t.Errorf("iterations %d, intervals hold %d samples", r.Iterations, count)
				}
				return
			}
			b := r.Bandwidth
			if b == nil || b.Bytes != sum || b.Messages != msgs || b.Bytes != 64*b.Messages || r.Iterations != int(msgs) {
				t.Errorf("total %+v, iterations %d; the intervals hold %d bytes in %d messages", b, r.Iterations, sum, msgs)
			}
		})
	}
}

func TestTCPBidirectional(t *testing.T) {
	check := func(t *testing.T, r report.Result) {
		t.Helper()
		if r.Bandwidth == nil || r.Reverse == nil || r.Total == nil {
			t.Fatalf("bandwidth %v reverse %v total %v: want all three", r.Bandwidth, r.Reverse, r.Total)
		}
		if r.Total.Bytes != r.Bandwidth.Bytes+r.Reverse.Bytes || r.Total.Messages != r.Bandwidth.Messages+r.Reverse.Messages {
			t.Errorf("total %d bytes, %d + %d in the two directions", r.Total.Bytes, r.Bandwidth.Bytes, r.Reverse.Bytes)
		}
		if r.Reverse.Bytes == 0 || r.Reverse.Bytes != uint64(r.Size)*r.Reverse.Messages {
			t.Errorf("reverse %+v for %d-byte messages", r.Reverse, r.Size)
		}
	}
	t.Run("iterations", func(t *testing.T) {
		spec := tcpTestSpec("tcp-bw", []int{4096, 65536}, 300, 10)
		spec.Bidirectional = true
		for _, r := range tcpLoopback(t, spec, endOptions{}).Results {
			check(t, r)
			if r.Bandwidth.Messages != 300 || r.Reverse.Messages != 300 {
				t.Errorf("%d B: %d and %d messages, want 300 each way", r.Size, r.Bandwidth.Messages, r.Reverse.Messages)
			}
		}
	})
	t.Run("duration", func(t *testing.T) {
		spec := tcpTestSpec("tcp-bw", []int{65536}, 0, 10)
		spec.Bidirectional = true
		spec.Duration = 200 * time.Millisecond
		spec.Interval = 100 * time.Millisecond
		r := tcpLoopback(t, spec, endOptions{}).Results[0]
		check(t, r)
		if len(r.Intervals) == 0 {
			t.Error("no intervals")
		}
	})
}

// tcpPair runs the two ends with their own contexts and links (either may be
// wrapped), guarding against a hang.
type tcpPair struct {
	spec       Spec
	clientLink func(Link) Link
	serverLink func(Link) Link
	serverCtx  context.Context
	clientOpt  endOptions
}

func (p tcpPair) run(t *testing.T) (cres *endResult, cerr, serr error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), tcpHangGuard)
	defer cancel()
	a, b, hangupA, hangupB := pipe()
	if p.clientLink != nil {
		a = p.clientLink(a)
	}
	if p.serverLink != nil {
		b = p.serverLink(b)
	}
	sctx := ctx
	if p.serverCtx != nil {
		sctx = p.serverCtx
	}
	p.clientOpt.peerHost = "127.0.0.1"
	sdone, cdone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sdone)
		defer hangupB()
		_, serr = runEnd(sctx, &p.spec, serverEnd, b, endOptions{listenHost: "127.0.0.1"})
	}()
	go func() {
		defer close(cdone)
		defer hangupA()
		cres, cerr = runEnd(ctx, &p.spec, clientEnd, a, p.clientOpt)
	}()
	guard := time.After(tcpHangGuard / 2)
	for _, ch := range []chan struct{}{cdone, sdone} {
		select {
		case <-ch:
		case <-guard:
			t.Fatal("an end hung")
		}
	}
	return cres, cerr, serr
}

// tcpHookLink calls hook before each exchange; when the hook says it is
// done, its error is returned instead of exchanging.
type tcpHookLink struct {
	Link
	hook func(ctx context.Context, l Link, phase string, out, in any) (bool, error)
}

func (h tcpHookLink) Exchange(ctx context.Context, phase string, out, in any) error {
	if done, err := h.hook(ctx, h.Link, phase, out, in); done {
		return err
	}
	return h.Link.Exchange(ctx, phase, out, in)
}

func TestTCPServerFailsAtReady(t *testing.T) {
	injected := errors.New("injected server failure")
	p := tcpPair{
		spec: tcpTestSpec("tcp-lat", []int{2, 64}, 10, 0),
		serverLink: func(l Link) Link {
			return tcpHookLink{l, func(ctx context.Context, l Link, phase string, _, _ any) (bool, error) {
				if phase != "ready/1" {
					return false, nil
				}
				_ = l.Exchange(ctx, phase, Fail(injected), nil)
				return true, injected
			}}
		},
	}
	res, cerr, serr := p.run(t)
	var pe *PeerError
	if !errors.As(cerr, &pe) || pe.Msg != injected.Error() {
		t.Fatalf("client error %v, want a PeerError carrying %q", cerr, injected)
	}
	if !errors.Is(serr, injected) {
		t.Errorf("server error %v, want %v", serr, injected)
	}
	// The size before the failure keeps its result; the failing one records it.
	if len(res.Results) != 2 || res.Results[0].Error != "" || res.Results[0].Latency == nil || res.Results[1].Error == "" {
		t.Errorf("results %+v: want size 2 measured and size 64 failed", res.Results)
	}
}

// TestTCPDialFails: a client that cannot connect tells the server, which
// stops waiting for the connection at once.
func TestTCPDialFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	spec := tcpTestSpec("tcp-lat", []int{2}, 10, 0)
	spec.IdleTimeout = time.Minute // a server that waited for the accept deadline would hit the hang guard
	p := tcpPair{
		spec: spec,
		clientLink: func(l Link) Link {
			return tcpHookLink{l, func(ctx context.Context, l Link, phase string, out, in any) (bool, error) {
				if phase != "setup" {
					return false, nil
				}
				err := l.Exchange(ctx, phase, out, in)
				msg := in.(*setupMsg)
				msg.Body, _ = json.Marshal(tcpSetup{Port: closed, Token: 1})
				return true, err
			}}
		},
	}
	_, cerr, serr := p.run(t)
	var pe *PeerError
	if cerr == nil || errors.As(cerr, &pe) {
		t.Errorf("client error %v, want its own dial error", cerr)
	}
	if !errors.As(serr, &pe) {
		t.Errorf("server error %v, want the client's failure", serr)
	}
}

// TestTCPPeerDies: the server goes away in the middle of a test (its
// context is cancelled, which closes its connection); the client returns
// an error, long before its idle timeout.
func TestTCPPeerDies(t *testing.T) {
	for _, test := range []string{"tcp-lat", "tcp-bw"} {
		t.Run(test, func(t *testing.T) {
			spec := tcpTestSpec(test, []int{1024}, 0, 5)
			spec.Duration = time.Minute
			spec.Interval = 100 * time.Millisecond
			spec.IdleTimeout = time.Minute
			sctx, kill := context.WithCancel(context.Background())
			defer kill()
			p := tcpPair{spec: spec, serverCtx: sctx, clientOpt: endOptions{progress: func(p Progress) {
				if p.Interval != nil {
					kill() // the client is in the data phase
				}
			}}}
			res, cerr, serr := p.run(t)
			if !errors.Is(cerr, errPeerClosed) {
				t.Errorf("client error %v, want %v", cerr, errPeerClosed)
			}
			if !errors.Is(serr, context.Canceled) {
				t.Errorf("server error %v, want %v", serr, context.Canceled)
			}
			if len(res.Results) != 1 || res.Results[0].Error == "" {
				t.Errorf("results %+v: want the failure recorded", res.Results)
			}
		})
	}
}

// TestTCPSkipsStrayConnections plays the client by hand: connections that
// do not present the token are dropped, the client's is served.
func TestTCPSkipsStrayConnections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), tcpHangGuard)
	defer cancel()
	spec := tcpTestSpec("tcp-lat", []int{2}, 3, 0)
	a, b := Pipe()
	var serr error
	sdone := make(chan struct{})
	go func() {
		defer close(sdone)
		_, serr = runEnd(ctx, &spec, serverEnd, b, endOptions{listenHost: "127.0.0.1"})
	}()
	var msg0 setupMsg
	if err := a.Exchange(ctx, "setup", setupMsg{Host: LocalHost()}, &msg0); err != nil {
		t.Fatal(err)
	}
	var srv tcpSetup
	if err := json.Unmarshal(msg0.Body, &srv); err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Port))
	dial := func(token uint64, send bool) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if send {
			var buf [8]byte
			binary.BigEndian.PutUint64(buf[:], token)
			if _, err := c.Write(buf[:]); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	wrong := dial(srv.Token+1, true) // a one-connection test has only token+0
	dial(0, false).Close()
	c := dial(srv.Token, true)
	for _, ph := range []string{"connected", "ready/0"} {
		if err := a.Exchange(ctx, ph, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	msg := make([]byte, 2)
	for k := 0; k < 3; k++ {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, msg); err != nil {
			t.Fatal(err)
		}
	}
	msg[0] = markEnd
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	var out sizeOutcome
	if err := a.Exchange(ctx, "finished/0", finishedMsg{Sent: 3}, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Exchange(ctx, "result/0", sizeOutcome{}, &out); err != nil {
		t.Fatal(err)
	}
	if out.Received == nil || *out.Received != 3 {
		t.Errorf("server echoed %v messages, want 3", out.Received)
	}
	<-sdone
	if serr != nil {
		t.Errorf("server: %v", serr)
	}
	// The stray connection was closed by the server.
	_ = wrong.SetReadDeadline(time.Now().Add(tcpHangGuard / 2))
	if n, err := wrong.Read(msg); err == nil {
		t.Errorf("stray connection read %d bytes, want it closed", n)
	}
}

// TestTCPIdleTimeout plays a server that connects and then goes silent:
// the client fails with the idle timeout.
func TestTCPIdleTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), tcpHangGuard)
	defer cancel()
	spec := tcpTestSpec("tcp-lat", []int{2}, 10, 0)
	spec.IdleTimeout = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, b := Pipe()
	var cerr error
	cdone := make(chan struct{})
	go func() {
		defer close(cdone)
		_, cerr = runEnd(ctx, &spec, clientEnd, a, endOptions{peerHost: "127.0.0.1"})
	}()
	const token = 42
	body, _ := json.Marshal(tcpSetup{Port: ln.Addr().(*net.TCPAddr).Port, Token: token})
	if err := b.Exchange(ctx, "setup", setupMsg{Host: LocalHost(), Body: body}, nil); err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var buf [8]byte
	if _, err := io.ReadFull(c, buf[:]); err != nil || binary.BigEndian.Uint64(buf[:]) != token {
		t.Fatalf("token %x, %v; want %x", buf, err, token)
	}
	for _, ph := range []string{"connected", "ready/0"} {
		if err := b.Exchange(ctx, ph, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	// The server never answers a ping: the client fails, and tells why.
	var fin finishedMsg
	if err := b.Exchange(ctx, "finished/0", finishedMsg{}, &fin); err != nil || !fin.Failed {
		t.Errorf("finished: %+v, %v; want the client's failure", fin, err)
	}
	var out sizeOutcome
	if err := b.Exchange(ctx, "result/0", sizeOutcome{}, &out); err != nil || !strings.Contains(out.Err, "idle timeout") {
		t.Errorf("result: %+v, %v; want the client's idle timeout", out, err)
	}
	<-cdone
	if !errors.Is(cerr, os.ErrDeadlineExceeded) || !errors.Is(cerr, errPeerSilent) {
		t.Errorf("client error %v, want the idle timeout", cerr)
	}
}

// TestTCPPrecision: in precision mode each size runs in rounds, each one
// an interval, until the rounds' median is known well enough or the cap
// passes; every measured message is in a round. The target here cannot be
// met, so the cap ends each size (whether a target is met depends on the
// machine's noise; TestPrecisionRounds checks the rule itself).
func TestTCPPrecision(t *testing.T) {
	for _, test := range []string{"tcp-lat", "tcp-bw"} {
		t.Run(test, func(t *testing.T) {
			spec := tcpTestSpec(test, []int{1024}, 0, 20)
			spec.Precision = 1e-9
			spec.PrecisionCap = 700 * time.Millisecond
			r := tcpLoopback(t, spec, endOptions{}).Results[0]
			p := r.Precision
			if p == nil {
				t.Fatalf("no precision recorded: %+v", r)
			}
			// Every round is an interval; a stream's last interval holds
			// what was in flight when it stopped.
			extra := len(r.Intervals) - p.Rounds
			if p.Met || p.Rounds < 1 || extra < 0 || extra > 1 || (p.HalfWidthPct != nil) != (p.Rounds >= report.MinRunsForInterval) {
				t.Fatalf("precision %+v with %d intervals: want rounds until the cap, each an interval, the target not met",
					p, len(r.Intervals))
			}
			var sum uint64
			for _, iv := range r.Intervals {
				if test == "tcp-lat" {
					sum += uint64(iv.Latency.Count)
				} else {
					sum += iv.Bandwidth.Messages
				}
			}
			if test == "tcp-lat" && (p.Figure != "p50_ns" || sum != uint64(r.Latency.Count) || r.Iterations != int(sum)) {
				t.Errorf("figure %s; rounds hold %d samples, the result %d (iterations %d)", p.Figure, sum, r.Latency.Count, r.Iterations)
			}
			if test == "tcp-bw" && (p.Figure != "bw_gbps" || sum != r.Bandwidth.Messages || r.Iterations != int(sum)) {
				t.Errorf("figure %s; rounds hold %d messages, the result %d (iterations %d)", p.Figure, sum, r.Bandwidth.Messages, r.Iterations)
			}
		})
	}
}

// TestPrecisionRounds: rounds stop once there are enough of them for a
// confidence interval and it is narrow enough (the cap is the size's end,
// as a duration's).
func TestPrecisionRounds(t *testing.T) {
	p := &precisionRounds{figure: "p50_ns", target: 0.05}
	for i, v := range []float64{100, 101, 99, 100, 102, 98, 100} {
		stop := p.add(v, 0)
		if want := i+1 >= report.MinRunsForInterval; stop != want {
			t.Fatalf("round %d: stop %v, want %v", i+1, stop, want)
		}
		if stop {
			break
		}
	}
	if r := p.result(); !r.Met || r.Rounds != report.MinRunsForInterval || r.HalfWidthPct == nil || *r.HalfWidthPct > 5 {
		t.Errorf("steady rounds: %+v", r)
	}
	q := &precisionRounds{figure: "bw_gbps", target: 0.01}
	for v := 1.0; v < 1e6; v *= 2 { // never precise
		if q.add(v, 0) {
			t.Fatal("rounds doubling each time were called precise")
		}
	}
	if r := q.result(); r.Met || r.Rounds != 20 || r.HalfWidthPct == nil || *r.HalfWidthPct <= 1 {
		t.Errorf("noisy rounds: %+v", r)
	}
	var none *precisionRounds
	if none.add(1, 0) || none.result() != nil {
		t.Error("no precision mode must never stop a size nor record a precision")
	}
}
