//go:build linux && cgo

package verbs_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// The timed loops run for a short while each; their samples are checked for
// plausibility (count, all positive, bounded), never for speed.

const loopIters = 300

// runPingPong runs initiator on a and responder on b, each on its own OS
// thread, and returns the initiator's samples, gathered in batches.
func runPingPong(t *testing.T, p *pair, kind verbs.LoopKind, op verbs.Opcode, size uint32, inline bool) []uint64 {
	t.Helper()
	cfg := verbs.LoopConfig{Kind: kind, Opcode: op, Size: size, Inline: inline, RxDepth: 16, CQMod: 16,
		IdleTimeout: 10 * time.Second, Total: loopIters}
	half := p.a.mr.Len() / 2
	// tx in the first half, rx in the second; the peer writes into our rx.
	mk := func(s, peer side, role verbs.Role) *verbs.Loop {
		c := cfg
		c.Role = role
		remote := peer.mr.Remote()
		remote.Addr += half
		l, err := verbs.NewLoop(c, verbs.Buf{MR: s.mr}, verbs.Buf{MR: s.mr, Offset: half},
			[]verbs.LoopQP{{QP: s.qp, Remote: remote}})
		if err != nil {
			t.Fatalf("new loop: %v", err)
		}
		t.Cleanup(func() { l.Close() })
		if kind == verbs.LatSend {
			if err := l.PostRecvs(cfg.RxDepth); err != nil {
				t.Fatalf("post recvs: %v", err)
			}
		}
		return l
	}
	ini := mk(p.a, p.b, verbs.Initiator)
	var resp *verbs.Loop
	if kind != verbs.LatPost {
		resp = mk(p.b, p.a, verbs.Responder)
	}
	var wg sync.WaitGroup
	var respErr error
	if resp != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			_, _, respErr = resp.RunLatency(nil)
		}()
	}
	samples := make([]uint64, 0, loopIters)
	batch := make([]uint64, 64) // several batches: the loop must carry its state across calls
	for len(samples) < loopIters {
		n, valid, err := ini.RunLatency(batch)
		if err == nil && valid != n {
			err = fmt.Errorf("%d of %d samples had the clock run backwards", n-valid, n)
		}
		if err != nil {
			if resp != nil {
				resp.Stop()
			}
			wg.Wait()
			t.Fatalf("initiator after %d samples: %v", len(samples), err)
		}
		if n == 0 {
			break
		}
		samples = append(samples, batch[:n]...)
	}
	wg.Wait()
	if respErr != nil {
		t.Fatalf("responder: %v", respErr)
	}
	if got := ini.Stats().Iterations; got != loopIters {
		t.Fatalf("initiator ran %d iterations, want %d", got, loopIters)
	}
	if resp != nil && resp.Stats().Iterations != loopIters {
		t.Fatalf("responder ran %d iterations, want %d", resp.Stats().Iterations, loopIters)
	}
	checkSamples(t, samples)
	return samples
}

func checkSamples(t *testing.T, s []uint64) {
	t.Helper()
	if len(s) != loopIters {
		t.Fatalf("%d samples, want %d", len(s), loopIters)
	}
	var min, max uint64 = ^uint64(0), 0
	for i, v := range s {
		if v == 0 || v > uint64(10*time.Second) {
			t.Fatalf("sample %d is %d ns: not a plausible round trip", i, v)
		}
		min, max = minU(min, v), maxU(max, v)
	}
	t.Logf("%d samples, min %.2f us, max %.2f us", len(s), float64(min)/1e3, float64(max)/1e3)
}

