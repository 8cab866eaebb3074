package render

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// noDeviceSuite is a suite's document on a host without an RDMA device:
// every RDMA test failed for that one cause, the TCP tests measured.
func noDeviceSuite(stopped string) *report.Document {
	doc := report.NewDocument()
	const cause = "no RDMA device found: the kernel has no RDMA support loaded (no /sys/class/infiniband)"
	for _, name := range []string{"write-lat", "read-lat", "send-lat", "atomic-lat"} {
		doc.Results = append(doc.Results, report.Result{Test: name, Connection: "RC", Size: 2, Error: name + ": " + cause})
	}
	doc.Results = append(doc.Results, report.Result{Test: "tcp-lat", Connection: "TCP", Size: 2, Iterations: 10,
		Latency: &report.Latency{Basis: report.BasisRTTHalf, Count: 10, MinNs: 7000, P50Ns: 10000, MeanNs: 10000, MaxNs: 20000}})
	for _, name := range []string{"write-bw", "read-bw", "send-bw", "atomic-bw"} {
		doc.Results = append(doc.Results, report.Result{Test: name, Connection: "RC", Size: 65536, Error: name + ": " + cause})
	}
	doc.Results = append(doc.Results, report.Result{Test: "tcp-bw", Connection: "TCP", Size: 65536, Iterations: 100,
		Bandwidth: report.NewBandwidth(100*65536, 100, time.Millisecond)})
	doc.Error = stopped
	return doc
}

// A cause that failed several tests is said once, in a footnote their rows
// refer to; and a run whose tests failed but that went on says nothing of
// stopping.
func TestTableSaysACauseOnce(t *testing.T) {
	for _, format := range []string{FormatTable, FormatMarkdown} {
		var b strings.Builder
		if err := Write(&b, format, noDeviceSuite("")); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if n := strings.Count(out, "no RDMA device found"); n != 1 {
			t.Errorf("%s: the cause is said %d times, want once:\n%s", format, n, out)
		}
		if n := strings.Count(out, "failed [1]"); n != 8 {
			t.Errorf("%s: %d rows refer to the cause's footnote, want 8:\n%s", format, n, out)
		}
		if !strings.Contains(out, "[1] write-lat, read-lat, send-lat, atomic-lat, write-bw, read-bw, send-bw, atomic-bw failed: no RDMA device found") {
			t.Errorf("%s: no footnote with the cause and the tests it failed:\n%s", format, out)
		}
		if strings.Contains(out, "stopped") {
			t.Errorf("%s: says the run stopped, though it went on:\n%s", format, out)
		}
	}
	// A document of an earlier version, with the first failure as its
	// run-level error: no stop either.
	if out := renderTable(t, noDeviceSuite(noDeviceSuite("").Results[0].Error)); strings.Contains(out, "stopped") {
		t.Errorf("an earlier version's document says the run stopped:\n%s", out)
	}
	// A run that did stop says so, once.
	if out := renderTable(t, noDeviceSuite("interrupted (SIGINT)")); strings.Count(out, "stopped") != 1 ||
		!strings.Contains(out, "error: interrupted (SIGINT) (the run stopped; results before it are kept)") {
		t.Errorf("an interrupted run:\n%s", out)
	}
	// A cause of one result is said in its row, without its test's name
	// (the row has it).
	doc := noDeviceSuite("")
	doc.Results = doc.Results[3:6] // atomic-lat, tcp-lat, write-bw
	doc.Results[2].Error = "write-bw: create qp: Cannot allocate memory"
	out := renderTable(t, doc)
	if !strings.Contains(out, "  error: no RDMA device found") || strings.Contains(out, "error: atomic-lat:") {
		t.Errorf("a cause of one result is not in its row:\n%s", out)
	}
	if strings.Contains(out, "failed [") || !strings.Contains(out, "error: create qp: Cannot allocate memory") {
		t.Errorf("a cause of one result:\n%s", out)
	}
}
