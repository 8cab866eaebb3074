package compare

import (
	"slices"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// TestTestable: the U test can find a difference when its most extreme
// outcome's p-value, 2/C(n1+n2, n1), is at most alpha; on equal sides
// from report.MinRunsForTest runs on.
func TestTestable(t *testing.T) {
	for _, tc := range []struct {
		n1, n2 int
		alpha  float64
		want   bool
	}{
		{4, 4, 0.05, true}, {3, 3, 0.05, false}, {3, 5, 0.05, true}, {3, 4, 0.05, false}, {5, 1, 0.05, false},
		{1, 38, 0.05, false}, {1, 39, 0.05, true}, {0, 5, 0.05, false}, {5, 5, 0.01, true}, {4, 4, 0.01, false},
	} {
		if got := Testable(tc.n1, tc.n2, tc.alpha); got != tc.want {
			t.Errorf("Testable(%d, %d, %g) = %v, want %v", tc.n1, tc.n2, tc.alpha, got, tc.want)
		}
	}
	for _, alpha := range []float64{0.1, 0.05, 0.01, 0.001} {
		need := report.MinRunsForTest(alpha)
		if !Testable(need, need, alpha) || Testable(need-1, need-1, alpha) {
			t.Errorf("alpha %g: MinRunsForTest %d disagrees", alpha, need)
		}
	}
}

// TestGatesFailClosed: a test failed or missing in NEW, a run stopped
// early and a partial document each fail the gates, and are named; a
// test that failed in base only does not.
func TestGatesFailClosed(t *testing.T) {
	gates := Gates{MaxRegressionGate("--max-regression 5%", 0.05)}
	n := reporttest.NoiseRuns()
	n.Results[0] = report.Result{Test: "write-lat", Connection: "RC", Size: 2, Run: 1, Error: "IBV_WC_RETRY_EXC_ERR"}
	n.Results = slices.DeleteFunc(n.Results, func(r report.Result) bool { return r.Test == "write-bw" })
	n.Error, n.Partial = "interrupted", true
	res := Compare(reporttest.BaseRuns(), n, Options{}).CheckGates(gates)
	reporttest.Equal(t, "incomplete", res.FailedLines(), []string{
		"gate failed: the new run stopped early: interrupted",
		"gate failed: the new document is partial: its run was still going when it was written",
		"gate failed: write-lat RC 2 B: 1 of 5 runs failed in new: IBV_WC_RETRY_EXC_ERR",
		"gate failed: write-bw RC 65536 B: in base, missing in new",
	})
	reasons := []string{}
	for _, i := range res.Incomplete {
		reasons = append(reasons, i.Reason)
	}
	reporttest.Equal(t, "reasons", reasons, []string{IncompleteStopped, IncompleteStopped, IncompleteFailed, IncompleteMissing})
	if !res.Failed() || res.Count() != 4 {
		t.Errorf("verdict: %+v", res)
	}
	// The same without a gate on changes (a --limit-bw alone).
	if res := Compare(reporttest.BaseRuns(), n, Options{}).CheckGates(nil); len(res.Incomplete) != 4 {
		t.Errorf("no gate on changes: %q", res.FailedLines())
	}

	// A run whose error is its failed test's did not stop.
	n = reporttest.NoiseRuns()
	n.Results[1].Error, n.Error = "write-bw: RNR retry exceeded", "write-bw: RNR retry exceeded"
	c := Compare(reporttest.BaseRuns(), n, Options{})
	reporttest.Equal(t, "warnings", c.Warnings, []string{"new: 1 of 2 tests failed: write-bw RC 65536 B (1 of 5 runs)"})

	// Base failed, new measured: nothing to judge, no failure.
	b := reporttest.BaseRuns()
	for i := range b.Results {
		if b.Results[i].Test == "write-bw" {
			b.Results[i].Bandwidth, b.Results[i].Error = nil, "IBV_WC_RETRY_EXC_ERR"
		}
	}
	c = Compare(b, reporttest.NoiseRuns(), Options{})
	if res := c.CheckGates(gates); res.Failed() {
		t.Errorf("a test failed in base failed the gates: %v", res.FailedLines())
	}
	reporttest.Equal(t, "base warnings", c.Warnings, []string{"base: 1 of 2 tests failed: write-bw RC 65536 B (5 of 5 runs)"})
}

// TestGatesFailedOneCauseOnce: the tests that failed in new for one cause
// are one line, the cause said once; the JSON keeps one entry a test.
func TestGatesFailedOneCauseOnce(t *testing.T) {
	n := reporttest.NoiseRuns()
	for i := range n.Results {
		r := &n.Results[i]
		r.Latency, r.Bandwidth, r.Error = nil, nil, r.Test+": no RDMA device found"
	}
	res := Compare(reporttest.BaseRuns(), n, Options{}).CheckGates(Gates{MaxRegressionGate("--max-regression 5%", 0.05)})
	reporttest.Equal(t, "one cause", res.FailedLines(), []string{
		"gate failed: 2 tests (write-lat RC 2 B, write-bw RC 65536 B): 5 of 5 runs failed in new: no RDMA device found",
		"gate failed: --max-regression 5%: nothing compared: no figure measured on both sides",
	})
	if len(res.Incomplete) != 3 || res.Count() != 3 {
		t.Errorf("want an entry a test: %+v", res.Incomplete)
	}
	n.Results[0].Error = "write-lat: IBV_WC_RETRY_EXC_ERR"
	res = Compare(reporttest.BaseRuns(), n, Options{}).CheckGates(nil)
	reporttest.Equal(t, "two causes", res.FailedLines(), []string{
		"gate failed: write-lat RC 2 B: 5 of 5 runs failed in new: write-lat: IBV_WC_RETRY_EXC_ERR",
		"gate failed: write-bw RC 65536 B: 5 of 5 runs failed in new: write-bw: no RDMA device found",
	})
}

// TestGatesNothingCompared: no test in common, or no figure of a gate on
// both sides, fails the gates; --limit-bw alone does not need one.
func TestGatesNothingCompared(t *testing.T) {
	only := func(doc *report.Document, test string) *report.Document {
		doc.Results = slices.DeleteFunc(doc.Results, func(r report.Result) bool { return r.Test != test })
		return doc
	}
	c := Compare(only(reporttest.BaseRuns(), "write-lat"), only(reporttest.NoiseRuns(), "write-bw"), Options{})
	reporttest.Equal(t, "nothing in common", c.CheckGates(Gates{MaxRegressionGate("--max-regression 5%", 0.05)}).FailedLines(), []string{
		"gate failed: write-lat RC 2 B: in base, missing in new",
		"gate failed: nothing compared: no test and size in common",
	})
	c = Compare(only(reporttest.BaseRuns(), "write-lat"), only(reporttest.NoiseRuns(), "write-lat"), Options{})
	res := c.CheckGates(Gates{MaxRegressionGate("--max-p99-regression 5%", 0.05, report.FigP99),
		MaxRegressionGate("--max-bw-regression 5%", 0.05, report.FigGbps), MinRatioGate("--min-bw-ratio 0.9", 0.9)})
	reporttest.Equal(t, "nothing for a gate", res.FailedLines(), []string{
		"gate failed: --max-bw-regression 5%: nothing compared: no bw measured on both sides",
		"gate failed: --min-bw-ratio 0.9: nothing compared: no bandwidth or message rate measured on both sides",
	})
	if res.Incomplete[0].Gate != "--max-bw-regression 5%" || res.Incomplete[0].Reason != IncompleteNothing {
		t.Errorf("incomplete: %+v", res.Incomplete[0])
	}
	if res := c.CheckGates(nil); res.Failed() {
		t.Errorf("no relative gate (a limit alone): %v", res.FailedLines())
	}
}

// TestEnvDiffNames: each difference of the runs' environments is named,
// in order.
func TestEnvDiffNames(t *testing.T) {
	b, n := reporttest.BaseRuns(), reporttest.BaseRuns()
	n.Tool.GoVersion, n.Tool.Verbs = "go1.27.0", false
	n.Hosts.Local.Hostname, n.Hosts.Local.OS, n.Hosts.Local.CPUs = "node7", "linux/arm64", 64
	d := n.Hosts.Local.Device
	d.LinkGbps, d.ActiveSpeed, d.ActiveWidth, d.GIDIndex = 100, "25.0 Gbps (EDR)", "4X", 3
	n.Params.ServerCPUs, n.Params.CPUs, n.Params.Threads = []int{0}, []int{2, 3}, 2
	reporttest.Equal(t, "warnings", envDiff(b, n), []string{
		"Go version differs: base go1.26.8, new go1.27.0",
		"tool build differs: base built with libibverbs, new built without libibverbs",
		"host name differs: base ci-runner, new node7",
		"OS differs: base linux/amd64, new linux/arm64",
		"CPU count differs: base 8, new 64",
		"link rate differs: base (none), new 100 Gbit/s (25.0 Gbps (EDR) 4X)",
		"GID index differs: base 1, new 3",
		"parameter threads differs: base default, new 2",
		"parameter cpu differs: base default, new 2-3",
		"parameter server-cpu differs: base default, new 0",
	})
}

// TestRowSettingsNamed: per row, the effective settings the table's "ran
// with" line leaves out (inline, the ACK timeout, the server's memory),
// the clock and the pinning are named where they differ.
func TestRowSettingsNamed(t *testing.T) {
	b, n := reporttest.BaseRuns(), reporttest.BaseRuns()
	for i := range n.Results {
		r := &n.Results[i]
		e := *r.Effective
		e.Inline, e.QPTimeout = false, 18
		e.ServerMemory = &report.Memory{Kind: report.MemHugePages, PageBytes: 2 << 20, Registration: report.RegMR}
		r.Effective, r.Clock = &e, "monotonic"
		r.Placement = &report.Placement{Client: &report.EndPlacement{Policy: report.PlaceNUMA, NUMANode: ptr(1), CPUs: []int{8, 9, 10, 11}}}
		b.Results[i].Placement = &report.Placement{Client: &report.EndPlacement{Policy: report.PlaceNone, Used: []int{3}}}
	}
	c := Compare(b, n, Options{})
	reporttest.Equal(t, "write-lat notes", c.Rows[0].Notes, []string{"ran with different settings: payload inline base on, new -; " +
		"qp-timeout base -, new 18; server mem base -, new hugepages 2 MiB pages, ibv_reg_mr; clock base tsc, new monotonic; " +
		"client pinning base not pinned, new NUMA node 1 (cores 8-11)"})
	if notes := strings.Join(c.Rows[1].Notes, ""); strings.Contains(notes, "payload inline") || !strings.Contains(notes, "qp-timeout") {
		t.Errorf("write-bw notes: %q", notes)
	}
}

// TestMeshGatesFailClosed: two meshes: a matrix missing in new, nothing in
// common, and a gate with no link of its figures fail the gates.
func TestMeshGatesFailClosed(t *testing.T) {
	gates := Gates{MaxRegressionGate("--max-p99-regression 10%", 0.10, report.FigP99), MaxRegressionGate("--max-regression 10%", 0.10)}
	n := reporttest.CmpMesh{N: 4}.Doc()
	n.Mesh.Matrices = slices.DeleteFunc(n.Mesh.Matrices, func(m report.Matrix) bool { return m.Test == "write-bw" })
	c := mustCompareMesh(t, reporttest.CmpMesh{N: 4}.Doc(), n, 0)
	res := c.CheckGates(gates)
	var want []string
	for _, m := range c.OnlyBase {
		want = append(want, "gate failed: "+m.String()+": in base, missing in new")
	}
	if len(want) == 0 {
		t.Fatal("no matrix only in base")
	}
	if !slices.ContainsFunc(c.Matrices, func(m MatrixChange) bool { return m.Figure == report.FigP99 }) {
		want = append(want, "gate failed: --max-p99-regression 10%: nothing compared: no link of p99 measured on both sides")
	}
	reporttest.Equal(t, "missing", res.FailedLines(), want)

	n = reporttest.CmpMesh{N: 4}.Doc()
	for i := range n.Mesh.Matrices {
		n.Mesh.Matrices[i].Size++
	}
	res = mustCompareMesh(t, reporttest.CmpMesh{N: 4}.Doc(), n, 0).CheckGates(gates[1:])
	if l := res.FailedLines(); len(l) == 0 || l[len(l)-1] != "gate failed: nothing compared: no matrix (test, size and figure) in common" {
		t.Errorf("nothing in common: %q", l)
	}
	if res := mustCompareMesh(t, reporttest.CmpMesh{N: 4}.Doc(), reporttest.CmpMesh{N: 4}.Doc(), 0).CheckGates(gates[1:]); res.Failed() {
		t.Errorf("the same mesh twice: %q", res.FailedLines())
	}
}

func ptr(n int) *int { return &n }
