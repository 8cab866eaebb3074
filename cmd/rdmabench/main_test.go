package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/schema"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// cli runs the program as main would and returns its output and exit status.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	var done reported
	if err != nil && !asReported(err, &done) {
		errb.WriteString(errorText(err))
	}
	return out.String(), errb.String(), exitCode(err)
}

func asReported(err error, r *reported) bool {
	x, ok := err.(reported)
	if ok {
		*r = x
	}
	return ok
}

func TestUsageErrorsExit2(t *testing.T) {
	cases := [][]string{
		{"frobnicate"},
		{"write-lat", "--bogus"},
		{"write-lat", "-s", "0"},
		{"write-lat", "-s", "4Q"},
		{"write-lat", "-a", "-s", "64"},
		{"atomic-lat", "-s", "16"},
		{"send-bw", "-c", "XX"},
		{"read-lat", "-c", "UD"},
		{"write-lat", "-q", "2"},
		{"write-lat", "-b"},
		{"write-bw", "-Q", "500"},
		{"write-lat", "-o", "xml"},
		{"write-lat", "-n", "-5"},
		{"write-lat", "--baseline", "udp"},
		{"write-lat", "host1", "host2"},
		{"devices", "-o", "yaml"},
		{"version", "extra"},
		// cobra's and pflag's own errors, recognised by type (or by the
		// command: the root's, cobra's completion command's), not text.
		{"man"},
		{"agent", "extra"},
		{"completion", "bash", "extra"},
		{"__complete"},
		{"--bogus"},
		{"write-lat", "--iters"},
		{"write-lat", "---x"},
		{"write-lat", "-aF"},
		{"write-lat", "-\u00e9"},
	}
	for _, args := range cases {
		_, stderr, code := cli(t, args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d (stderr %q)", args, code, exitUsage, stderr)
		}
		if !strings.HasPrefix(stderr, "rdmabench: ") {
			t.Errorf("%q: stderr %q does not say what is wrong", args, stderr)
		}
	}
	_, stderr, _ := cli(t, "atomic-lat", "-s", "16")
	if !strings.Contains(stderr, "atomic tests use 8-byte messages") {
		t.Errorf("atomic size error: %q", stderr)
	}
}

