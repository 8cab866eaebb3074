package watch

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// setP50s gives each peer of a recent p50s of ns (in the peers file's
// order), as if from 5 good probes each.
func setP50s(a *Agent, ns ...float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, s := range a.st.peers {
		s.nRecent, s.next = 0, 0
		for range 5 {
			s.recent[s.next] = ns[i]
			s.next++
			s.nRecent++
		}
	}
}

func (a *Agent) slowPeers() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var peers []string
	for _, s := range a.st.peers {
		if s.slow {
			peers = append(peers, s.addr)
		}
	}
	return peers
}

// TestBlame: peers slow against the agent's others are named slow, and
// no longer once they are not; an agent whose peers agree names none.
func TestBlame(t *testing.T) {
	a, file := testAgent(t, 0)
	var lines []string
	for i := range 6 {
		lines = append(lines, fmt.Sprintf("p%d", i))
	}
	write(t, file, strings.Join(lines, "\n"))
	a.reload()
	for _, tc := range []struct {
		what string
		p50s []float64
		slow string
	}{
		{"peers agreeing", []float64{10e3, 10.1e3, 9.9e3, 10e3, 10.2e3, 10e3}, ""},
		{"one peer 3x", []float64{10e3, 10.1e3, 30e3, 10e3, 10.2e3, 10e3}, "p2:19515"},
		{"two peers 1.5x", []float64{15e3, 10.1e3, 10e3, 10e3, 15.2e3, 10e3}, "p0:19515 p4:19515"},
		{"recovered", []float64{10e3, 10.1e3, 9.9e3, 10e3, 10.2e3, 10e3}, ""},
	} {
		setP50s(a, tc.p50s...)
		a.judge()
		if got := strings.Join(a.slowPeers(), " "); got != tc.slow {
			t.Errorf("%s: slow %q, want %q", tc.what, got, tc.slow)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.st.peers[0].p50; p != 10e3 {
		t.Errorf("judged p50 %v, want the median of the recent ones", p)
	}
}

// TestBlameProbes: the judged p50 is the median of the last BlameProbes
// good probes: with 3, two slow probes after five fast ones make it slow;
// with the default 16, it is still the fast one.
func TestBlameProbes(t *testing.T) {
	run, err := workloads.NewRun(workloads.Request{Tests: []string{"tcp-lat"},
		Spec: workloads.Spec{Iterations: 20}})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := run.Execute(context.Background(), workloads.Target{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		window int
		want   float64
	}{{3, 30e3}, {0, 10e3}, {16, 10e3}} {
		p := &peerStats{window: tc.window}
		for i, ns := range []float64{10e3, 10e3, 10e3, 10e3, 10e3, 30e3, 30e3} {
			l := *doc.Results[0].Latency
			l.P50Ns = ns
			if err := p.addSamples(&l); err != nil {
				t.Fatalf("probe %d: %v", i, err)
			}
		}
		if got := p.recentP50(); got != tc.want {
			t.Errorf("window %d: judged p50 %v, want %v", tc.window, got, tc.want)
		}
	}
	for _, n := range []int{2, 17, -1} {
		cfg := Config{PeersFile: "peers", BlameProbes: n,
			Probe: workloads.Request{Tests: []string{"tcp-lat"}, Spec: workloads.Spec{}}}
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "--blame-probes") {
			t.Errorf("BlameProbes %d: error %v, want one naming --blame-probes", n, err)
		}
	}
}

// TestBlameBandwidth: with a bandwidth probe, a peer whose last bandwidth
// is low against the agent's others is named low (and not slow), a peer
// not yet measured is not judged, and a recovered one is no longer low.
func TestBlameBandwidth(t *testing.T) {
	file := t.TempDir() + "/peers"
	write(t, file, "p0\np1\np2\np3\np4\n")
	a, err := New(Config{Host: "h", PeersFile: file, Probe: probeRequest(), BW: BWProbe{Test: "tcp-bw"}})
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	a.cfg.Log = &log
	a.reload()
	low := func() (names []string) {
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, s := range a.st.peers {
			if s.bwLow {
				names = append(names, s.addr)
			}
			if s.slow {
				names = append(names, s.addr+" slow")
			}
		}
		return names
	}
	for _, tc := range []struct {
		what string
		gbps []float64 // 0: not measured yet
		low  string
	}{
		{"peers agreeing, one not measured", []float64{100, 99, 0, 101, 100}, ""},
		{"one peer at half", []float64{100, 99, 50, 101, 100}, "p2:19515"},
		{"recovered", []float64{100, 99, 98, 101, 100}, ""},
	} {
		a.mu.Lock()
		for i, s := range a.st.peers {
			s.bwBytes = tc.gbps[i] * 1e9 / 8
		}
		a.mu.Unlock()
		a.judge()
		if got := strings.Join(low(), " "); got != tc.low {
			t.Errorf("%s: low %q, want %q", tc.what, got, tc.low)
		}
	}
	if !strings.Contains(log.String(), "blame: peer p2:19515 bandwidth low: 50 Gbit/s, 0.5x this agent's median over its peers") ||
		!strings.Contains(log.String(), "blame: peer p2:19515 bandwidth no longer low") {
		t.Errorf("log:\n%s", log.String())
	}
}
