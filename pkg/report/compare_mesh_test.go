package report

import (
	"testing"
)

// TestCompareMeshUnchanged: the same mesh twice: no change, no link
// listed as changed, every gate passes.
func TestCompareMeshUnchanged(t *testing.T) {
	c := mustCompareMesh(t, cmpMesh{n: 5}.doc(), cmpMesh{n: 5}.doc(), 0)
	for _, mc := range c.Matrices {
		if mc.Links != 20 || mc.Change == nil || *mc.Change != 0 || len(mc.Top) != 0 {
			t.Errorf("%s: %+v", mc.MatrixID, mc)
		}
	}
	g := c.CheckGates(Gates{MaxRegressionGate("--max-regression 1%", 0.01), MinRatioGate("--min-bw-ratio 0.99", 0.99, FigGbps)})
	c.AddLimits(g, "--limit-bw 90%link", Limits{MinLinkFraction: 0.9})
	if g.Failed() || len(g.Gates) != 3 {
		t.Errorf("gates: %+v", g)
	}
	if len(c.FailedBase)+len(c.FailedNew)+len(c.OnlyBase)+len(c.OnlyNew)+len(c.Warnings) != 0 {
		t.Errorf("%+v", c)
	}
}
