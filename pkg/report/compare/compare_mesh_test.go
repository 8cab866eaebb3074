package compare

import (
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// TestCompareMeshUnchanged: the same mesh twice: no change, no link
// listed as changed, every gate passes.
func TestCompareMeshUnchanged(t *testing.T) {
	c := mustCompareMesh(t, reporttest.CmpMesh{N: 5}.Doc(), reporttest.CmpMesh{N: 5}.Doc(), 0)
	for _, mc := range c.Matrices {
		if mc.Links != 20 || mc.Change == nil || *mc.Change != 0 || len(mc.Top) != 0 {
			t.Errorf("%s: %+v", mc.MatrixID, mc)
		}
	}
	g := c.CheckGates(Gates{MaxRegressionGate("--max-regression 1%", 0.01), MinRatioGate("--min-bw-ratio 0.99", 0.99, report.FigGbps)})
	c.AddLimits(g, "--limit-bw 90%link", report.Limits{MinLinkFraction: 0.9})
	if g.Failed() || len(g.Gates) != 3 {
		t.Errorf("gates: %+v", g)
	}
	if len(c.FailedBase)+len(c.FailedNew)+len(c.OnlyBase)+len(c.OnlyNew)+len(c.Warnings) != 0 {
		t.Errorf("%+v", c)
	}
}

// TestCompareMeshHosts: two summaries of 520 ranks (no rank matrices)
// compare per host pair: the host pair made slower on every rail is the
// most changed, and the comparison says how it compared.
func TestCompareMeshHosts(t *testing.T) {
	const hosts, rails = 65, 8
	base := reporttest.RailMesh(t, hosts, rails, func(from, to int) float64 { return 2000 }, [2]int{-1, -1})
	slow := reporttest.RailMesh(t, hosts, rails, func(from, to int) float64 {
		if from/rails == 3 && to/rails == 4 {
			return 3000
		}
		return 2000
	}, [2]int{-1, -1})
	c, err := CompareMesh(base, slow, MeshOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Matrices) != 3 || c.Base.Ranks != 520 || c.New.Links != hosts*(hosts-1)*rails {
		t.Fatalf("%d matrices, %d ranks, %d links", len(c.Matrices), c.Base.Ranks, c.New.Links)
	}
	p50 := c.Matrices[0]
	if p50.Links != hosts*(hosts-1) || len(p50.Top) != 1 || p50.Top[0].From != 3 || p50.Top[0].To != 4 ||
		p50.Top[0].FromHost != "node3" || p50.Top[0].Change == nil || *p50.Top[0].Change < 0.49 || *p50.Top[0].Change > 0.51 {
		t.Errorf("p50: %d host pairs, top %+v", p50.Links, p50.Top)
	}
	if len(c.Warnings) == 0 || !strings.HasPrefix(c.Warnings[0], "compared per host pair (65 and 65 hosts)") {
		t.Errorf("warnings %q", c.Warnings)
	}
}
