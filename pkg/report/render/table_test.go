package render

import (
	"bytes"
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rdmabench/rdmabench/pkg/report"
)

func TestWriteTableGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  *report.Document
	}{
		{"suite", reporttest.SuiteDoc()},
		{"duration", reporttest.DurationDoc()},
		{"units", unitsDoc()},
		{"empty", report.NewDocument()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteTable(&buf, tc.doc); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("..", "testdata", tc.name+".txt")
			if *reporttest.Update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run `go test ./pkg/report -update` to create it)", err)
			}
			if got := buf.String(); got != string(want) {
				t.Errorf("table differs from %s (rerun with -update if intended)\n--- got:\n%s\n--- want:\n%s", golden, got, want)
			}
		})
	}
}

func renderTable(t *testing.T, doc *report.Document) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteTable(&buf, doc); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestTableFitsAndHoldsEveryTest(t *testing.T) {
	out := renderTable(t, reporttest.SuiteDoc())
	for i, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > 120 {
			t.Errorf("line %d is %d columns wide (max 120): %q", i+1, n, l)
		}
		if strings.TrimRight(l, " ") != l {
			t.Errorf("line %d has trailing spaces: %q", i+1, l)
		}
	}
	// One row per test, in the order given.
	var order []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "ran with") {
			break // the settings block names the tests again
		}
		if f := strings.Fields(l); len(f) > 0 && (strings.HasSuffix(f[0], "-lat") || strings.HasSuffix(f[0], "-bw")) {
			order = append(order, f[0])
		}
	}
	var want []string
	for _, r := range reporttest.SuiteDoc().Results {
		want = append(want, r.Test)
	}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("rows %v, want %v", order, want)
	}
	for _, s := range []string{"MTU 4096", "GID index 3", "resolution 20 ns", "node-b", "tx-depth 128", "clock tsc", "rtt/2", "p99.99", "Gbit/s", "MiB/s", "Mmsg/s", "µs"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q", s)
		}
	}
}

func TestTableRows(t *testing.T) {
	doc := report.NewDocument()
	doc.Results = []report.Result{
		{Test: "write-lat", Connection: "RC", Size: 2, Latency: &report.Latency{Basis: report.BasisRTTHalf}}, // no samples
		{Test: "read-lat", Connection: "RC", Size: 2, Error: "modify qp to RTR: invalid argument"},           // failed before any sample
		{Test: "send\nlat", Size: 2},    // neither: a dash
		{Test: "write-bw", Size: 65536}, // a bandwidth test by its name
		{Test: "tcp-bw", Connection: "TCP", Size: 64, Iterations: 5, // cut short
			Bandwidth: report.NewBandwidth(320, 5, time.Microsecond), Error: "connection reset"},
	}
	out := renderTable(t, doc)
	lines := strings.Split(out, "\n")
	find := func(prefix string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		t.Fatalf("no line starts with %q in\n%s", prefix, out)
		return ""
	}
	if l := find("write-lat"); !strings.Contains(l, "rtt/2") || strings.Count(l, " - ")+strings.Count(l+" ", " -\n") < 3 || strings.Contains(l, "NaN") {
		t.Errorf("empty latency row: %q", l)
	}
	if l := find("read-lat"); !strings.Contains(l, "error: modify qp to RTR: invalid argument") {
		t.Errorf("failed row does not show its error: %q", l)
	}
	if l := find("send lat"); !strings.HasSuffix(l, "-") {
		t.Errorf("row without figures: %q", l)
	}
	if strings.Count(out, "Bandwidth, payload only") != 1 || strings.Count(out, "Latency, µs") != 1 {
		t.Errorf("want one latency and one bandwidth section:\n%s", out)
	}
	if l := find("tcp-bw"); !strings.Contains(l, "2.56") { // 320 B in 1 µs
		t.Errorf("tcp-bw row: %q", l)
	}
	if !strings.Contains(out, "\n"+strings.Repeat(" ", strings.Index(find("tcp-bw"), "->"))+"error: connection reset") {
		t.Errorf("the error of a result cut short is not under its row:\n%s", out)
	}
}

func TestTableOfRecordedDocument(t *testing.T) {
	out := renderTable(t, reporttest.FullDoc())
	if !strings.Contains(out, "write-lat") || strings.Contains(out, "NaN") || strings.Contains(out, "Inf") {
		t.Errorf("table of recorded data:\n%s", out)
	}
}

func TestWrap(t *testing.T) {
	got := wrap("aaa bbb ccc "+strings.Repeat("x", 40)+" d", 30)
	want := []string{"aaa bbb ccc", strings.Repeat("x", 40), "d"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("wrap: %q, want %q", got, want)
	}
	if got := wrap("", 30); len(got) != 1 || got[0] != "" {
		t.Errorf("wrap of nothing: %q", got)
	}
}
