package compare

import (
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// TestCompareLimitLink: compare applies the same limit to NEW, and a miss
// fails the gates.
func TestCompareLimitLink(t *testing.T) {
	base, new := reporttest.BaseRuns(), reporttest.RegressedRuns() // new's median 88.6
	for _, d := range []*report.Document{base, new} {
		for i := range d.Results {
			d.Results[i].Effective = &report.Effective{LinkGbps: 100}
		}
	}
	c := Compare(base, new, Options{})
	g := c.CheckGates(nil)
	g.AddLimits("--limit-bw 90%link", new, report.Limits{MinLinkFraction: 0.9})
	if !g.Failed() || len(g.Limits) != 1 || !strings.Contains(g.Limits[0].Message, "88.60 Gbit/s (median of 5 runs) < limit 90% of the link") {
		t.Fatalf("gates %+v", g)
	}
	g = c.CheckGates(nil)
	g.AddLimits("--limit-bw 85%link", new, report.Limits{MinLinkFraction: 0.85})
	if g.Failed() || len(g.Gates) != 1 {
		t.Fatalf("85%% of the link: %+v", g)
	}
}
