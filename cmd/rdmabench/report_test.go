package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/atomicfile"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/render"
)

// runsDoc is a loopback document on device dev with one run per value of
// p99 (µs) and gbps: write-lat RC 2 B (p50 1.04 µs) and write-bw RC 64 KiB.
// Run numbers are set when there is more than one run, as --repeat does.
func runsDoc(dev string, p99, gbps []float64) *report.Document {
	doc := report.NewDocument()
	doc.Tool = report.Tool{Name: "rdmabench", Version: "0.2.0", Verbs: true}
	doc.Start = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	doc.Hosts.Local = report.Host{Hostname: "ci", OS: "linux/amd64",
		Device: &report.Device{Name: dev, Firmware: "20.39.1002", Port: 1, LinkLayer: "Ethernet", ActiveMTU: 4096, GIDType: "RoCE v2"}}
	doc.Params = report.Params{GIDIndex: -1, Loopback: true, Repeat: len(p99)}
	for i := range p99 {
		run := i + 1
		if len(p99) == 1 {
			run = 0
		}
		bytes := uint64(65536 * 10000)
		doc.Results = append(doc.Results,
			report.Result{Test: "write-lat", Connection: "RC", Size: 2, Run: run, Iterations: 10000, QPs: 1,
				Latency: &report.Latency{Basis: report.BasisRTTHalf, Count: 10000, MinNs: 980, P50Ns: 1040 + float64(i%3), MeanNs: 1060,
					P90Ns: 1090, P99Ns: p99[i] * 1e3, P999Ns: 2870, P9999Ns: 5120, MaxNs: 5120}},
			report.Result{Test: "write-bw", Connection: "RC", Size: 65536, Run: run, Iterations: 10000, QPs: 1,
				Bandwidth: report.NewBandwidth(bytes, 10000, time.Duration(float64(bytes)*8/gbps[i]))},
		)
	}
	if len(p99) > 1 {
		doc.Summaries = doc.Summarize()
	}
	return doc
}

// writeDoc saves doc as JSON in dir and returns its path.
func writeDoc(t *testing.T, dir, name string, doc *report.Document) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := atomicfile.Write(path, func(w io.Writer) error { return report.WriteJSON(w, doc) }); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	one := runsDoc("mlx5_0", []float64{1.31}, []float64{98.5})
	file := writeDoc(t, dir, "one.json", one)

	out, stderr, code := cli(t, "report", file)
	if code != 0 || !strings.Contains(out, "write-lat") || !strings.Contains(out, "Gbit/s") || stderr != "" {
		t.Fatalf("report: exit %d, %q\n%s", code, stderr, out)
	}
	var want bytes.Buffer
	if err := render.WriteTable(&want, one); err != nil {
		t.Fatal(err)
	}
	if out != want.String() {
		t.Errorf("report differs from the table of the document:\n%s", out)
	}

	out, _, code = cli(t, "report", file, "-o", "json")
	if back, err := report.ReadJSON(strings.NewReader(out)); code != 0 || err != nil || len(back.Results) != 2 {
		t.Errorf("report -o json: exit %d, %v", code, err)
	}

	out, _, code = cli(t, "report", file, "-o", "csv")
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != 0 || err != nil || len(recs) != 3 || recs[0][0] != "test" || recs[1][0] != "write-lat" {
		t.Errorf("report -o csv: exit %d, %v, %q", code, err, recs)
	}

	for format, wants := range map[string][]string{
		"gobench":  {"Unit bit/s better=higher", "BenchmarkWriteLat/conn=RC/size=2 10000 1040 ns/op", "device: mlx5_0"},
		"markdown": {"| test | conn | bytes |", "| write-lat | RC | 2 |"},
	} {
		out, _, code = cli(t, "report", file, "-o", format)
		for _, w := range wants {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("report -o %s: exit %d, lacks %q:\n%s", format, code, w, out)
			}
		}
	}
}

