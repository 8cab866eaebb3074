package watch

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/remote"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// udRequest is the UD probe's request on dev, as `--probe ud-lat` makes it.
func udRequest(dev string) workloads.Request {
	spec := workloads.Spec{Connection: "UD", Sizes: []int{32}, Iterations: 5}
	spec.Device = dev
	return workloads.Request{Tests: []string{"send-lat"}, Spec: spec}
}

// udAgent runs an agent with the UD probe on dev, serving on addr
// ("127.0.0.1:0": a free port), until the stop it returns is called.
func udAgent(t *testing.T, dev, addr string) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	file := filepath.Join(t.TempDir(), "peers")
	write(t, file, "")
	b, err := New(Config{Host: "b", PeersFile: file, Probe: udRequest(dev), UD: true,
		ServerOptions: control.ServerOptions{MaxTests: 8, MaxConns: 16}})
	if err != nil {
		t.Fatal(err)
	}
	b.Listen(ln, nil, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	stop := func() {
		if cancel == nil {
			return
		}
		cancel()
		cancel = nil
		if err := <-done; err != nil {
			t.Errorf("agent b: %v", err)
		}
	}
	t.Cleanup(stop)
	// Serving once its UD probe is open.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err := remote.Dial(context.Background(), ln.Addr().String(), "")
		if err == nil {
			has := c.Has(workloads.UDProbeFeature)
			_ = c.Close()
			if has {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent b is not serving its UD probe 20s after its start (%v)", err)
		}
	}
	return ln.Addr().String(), stop
}

// TestUDProbeAgents: an agent's UD probes of a peer agent are answered
// by the peer's responder, learnt once; a peer restarted on the same
// address (another QPN) is a timeout once and then learnt again and good;
// a server without a UD probe is refused by name; every verbs object is
// freed.
func TestUDProbeAgents(t *testing.T) {
	dev := testutil.Device(t)
	testutil.NoLeaks(t)
	addr, stopB := udAgent(t, dev, "127.0.0.1:0")
	plain, _ := serveOn(t, "127.0.0.1:0")

	file := filepath.Join(t.TempDir(), "peers")
	a, err := New(Config{Host: "a", PeersFile: file, Probe: udRequest(dev), UD: true, ProbeTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	log := &testutil.SyncBuffer{}
	a.cfg.Log = log
	if err := a.openUD(); err != nil {
		t.Fatal(err)
	}
	closed := false
	closeUD := func() {
		if !closed {
			a.closeUD()
			closed = true
		}
	}
	defer closeUD()
	write(t, file, addr+"\n")
	a.reload()
	probes := func() [10]uint64 {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.st.peers[0].probes
	}
	const good = 4
	for range good {
		probeNext(t, a)
	}
	if p := probes(); p[resultIndex(ResultOK)] != good {
		t.Fatalf("probes %v, want %d good\n%s", p, good, log.String())
	}
	m := metricsText(t, a)
	// Each sample in its bucket: none is under 100 ns, all under 10 s.
	lat := `rdmabench_agent_probe_latency_seconds_bucket{basis="rtt_half",device="` + dev + `",host="a",peer="` + addr + `",test="ud-lat",`
	for _, want := range []string{lat + `le="1e-07"} 0`, lat + `le="10"} 20`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics without %s:\n%s", want, m)
		}
	}
	for _, want := range []string{`rdmabench_agent_probe_latency_seconds_count{basis="rtt_half",device="` + dev + `",host="a",peer="` + addr + `",test="ud-lat"} 20`,
		"rdmabench_agent_ud_probes_answered_total{", "rdmabench_agent_nic_timestamps{"} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics without %s:\n%s", want, m)
		}
	}
	// A device without completion timestamps (Soft-RoCE): said once, and
	// no network times.
	if a.ud.NICTimestamps() || strings.Contains(m, "rdmabench_agent_probe_network_latency_seconds_count{") ||
		!strings.Contains(log.String(), "has no completion timestamps: each probe records the host's round trip alone") {
		t.Errorf("%s stamps completions (%v), or the agent did not say it has none, or it has network times:\n%s\n%s", dev, a.ud.NICTimestamps(), log.String(), m)
	}

	// The peer restarts on the same address: its responder has another
	// QPN, so the probe of the one learnt times out; the next learns again.
	stopB()
	udAgent(t, dev, addr)
	probeNext(t, a)
	probeNext(t, a)
	p := probes()
	if p[resultIndex(ResultTimeout)] != 1 || p[resultIndex(ResultOK)] != good+1 {
		t.Fatalf("after the peer's restart: probes %v, want one timeout and one more good\n%s", p, log.String())
	}

	// A server with no UD probe is refused by name.
	write(t, file, plain+"\n")
	a.reload()
	probeNext(t, a)
	if p := probes(); p[resultIndex(ResultRefused)] != 1 || !strings.Contains(log.String(), "has no UD probe") {
		t.Fatalf("a server without a UD probe: probes %v, want one refused, said so\n%s", p, log.String())
	}
	closeUD()
}

// TestGonePeerReleased: a peer removed from the set while its bandwidth
// probe was in flight has what its latency probes keep (here a kept
// tcp-lat session and its control connection) freed when that probe
// ends, not held until the agent stops.
func TestGonePeerReleased(t *testing.T) {
	addr, _ := serveOn(t, "127.0.0.1:0")
	file := filepath.Join(t.TempDir(), "peers")
	a, err := New(Config{Host: "a", PeersFile: file, Probe: probeRequest(), Keep: true,
		BW: BWProbe{Test: "tcp-bw", Duration: 100 * time.Millisecond, Share: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	write(t, file, addr+"\n")
	a.reload()
	probeNext(t, a) // sets the kept session up
	p := a.nextPeer(&a.bwCursor, nil)
	if p == nil || p.kept == nil {
		t.Fatal("no peer with a kept session to probe")
	}
	write(t, file, "")
	a.reload() // removed while its bandwidth probe is in flight
	a.probe(context.Background(), p, true, nil)
	a.mu.Lock()
	kept, client := p.kept, p.client
	a.mu.Unlock()
	if kept != nil || client != nil {
		t.Fatalf("a removed peer still holds its kept session %v and connection %v after its last probe", kept, client)
	}
	a.kept.closer.Wait()
}
