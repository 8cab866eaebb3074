package watch

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/remote"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// keptAgent is an agent probing addr over tcp-lat on kept sessions.
func keptAgent(t *testing.T, addr string, timeout time.Duration) (*Agent, *testutil.SyncBuffer) {
	t.Helper()
	a, file := testAgent(t, 0)
	a.cfg.Keep = true
	a.cfg.ProbeTimeout = timeout
	a.initKept()
	a.st.keptOn = true
	log := &testutil.SyncBuffer{}
	a.cfg.Log = log
	write(t, file, addr+"\n")
	a.reload()
	return a, log
}

// probeNext runs the next probe of a.
func probeNext(t *testing.T, a *Agent) {
	t.Helper()
	p := a.nextPeer(&a.cursor, &a.st.skipped)
	if p == nil {
		t.Fatal("no peer to probe")
	}
	a.probe(context.Background(), p, false, nil)
}

// serveOn serves tests on addr (a free port when "127.0.0.1:0") until the
// stop it returns is called.
func serveOn(t *testing.T, addr string) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("listen %s: %v", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = remote.Serve(ctx, ln, &workloads.Server{}, control.ServerOptions{MaxTests: 4})
	}()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

func (a *Agent) keptCounts() (opened uint64, failed [10]uint64, open int, probes [10]uint64, samples uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.countOpen()
	s := a.st.peers[0]
	return a.st.keptOpened, a.st.keptFailed, a.st.keptOpen, s.probes, s.count
}

// TestKeptReused: the probes of a peer run on one kept session, set up
// once: every probe good, its samples in the peer's histogram; the metrics
// say so.
func TestKeptReused(t *testing.T) {
	addr, _ := serveOn(t, "127.0.0.1:0")
	a, log := keptAgent(t, addr, 5*time.Second)
	const n = 6
	for range n {
		probeNext(t, a)
	}
	opened, failed, open, probes, samples := a.keptCounts()
	if opened != 1 || open != 1 || probes[resultIndex(ResultOK)] != n || failed != [10]uint64{} {
		t.Fatalf("sessions opened %d, open %d, failed %v, probes %v; want 1, 1, none, %d good\n%s", opened, open, failed, probes, n, log.String())
	}
	if want := uint64(n * a.kept.iters); samples != want {
		t.Errorf("%d samples, want %d", samples, want)
	}
	m := metricsText(t, a)
	for _, want := range []string{"rdmabench_agent_probe_sessions_opened_total{", "rdmabench_agent_probe_sessions{", `kind="timeout"`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics without %s:\n%s", want, m)
		}
	}
}

// TestKeptRestart: a peer whose server restarts on the same address gets
// its kept session set up again, at the next probe, which is good; the
// torn-down session is counted.
func TestKeptRestart(t *testing.T) {
	addr, stop := serveOn(t, "127.0.0.1:0")
	a, log := keptAgent(t, addr, 5*time.Second)
	probeNext(t, a)
	probeNext(t, a)
	stop()
	serveOn(t, addr)
	probeNext(t, a)
	probeNext(t, a)
	opened, failed, open, probes, _ := a.keptCounts()
	var torn uint64
	for _, f := range failed {
		torn += f
	}
	if opened != 2 || open != 1 || torn != 1 || probes[resultIndex(ResultOK)] != 4 {
		t.Fatalf("sessions opened %d, open %d, failed %v, probes %v; want 2, 1, one, 4 good\n%s", opened, open, failed, probes, log.String())
	}
}

// fakeKept is a server of kept sessions whose data connection echoes
// while echo is set and then answers nothing; ran counts its sessions'
// ends.
type fakeKept struct {
	echo  atomic.Bool
	ended atomic.Int32
}

func (f *fakeKept) Accept(json.RawMessage) (control.Test, error) { return f, nil }

func (f *fakeKept) Run(ctx context.Context, tr control.Transport) error {
	defer f.ended.Add(1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	setup, _ := json.Marshal(map[string]any{"port": ln.Addr().(*net.TCPAddr).Port, "token": 7})
	if err := tr.Send(ctx, setup); err != nil {
		return err
	}
	c, err := ln.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	context.AfterFunc(ctx, func() { _ = c.Close() })
	var tok [8]byte
	if _, err := io.ReadFull(c, tok[:]); err != nil || binary.BigEndian.Uint64(tok[:]) != 7 {
		return err
	}
	buf := make([]byte, 2)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			return nil
		}
		if f.echo.Load() {
			if _, err := c.Write(buf); err != nil {
				return nil
			}
		}
	}
}

