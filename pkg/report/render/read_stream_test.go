package render

import (
	"bytes"
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// A mesh's link stream reads back as its summary: the matrices, failures
// and ranks of the document with the links' results, and its links
// without them.
func TestReadLinkStream(t *testing.T) {
	full := reporttest.MeshPlotDoc()
	stream := reporttest.LinkStream(t, full)
	doc, err := report.ReadNamed(bytes.NewReader(stream), "fabric.links.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if doc.Partial || len(doc.Warnings) != 0 || doc.Mesh == nil {
		t.Fatalf("partial %v, warnings %q", doc.Partial, doc.Warnings)
	}
	m := doc.Mesh
	if got, want := reporttest.JSONOf(t, m.Matrices), reporttest.JSONOf(t, full.Mesh.Matrices); got != want {
		t.Errorf("matrices:\n%s\nwant\n%s", got, want)
	}
	if got, want := reporttest.JSONOf(t, m.Failures), reporttest.JSONOf(t, full.Mesh.Failures); got != want {
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
	full := reporttest.MeshPlotDoc()
	stream := reporttest.LinkStream(t, full)
	lines := bytes.SplitAfter(stream, []byte("\n"))
	// The start, four links, and half of the fifth.
	cut := bytes.Join(lines[:5], nil)
	cut = append(cut, lines[5][:len(lines[5])/2]...)
	doc, err := report.ReadNamed(bytes.NewReader(cut), "killed.links.ndjson")
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
	doc, err = report.ReadNamed(bytes.NewReader(bytes.Join(lines[:3], nil)), "killed.links.ndjson")
	if err != nil || !doc.Partial || len(doc.Mesh.Links) != 2 || len(doc.Warnings) != 1 {
		t.Fatalf("err %v, partial %v, %d links, warnings %q", err, doc.Partial, len(doc.Mesh.Links), doc.Warnings)
	}
}
