package compare

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// The tests of this file build their documents in Go, one figure per run,
// and check the comparison's own numbers: medians, changes, p-values,
// significance, the verdict of the gates and what they say.

// lat is a result of write-lat RC 2 B of run run with the given p50 and
// p99, in ns.
func lat(run int, p50, p99 float64) report.Result {
	return report.Result{Test: "write-lat", Connection: "RC", Size: 2, Run: run,
		Latency: &report.Latency{Basis: report.BasisRTTHalf, Count: 1000, MinNs: p50 / 2, P50Ns: p50, MeanNs: p50,
			P90Ns: p50, P99Ns: p99, P999Ns: p99, P9999Ns: p99, MaxNs: p99}}
}

// bwRun is a result of write-bw RC 64 KiB of run run at gbps Gbit/s, its
// message rate that of 64 KiB messages.
func bwRun(run int, gbps float64) report.Result {
	bytesPerSec := gbps * 1e9 / 8
	return report.Result{Test: "write-bw", Connection: "RC", Size: 65536, Run: run,
		Bandwidth: &report.Bandwidth{Gbps: gbps, MiBps: bytesPerSec / (1 << 20), Mmsgps: bytesPerSec / 65536 / 1e6}}
}

// latDoc is a document of one write-lat run per p50 (the p99 twice it);
// runs are numbered when there are several.
func latDoc(p50s ...float64) *report.Document {
	doc := report.NewDocument()
	for i, v := range p50s {
		run := 0
		if len(p50s) > 1 {
			run = i + 1
		}
		doc.Results = append(doc.Results, lat(run, v, 2*v))
	}
	return doc
}

// bwDoc is latDoc for write-bw, one run per rate.
func bwDoc(gbps ...float64) *report.Document {
	doc := report.NewDocument()
	for i, v := range gbps {
		run := 0
		if len(gbps) > 1 {
			run = i + 1
		}
		doc.Results = append(doc.Results, bwRun(run, v))
	}
	return doc
}

