package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// promtool is promtool on $PATH. Without it the test skips, unless CI is
// set (scripts/test.sh sets it; scripts/deps.sh installs the Debian
// package prometheus): there it fails.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		msg := "promtool not installed (Debian package prometheus, which scripts/deps.sh installs)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + "; CI is set, so the test fails rather than skipping")
		}
		t.Skip(msg)
	}
	return p
}

// probedAgent is an agent with four peers: three probed well (a real
// tcp-lat run in this process, its result recorded as their probes'),
// one that failed, judged by blame (three peers with a p50 and a
// bandwidth, as it takes).
func probedAgent(t *testing.T) *Agent {
	t.Helper()
	file := filepath.Join(t.TempDir(), "peers")
	write(t, file, "good\nbad\nok2\nok3\n")
	// A bandwidth probe of 1 s every 50 s.
	a, err := New(Config{Host: "h", PeersFile: file, Probe: probeRequest(), BW: BWProbe{Test: "tcp-bw", Share: 0.02}})
	if err != nil {
		t.Fatal(err)
	}
	a.reload()
	run, err := workloads.NewPlan(workloads.Request{Tests: []string{"tcp-lat"},
		Spec: workloads.Spec{Iterations: 50}})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := run.Execute(context.Background(), workloads.Target{})
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	bad := a.byAddr["bad:19515"].stats
	for _, name := range []string{"good", "ok2", "ok3"} {
		good := a.byAddr[name+":19515"].stats
		for range 3 {
			if err := good.addSamples(doc.Results[0].Latency); err != nil {
				t.Fatal(err)
			}
			good.probes[resultIndex(ResultOK)]++
		}
		good.lastOK = time.Unix(1_700_000_000, 0)
		// A bandwidth probe, as a tcp-bw probe records it.
		good.bwBytes, good.bwAt = 1.25e9, time.Unix(1_700_000_000, 0)
		good.bwProbes[resultIndex(ResultOK)]++
	}
	bad.probes[resultIndex(ResultConnect)] += 2
	bad.bwProbes[resultIndex(ResultTimeout)]++
	a.mu.Unlock()
	a.judge()
	return a
}

