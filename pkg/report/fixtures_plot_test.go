package report_test

import (
	"bytes"
	"testing"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// Fixture documents with latency histograms, for the plots: a suite run
// at five sizes between two hosts, and the same run with the path MTU
// forced down to 1024 bytes. The samples come from a seeded generator and
// the histograms from latency.Recorder, so the documents are the same on
// every run; they are kept in testdata/ (rewritten with -update) and the
// plot tests (pkg/report/plot) read them from there, as `rdmabench plot`
// would.

// The fixture files and the documents they hold.
var plotFixtures = map[string]func() *report.Document{
	"sweep.json":         func() *report.Document { return reporttest.SweepDoc(false) },
	"sweep-mtu1024.json": func() *report.Document { return reporttest.SweepDoc(true) },
	"mesh.json":          reporttest.MeshPlotDoc,
	"pattern.json":       reporttest.PatternDoc,
}

// TestPlotFixtures: the fixture documents in testdata/ are what their
// generators make (rewritten with -update).
func TestPlotFixtures(t *testing.T) {
	for name, gen := range plotFixtures {
		var buf bytes.Buffer
		if err := report.WriteJSON(&buf, gen()); err != nil {
			t.Fatal(err)
		}
		reporttest.CheckGolden(t, "testdata", name, buf.Bytes())
	}
}
