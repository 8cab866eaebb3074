package watch

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/settings"
	"github.com/rdmabench/rdmabench/pkg/verbs"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// fakeSysfs writes files (path relative to the infiniband class: value)
// under a temporary directory, and returns it.
func fakeSysfs(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for rel, v := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestPortCounterMetrics: the error and retransmission counters of the
// probe device's port, read from a fake sysfs at each scrape, are
// samples labelled host, device, port and counter, promtool-clean; a port
// whose counters cannot be read is 0 in rdmabench_agent_port_counters_ok,
// told once in the log, and the scrape goes on.
func TestPortCounterMetrics(t *testing.T) {
	root := fakeSysfs(t, map[string]string{
		"rxe0/ports/1/hw_counters/completer_retry_err": "12\n",
		"rxe0/ports/1/hw_counters/rcvd_seq_err":        "3\n",
		"rxe0/ports/1/hw_counters/sent_pkts":           "999\n", // traffic, not an error
		"rxe0/ports/1/counters/port_rcv_errors":        "1\n",
		"rxe0/ports/2/hw_counters/completer_retry_err": "77\n", // another port
	})
	file := filepath.Join(t.TempDir(), "peers")
	write(t, file, "peer-a\n")
	var log testutil.SyncBuffer
	a, err := New(Config{Host: "h", PeersFile: file, Log: &log, Probe: workloads.Request{Tests: []string{"write-lat"},
		Spec: workloads.Spec{DevicePort: settings.DevicePort{Device: "rxe0"}}}})
	if err != nil {
		t.Fatal(err)
	}
	a.readPort = func(dev string, port int) (map[string]uint64, error) { return verbs.PortCountersIn(root, dev, port) }
	a.reload()
	scrape := func() string {
		t.Helper()
		var b bytes.Buffer
		if err := a.WriteMetrics(&b, FormatText); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	const l = `{device="rxe0",host="h",port="1"`
	text := scrape()
	for _, want := range []string{
		"# TYPE rdmabench_agent_port_errors_total counter\n",
		`rdmabench_agent_port_errors_total{counter="completer_retry_err",device="rxe0",host="h",port="1"} 12` + "\n",
		`rdmabench_agent_port_errors_total{counter="rcvd_seq_err",device="rxe0",host="h",port="1"} 3` + "\n",
		`rdmabench_agent_port_errors_total{counter="port_rcv_errors",device="rxe0",host="h",port="1"} 1` + "\n",
		`rdmabench_agent_port_counters_ok` + l + `} 1` + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the text lacks %s", want)
		}
	}
	if strings.Contains(text, "sent_pkts") || strings.Contains(text, " 77\n") {
		t.Errorf("a traffic counter, or another port's:\n%s", text)
	}
	var om bytes.Buffer
	if err := a.WriteMetrics(&om, FormatOpenMetrics); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(om.String(), "# TYPE rdmabench_agent_port_errors counter\n") ||
		!strings.Contains(om.String(), `rdmabench_agent_port_errors_total{counter="rcvd_seq_err",device="rxe0",host="h",port="1"} 3`) {
		t.Errorf("OpenMetrics:\n%s", om.String())
	}
	cmd := exec.Command(promtool(t), "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	write(t, filepath.Join(root, "rxe0/ports/1/hw_counters/rcvd_seq_err"), "5\n")
	if text := scrape(); !strings.Contains(text, `counter="rcvd_seq_err",device="rxe0",host="h",port="1"} 5`+"\n") {
		t.Errorf("the counter's new value not scraped:\n%s", text)
	}

	if err := os.Rename(filepath.Join(root, "rxe0"), filepath.Join(root, "gone")); err != nil {
		t.Fatal(err)
	}
	scrape()
	text = scrape()
	if !strings.Contains(text, `rdmabench_agent_port_counters_ok`+l+`} 0`) || strings.Contains(text, "rdmabench_agent_port_errors_total{") {
		t.Errorf("an unreadable port:\n%s", text)
	}
	if !strings.Contains(text, `rdmabench_agent_peers{device="rxe0",host="h"} 1`) {
		t.Errorf("the rest of the scrape is missing:\n%s", text)
	}
	if n := strings.Count(log.String(), "port counters of rxe0 port 1: "); n != 1 {
		t.Errorf("the unreadable port told %d times, want once:\n%s", n, log.String())
	}
	if err := os.Rename(filepath.Join(root, "gone"), filepath.Join(root, "rxe0")); err != nil {
		t.Fatal(err)
	}
	if text := scrape(); !strings.Contains(text, `rdmabench_agent_port_counters_ok`+l+`} 1`) || !strings.Contains(log.String(), "read again") {
		t.Errorf("readable again:\n%s\n%s", text, log.String())
	}
}

// TestNoPortCountersWithoutDevice: tcp-lat probes from no device: no port
// families.
func TestNoPortCountersWithoutDevice(t *testing.T) {
	a := probedAgent(t)
	var b bytes.Buffer
	if err := a.WriteMetrics(&b, FormatText); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "rdmabench_agent_port_") {
		t.Errorf("port counters without a device:\n%s", b.String())
	}
}
