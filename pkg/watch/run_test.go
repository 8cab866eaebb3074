package watch

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// runAgent runs a until the test ends, or until the stop it returns is
// called (at most once in effect), failing t when Run fails or does not
// return within 15 s of it.
func runAgent(t *testing.T, name string, a *Agent) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agent %s: %v", name, err)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("agent %s did not stop", name)
		}
	}
	t.Cleanup(stop)
	return stop
}

// waitFor waits until cond holds, failing t with what() after 30 s.
func waitFor(t *testing.T, cond func() bool, what func() string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what())
		}
	}
}

// waitPeersOf waits until agent a (named name in the failure) probes the
// peers want, in any order.
func waitPeersOf(t *testing.T, name string, a *Agent, want ...string) {
	t.Helper()
	slices.Sort(want)
	waitFor(t, func() bool { return slices.Equal(a.peerAddrs(), want) },
		func() string {
			return name + ": peers " + strings.Join(a.peerAddrs(), ",") + ", want " + strings.Join(want, ",")
		})
}

// TestTakeSlot: a slot taken on time skips none; the slots the ticker
// dropped while every prober was busy count as skipped at the next one
// taken, as does a slot whose peers are all being probed; a bandwidth
// probe that was due takes the first peer free.
func TestTakeSlot(t *testing.T) {
	a, file := testAgent(t, 0)
	write(t, file, "127.0.0.1:1\n")
	a.reload()
	const period = 100 * time.Millisecond
	t0 := time.Now()
	a.lastSlot = t0
	skipped := func() uint64 {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.st.skipped
	}
	p, bw := a.takeSlot(t0.Add(period+period/10), period)
	if p == nil || bw != nil || skipped() != 0 {
		t.Fatalf("a slot on time: peer %v, bandwidth peer %v, %d skipped; want the peer, none, 0", p, bw, skipped())
	}
	// Two slots dropped, then one whose only peer is still being probed.
	if p2, _ := a.takeSlot(t0.Add(4*period), period); p2 != nil || skipped() != 3 {
		t.Fatalf("two slots dropped and the peer busy: peer %v, %d skipped; want none, 3", p2, skipped())
	}
	a.mu.Lock()
	a.probeDone(p)
	a.bwDue = true
	a.mu.Unlock()
	p, bw = a.takeSlot(t0.Add(5*period), period)
	if p != nil || bw == nil || skipped() != 4 {
		t.Fatalf("a bandwidth probe due: peer %v, bandwidth peer %v, %d skipped; want none, the peer, 4", p, bw, skipped())
	}
	if a.bwDue {
		t.Error("the bandwidth probe still due once started")
	}
}

// TestRunSkipsSlots: with every prober held by a peer that does not
// answer, Run counts the slots that pass as skipped, and probes again
// once the probes end.
func TestRunSkipsSlots(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("listen: %v", err)
	}
	defer ln.Close()
	go func() { // accepts, and says nothing
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	file := filepath.Join(t.TempDir(), "peers")
	write(t, file, ln.Addr().String()+"\n")
	a, err := New(Config{Host: "h", PeersFile: file, Probe: probeRequest(), Rate: 50, MaxInflight: 1, ProbeTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, "h", a)
	ended := func() uint64 {
		a.mu.Lock()
		defer a.mu.Unlock()
		var n uint64
		for _, s := range a.st.peers {
			for _, c := range s.probes {
				n += c
			}
		}
		return n
	}
	waitFor(t, func() bool { return ended() >= 2 }, func() string { return "no two probes ended" })
	a.mu.Lock()
	defer a.mu.Unlock()
	// One probe at a time, each 300 ms, at 50 slots/s: about 14 of every
	// 15 slots skipped.
	if a.st.skipped < 10 {
		t.Errorf("%d slots skipped over two probes of 300 ms at 50/s, want most of them", a.st.skipped)
	}
}
