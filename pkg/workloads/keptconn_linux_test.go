package workloads

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// loopbackPair is a connected pair of loopback TCP connections.
func loopbackPair(t *testing.T) (a, b *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("listen: %v", err)
	}
	defer ln.Close()
	done := make(chan *net.TCPConn, 1)
	go func() {
		c, _ := ln.AcceptTCP()
		done <- c
	}()
	a, err = net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	if b = <-done; b == nil {
		t.Fatal("accept failed")
	}
	return a, b
}

// newTestKeptConn is c as a keptConn, released at the test's end.
func newTestKeptConn(t *testing.T, c *net.TCPConn) *keptConn {
	t.Helper()
	k, err := newKeptConn(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Close(); k.release() })
	return k
}

// TestKeptConnData: a message larger than the socket takes at once (the
// largest kept message) arrives whole and unchanged, in both directions,
// whether the reader waits on its thread or in the poller; bytes sent
// equal bytes received.
func TestKeptConnData(t *testing.T) {
	a, b := loopbackPair(t)
	ka, kb := newTestKeptConn(t, a), newTestKeptConn(t, b)
	msg := make([]byte, MaxKeptSize)
	for i := range msg {
		msg[i] = byte(i*7 + i>>8)
	}
	for _, direct := range []bool{true, false} {
		errc := make(chan error, 1)
		go func() { errc <- ka.write(msg, time.Now().Add(10*time.Second)) }()
		got := make([]byte, len(msg))
		if err := kb.readFull(got, time.Now().Add(10*time.Second), direct); err != nil {
			t.Fatalf("direct %v: read: %v", direct, err)
		}
		if err := <-errc; err != nil {
			t.Fatalf("direct %v: write: %v", direct, err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("direct %v: the message changed on its way", direct)
		}
		// And back.
		go func() { errc <- kb.write(got, time.Time{}) }()
		back := make([]byte, len(msg))
		if err := ka.readFull(back, time.Time{}, direct); err != nil {
			t.Fatalf("direct %v: read back: %v", direct, err)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back, msg) {
			t.Fatalf("direct %v: the echo changed on its way", direct)
		}
	}
}

// TestKeptConnLate: a message that comes after keptDirect (the reader
// waits in the poller by then) is read.
func TestKeptConnLate(t *testing.T) {
	a, b := loopbackPair(t)
	ka, kb := newTestKeptConn(t, a), newTestKeptConn(t, b)
	go func() {
		time.Sleep(20 * keptDirect)
		_ = ka.write([]byte("late"), time.Time{})
	}()
	got := make([]byte, 4)
	if err := kb.readFull(got, time.Now().Add(10*time.Second), true); err != nil {
		t.Fatal(err)
	}
	if string(got) != "late" {
		t.Fatalf("read %q, want %q", got, "late")
	}
}

// TestKeptConnDeadline: a peer that does not answer fails a read at its
// deadline, not before, as a timeout (os.ErrDeadlineExceeded, a net.Error
// whose Timeout is true), whether the deadline is within keptDirect or
// after it; a deadline already passed fails at once.
func TestKeptConnDeadline(t *testing.T) {
	a, b := loopbackPair(t)
	defer b.Close()
	ka := newTestKeptConn(t, a)
	buf := make([]byte, 8)
	for _, d := range []time.Duration{keptDirect / 2, 30 * time.Millisecond, -time.Second} {
		deadline := time.Now().Add(d)
		err := ka.readFull(buf, deadline, true)
		var ne net.Error
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("deadline in %s: %v, want a timeout", d, err)
		}
		if time.Now().Before(deadline) {
			t.Fatalf("deadline in %s: failed before it", d)
		}
	}
}

// TestKeptConnWriteDeadline: a write to a peer that reads nothing fails
// at its deadline, not before, as a timeout.
func TestKeptConnWriteDeadline(t *testing.T) {
	a, b := loopbackPair(t)
	defer b.Close()
	ka := newTestKeptConn(t, a)
	deadline := time.Now().Add(50 * time.Millisecond)
	err := ka.write(make([]byte, 32<<20), deadline)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write to a peer that reads nothing: %v, want a timeout", err)
	}
	if time.Now().Before(deadline) {
		t.Fatal("the write failed before its deadline")
	}
}