func TestVersion(t *testing.T) {
	out, _, code := cli(t, "version")
	if code != 0 || !strings.Contains(out, "rdmabench ") || !strings.Contains(out, "protocol: 2") || !strings.Contains(out, "go1.") {
		t.Fatalf("version: %d %q", code, out)
	}
	// --version prints the same, nothing on stderr.
	long, errOut, code := cli(t, "--version")
	if code != 0 || long != out || errOut != "" {
		t.Errorf("--version: %d %q %q, want %q", code, long, errOut, out)
	}
	out, _, code = cli(t, "version", "-o", "json")
	var v struct {
		Version string `json:"version"`
		Verbs   bool   `json:"verbs"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Version == "" || v.Verbs != verbs.Supported {
		t.Fatalf("version json: %d %q", code, out)
	}
}

func TestTCPEndToEnd(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "res.json")
	out, stderr, code := cli(t, "tcp-lat", "-s", "2,64", "-n", "30", "--warmup", "3", "--out", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "tcp-lat") || !strings.Contains(out, "p99.9") {
		t.Fatalf("table lacks the test or its columns:\n%s", out)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := report.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Results) != 2 || doc.Results[0].Size != 2 || doc.Results[1].Size != 64 {
		t.Fatalf("results %+v", doc.Results)
	}
	for _, r := range doc.Results {
		if r.Latency == nil || r.Latency.Count != 30 || r.Warmup != 3 || r.Latency.Basis != "rtt_half" {
			t.Fatalf("result %+v", r)
		}
	}
	if doc.Schema != report.Schema || doc.Tool.Name != "rdmabench" || len(doc.Clocks) == 0 || doc.Hosts.Local.Hostname == "" {
		t.Fatalf("document facts missing: %+v", doc)
	}

	out, _, code = cli(t, "tcp-bw", "-s", "4K", "-n", "50", "-o", "json")
	doc, err = report.ReadJSON(strings.NewReader(out))
	if code != 0 || err != nil || len(doc.Results) != 1 || doc.Results[0].Bandwidth.Bytes != 50*4096 {
		t.Fatalf("tcp-bw json: exit %d, %v, %+v", code, err, doc)
	}
}

func TestDevicesWithoutDevice(t *testing.T) {
	if names, err := verbs.DeviceNames(); err == nil && len(names) > 0 {
		t.Skip("this host has RDMA devices; TestDevicesOnDevice covers it")
	}
	_, stderr, code := cli(t, "devices")
	if code != exitError || !strings.Contains(stderr, "RDMA") || !(strings.Contains(stderr, "Soft-RoCE") || strings.Contains(stderr, "softroce") || strings.Contains(stderr, "libibverbs")) {
		t.Fatalf("devices without a device: exit %d, %q", code, stderr)
	}
}

func TestDevicesOnDevice(t *testing.T) {
	dev := testutil.Device(t)
	out, stderr, code := cli(t, "devices", "-d", dev)
	if code != 0 || !strings.Contains(out, dev+":") || !strings.Contains(out, "is used unless -x is given") {
		t.Fatalf("devices: exit %d %q %q", code, out, stderr)
	}
	out, _, code = cli(t, "devices", "-o", "json")
	var devs []verbs.DeviceInfo
	if code != 0 || json.Unmarshal([]byte(out), &devs) != nil || len(devs) == 0 || len(devs[0].Ports) == 0 {
		t.Fatalf("devices json: %d %q", code, out)
	}
	_, stderr, code = cli(t, "devices", "-d", "mlx5_9")
	if code != exitError || !strings.Contains(stderr, `"mlx5_9"`) || !strings.Contains(stderr, dev) {
		t.Fatalf("missing device: exit %d %q", code, stderr)
	}
}

// TestSweepAllSizes: -a holds all 23 sizes in one JSON document.
func TestSweepAllSizes(t *testing.T) {
	testutil.Device(t)
	out, stderr, code := cli(t, "write-lat", "-a", "-n", "2", "--warmup", "0", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	doc, err := report.ReadJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Results) != 23 {
		t.Fatalf("%d results, want 23", len(doc.Results))
	}
	for i, r := range doc.Results {
		if want := 2 << i; r.Size != want || r.Latency == nil || r.Latency.Count != 2 {
			t.Fatalf("result %d: size %d (want %d), %+v", i, r.Size, want, r.Latency)
		}
	}
}

func TestSuite(t *testing.T) {
	dev := testutil.Device(t)
	file := filepath.Join(t.TempDir(), "suite.json")
	out, stderr, code := cli(t, "suite", "-d", dev, "-n", "20", "--out", file)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := report.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range doc.Results {
		got = append(got, r.Test)
		if r.Error != "" || (r.Latency == nil && r.Bandwidth == nil) {
			t.Errorf("%s: %+v", r.Test, r)
		}
		if !strings.Contains(out, r.Test) {
			t.Errorf("the table lacks %s", r.Test)
		}
	}
	if strings.Join(got, " ") != strings.Join(suiteOrder, " ") {
		t.Fatalf("suite ran %v, want %v", got, suiteOrder)
	}
	if doc.Hosts.Local.Device == nil || doc.Hosts.Local.Device.Name != dev {
		t.Fatalf("device facts missing: %+v", doc.Hosts.Local)
	}
}

func TestBaselineTCP(t *testing.T) {
	dev := testutil.Device(t)
	out, stderr, code := cli(t, "send-lat", "-d", dev, "-s", "2,4K", "-n", "20", "--baseline", "tcp", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	doc, err := report.ReadJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range doc.Results {
		rows = append(rows, r.Test+"/"+itoa(r.Size))
	}
	if strings.Join(rows, " ") != "send-lat/2 send-lat/4096 tcp-lat/2 tcp-lat/4096" {
		t.Fatalf("rows %v", rows)
	}
}

// TestFailureKeepsResults: a test that fails records its error, the results
// before it are kept in the document, the run is not said to have stopped
// (it went on), and the exit status is 1.
func TestFailureKeepsResults(t *testing.T) {
	dev := testutil.Device(t)
	file := filepath.Join(t.TempDir(), "res.json")
	_, stderr, code := cli(t, "send-lat", "-d", dev, "-c", "UD", "-s", "64,8K", "-n", "10", "--out", file)
	if code != exitError || !strings.Contains(stderr, "UD send is limited to the path MTU") {
		t.Fatalf("exit %d, %q", code, stderr)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := report.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Results) != 2 || doc.Results[0].Latency == nil || doc.Results[1].Error == "" {
		t.Fatalf("document %+v", doc.Results)
	}
	if doc.Stopped() != "" {
		t.Errorf("the run went on, yet the document says it stopped: %s", doc.Stopped())
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestJSONStream: --json-stream prints one JSON event per line as the run
// goes: start, then each test with its intervals and results, then end
// with the whole document.
func TestJSONStream(t *testing.T) {
	out, stderr, code := cli(t, "tcp-bw", "-s", "1K,4K", "-D", "0.3", "--interval", "100ms", "--json-stream")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var kinds []string
	var results, intervals int
	var end *report.Document
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var e report.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %d is not a JSON event: %v: %q", i+1, err, line)
		}
		if e.Time.IsZero() {
			t.Errorf("line %d has no time", i+1)
		}
		kinds = append(kinds, e.Event)
		switch e.Event {
		case report.EventInterval:
			intervals++
			if e.Interval == nil || e.Interval.Bandwidth == nil || e.Test != "tcp-bw" {
				t.Errorf("interval event %q", line)
			}
		case report.EventResult:
			results++
			if e.Result == nil || e.Result.Size != e.Size || e.Result.Bandwidth == nil {
				t.Errorf("result event %q", line)
			}
		case report.EventEnd:
			end = e.Document
			raw, _ := json.Marshal(e.Document)
			if err := schema.Validate(raw); err != nil {
				t.Errorf("the end document does not follow the schema: %v", err)
			}
		}
	}
	if kinds[0] != report.EventStart || kinds[1] != report.EventTest || kinds[len(kinds)-1] != report.EventEnd {
		t.Errorf("events %v: want start, test, ..., end", kinds)
	}
	if results != 2 || intervals < 4 || end == nil || len(end.Results) != 2 {
		t.Errorf("%d results, %d intervals, end %v; want 2 results, at least 2 intervals each, and the document", results, intervals, end != nil)
	}
}
