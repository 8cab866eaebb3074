package main

import (
	"path/filepath"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// TestMeshgen: a small mesh's summary and stream read back as the same
// mesh: every link, and the stream's summary the summary's matrices.
func TestMeshgen(t *testing.T) {
	dir := t.TempDir()
	sum, stream := filepath.Join(dir, "s.json"), filepath.Join(dir, "s.links.ndjson")
	if err := run(4, 2, sum, stream, 1); err != nil {
		t.Fatal(err)
	}
	a, err := report.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	b, err := report.ReadFile(stream)
	if err != nil {
		t.Fatal(err)
	}
	if a.Mesh.LinkTotal() != 4*3*2 || b.Mesh.LinkTotal() != 4*3*2 || len(a.Mesh.Matrices) != 3 || len(b.Mesh.Matrices) != 3 {
		t.Fatalf("summary %d links, %d matrices; stream %d links, %d matrices", a.Mesh.LinkTotal(), len(a.Mesh.Matrices),
			b.Mesh.LinkTotal(), len(b.Mesh.Matrices))
	}
	if v, w := a.Mesh.Matrices[0].Values[0][2], b.Mesh.Matrices[0].Values[0][2]; v == nil || w == nil || *v != *w {
		t.Errorf("0 -> 2: %v in the summary, %v in the stream", v, w)
	}
}