// TestKeptConnNoDirect: with no direct wait allowed (GOMAXPROCS 1: the
// process's one processor is not held), every wait is in the poller, and
// a ping-pong works the same.
func TestKeptConnNoDirect(t *testing.T) {
	a, b := loopbackPair(t)
	ka, kb := newTestKeptConn(t, a), newTestKeptConn(t, b)
	ka.maxDirect, kb.maxDirect = 0, 0
	go func() {
		buf := make([]byte, 100)
		for kb.readFull(buf, time.Time{}, true) == nil && kb.write(buf, time.Time{}) == nil {
		}
	}()
	msg, got := bytes.Repeat([]byte("ping"), 25), make([]byte, 100)
	for range 10 {
		if err := ka.write(msg, time.Now().Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := ka.readFull(got, time.Now().Add(10*time.Second), true); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatal("the echo changed on its way")
		}
	}
}

// TestKeptConnClose: Close from another goroutine ends a read waiting in
// the poller (no deadline) with io.EOF; the peer's close ends one as
// well, and a write after it fails.
func TestKeptConnClose(t *testing.T) {
	a, b := loopbackPair(t)
	ka, kb := newTestKeptConn(t, a), newTestKeptConn(t, b)
	errc := make(chan error, 1)
	go func() { errc <- ka.readFull(make([]byte, 8), time.Time{}, true) }()
	time.Sleep(10 * keptDirect) // in the poller by then
	_ = ka.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("read after Close: %v, want io.EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the read")
	}
	// kb's peer is shut down: its read ends, and its writes fail soon.
	if err := kb.readFull(make([]byte, 8), time.Now().Add(10*time.Second), false); !errors.Is(err, io.EOF) {
		t.Fatalf("read from a closed peer: %v, want io.EOF", err)
	}
	var err error
	for range 100 {
		if err = kb.write(make([]byte, 8), time.Now().Add(time.Second)); err != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err == nil {
		t.Fatal("writes to a closed peer did not fail")
	}
}

// TestKeptBurstAllocs: a burst allocates nothing.
func TestKeptBurstAllocs(t *testing.T) {
	a, b := loopbackPair(t)
	defer b.Close()
	// A plain echo on a blocking descriptor: it allocates nothing either.
	echo, err := newTCPConn(b, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer echo.release()
	defer echo.Close()
	go func() {
		buf := make([]byte, 64)
		for echo.readFull(buf) == nil && echo.write(buf) == nil {
		}
	}()
	k := &Kept{kc: newTestKeptConn(t, a), buf: make([]byte, 64), half: true}
	samples := make([]uint64, 10)
	deadline := time.Now().Add(time.Minute)
	if n := testing.AllocsPerRun(20, func() {
		if err := k.Burst(deadline, samples); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("a burst allocates %v times", n)
	}
	for i, s := range samples {
		if s == 0 {
			t.Fatalf("sample %d is 0", i)
		}
	}
}

// TestKeptSession: a kept session against a server: bursts one after
// another, with the server idle between them for longer than keptDirect,
// and from a client that marks no burst's end (an older one); every
// sample set; Close ends the server's end without error.
func TestKeptSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	warm := 2
	spec := Spec{Test: "tcp-lat", Sizes: []int{MaxKeptSize}, Iterations: 5, Warmup: &warm}
	k, err := OpenKept(ctx, Target{Remote: pipeRemote{&Server{}}, Host: "127.0.0.1"}, spec)
	if err != nil {
		t.Fatal(err)
	}
	samples := make([]uint64, 5)
	for i := range 3 {
		if i > 0 {
			time.Sleep(5 * keptDirect)
		}
		clear(samples)
		if err := k.Burst(time.Now().Add(10*time.Second), samples); err != nil {
			t.Fatalf("burst %d: %v", i, err)
		}
		for j, s := range samples {
			if s == 0 {
				t.Fatalf("burst %d: sample %d is 0", i, j)
			}
		}
	}
	for range 3 { // no mark of a burst's end
		time.Sleep(5 * keptDirect)
		if err := k.pingPong(time.Now().Add(10*time.Second), false); err != nil {
			t.Fatalf("unmarked ping-pong: %v", err)
		}
	}
	if err := k.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
}