// figure is the change of figure f in the only row of c.
func figure(t *testing.T, c *Comparison, f report.Figure) *FigureChange {
	t.Helper()
	if len(c.Rows) != 1 {
		t.Fatalf("%d rows, want 1: %+v", len(c.Rows), c.Rows)
	}
	for i := range c.Rows[0].Figures {
		if fc := &c.Rows[0].Figures[i]; fc.Figure == f {
			return fc
		}
	}
	t.Fatalf("no %s in %+v", f, c.Rows[0].Figures)
	return nil
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestCompareSeparatedRuns: five runs each side, every new run slower
// than every base run: the medians are the middle runs, the change their
// ratio, and the U test's p-value that of its most extreme outcome,
// 2/C(10,5) = 2/252, significant at 0.05.
func TestCompareSeparatedRuns(t *testing.T) {
	c := Compare(latDoc(1000, 990, 1010, 1005, 995), latDoc(1100, 1110, 1090, 1120, 1080), Options{})
	row := c.Rows[0]
	if row.Key != (report.Key{Test: "write-lat", Connection: "RC", Size: 2}) || row.Kind != "latency" || row.Basis != report.BasisRTTHalf {
		t.Errorf("row %+v", row)
	}
	if c.Alpha != report.Alpha || c.Confidence != report.Confidence || c.Base.Runs != 5 || c.New.Runs != 5 {
		t.Errorf("comparison alpha %v confidence %v runs %d/%d", c.Alpha, c.Confidence, c.Base.Runs, c.New.Runs)
	}
	var figs []report.Figure
	for _, fc := range row.Figures {
		figs = append(figs, fc.Figure)
	}
	if !slices.Equal(figs, []report.Figure{report.FigP50, report.FigP99}) {
		t.Errorf("figures %v, want p50 and p99", figs)
	}
	p50 := figure(t, c, report.FigP50)
	if p50.Base.Median != 1000 || p50.New.Median != 1100 || p50.Base.N != 5 || p50.Unit != "ns" {
		t.Errorf("p50 medians %v, %v (n %d), unit %q", p50.Base.Median, p50.New.Median, p50.Base.N, p50.Unit)
	}
	if !slices.Equal(p50.BaseValues, []float64{1000, 990, 1010, 1005, 995}) || !slices.Equal(p50.NewValues, []float64{1100, 1110, 1090, 1120, 1080}) {
		t.Errorf("values %v, %v: want each run's, in run order", p50.BaseValues, p50.NewValues)
	}
	if p50.Change == nil || !near(*p50.Change, 0.1) {
		t.Errorf("change %v, want 1100/1000 - 1", p50.Change)
	}
	if p50.P == nil || !near(*p50.P, 2.0/252) || !p50.Significant || p50.TooFewRuns {
		t.Errorf("p %v significant %v too few %v; want p = 2/252, significant", p50.P, p50.Significant, p50.TooFewRuns)
	}
	if w, ok := p50.Worse(); !ok || !near(w, 0.1) {
		t.Errorf("Worse() = %v, %v; want 0.1 (a latency up is worse)", w, ok)
	}
	if got := p50.Delta(); got != "+10.00%" {
		t.Errorf("Delta() = %q", got)
	}
	if got := p50.Test(); got != "p=0.008 n=5" {
		t.Errorf("Test() = %q", got)
	}
	// Five runs are too few for a bounded 95% interval: the median alone.
	if p50.Base.Bounded() || p50.Base.Lo != nil {
		t.Errorf("5 runs: interval %+v, want none", p50.Base)
	}

	res := c.CheckGates(Gates{MaxRegressionGate("--max-p50-regression 5%", 0.05, report.FigP50)})
	reporttest.Equal(t, "failed", res.FailedLines(), []string{
		"gate failed: write-lat RC 2 B: p50 +10.00% > 5% (--max-p50-regression 5%)",
	})
	if !res.Failed() || res.Count() != 1 || len(res.NotSignificant) != 0 || len(res.Incomplete) != 0 {
		t.Errorf("verdict %+v", res)
	}
	f := res.Failures[0]
	if f.Key != row.Key || f.Figure != report.FigP50 || !near(f.Change, 0.1) || !f.Significant || f.TooFewRuns {
		t.Errorf("failure %+v", f)
	}
	// A threshold above the change passes.
	if res := c.CheckGates(Gates{MaxRegressionGate("--max-p50-regression 15%", 0.15, report.FigP50)}); res.Failed() {
		t.Errorf("15%% gate on a 10%% change: %q", res.FailedLines())
	}
}

// TestCompareNoise: interleaved runs, the new median 2% up: the U test
// finds it noise (p = 0.69), so a 1% gate does not fail, and says why.
func TestCompareNoise(t *testing.T) {
	c := Compare(latDoc(1000, 1040, 980, 1060, 1020), latDoc(1010, 1050, 990, 1070, 1040), Options{})
	p50 := figure(t, c, report.FigP50)
	if p50.Base.Median != 1020 || p50.New.Median != 1040 || p50.Change == nil || !near(*p50.Change, 20.0/1020) {
		t.Errorf("p50 %v -> %v change %v", p50.Base.Median, p50.New.Median, p50.Change)
	}
	if p50.P == nil || *p50.P <= c.Alpha || p50.Significant || p50.TooFewRuns {
		t.Fatalf("p %v significant %v: want noise", p50.P, p50.Significant)
	}
	if got := p50.Delta(); got != "+1.96% ~" {
		t.Errorf("Delta() = %q", got)
	}
	res := c.CheckGates(Gates{MaxRegressionGate("--max-regression 1%", 0.01)})
	if res.Failed() {
		t.Errorf("noise failed the gate: %q", res.FailedLines())
	}
	var msgs []string
	for _, f := range res.NotSignificant {
		msgs = append(msgs, f.String())
	}
	reporttest.Equal(t, "not significant", msgs, []string{
		"gate not failed: write-lat RC 2 B: p50 +1.96% > 1% (--max-regression 1%): not significant (" + p50.Test() + " > alpha 0.05)",
		"gate not failed: write-lat RC 2 B: p99 +1.96% > 1% (--max-regression 1%): not significant (" + figure(t, c, report.FigP99).Test() + " > alpha 0.05)",
	})
}

// TestCompareOneRun: a run on each side cannot be tested; the change is
// there, the gate judges it alone (and says so), unless significance is
// required, where it is listed as not significant.
func TestCompareOneRun(t *testing.T) {
	c := Compare(latDoc(1000), latDoc(1200), Options{})
	p50 := figure(t, c, report.FigP50)
	if !p50.TooFewRuns || p50.Significant || p50.Change == nil || !near(*p50.Change, 0.2) {
		t.Fatalf("p50 %+v", p50)
	}
	if got := p50.Test(); got != "n=1 untested" {
		t.Errorf("Test() = %q", got)
	}
	if got := p50.Delta(); got != "+20.00% ~" {
		t.Errorf("Delta() = %q", got)
	}
	gates := Gates{MaxRegressionGate("--max-p50-regression 5%", 0.05, report.FigP50)}
	need := report.MinRunsForTest(report.Alpha)
	res := c.CheckGates(gates)
	reporttest.Equal(t, "judged alone", res.FailedLines(), []string{
		"gate failed: write-lat RC 2 B: p50 +20.00% > 5% (--max-p50-regression 5%): too few runs to test its significance (n=1; need at least " +
			strconv.Itoa(need) + " on each side): judged on the change alone",
	})
	if f := res.Failures[0]; f.Significant || !f.TooFewRuns {
		t.Errorf("failure %+v", f)
	}
	res = c.CheckGatesWith(gates, GateOptions{RequireSignificance: true})
	if res.Failed() || len(res.NotSignificant) != 1 {
		t.Fatalf("significance required: %+v", res)
	}
	if got := res.NotSignificant[0].Message; !strings.HasSuffix(got, ": not significant, too few runs (n=1; need at least "+strconv.Itoa(need)+" on each side)") {
		t.Errorf("not significant: %q", got)
	}
}

// TestCompareBandwidth: a bandwidth down is worse; a regression gate and
// a ratio gate each say it in their own terms; a ratio gate does not
// judge latencies.
func TestCompareBandwidth(t *testing.T) {
	c := Compare(bwDoc(100, 101, 99, 100.5, 99.5), bwDoc(90, 91, 89, 90.5, 89.5), Options{})
	row := c.Rows[0]
	if row.Kind != "bandwidth" || row.Basis != "" {
		t.Errorf("row kind %q basis %q", row.Kind, row.Basis)
	}
	gbps := figure(t, c, report.FigGbps)
	if !near(gbps.Base.Median, 100) || !near(gbps.New.Median, 90) || gbps.Unit != "Gbit/s" || !gbps.Significant {
		t.Errorf("bw %v -> %v (%s), significant %v", gbps.Base.Median, gbps.New.Median, gbps.Unit, gbps.Significant)
	}
	if w, ok := gbps.Worse(); !ok || !near(w, 0.1) {
		t.Errorf("Worse() = %v, %v; want 0.1 (a bandwidth down is worse)", w, ok)
	}
	// Messages of 64 KiB: the message rate follows the bandwidth.
	rate := figure(t, c, report.FigMsgRate)
	if rate.Change == nil || !near(*rate.Change, -0.1) || rate.Unit != "Mmsg/s" {
		t.Errorf("msg-rate change %v unit %q", rate.Change, rate.Unit)
	}
	res := c.CheckGates(Gates{
		MaxRegressionGate("--max-bw-regression 5%", 0.05, report.FigGbps),
		MinRatioGate("--min-ratio 0.95", 0.95),
	})
	reporttest.Equal(t, "bandwidth gates", res.FailedLines(), []string{
		"gate failed: write-bw RC 65536 B: bw -10.00% < -5% (--max-bw-regression 5%)",
		"gate failed: write-bw RC 65536 B: bw ratio 0.900 < 0.95 (--min-ratio 0.95)",
		"gate failed: write-bw RC 65536 B: msg-rate ratio 0.900 < 0.95 (--min-ratio 0.95)",
	})
	// A bandwidth up passes both.
	up := Compare(bwDoc(90, 91, 89, 90.5, 89.5), bwDoc(100, 101, 99, 100.5, 99.5), Options{})
	if res := up.CheckGates(Gates{MaxRegressionGate("--max-regression 5%", 0.05), MinRatioGate("--min-ratio 0.95", 0.95)}); res.Failed() {
		t.Errorf("an improvement failed: %q", res.FailedLines())
	}
	// A ratio gate on latencies has nothing to check: that fails closed.
	res = Compare(latDoc(1000), latDoc(1000), Options{}).CheckGates(Gates{MinRatioGate("--min-ratio 0.95", 0.95)})
	reporttest.Equal(t, "ratio on latency", res.FailedLines(), []string{
		"gate failed: --min-ratio 0.95: nothing compared: no bandwidth or message rate measured on both sides",
	})
	if len(res.Incomplete) != 1 || res.Incomplete[0].Reason != IncompleteNothing || res.Incomplete[0].Gate != "--min-ratio 0.95" {
		t.Errorf("incomplete %+v", res.Incomplete)
	}
}

// TestCompareInterval: from six runs on, a side's median has a 95%
// confidence interval whose bounds are runs' values around it.
func TestCompareInterval(t *testing.T) {
	runs := []float64{1000, 1030, 970, 1010, 990, 1050}
	c := Compare(latDoc(runs...), latDoc(runs...), Options{})
	p50 := figure(t, c, report.FigP50)
	s := p50.Base
	if s.N != 6 || !near(s.Median, 1005) || !s.Bounded() {
		t.Fatalf("spread %+v", s)
	}
	if !slices.Contains(runs, *s.Lo) || !slices.Contains(runs, *s.Hi) || *s.Lo > s.Median || *s.Hi < s.Median || s.Confidence < report.Confidence {
		t.Errorf("interval [%v, %v] at %v around %v", *s.Lo, *s.Hi, s.Confidence, s.Median)
	}
	// The same runs on both sides: no change, and nothing significant.
	if p50.Change == nil || *p50.Change != 0 || p50.Significant {
		t.Errorf("identical sides: change %v significant %v", p50.Change, p50.Significant)
	}
}

// TestCompareKeys: rows follow base's order; a test and size on one side
// only is listed there, and missing in new fails the gates while only in
// new does not.
func TestCompareKeys(t *testing.T) {
	base := report.NewDocument()
	base.Results = []report.Result{bwRun(0, 100), lat(0, 1000, 2000)}
	onlyBase := lat(0, 1000, 2000)
	onlyBase.Size = 8
	base.Results = append(base.Results, onlyBase)
	newDoc := report.NewDocument()
	onlyNew := bwRun(0, 100)
	onlyNew.Size = 4096
	newDoc.Results = []report.Result{lat(0, 1000, 2000), bwRun(0, 100), onlyNew}
	c := Compare(base, newDoc, Options{BaseName: "a.json", NewName: "b.json"})
	if c.Base.Name != "a.json" || c.New.Name != "b.json" {
		t.Errorf("names %q, %q", c.Base.Name, c.New.Name)
	}
	var keys []string
	for _, r := range c.Rows {
		keys = append(keys, r.Key.String())
	}
	reporttest.Equal(t, "rows", keys, []string{"write-bw RC 65536 B", "write-lat RC 2 B"})
	if !slices.Equal(c.OnlyBase, []report.Key{{Test: "write-lat", Connection: "RC", Size: 8}}) ||
		!slices.Equal(c.OnlyNew, []report.Key{{Test: "write-bw", Connection: "RC", Size: 4096}}) {
		t.Errorf("only base %v, only new %v", c.OnlyBase, c.OnlyNew)
	}
	res := c.CheckGates(Gates{MaxRegressionGate("--max-regression 5%", 0.05)})
	reporttest.Equal(t, "missing", res.FailedLines(), []string{"gate failed: write-lat RC 8 B: in base, missing in new"})
	if len(res.Incomplete) != 1 || res.Incomplete[0].Reason != IncompleteMissing || *res.Incomplete[0].Key != c.OnlyBase[0] {
		t.Errorf("incomplete %+v", res.Incomplete)
	}
}

// TestCompareFailedRuns: runs that failed are counted, left out of the
// figures and named in the row's notes; in new they fail the gates.
func TestCompareFailedRuns(t *testing.T) {
	newDoc := latDoc(1000, 1000, 1000, 1000, 1000)
	newDoc.Results[4] = report.Result{Test: "write-lat", Connection: "RC", Size: 2, Run: 5, Error: "IBV_WC_RETRY_EXC_ERR"}
	c := Compare(latDoc(1000, 1000, 1000, 1000, 1000), newDoc, Options{})
	p50 := figure(t, c, report.FigP50)
	if len(p50.NewValues) != 4 || p50.New.N != 4 || p50.Base.N != 5 {
		t.Errorf("values %v (n %d): want the 4 runs that measured", p50.NewValues, p50.New.N)
	}
	reporttest.Equal(t, "notes", c.Rows[0].Notes, []string{"new: 1 of 5 runs failed and are left out (IBV_WC_RETRY_EXC_ERR)"})
	res := c.CheckGates(Gates{MaxRegressionGate("--max-regression 5%", 0.05)})
	reporttest.Equal(t, "failed in new", res.FailedLines(), []string{
		"gate failed: write-lat RC 2 B: 1 of 5 runs failed in new: IBV_WC_RETRY_EXC_ERR",
	})
	if res.Incomplete[0].Reason != IncompleteFailed {
		t.Errorf("reason %q", res.Incomplete[0].Reason)
	}
	// Failed in base only: a warning, not a gate failure.
	c = Compare(newDoc, latDoc(1000, 1000, 1000, 1000, 1000), Options{})
	if res := c.CheckGates(Gates{MaxRegressionGate("--max-regression 5%", 0.05)}); res.Failed() {
		t.Errorf("failed in base failed the gates: %q", res.FailedLines())
	}
	if !slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.HasPrefix(w, "base: its test failed: write-lat RC 2 B") }) {
		t.Errorf("warnings %q: want base's failed test named", c.Warnings)
	}
}

