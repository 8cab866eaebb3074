package watch

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// prometheusPath is the Prometheus server (Debian package prometheus,
// which scripts/deps.sh installs); without it the test skips, unless CI is
// set.
func prometheusPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"prometheus", "/usr/bin/prometheus"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	msg := "prometheus not installed (Debian package prometheus, which scripts/deps.sh installs)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "; CI is set, so the test fails rather than skipping")
	}
	t.Skip(msg)
	return ""
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// runningAgent is an agent of the test, running until stop.
type runningAgent struct {
	name, addr, metrics, peers string
	stop                       func()
}

func startAgent(t *testing.T, name, peersText string) *runningAgent {
	t.Helper()
	ln, mln := listen(t), listen(t)
	file := filepath.Join(t.TempDir(), "peers")
	write(t, file, peersText)
	a, err := New(Config{Host: name, Serve: ln, Metrics: mln, PeersFile: file, Probe: probeRequest(), Rate: 20,
		Reload: 200 * time.Millisecond, BlameEvery: time.Second, ProbeTimeout: 2 * time.Second, Log: &testLog{t: t, name: name}})
	if err != nil {
		t.Fatal(err)
	}
	return &runningAgent{name: name, addr: ln.Addr().String(), metrics: mln.Addr().String(), peers: file, stop: runAgent(t, name, a)}
}

// testLog is an agent's log, as the test's.
type testLog struct {
	t    *testing.T
	name string
}

func (l *testLog) Write(p []byte) (int, error) {
	l.t.Logf("agent %s: %s", l.name, strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestPrometheusScrapesAgents: three agents probe each other over
// tcp-lat; a real Prometheus scrapes them every second, and PromQL over
// its HTTP API returns every peer's latency series. Then one agent stops
// and another's peers file gains a peer that answers garbage: the probe
// errors of both rise in the queried metrics, by kind.
func TestPrometheusScrapesAgents(t *testing.T) {
	prom := prometheusPath(t)
	if testing.Short() {
		t.Skip("-short: runs Prometheus for about 20 s")
	}
	// The agents' addresses are known once they listen; each reads the
	// others from its peers file on its next reload.
	agents := []*runningAgent{startAgent(t, "a", ""), startAgent(t, "b", ""), startAgent(t, "c", "")}
	var all []string
	for _, ag := range agents {
		all = append(all, ag.addr)
	}
	for _, ag := range agents {
		// Its own address too: an agent leaves itself out.
		write(t, ag.peers, "# the three agents\n"+strings.Join(all, "\n")+"\n")
	}

	var targets []string
	for _, ag := range agents {
		targets = append(targets, ag.metrics)
	}
	base := startPrometheus(t, prom, targets)

	// Every agent's latency series of each of its two peers.
	want := map[string]bool{}
	for _, ag := range agents {
		for _, p := range agents {
			if p != ag {
				want[ag.name+" "+p.addr] = true
			}
		}
	}
	eventually(t, 30*time.Second, "every peer's latency series", func() (bool, string) {
		got := query(t, base, `rdmabench_agent_probe_latency_seconds_count{job="rdmabench-agent"} > 0`)
		seen := map[string]bool{}
		for _, s := range got {
			seen[s.Metric["host"]+" "+s.Metric["peer"]] = true
		}
		for k := range want {
			if !seen[k] {
				return false, fmt.Sprintf("%d of %d series: %v", len(seen), len(want), seen)
			}
		}
		return len(seen) == len(want), ""
	})
	// The histograms add up across hosts: the fleet's p50.
	eventually(t, 10*time.Second, "fleet p50 over the histograms", func() (bool, string) {
		got := query(t, base, `histogram_quantile(0.5, sum by (le) (rate(rdmabench_agent_probe_latency_seconds_bucket[10s])))`)
		return len(got) == 1 && got[0].Value > 0, fmt.Sprint(got)
	})

	// c vanishes; a's peers gain one answering garbage.
	garbage := listen(t)
	go func() {
		for {
			c, err := garbage.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, "HTTP/1.0 200 OK\r\n\r\nnot the control protocol\n")
			c.Close()
		}
	}()
	t.Cleanup(func() { garbage.Close() })
	write(t, agents[0].peers, strings.Join(all, "\n")+"\n"+garbage.Addr().String()+"\n")
	agents[2].stop()
	c := agents[2].addr
	errorsOf := func(host, peer, result string) float64 {
		q := fmt.Sprintf(`sum(rdmabench_agent_probes_total{host=%q,peer=%q,result=~%q})`, host, peer, result)
		if got := query(t, base, q); len(got) == 1 {
			return got[0].Value
		}
		return 0
	}
	var first [3]float64
	eventually(t, 20*time.Second, "probe errors of the stopped and the garbage peers", func() (bool, string) {
		first = [3]float64{errorsOf("a", c, "closed|connect|protocol|timeout"), errorsOf("b", c, "closed|connect|protocol|timeout"),
			errorsOf("a", garbage.Addr().String(), "protocol")}
		return first[0] > 0 && first[1] > 0 && first[2] > 0, fmt.Sprint(first)
	})
	eventually(t, 20*time.Second, "the probe errors rising", func() (bool, string) {
		now := [3]float64{errorsOf("a", c, "closed|connect|protocol|timeout"), errorsOf("b", c, "closed|connect|protocol|timeout"),
			errorsOf("a", garbage.Addr().String(), "protocol")}
		return now[0] > first[0] && now[1] > first[1] && now[2] > first[2], fmt.Sprint(first, now)
	})
	// The peers still there are still probed well.
	if v := query(t, base, fmt.Sprintf(`rdmabench_agent_peer_last_ok_timestamp_seconds{host="a",peer=%q}`, agents[1].addr)); len(v) != 1 {
		t.Errorf("a's last good probe of b: %+v", v)
	}
}

// startPrometheus runs the Prometheus at prom, scraping targets (HOST:PORT)
// every second as job rdmabench-agent, until the test ends; it returns
// the base URL of its HTTP API (not necessarily ready yet: query answers
// nothing until it is).
func startPrometheus(t *testing.T, prom string, targets []string) string {
	t.Helper()
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = strconv.Quote(tg)
	}
	cfgFile := filepath.Join(dir, "prometheus.yml")
	write(t, cfgFile, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: rdmabench-agent
    static_configs:
      - targets: [%s]
`, strings.Join(quoted, ", ")))
	pl := listen(t)
	promAddr := pl.Addr().String()
	pl.Close()
	cmd := exec.Command(prom, "--config.file", cfgFile, "--storage.tsdb.path", filepath.Join(dir, "data"),
		"--web.listen-address", promAddr, "--log.level", "warn")
	promLog, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = promLog, promLog
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(promLog.Name())
			t.Logf("prometheus log:\n%s", b)
		}
	})
	return "http://" + promAddr
}

// sample is one series of a PromQL instant vector.
type sample struct {
	Metric map[string]string
	Value  float64
}

// query runs an instant PromQL query over Prometheus's HTTP API.
func query(t *testing.T, base, q string) []sample {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil // not up yet
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable {
		return nil // up, its storage not ready yet ("Service Unavailable")
	}
	var r struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	if r.Status != "success" {
		t.Fatalf("query %s: %s", q, r.Error)
	}
	var out []sample
	for _, s := range r.Data.Result {
		str, _ := s.Value[1].(string)
		v, _ := strconv.ParseFloat(str, 64)
		out = append(out, sample{Metric: s.Metric, Value: v})
	}
	return out
}

// eventually polls cond every 250 ms until it holds, failing the test
// after limit with what cond said last.
func eventually(t *testing.T, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v: %s", what, limit, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