func fakeServer(t *testing.T, h control.Handler, features ...string) string {
	t.Helper()
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = control.NewServer(h, control.ServerOptions{Features: features}).Serve(ctx, ln)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// TestKeptSilent: a peer that stops answering on its kept session is a
// timeout at --probe-timeout, not waited for longer; the session is torn
// down (counted as a timeout), and freed at both ends.
func TestKeptSilent(t *testing.T) {
	f := &fakeKept{}
	f.echo.Store(true)
	addr := fakeServer(t, f, workloads.KeptFeature)
	a, log := keptAgent(t, addr, 300*time.Millisecond)
	a.kept.spec.Sizes = []int{2}
	probeNext(t, a)
	f.echo.Store(false)
	start := time.Now()
	probeNext(t, a)
	took := time.Since(start)
	opened, failed, open, probes, _ := a.keptCounts()
	if opened != 1 || open != 0 || failed[resultIndex(ResultTimeout)] != 1 || probes[resultIndex(ResultOK)] != 1 || probes[resultIndex(ResultTimeout)] != 1 {
		t.Fatalf("sessions opened %d, open %d, failed %v, probes %v; want 1, 0, one timeout, one good and one timeout\n%s", opened, open, failed, probes, log.String())
	}
	if took > 10*a.cfg.ProbeTimeout {
		t.Errorf("the silent probe took %v, past its timeout %v many times", took, a.cfg.ProbeTimeout)
	}
	waitFor(t, func() bool { return f.ended.Load() == 1 }, func() string { return "the server's end of the silent session was not freed" })
}

// TestKeptNoFeature: a peer whose server keeps no probe sessions (an
// older rdmabench of the same protocol, or `rdmabench serve`) is probed
// with whole tests, told once; no session is asked of it.
func TestKeptNoFeature(t *testing.T) {
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = remote.Serve(ctx, ln, &workloads.Server{}, control.ServerOptions{}) // one test at a time: no kept feature
	}()
	t.Cleanup(func() { cancel(); <-done })
	a, log := keptAgent(t, ln.Addr().String(), 5*time.Second)
	probeNext(t, a)
	probeNext(t, a)
	opened, _, open, probes, _ := a.keptCounts()
	if probes[resultIndex(ResultOK)] != 2 || open != 0 || opened != 0 {
		t.Fatalf("probes %v, sessions opened %d, open %d: want two good whole-test probes and no session\n%s", probes, opened, open, log.String())
	}
	if n := strings.Count(log.String(), "keeps no probe sessions"); n != 1 {
		t.Errorf("told %d times, want once:\n%s", n, log.String())
	}
}

// TestKeptVersion: a peer of another protocol version is named so.
func TestKeptVersion(t *testing.T) {
	ln := listen(t)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = control.WriteFrame(c, &control.Message{Type: control.TypeHello, Protocol: 99, Version: "v9", Nonce: strings.Repeat("00", control.NonceSize)}, 0)
		_ = control.WriteFrame(c, &control.Message{Type: control.TypeAccepted}, 0)
		_, _ = io.Copy(io.Discard, c)
	}()
	a, log := keptAgent(t, ln.Addr().String(), 2*time.Second)
	probeNext(t, a)
	_, _, _, probes, _ := a.keptCounts()
	if probes[resultIndex(ResultVersion)] != 1 {
		t.Fatalf("probes %v: want one version mismatch\n%s", probes, log.String())
	}
}

// TestSlowProbeHandsOn: a peer that stops answering holds its prober
// until the probe's timeout, but not the pacing: the prober hands the
// lead on as its burst waits, and the other peer goes on being probed
// meanwhile.
func TestSlowProbeHandsOn(t *testing.T) {
	f := &fakeKept{}
	f.echo.Store(true)
	silent := fakeServer(t, f, workloads.KeptFeature)
	good, _ := serveOn(t, "127.0.0.1:0")
	file := filepath.Join(t.TempDir(), "peers")
	write(t, file, silent+"\n"+good+"\n")
	a, err := New(Config{Host: "h", PeersFile: file, Probe: probeRequest(), Rate: 50, MaxInflight: 2,
		ProbeTimeout: 3 * time.Second, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	a.kept.spec.Sizes = []int{2} // fakeKept's
	runAgent(t, "h", a)
	probes := func(addr string, result string) uint64 {
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, s := range a.st.peers {
			if s.addr == addr {
				return s.probes[resultIndex(result)]
			}
		}
		return 0
	}
	waitFor(t, func() bool { return probes(silent, ResultOK) > 0 && probes(good, ResultOK) > 0 },
		func() string { return "no good probe of both peers" })
	f.echo.Store(false)
	before := probes(good, ResultOK)
	waitFor(t, func() bool { return probes(silent, ResultTimeout) > 0 },
		func() string { return "the silent peer's probe did not time out" })
	// 3 s at 50 slots/s: about 150 slots, most of them the other peer's.
	if n := probes(good, ResultOK) - before; n < 10 {
		t.Errorf("%d good probes of the answering peer while the silent peer's probe waited 3 s at 50 slots/s, want most slots", n)
	}
}
