package watch

import (
	"context"
	"errors"
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

// TestTakeSlot: a slot taken with none dropped skips none; the slots
// dropped while every prober was busy count as skipped, as does a slot
// whose peers are all being probed; a bandwidth probe due starts at the
// next slot that finds a peer free.
func TestTakeSlot(t *testing.T) {
	a, file := testAgent(t, 0)
	write(t, file, "127.0.0.1:1\n")
	a.reload()
	skipped := func() uint64 {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.st.skipped
	}
	p, bw := a.takeSlot(0)
	if p == nil || bw != nil || skipped() != 0 {
		t.Fatalf("a slot, none dropped: peer %v, bandwidth peer %v, %d skipped; want the peer, none, 0", p, bw, skipped())
	}
	// Two slots dropped, then one whose only peer is still being probed.
	if p2, _ := a.takeSlot(2); p2 != nil || skipped() != 3 {
		t.Fatalf("two slots dropped and the peer busy: peer %v, %d skipped; want none, 3", p2, skipped())
	}
	a.mu.Lock()
	a.probeDone(p)
	a.bwDue = true
	a.mu.Unlock()
	p, bw = a.takeSlot(0)
	if p != nil || bw == nil || skipped() != 4 {
		t.Fatalf("a bandwidth probe due: peer %v, bandwidth peer %v, %d skipped; want none, the peer, 4", p, bw, skipped())
	}
	if a.bwDue {
		t.Error("the bandwidth probe still due once started")
	}
}

// TestSlotSchedule: each slot falls within its own period; a wait after
// periods that ended with none waiting counts their slots dropped, and
// one late within its period drops none.
func TestSlotSchedule(t *testing.T) {
	const period = 100 * time.Millisecond
	s := newSlotSchedule(period)
	within := func(at time.Duration, k int) bool {
		return at >= time.Duration(k)*period && at < time.Duration(k+1)*period
	}
	if at, dropped := s.next(0); !within(at, 0) || dropped != 0 {
		t.Errorf("the first slot: at %v, %d dropped; want within the first period, none", at, dropped)
	}
	if at, dropped := s.next(period / 2); !within(at, 1) || dropped != 0 {
		t.Errorf("a wait within the first period: slot at %v, %d dropped; want within the second, none", at, dropped)
	}
	if at, dropped := s.next(4*period + period/2); !within(at, 4) || dropped != 2 {
		t.Errorf("a wait in the fifth period: slot at %v, %d dropped; want within the fifth, 2 (the third's and fourth's)", at, dropped)
	}
	if at, dropped := s.next(5*period + period/2); !within(at, 5) || dropped != 0 {
		t.Errorf("a wait late within the sixth period: slot at %v, %d dropped; want within the sixth, none", at, dropped)
	}
}

// TestSlotClockEnds: a wait for the next slot ends with the context, and
// says so; the slots that came while none waited are counted.
func TestSlotClockEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := newSlotClock(ctx, 5*time.Millisecond)
	defer c.stop()
	// The periods of at least 4 slots end while none waits.
	time.Sleep(22 * time.Millisecond)
	n1, err1 := c.wait(ctx)
	n2, err2 := c.wait(ctx)
	if err := errors.Join(err1, err2); err != nil || n1+n2 < 5 {
		t.Errorf("after 22 ms of 5 ms slots unread, two waits: %d and %d slots, %v; want at least 5 in all", n1, n2, err)
	}
	slow := newSlotClock(ctx, time.Hour)
	defer slow.stop()
	done := make(chan error, 1)
	go func() {
		_, err := slow.wait(ctx)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a wait ended by its context: %v, want %v", err, context.Canceled)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a wait for the next slot did not end with its context")
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