func minU(a, b uint64) uint64 {
	if a < b {
		return a
	}
	return b
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

func TestLoopWriteLatency(t *testing.T) {
	t.Run("2B-inline", func(t *testing.T) {
		o := defaults(verbs.RC)
		o.inline = 64
		runPingPong(t, newPair(t, o), verbs.LatWrite, verbs.OpWrite, 2, true)
	})
	t.Run("4097B", func(t *testing.T) {
		runPingPong(t, newPair(t, defaults(verbs.RC)), verbs.LatWrite, verbs.OpWrite, 4097, false)
	})
}

func TestLoopWriteLatencyUC(t *testing.T) {
	runPingPong(t, newPair(t, defaults(verbs.UC)), verbs.LatWrite, verbs.OpWrite, 64, false)
}

func TestLoopSendLatency(t *testing.T) {
	for _, size := range []uint32{2, 5000} {
		t.Run(fmt.Sprintf("%dB", size), func(t *testing.T) {
			runPingPong(t, newPair(t, defaults(verbs.RC)), verbs.LatSend, verbs.OpSend, size, false)
		})
	}
}

func TestLoopSendLatencyUD(t *testing.T) {
	runPingPong(t, newPair(t, defaults(verbs.UD)), verbs.LatSend, verbs.OpSend, 512, false)
}

func TestLoopSendLatencyEvents(t *testing.T) {
	o := defaults(verbs.RC)
	o.events = true
	runPingPong(t, newPair(t, o), verbs.LatSend, verbs.OpSend, 64, false)
}

func TestLoopReadLatency(t *testing.T) {
	runPingPong(t, newPair(t, defaults(verbs.RC)), verbs.LatPost, verbs.OpRead, 4096, false)
}

func TestLoopAtomicLatency(t *testing.T) {
	p := newPair(t, defaults(verbs.RC))
	half := p.b.mr.Len() / 2
	runPingPong(t, p, verbs.LatPost, verbs.OpFetchAdd, 8, false)
	// The loop targets the peer's second half; every add was applied once.
	if v := getU64(p.b.mr.Buf()[half:]); v != 0 {
		// SwapAdd was 0 in runPingPong: the value must be unchanged.
		t.Fatalf("remote value %d after adding 0, want 0", v)
	}
}

// bwRun drives a bandwidth sender over nqp QPs of one side to completion.
func bwRun(t *testing.T, typ verbs.QPType, op verbs.Opcode, size uint32, nqp int, perQP uint64) verbs.LoopStats {
	t.Helper()
	o := defaults(typ)
	o.depth = 256
	p := newPair(t, o)
	// More QPs on the same CQs and buffers.
	qps := []verbs.LoopQP{{QP: p.a.qp, Remote: p.b.mr.Remote()}}
	peers := []*verbs.QP{p.b.qp}
	for i := 1; i < nqp; i++ {
		a, err := p.pd.CreateQP(verbs.QPConfig{Type: typ, SendCQ: p.a.scq, RecvCQ: p.a.rcq, MaxSendWR: 128, MaxRecvWR: 128, GIDIndex: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		b, err := p.pd.CreateQP(verbs.QPConfig{Type: typ, SendCQ: p.b.scq, RecvCQ: p.b.rcq, MaxSendWR: 128, MaxRecvWR: 128, GIDIndex: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		if err := a.Connect(b.Endpoint()); err != nil {
			t.Fatal(err)
		}
		if err := b.Connect(a.Endpoint()); err != nil {
			t.Fatal(err)
		}
		qps = append(qps, verbs.LoopQP{QP: a, Remote: p.b.mr.Remote()})
		peers = append(peers, b)
	}
	cfg := verbs.LoopConfig{Kind: verbs.BWSend, Opcode: op, Size: size, TxDepth: 64, CQMod: 16, PostList: 4,
		IdleTimeout: 10 * time.Second, SwapAdd: 1}
	snd, err := verbs.NewLoop(cfg, verbs.Buf{MR: p.a.mr}, verbs.Buf{MR: p.a.mr}, qps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snd.Close() })
	var rcv *verbs.Loop
	var wg sync.WaitGroup
	var rerr error
	if op == verbs.OpSend {
		var rq []verbs.LoopQP
		for _, b := range peers {
			rq = append(rq, verbs.LoopQP{QP: b})
		}
		rcfg := verbs.LoopConfig{Kind: verbs.BWRecv, Opcode: verbs.OpSend, Size: size, RxDepth: 128,
			IdleTimeout: 10 * time.Second, Total: perQP * uint64(nqp)}
		rcv, err = verbs.NewLoop(rcfg, verbs.Buf{MR: p.b.mr}, verbs.Buf{MR: p.b.mr}, rq)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rcv.Close() })
		if err := rcv.PostRecvs(rcfg.RxDepth); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			_, rerr = rcv.RunReceiver(0)
		}()
	}
	snd.SetTarget(perQP)
	done, err := snd.RunBandwidth(0)
	if err != nil || !done {
		if rcv != nil {
			rcv.Stop()
		}
		wg.Wait()
		t.Fatalf("bandwidth run: done=%v err=%v", done, err)
	}
	wg.Wait()
	if rerr != nil {
		t.Fatalf("receiver: %v", rerr)
	}
	st := snd.Stats()
	if st.Completed != perQP*uint64(nqp) {
		t.Fatalf("%d WRs completed, want %d", st.Completed, perQP*uint64(nqp))
	}
	if st.LastNs <= st.FirstNs {
		t.Fatalf("last completion %d not after first post %d", st.LastNs, st.FirstNs)
	}
	if rcv != nil {
		rs := rcv.Stats()
		if rs.Completed != perQP*uint64(nqp) || rs.RecvBytes != rs.Completed*uint64(size) {
			t.Fatalf("receiver got %d messages and %d bytes, want %d and %d", rs.Completed, rs.RecvBytes,
				perQP*uint64(nqp), perQP*uint64(nqp)*uint64(size))
		}
	}
	checkCheckpoints(t, snd.Checkpoints(), st)
	secs := float64(st.LastNs-st.FirstNs) / 1e9
	t.Logf("%s x%d QPs, %d B: %d WRs in %.3f s = %.1f MB/s", op, nqp, size, st.Completed, secs,
		float64(st.Completed)*float64(size)/secs/1e6)
	return st
}

func TestLoopWriteBandwidth(t *testing.T) { bwRun(t, verbs.RC, verbs.OpWrite, 65536, 2, 200) }
func TestLoopReadBandwidth(t *testing.T)  { bwRun(t, verbs.RC, verbs.OpRead, 65536, 1, 200) }
func TestLoopSendBandwidth(t *testing.T)  { bwRun(t, verbs.RC, verbs.OpSend, 4096, 2, 500) }
func TestLoopAtomicBandwidth(t *testing.T) {
	bwRun(t, verbs.RC, verbs.OpFetchAdd, 8, 1, 500)
}
func TestLoopWriteBandwidthUC(t *testing.T) { bwRun(t, verbs.UC, verbs.OpWrite, 8192, 1, 200) }

// checkCheckpoints checks a sender's checkpoints against its counters:
// from its first post to its last completion, in order of time, no more
// complete than posted at each, at most 256 between the two ends.
func checkCheckpoints(t *testing.T, cs []verbs.Checkpoint, st verbs.LoopStats) {
	t.Helper()
	if len(cs) < 2 || len(cs) > 256+2 {
		t.Fatalf("%d checkpoints, want 2 to 258", len(cs))
	}
	first, last := cs[0], cs[len(cs)-1]
	if first.AtNs != st.FirstNs || first.Completed != 0 || last.AtNs != st.LastNs || last.Completed != st.Completed {
		t.Fatalf("checkpoints from %+v to %+v; the loop ran from its first post at %d to %d WRs complete at %d",
			first, last, st.FirstNs, st.Completed, st.LastNs)
	}
	for i := 1; i < len(cs); i++ {
		a, b := cs[i-1], cs[i]
		if b.AtNs < a.AtNs || b.Completed < a.Completed || b.Posted < a.Posted || b.Completed > b.Posted {
			t.Fatalf("checkpoint %d %+v after %+v", i, b, a)
		}
	}
}

// TestLoopDurationMode runs the sender against a deadline, then finishes
// it: every WR posted completes, and the run stops by itself.
func TestLoopDurationMode(t *testing.T) {
	o := defaults(verbs.RC)
	p := newPair(t, o)
	cfg := verbs.LoopConfig{Kind: verbs.BWSend, Opcode: verbs.OpWrite, Size: 4096, TxDepth: 64, CQMod: 16, PostList: 1,
		IdleTimeout: 10 * time.Second}
	l, err := verbs.NewLoop(cfg, verbs.Buf{MR: p.a.mr}, verbs.Buf{MR: p.a.mr}, []verbs.LoopQP{{QP: p.a.qp, Remote: p.b.mr.Remote()}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.SetTarget(^uint64(0) >> 20)
	var counts []uint64
	for i := range 3 {
		done, err := l.RunBandwidth(verbs.Now() + uint64(100*time.Millisecond))
		if err != nil || done {
			t.Fatalf("interval %d: done=%v err=%v", i, done, err)
		}
		counts = append(counts, l.Stats().Completed)
	}
	// 300 ms at 10 µs or more apart: the checkpoints filled up and were
	// thinned, still spanning the run.
	checkCheckpoints(t, l.Checkpoints(), l.Stats())
	l.FinishBandwidth()
	done, err := l.RunBandwidth(verbs.Now() + uint64(10*time.Second))
	if err != nil || !done {
		t.Fatalf("finish: done=%v err=%v", done, err)
	}
	final := l.Stats().Completed
	if counts[0] == 0 || counts[1] <= counts[0] || counts[2] <= counts[1] || final < counts[2] || final%16 != 0 {
		t.Fatalf("completions per interval %v then %d: want growing counts and a final multiple of 16", counts, final)
	}
}

func TestLoopStop(t *testing.T) {
	p := newPair(t, defaults(verbs.RC))
	cfg := verbs.LoopConfig{Kind: verbs.LatWrite, Opcode: verbs.OpWrite, Size: 8, Total: 10, IdleTimeout: time.Minute}
	half := p.b.mr.Len() / 2
	remote := p.b.mr.Remote()
	remote.Addr += half
	l, err := verbs.NewLoop(cfg, verbs.Buf{MR: p.a.mr}, verbs.Buf{MR: p.a.mr, Offset: half}, []verbs.LoopQP{{QP: p.a.qp, Remote: remote}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { time.Sleep(50 * time.Millisecond); l.Stop() }()
	// No responder: the initiator waits for an answer that never comes.
	_, _, err = l.RunLatency(make([]uint64, 10))
	if !errors.Is(err, verbs.ErrAborted) {
		t.Fatalf("stopped loop returned %v, want ErrAborted", err)
	}
	// A cancelled context may call Stop after the loop was closed.
	l.Close()
	l.Stop()
}

func TestLoopIdleTimeout(t *testing.T) {
	p := newPair(t, defaults(verbs.RC))
	cfg := verbs.LoopConfig{Kind: verbs.LatSend, Opcode: verbs.OpSend, Size: 8, Total: 10, RxDepth: 4, IdleTimeout: 200 * time.Millisecond}
	l, err := verbs.NewLoop(cfg, verbs.Buf{MR: p.a.mr}, verbs.Buf{MR: p.a.mr}, []verbs.LoopQP{{QP: p.a.qp}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.PostRecvs(4); err != nil {
		t.Fatal(err)
	}
	// The peer posted no receive and never answers: RNR retries forever,
	// and the initiator's idle timeout ends the wait.
	_, _, err = l.RunLatency(make([]uint64, 10))
	if !errors.Is(err, verbs.ErrTimeout) {
		t.Fatalf("silent peer gave %v, want ErrTimeout", err)
	}
}

func TestClock(t *testing.T) {
	c := verbs.Clock()
	if c.ResolutionNs <= 0 || c.ReadCostNs <= 0 || c.Source == "" {
		t.Fatalf("implausible clock facts %+v", c)
	}
	t.Logf("clock %s: resolution %.1f ns (reported %.1f ns), read cost %.1f ns", c.Source, c.ResolutionNs, c.ReportedResolutionNs, c.ReadCostNs)
}
