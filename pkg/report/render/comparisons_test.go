package render

import (
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/compare"
)

// The comparisons the tests of this package render.

func mustCompareMesh(t *testing.T, base, new *report.Document, top int) *compare.MeshComparison {
	t.Helper()
	c, err := compare.CompareMesh(base, new, compare.MeshOptions{BaseName: "base.json", NewName: "new.json", Top: top})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func matrixOf(t *testing.T, c *compare.MeshComparison, test string, fig report.Figure) *compare.MatrixChange {
	t.Helper()
	for i := range c.Matrices {
		if c.Matrices[i].Test == test && c.Matrices[i].Figure == fig {
			return &c.Matrices[i]
		}
	}
	t.Fatalf("no matrix %s %s in %+v", test, fig, c.Matrices)
	return nil
}

func compareNamed(base, new *report.Document) *compare.Comparison {
	return compare.Compare(base, new, compare.Options{BaseName: "base.json", NewName: "new.json"})
}

// deltas returns "test figure delta" for every figure of c.
func deltas(c *compare.Comparison) []string {
	var s []string
	for _, r := range c.Rows {
		for _, f := range r.Figures {
			s = append(s, r.Test+" "+string(f.Figure)+" "+f.Delta())
		}
	}
	return s
}

func messages(fs []compare.GateFailure) []string {
	s := []string{}
	for _, f := range fs {
		s = append(s, f.String())
	}
	return s
}
