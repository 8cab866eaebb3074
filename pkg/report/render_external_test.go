package report_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/compare"
	"github.com/rdmabench/rdmabench/pkg/report/render"
)

// The renderers on this package's test documents: hostile ones, and
// whatever the fuzzer makes ReadJSON accept.

// FuzzReadJSON feeds arbitrary files to the results reader. It never
// panics and its errors say what they read; a document it accepts renders
// in every format, plots and compares without a panic (renderAll), and
// reads back the same once written.
func FuzzReadJSON(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
	for _, s := range []string{
		hostileHead + `"results":[{"test":"write-lat","size":-1}]}`,
		hostileHead + `"results":[{"test":"write-bw","size":2,"bandwidth":{"bytes":18446744073709551615,"duration_ns":1,"bw_gbps":1.7e308}}]}`,
		hostileHead + `"results":[{"test":"x","size":3,"run":1},{"test":"x","size":3,"run":2}],"params":{"repeat":2}}`,
		hostileHead + `"results":[{"test":"read-lat","size":2,"latency":{"basis":"rtt","count":1,"histogram":"HISTFAAAAB"}}]}`,
		hostileHead + `"results":[null,{},[]]}`,
		hostileHead + `"clocks":{"a":{"resolution_ns":1e308}},"summaries":[{"runs":1,"latency":{"p50_ns":{"median":1,"n":1}}}]}`,
		hostileHead + `"x":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
		`{"schema":"rdmabench/result/v2"}`, `[]`, `NaN`, "\x00", `{"schema":`,
		`{"schema": "rdmabench/result/v1", "results": [{"test": "write-bw", "run": 2, "total": {"bw_gbps": 1}}, {"test": "write-bw", "run": 1, "error": "x"}]}`,
		`{"schema": "rdmabench/result/v1", "results": [{"latency": {"histogram": "HISTFAAAACB4nJNpmSzMwMDAxQABzFCaEUzOmNZg/wEi0NQFAC7aAw4="}}]}`,
		streamStart + "\n" + `{"event":"link","link":{"from":0,"to":1,"round":1,"start":"0001-01-01T00:00:00Z","end":"0001-01-01T00:00:00Z","results":[{"test":"tcp-lat","size":64,"latency":{"basis":"rtt_half","count":1,"p50_ns":5}}]}}` + "\n",
		streamStart + "\n" + `{"event":"link","link":{"from":7,"to":-1,"round":1,"results":[{"test":"tcp-bw","size":64,"bandwidth":{"bw_gbps":1}}]}}` + "\n" + `{"event":"end"}`,
		streamStart + "\n" + `{"event":"link","link":{"from":0,"to":1,"res`,
		`{"event":"link"}`, `{"event":"start","document":{"schema":"rdmabench/result/v1"}}` + "\n" + `{"event":"result","result":{"test":"x","size":-1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := report.ReadJSON(bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "report: read results: ") {
				t.Fatalf("error without its prefix: %v", err)
			}
			return
		}
		// The text formats of a document read cannot fail.
		for _, format := range []string{render.FormatTable, render.FormatCSV, render.FormatMarkdown, render.FormatGobench, render.FormatOpenMetrics} {
			if doc.Mesh != nil && !slices.Contains(render.MeshFormats, format) {
				continue // refused by name
			}
			if err := render.Write(io.Discard, format, doc); err != nil {
				t.Fatalf("%s of a document ReadJSON accepted: %v", format, err)
			}
		}
		renderAll(t, doc, doc)
		for _, r := range doc.Results {
			if r.Latency != nil && r.Latency.Histogram != "" {
				_, _ = r.Latency.DecodeHistogram()
			}
		}
		var out bytes.Buffer
		if err := report.WriteJSON(&out, doc); err != nil {
			return // a time JSON cannot hold, say
		}
		if _, err := report.ReadJSON(&out); err != nil {
			t.Fatalf("a document read, written again, does not read back: %v", err)
		}
	})
}

// renderAll runs every renderer, compare and gate on doc (against other
// too), and returns what failed; a panic fails the test, naming the
// renderer. (The plot of doc: TestPlotHostileDocuments.)
func renderAll(t *testing.T, doc, other *report.Document) {
	t.Helper()
	try := func(what string, f func() error) {
		t.Helper()
		tryRender(t, what, f)
	}
	jsonOut := func(what string, f func(w io.Writer) error) {
		t.Helper()
		try(what, func() error {
			var b bytes.Buffer
			if err := f(&b); err != nil {
				return err
			}
			if !json.Valid(b.Bytes()) {
				t.Errorf("%s wrote invalid JSON:\n%s", what, b.Bytes())
			}
			return nil
		})
	}
	textOut := func(what string, f func(w io.Writer) error) {
		t.Helper()
		checkText(t, what, f)
	}
	for _, format := range render.Formats {
		w := func(w io.Writer) error { return render.Write(w, format, doc) }
		two := func(w io.Writer) error {
			return render.WriteSources(w, format, []report.Source{{Name: "a.json", Doc: doc}, {Name: "b.json", Doc: other}})
		}
		switch format {
		case render.FormatJSON, render.FormatBenchActionLatency, render.FormatBenchActionBandwidth:
			jsonOut(format, w)
			jsonOut(format+" of two", two)
		case render.FormatTable, render.FormatMarkdown, render.FormatGobench:
			textOut(format, w)
			textOut(format+" of two", two)
		default:
			try(format, func() error { return w(io.Discard) })
			try(format+" of two", func() error { return two(io.Discard) })
		}
	}
	try("summarize", func() error { doc.Summarize(); return nil })
	try("limits", func() error {
		doc.CheckLimits(report.Limits{P50: time.Microsecond, P99: time.Millisecond, Max: time.Second, MinGbps: 1, MinMsgRate: 1})
		return nil
	})
	gates := compare.Gates{compare.MaxRegressionGate("any", 0.05), compare.MaxRegressionGate("p99", 0.1, report.FigP99), compare.MinRatioGate("bw", 0.95, report.FigGbps)}
	for _, pair := range [][2]*report.Document{{doc, doc}, {doc, other}, {other, doc}} {
		var c *compare.Comparison
		try("compare", func() error { c = compare.Compare(pair[0], pair[1], compare.Options{}); return nil })
		if c == nil {
			continue
		}
		var verdict *compare.GateResult
		try("gates", func() error { verdict = c.CheckGates(gates); return nil })
		for _, format := range render.CompareFormats {
			f := func(w io.Writer) error { return render.WriteComparison(w, format, c, verdict) }
			if format == render.FormatJSON {
				jsonOut("compare "+format, f)
			} else {
				textOut("compare "+format, f)
			}
		}
	}
}

func TestRenderHostileDocuments(t *testing.T) {
	docs := hostileDocs()
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				renderAll(t, doc, reporttest.SuiteDoc())
				renderAll(t, doc, docs["huge values"])
			}()
			select {
			case <-done:
			case <-time.After(2 * time.Minute): // a hang guard, not a timing
				t.Fatal("rendering never finished")
			}
		})
	}
}

// streamStart is the first line of a two-rank mesh's link stream.
const streamStart = `{"event":"start","time":"2026-01-02T03:04:05Z","document":{"schema":"rdmabench/result/v1","results":[],"mesh":{"size":2,"coordinator":"a:1","tests":["tcp-lat"],"rounds":1,"schedule":"round-robin","ranks":[{"rank":0,"state":"ok"},{"rank":1,"state":"ok"}],"links":null,"matrices":null}}}`