// TestCompareLimitsOnNew: an absolute limit checks NEW's figures (the
// median of its runs) and each miss fails the gates.
func TestCompareLimitsOnNew(t *testing.T) {
	newDoc := bwDoc(80, 81, 79, 80.5, 79.5)
	c := Compare(bwDoc(80, 81, 79, 80.5, 79.5), newDoc, Options{})
	res := c.CheckGates(nil)
	res.AddLimits("--limit-bw 90Gbps", newDoc, report.Limits{MinGbps: 90})
	if !res.Failed() || len(res.Limits) != 1 {
		t.Fatalf("limits %+v", res.Limits)
	}
	l := res.Limits[0]
	if l.Figure != report.FigGbps || !near(l.Value, 80) || l.Limit != 90 || l.Runs != 5 {
		t.Errorf("limit failure %+v", l)
	}
}

// TestCompareMeshLinkFigures: three ranks, the link 0 -> 1 50% slower in
// new and 1 -> 2 at half the bandwidth: each matrix's medians and change
// over the links measured on both sides, the most changed links first,
// and a gate failing each of those links by name, the worst first.
func TestCompareMeshLinkFigures(t *testing.T) {
	base := reporttest.CmpMesh{N: 3, Lat: func(from, to int) float64 { return 1000 }}.Doc()
	newDoc := reporttest.CmpMesh{N: 3,
		Lat: func(from, to int) float64 {
			if from == 0 && to == 1 {
				return 1500
			}
			return 1000
		},
		SlowBW: func(from, to int) float64 {
			if from == 1 && to == 2 {
				return 2
			}
			return 1
		}}.Doc()
	c := mustCompareMesh(t, base, newDoc, 2)
	var ids []string
	for _, mc := range c.Matrices {
		ids = append(ids, mc.MatrixID.String())
	}
	reporttest.Equal(t, "matrices", ids, []string{"write-lat RC 2 B p50", "write-lat RC 2 B p99", "write-bw RC 65536 B bw"})
	p50 := c.Matrices[0]
	if p50.Links != 6 || p50.OnlyBase != 0 || p50.OnlyNew != 0 || *p50.BaseMedian != 1000 || *p50.NewMedian != 1000 || *p50.Change != 0 {
		t.Errorf("p50: %d links, medians %v -> %v, change %v", p50.Links, *p50.BaseMedian, *p50.NewMedian, *p50.Change)
	}
	if len(p50.Top) != 1 || p50.Top[0].From != 0 || p50.Top[0].To != 1 || p50.Top[0].Base != 1000 || p50.Top[0].New != 1500 ||
		!near(*p50.Top[0].Change, 0.5) || p50.Top[0].FromHost != "node0 mlx5_0" || p50.Top[0].ToHost != "node1 mlx5_0" {
		t.Errorf("p50 top %+v", p50.Top)
	}
	bw := c.Matrices[2]
	if len(bw.Top) != 1 || bw.Top[0].From != 1 || bw.Top[0].To != 2 || !near(*bw.Top[0].Change, -0.5) {
		t.Errorf("bw top %+v", bw.Top)
	}
	res := c.CheckGates(Gates{MaxRegressionGate("--max-regression 10%", 0.1)})
	reporttest.Equal(t, "gates", res.FailedLines(), []string{
		"gate failed: 0 -> 1 (node0 mlx5_0 -> node1 mlx5_0) write-lat RC 2 B: p50 +50.00% > 10% (--max-regression 10%)",
		"gate failed: 0 -> 1 (node0 mlx5_0 -> node1 mlx5_0) write-lat RC 2 B: p99 +50.00% > 10% (--max-regression 10%)",
		"gate failed: 1 -> 2 (node1 mlx5_0 -> node2 mlx5_0) write-bw RC 65536 B: bw -50.00% < -10% (--max-regression 10%)",
	})
	f := res.Failures[2]
	if f.From != 1 || f.To != 2 || f.Figure != report.FigGbps || !near(f.Change, -0.5) || !near(f.Base, 2*f.New) {
		t.Errorf("bw failure %+v", f)
	}
	// A link's own change is judged, not the median's: a 60% gate passes.
	if res := c.CheckGates(Gates{MaxRegressionGate("--max-regression 60%", 0.6)}); res.Failed() {
		t.Errorf("60%% gate: %q", res.FailedLines())
	}
}
