package compare

import (
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
)

func mustCompareMesh(t *testing.T, base, new *report.Document, top int) *MeshComparison {
	t.Helper()
	c, err := CompareMesh(base, new, MeshOptions{BaseName: "base.json", NewName: "new.json", Top: top})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
