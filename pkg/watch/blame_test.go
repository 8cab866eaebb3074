package watch

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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
	run, err := workloads.NewPlan(workloads.Request{Tests: []string{"tcp-lat"},
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

// metricsText is a's metrics in the text format.
func metricsText(t *testing.T, a *Agent) string {
	t.Helper()
	var b strings.Builder
	if err := a.WriteMetrics(&b, FormatText); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestBlameTooFewPeers: with one or two peers with a p50 blame cannot
// judge (of fewer than 3 none can stand out), even a peer 3× the other:
// no peer has a verdict series, rdmabench_agent_blame_judged is 0, a
// verdict from before is dropped, and the log says it once; with three,
// the slow one is named again.
func TestBlameTooFewPeers(t *testing.T) {
	a, file := testAgent(t, 0)
	var log strings.Builder
	a.cfg.Log = &log
	slowSeries := func(text string) int { return strings.Count(text, "\nrdmabench_agent_peer_slow{") }
	const judged0 = `rdmabench_agent_blame_judged{device="",host="h",test="tcp-lat"} 0` + "\n"
	const judged1 = `rdmabench_agent_blame_judged{device="",host="h",test="tcp-lat"} 1` + "\n"

	write(t, file, "p0\n")
	a.reload()
	if text := metricsText(t, a); slowSeries(text) != 0 || !strings.Contains(text, judged0) {
		t.Errorf("before a blame pass: %d verdicts, judged 1:\n%s", slowSeries(text), text)
	}
	for _, tc := range []struct {
		what  string
		peers string
		p50s  []float64
		slow  string // the peers named slow; "-": not judged
	}{
		{"one peer", "p0", []float64{30e3}, "-"},
		{"three peers, one 3x", "p0\np1\np2", []float64{30e3, 10e3, 10.1e3}, "p0:19515"},
		{"two peers, one 3x", "p0\np1", []float64{30e3, 10e3}, "-"},
		{"two peers, one not probed well yet", "p0\np1\np2", []float64{30e3, 10e3, 0}, "-"},
		{"three again", "p0\np1\np2", []float64{30e3, 10e3, 10.1e3}, "p0:19515"},
	} {
		write(t, file, tc.peers+"\n")
		a.reload()
		setP50s(a, tc.p50s...)
		a.judge()
		text := metricsText(t, a)
		if tc.slow == "-" {
			if n := slowSeries(text); n != 0 || !strings.Contains(text, judged0) || len(a.slowPeers()) != 0 {
				t.Errorf("%s: %d verdict series, slow %q, want none and blame_judged 0:\n%s", tc.what, n, a.slowPeers(), text)
			}
			continue
		}
		// A verdict for each peer with a p50.
		if got := strings.Join(a.slowPeers(), " "); got != tc.slow || slowSeries(text) != len(tc.p50s) || !strings.Contains(text, judged1) ||
			!strings.Contains(text, `rdmabench_agent_peer_slow{device="",host="h",peer="p0:19515",test="tcp-lat"} 1`+"\n") {
			t.Errorf("%s: slow %q, want %q:\n%s", tc.what, got, tc.slow, text)
		}
	}
	l := log.String()
	for _, want := range []string{
		"blame: 1 of 1 peers with a tcp-lat p50, not judged: it takes 3 peers, of fewer none can stand out",
		"blame: 3 peers with a tcp-lat p50: judged again",
		"blame: peer p0:19515 slow:",
		"blame: 2 of 2 peers with a tcp-lat p50, not judged",
	} {
		if !strings.Contains(l, want) {
			t.Errorf("the log lacks %q:\n%s", want, l)
		}
	}
	if n := strings.Count(l, "not judged"); n != 2 {
		t.Errorf("not judged told %d times, want 2 (once each time it became so):\n%s", n, l)
	}
	if strings.Contains(l, "no longer slow") {
		t.Errorf("a peer not judged told no longer slow:\n%s", l)
	}
}

// TestRunOnePeerNoVerdict: a running agent probing one peer well, its
// p50 judged (rdmabench_agent_peer_p50_seconds there, blame having run),
// exports no rdmabench_agent_peer_slow for it, and says blame did not
// judge: one peer is no fleet to stand out of.
func TestRunOnePeerNoVerdict(t *testing.T) {
	a, b := startAgent(t, "a", ""), startAgent(t, "b", "")
	write(t, a.peers, b.addr+"\n")
	url := "http://" + a.metrics + "/metrics"
	var text string
	eventually(t, 30*time.Second, "a's judged p50 of b", func() (bool, string) {
		body, _ := scrape(t, url, "")
		text = string(body)
		return strings.Contains(text, "\nrdmabench_agent_peer_p50_seconds{"), text
	})
	if strings.Contains(text, "rdmabench_agent_peer_slow{") || !strings.Contains(text, `rdmabench_agent_blame_judged{device="",host="a",test="tcp-lat"} 0`) {
		t.Errorf("one peer judged:\n%s", text)
	}
}