// TestMetricsText: the endpoint's text passes `promtool check metrics`
// with nothing to say, and both formats hold every family.
func TestMetricsText(t *testing.T) {
	a := probedAgent(t)
	// Network times, as a UD probe records them where both NICs stamp (0:
	// a ping-pong without, not counted).
	a.mu.Lock()
	a.st.stamped = true
	a.byAddr["good:19515"].stats.addNetNs([]uint64{1500, 0, 2500})
	a.mu.Unlock()
	var text, om bytes.Buffer
	if err := a.WriteMetrics(&text, FormatText); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteMetrics(&om, FormatOpenMetrics); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`rdmabench_agent_probe_latency_seconds_bucket{basis="rtt_half",device="",host="h",peer="good:19515",test="tcp-lat",le="+Inf"} 150`,
		`rdmabench_agent_probe_latency_seconds_count{basis="rtt_half",device="",host="h",peer="good:19515",test="tcp-lat"} 150`,
		`rdmabench_agent_probe_latency_seconds_count{basis="rtt_half",device="",host="h",peer="bad:19515",test="tcp-lat"} 0`,
		`rdmabench_agent_probe_network_latency_seconds_bucket{basis="rtt_half",device="",host="h",peer="good:19515",test="tcp-lat",le="1e-06"} 0`,
		`rdmabench_agent_probe_network_latency_seconds_bucket{basis="rtt_half",device="",host="h",peer="good:19515",test="tcp-lat",le="+Inf"} 2`,
		`rdmabench_agent_probe_network_latency_seconds_sum{basis="rtt_half",device="",host="h",peer="good:19515",test="tcp-lat"} 4e-06`,
		`rdmabench_agent_probe_network_latency_seconds_count{basis="rtt_half",device="",host="h",peer="bad:19515",test="tcp-lat"} 0`,
		`rdmabench_agent_probes_total{device="",host="h",peer="good:19515",result="ok",test="tcp-lat"} 3`,
		`rdmabench_agent_probes_total{device="",host="h",peer="bad:19515",result="connect",test="tcp-lat"} 2`,
		`rdmabench_agent_peer_last_ok_timestamp_seconds{device="",host="h",peer="good:19515",test="tcp-lat"} 1.7e+09`,
		`rdmabench_agent_peer_p50_seconds{basis="rtt_half",device="",host="h",peer="good:19515",test="tcp-lat"}`,
		`rdmabench_agent_peer_slow{device="",host="h",peer="good:19515",test="tcp-lat"} 0`,
		`rdmabench_agent_blame_judged{device="",host="h",test="tcp-lat"} 1`,
		`rdmabench_agent_blame_judged{device="",host="h",test="tcp-bw"} 1`,
		`rdmabench_agent_peers{device="",host="h"} 4`,
		`rdmabench_agent_probe_period_seconds{device="",host="h"} 0.4`,
		`rdmabench_agent_peers_errors_total{device="",host="h",kind="not_found"} 0`,
		`rdmabench_agent_peers_ok{device="",host="h"} 1`,
		`rdmabench_agent_peer_bandwidth_bytes_per_second{device="",host="h",peer="good:19515",test="tcp-bw"} 1.25e+09`,
		`rdmabench_agent_bandwidth_probes_total{device="",host="h",peer="bad:19515",result="timeout",test="tcp-bw"} 1`,
		`rdmabench_agent_peer_bandwidth_last_ok_timestamp_seconds{device="",host="h",peer="good:19515",test="tcp-bw"} 1.7e+09`,
		`rdmabench_agent_peer_bandwidth_low{device="",host="h",peer="good:19515",test="tcp-bw"} 0`,
		`rdmabench_agent_bandwidth_probe_period_seconds{device="",host="h"} 200`,
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text lacks %s", want)
		}
		name := want[:strings.IndexByte(want, '{')]
		if !strings.Contains(om.String(), name+"{") {
			t.Errorf("the OpenMetrics text lacks %s", name)
		}
	}
	if strings.Contains(text.String(), `peer_last_ok_timestamp_seconds{device="",host="h",peer="bad`) {
		t.Error("a peer never probed well has a last good probe")
	}
	if strings.Contains(text.String(), `peer_slow{device="",host="h",peer="bad`) || strings.Contains(text.String(), `bandwidth_low{device="",host="h",peer="bad`) {
		t.Error("a peer never probed well has a verdict")
	}
	if !strings.HasSuffix(om.String(), "# EOF\n") || !strings.Contains(om.String(), "# TYPE rdmabench_agent_probes counter\n") {
		t.Errorf("not OpenMetrics:\n%s", om.String())
	}
	cmd := exec.Command(promtool(t), "check", "metrics")
	cmd.Stdin = &text
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestClassify: each failure a probe meets is named by its kind.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&control.ServerError{Code: control.CodeBusy}, ResultBusy},
		{fmt.Errorf("x: %w", &control.ServerError{Code: control.CodeAuth}), ResultAuth},
		{&control.ServerError{Code: control.CodeSpec}, ResultRefused},
		{&control.ServerError{Code: control.CodeLimit}, ResultRefused},
		{fmt.Errorf("connect: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")}), ResultConnect},
		{&net.DNSError{Err: "no such host", Name: "x"}, ResultConnect},
		{fmt.Errorf("tcp-lat: %w", context.DeadlineExceeded), ResultTimeout},
		{fmt.Errorf("read: %w", control.ErrBadFrame), ResultProtocol},
		{control.ErrPeerClosed, ResultProtocol},
		{fmt.Errorf("tcp-lat: %w (while sending run)", control.ErrPeerShutdown), ResultClosed},
		{errors.New("peer failed (ready/0): no"), ResultTest},
	} {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("classify(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}

// TestEndpoint: /metrics serves OpenMetrics to a scraper that asks for it
// and the text format to one that does not; every other path is 404 and
// every other method 405.
func TestEndpoint(t *testing.T) {
	a := probedAgent(t)
	srv := a.httpServer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	for _, tc := range []struct {
		method, path, accept string
		code                 int
		ctype                string
	}{
		{"GET", "/metrics", "", 200, "text/plain"},
		{"GET", "/metrics", "application/openmetrics-text;version=1.0.0", 200, "application/openmetrics-text"},
		{"HEAD", "/metrics", "", 200, "text/plain"},
		{"POST", "/metrics", "", 405, ""},
		{"GET", "/", "", 404, ""},
		{"GET", "/debug/pprof/", "", 404, ""},
	} {
		code, ctype, _ := httpDo(t, tc.method, base+tc.path, tc.accept)
		if code != tc.code || !strings.HasPrefix(ctype, tc.ctype) {
			t.Errorf("%s %s (Accept %q): %d %q, want %d %q", tc.method, tc.path, tc.accept, code, ctype, tc.code, tc.ctype)
		}
	}
}

// httpDo asks url with method and accept (empty: none), and returns the
// status, the content type and the body.
func httpDo(t *testing.T, method, url, accept string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), body
}
