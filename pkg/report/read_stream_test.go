package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// linkStream writes the link stream rank 0 writes for doc (a mesh document
// with its links' full results): the start, a link event per link, the
// end.
func linkStream(t *testing.T, doc *Document) []byte {
	t.Helper()
	var b bytes.Buffer
	head := *doc
	m := *doc.Mesh
	m.Links, m.Matrices, m.Gates, m.Failures = nil, nil, nil, nil
	head.Mesh = &m
	head.Partial = true
	if err := WriteEvent(&b, Event{Event: EventStart, Document: &head}); err != nil {
		t.Fatal(err)
	}
	for i := range doc.Mesh.Links {
		if err := WriteEvent(&b, Event{Event: EventLink, Link: &doc.Mesh.Links[i]}); err != nil {
			t.Fatal(err)
		}
	}
	end := *doc
	em := *doc.Mesh
	em.Links, em.Matrices = nil, nil
	end.Mesh = &em
	if err := WriteEvent(&b, Event{Event: EventEnd, Document: &end}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A mesh's link stream reads back as its summary: the matrices, failures
// and ranks of the document with the links' results, and its links
// without them.
func TestReadLinkStream(t *testing.T) {
	full := meshPlotDoc()
	stream := linkStream(t, full)
	doc, err := ReadNamed(bytes.NewReader(stream), "fabric.links.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if doc.Partial || len(doc.Warnings) != 0 || doc.Mesh == nil {
		t.Fatalf("partial %v, warnings %q", doc.Partial, doc.Warnings)
	}
	m := doc.Mesh
	if got, want := jsonOf(t, m.Matrices), jsonOf(t, full.Mesh.Matrices); got != want {
		t.Errorf("matrices:\n%s\nwant\n%s", got, want)
	}
	if got, want := jsonOf(t, m.Failures), jsonOf(t, full.Mesh.Failures); got != want {
		t.Errorf("failures:\n%s\nwant\n%s", got, want)
	}
	if len(m.Links) != len(full.Mesh.Links) {
		t.Fatalf("%d links, want %d", len(m.Links), len(full.Mesh.Links))
	}
	for i, l := range m.Links {
		f := full.Mesh.Links[i]
		if l.From != f.From || l.To != f.To || l.Round != f.Round || l.Error != f.Error || len(l.Results) != 0 {
			t.Errorf("link %d: %d -> %d round %d error %q, %d results; want %d -> %d round %d error %q", i,
				l.From, l.To, l.Round, l.Error, len(l.Results), f.From, f.To, f.Round, f.Error)
		}
	}
	// The summary renders as the full document does.
	for _, format := range MeshFormats {
		if format == FormatJSON {
			continue
		}
		var a, b bytes.Buffer
		if err := Write(&a, format, doc); err != nil {
			t.Fatal(err)
		}
		if err := Write(&b, format, full); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("%s of the summary differs from the full document's:\n%s\nwant\n%s", format, a.String(), b.String())
		}
	}
}

// A stream cut anywhere (rank 0 killed mid-write) reads as the links it
// holds in full, marked partial, saying why.
func TestReadLinkStreamCut(t *testing.T) {
	full := meshPlotDoc()
	stream := linkStream(t, full)
	lines := bytes.SplitAfter(stream, []byte("\n"))
	// The start, four links, and half of the fifth.
	cut := bytes.Join(lines[:5], nil)
	cut = append(cut, lines[5][:len(lines[5])/2]...)
	doc, err := ReadNamed(bytes.NewReader(cut), "killed.links.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if !doc.Partial || len(doc.Mesh.Links) != 4 {
		t.Fatalf("partial %v, %d links; want partial, 4 links", doc.Partial, len(doc.Mesh.Links))
	}
	w := strings.Join(doc.Warnings, "\n")
	if !strings.Contains(w, "no end event") || !strings.Contains(w, "the last line (6,") {
		t.Errorf("warnings %q", doc.Warnings)
	}
	var b bytes.Buffer
	if err := Write(&b, FormatTable, doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "partial: the mesh was still running") {
		t.Errorf("the table does not say it is partial:\n%s", b.String())
	}
	// Cut at a line's end: nothing is cut short.
	doc, err = ReadNamed(bytes.NewReader(bytes.Join(lines[:3], nil)), "killed.links.ndjson")
	if err != nil || !doc.Partial || len(doc.Mesh.Links) != 2 || len(doc.Warnings) != 1 {
		t.Fatalf("err %v, partial %v, %d links, warnings %q", err, doc.Partial, len(doc.Mesh.Links), doc.Warnings)
	}
}

// What is not a stream rdmabench wrote gets a named error.
func TestReadLinkStreamHostile(t *testing.T) {
	full := meshPlotDoc()
	lines := bytes.SplitAfter(linkStream(t, full), []byte("\n"))
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
		_, err := ReadNamed(strings.NewReader(c.in), "x.ndjson")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "read x.ndjson: ") {
			t.Errorf("%s: %v; want an error with %q", c.name, err, c.want)
		}
	}
}

// A run's --json-stream reads as its document: the end event's, or
// without it the results so far.
func TestReadRunStream(t *testing.T) {
	doc := NewDocument()
	doc.Results = []Result{{Test: "tcp-lat", Size: 2, Iterations: 1}, {Test: "tcp-lat", Size: 64, Iterations: 1}}
	var b bytes.Buffer
	head := *doc
	head.Results = []Result{}
	_ = WriteEvent(&b, Event{Event: EventStart, Document: &head})
	for i := range doc.Results {
		_ = WriteEvent(&b, Event{Event: EventResult, Test: "tcp-lat", Result: &doc.Results[i]})
	}
	partial, err := ReadNamed(bytes.NewReader(b.Bytes()), "run.ndjson")
	if err != nil || !partial.Partial || len(partial.Results) != 2 {
		t.Fatalf("err %v, partial %v, %d results", err, partial != nil && partial.Partial, len(partial.Results))
	}
	_ = WriteEvent(&b, Event{Event: EventEnd, Document: doc})
	whole, err := ReadNamed(bytes.NewReader(b.Bytes()), "run.ndjson")
	if err != nil || whole.Partial || len(whole.Results) != 2 || len(whole.Warnings) != 0 {
		t.Fatalf("err %v, %+v", err, whole)
	}
}