// TestReportRepeated: a document of repeated runs shows medians.
func TestReportRepeated(t *testing.T) {
	file := writeDoc(t, t.TempDir(), "runs.json", runsDoc("mlx5_0", []float64{1.31, 1.30, 1.33, 1.32, 1.31, 1.35}, []float64{98.5, 98.4, 98.6, 98.5, 98.3, 98.5}))
	out, _, code := cli(t, "report", file)
	if code != 0 || !strings.Contains(out, "median of the runs") || !strings.Contains(out, "runs     6;") || !strings.Contains(out, "±") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestReportTwoFiles(t *testing.T) {
	dir := t.TempDir()
	a := writeDoc(t, dir, "a.json", runsDoc("mlx5_0", []float64{1.31}, []float64{98.5}))
	b := writeDoc(t, dir, "b.json", runsDoc("mlx5_1", []float64{1.97}, []float64{88.6}))

	out, _, code := cli(t, "report", a, b)
	if code != 0 || strings.Count(out, "==> ") != 2 || !strings.Contains(out, "==> "+a+" <==") || !strings.Contains(out, "==> "+b+" <==") ||
		!strings.Contains(out, "mlx5_1") {
		t.Fatalf("report of two files: exit %d\n%s", code, out)
	}

	out, _, code = cli(t, "report", a, b, "-o", "json")
	var docs []report.Document
	if err := json.Unmarshal([]byte(out), &docs); code != 0 || err != nil || len(docs) != 2 || docs[1].Hosts.Local.Device.Name != "mlx5_1" {
		t.Fatalf("report -o json of two files: exit %d, %v", code, err)
	}

	out, _, code = cli(t, "report", a, b, "-o", "csv")
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != 0 || err != nil || len(recs) != 5 || recs[0][0] != "source" || recs[1][0] != a || recs[4][0] != b {
		t.Fatalf("report -o csv of two files: exit %d, %v, %q", code, err, recs)
	}
}

// TestReportBrokenFiles: a file that cannot be read is an error naming the
// file and what is wrong, exit status 1; usage errors exit 2.
func TestReportBrokenFiles(t *testing.T) {
	dir := t.TempDir()
	good := writeDoc(t, dir, "good.json", runsDoc("mlx5_0", []float64{1.31}, []float64{98.5}))
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	truncated := write("truncated.json", string(data[:len(data)/2]))
	v2 := write("v2.json", strings.Replace(string(data), report.Schema, "rdmabench/result/v2", 1))
	broken := write("broken.json", strings.Replace(string(data), `"size": 2,`, `"size": 2,,`, 1))
	notDoc := write("list.json", "[1, 2, 3]\n")

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{truncated}, []string{"rdmabench: report: read " + truncated + ": truncated JSON"}},
		{[]string{good, v2}, []string{"read " + v2 + ": unsupported schema \"rdmabench/result/v2\"", `reads "rdmabench/result/v1"`}},
		{[]string{broken}, []string{"read " + broken + ": malformed JSON at line"}},
		{[]string{notDoc}, []string{"read " + notDoc + ": the input is a JSON array"}},
		{[]string{filepath.Join(dir, "missing.json")}, []string{filepath.Join(dir, "missing.json"), "no such file"}},
	} {
		out, stderr, code := cli(t, append([]string{"report"}, tc.args...)...)
		if code != exitError || out != "" {
			t.Errorf("report %v: exit %d, want %d; stdout %q", tc.args, code, exitError, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("report %v: stderr %q lacks %q", tc.args, stderr, w)
			}
		}
	}

	for _, args := range [][]string{{"report"}, {"report", good, "-o", "xml"}, {"report", good, "--bogus"}} {
		if _, stderr, code := cli(t, args...); code != exitUsage || !strings.HasPrefix(stderr, "rdmabench: ") {
			t.Errorf("%q: exit %d, want %d (%q)", args, code, exitUsage, stderr)
		}
	}
}
