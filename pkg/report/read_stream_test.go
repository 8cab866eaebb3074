package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// What is not a stream rdmabench wrote gets a named error.
func TestReadLinkStreamHostile(t *testing.T) {
	full := reporttest.MeshPlotDoc()
	lines := bytes.SplitAfter(reporttest.LinkStream(t, full), []byte("\n"))
	for _, c := range []struct {
		name, in, want string
	}{
		{"link first", string(lines[1]), `a "link" event before the start event`},
		{"two starts", string(lines[0]) + string(lines[0]), "a second start event"},
		{"garbage inside", string(lines[0]) + "{\"event\":\"link\",]\n" + string(lines[1]), "line 2: "},
		{"link without link", string(lines[0]) + `{"event":"link"}` + "\n", "line 2: a link event without a link"},
		{"other schema", `{"event":"start","document":{"schema":"rdmabench/result/v9"}}`, `unsupported schema "rdmabench/result/v9"`},
		{"negative size", string(lines[0]) + `{"event":"link","link":{"from":0,"to":1,"round":1,"start":"0001-01-01T00:00:00Z","end":"0001-01-01T00:00:00Z","results":[{"test":"write-lat","size":-2}]}}` + "\n", "size"},
	} {
		_, err := report.ReadNamed(strings.NewReader(c.in), "x.ndjson")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "read x.ndjson: ") {
			t.Errorf("%s: %v; want an error with %q", c.name, err, c.want)
		}
	}
}

// A run's --json-stream reads as its document: the end event's, or
// without it the results so far.
func TestReadRunStream(t *testing.T) {
	doc := report.NewDocument()
	doc.Results = []report.Result{{Test: "tcp-lat", Size: 2, Iterations: 1}, {Test: "tcp-lat", Size: 64, Iterations: 1}}
	var b bytes.Buffer
	head := *doc
	head.Results = []report.Result{}
	_ = report.WriteEvent(&b, report.Event{Event: report.EventStart, Document: &head})
	for i := range doc.Results {
		_ = report.WriteEvent(&b, report.Event{Event: report.EventResult, Test: "tcp-lat", Result: &doc.Results[i]})
	}
	partial, err := report.ReadNamed(bytes.NewReader(b.Bytes()), "run.ndjson")
	if err != nil || !partial.Partial || len(partial.Results) != 2 {
		t.Fatalf("err %v, partial %v, %d results", err, partial != nil && partial.Partial, len(partial.Results))
	}
	_ = report.WriteEvent(&b, report.Event{Event: report.EventEnd, Document: doc})
	whole, err := report.ReadNamed(bytes.NewReader(b.Bytes()), "run.ndjson")
	if err != nil || whole.Partial || len(whole.Results) != 2 || len(whole.Warnings) != 0 {
		t.Fatalf("err %v, %+v", err, whole)
	}
}
