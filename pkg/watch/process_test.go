package watch

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rdmabench/rdmabench/internal/buildinfo"
)

// scrape GETs url with accept (empty: none) and returns the body and its
// content type; a status other than 200 fails the test.
func scrape(t *testing.T, url, accept string) ([]byte, string) {
	t.Helper()
	code, ctype, body := httpDo(t, http.MethodGet, url, accept)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", url, code, body)
	}
	return body, ctype
}

// TestProcessMetrics: a running agent's one scrape has, beside its own
// families, rdmabench_build_info (1, this build's version, commit and Go
// version), the process collector's process_* (its CPU, memory and
// descriptors) and the Go collector's go_*, every sample with the agent's
// host and device; the text passes `promtool check metrics` with nothing
// to say, and the OpenMetrics the strict decoder reads holds the same
// families.
func TestProcessMetrics(t *testing.T) {
	a, b := startAgent(t, "a", ""), startAgent(t, "b", "")
	write(t, a.peers, b.addr+"\n")
	url := "http://" + a.metrics + "/metrics"
	parse := func(text []byte) map[string]*dto.MetricFamily {
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		return fams
	}
	eventually(t, 30*time.Second, "a good probe of b", func() (bool, string) {
		text, _ := scrape(t, url, "")
		return strings.Contains(string(text), `peer="`+b.addr+`",result="ok"`) &&
			probesOf(parse(text), b.addr, ResultOK) > 0, string(text)
	})
	text, ctype := scrape(t, url, "")
	if !strings.HasPrefix(ctype, "text/plain") {
		t.Errorf("content type %q", ctype)
	}
	fams := parse(text)
	want := []string{"rdmabench_build_info", "go_goroutines", "go_gc_duration_seconds", "go_memory_classes_heap_objects_bytes", "go_memory_classes_total_bytes", "go_threads",
		"rdmabench_agent_probes_total", "rdmabench_agent_probe_latency_seconds", "rdmabench_agent_peers"}
	if runtime.GOOS == "linux" {
		want = append(want, "process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
			"process_open_fds", "process_max_fds", "process_start_time_seconds")
	}
	for _, name := range want {
		if fams[name] == nil {
			t.Errorf("no %s in the scrape", name)
		}
	}
	for name, mf := range fams {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if h, ok := l["host"]; !ok || h != "a" || l["device"] != "" {
				t.Errorf("%s %v: not host a's, device empty", name, l)
			}
		}
	}
	if bi := fams["rdmabench_build_info"]; bi != nil {
		info := buildinfo.Get()
		m := bi.GetMetric()
		l := map[string]string{}
		for _, p := range m[0].GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if len(m) != 1 || m[0].GetGauge().GetValue() != 1 || l["version"] != info.Version || l["goversion"] != runtime.Version() ||
			l["commit"] == "" || !strings.HasPrefix(l["commit"], info.Commit) || bi.GetType() != dto.MetricType_GAUGE {
			t.Errorf("rdmabench_build_info: %v", m)
		}
	}
	if runtime.GOOS == "linux" {
		if f := fams["process_resident_memory_bytes"]; f != nil && !(f.GetMetric()[0].GetGauge().GetValue() > 0) {
			t.Errorf("process_resident_memory_bytes %v", f.GetMetric()[0])
		}
	}
	cmd := exec.Command(promtool(t), "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	om, ctype := scrape(t, url, "application/openmetrics-text;version=1.0.0")
	if !strings.HasPrefix(ctype, "application/openmetrics-text") {
		t.Errorf("content type %q", ctype)
	}
	dec := expfmt.NewDecoder(bytes.NewReader(om), expfmt.NewFormat(expfmt.TypeOpenMetrics))
	seen := map[string]bool{}
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("OpenMetrics: %v\n%s", err, om)
		}
		if seen[mf.GetName()] {
			t.Errorf("OpenMetrics: %s twice", mf.GetName())
		}
		seen[mf.GetName()] = true
	}
	for _, name := range want {
		// The OpenMetrics decoder names a counter without its _total.
		if !seen[strings.TrimSuffix(name, "_total")] && !seen[name] {
			t.Errorf("OpenMetrics: no %s", name)
		}
	}
	if !bytes.Contains(om, []byte("# UNIT rdmabench_agent_probe_latency_seconds seconds\n")) {
		t.Errorf("OpenMetrics: the agent's units lost:\n%s", om)
	}
}

// probesOf is the count of peer's probes of result in fams, -1 without one.
func probesOf(fams map[string]*dto.MetricFamily, peer, result string) float64 {
	mf := fams["rdmabench_agent_probes_total"]
	for _, m := range mf.GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["peer"] == peer && l["result"] == result {
			return m.GetCounter().GetValue()
		}
	}
	return -1
}
