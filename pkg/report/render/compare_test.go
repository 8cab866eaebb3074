package render

import (
	"bytes"
	"encoding/json"
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"math"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/compare"
)

// TestCompareFailedRuns: failed runs are left out and noted; a test that
// failed on one side has no delta.
func TestCompareFailedRuns(t *testing.T) {
	n := reporttest.RegressedRuns()
	n.Results[2].Error = "timeout" // write-lat, run 2
	n.Results[2].Latency = nil
	c := compareNamed(reporttest.BaseRuns(), n)
	row := c.Rows[0]
	if got := row.Figures[1]; len(got.NewValues) != 4 || !got.Significant {
		t.Errorf("p99 with a failed run: %+v", got)
	}
	reporttest.Equal(t, "notes", row.Notes, []string{"new: 1 of 5 runs failed and are left out (timeout)"})

	one := reporttest.SingleNew()
	one.Results[1] = report.Result{Test: "write-bw", Connection: "RC", Size: 65536, QPs: 4, Error: "RNR retry exceeded"}
	c = compareNamed(reporttest.SingleBase(), one)
	bw := c.Rows[1]
	if bw.Kind != "bandwidth" || bw.Figures[0].Delta() != "-" || bw.Figures[0].Change != nil {
		t.Errorf("failed test: %+v", bw)
	}
	reporttest.Equal(t, "notes", bw.Notes, []string{"new: the test failed: RNR retry exceeded", "QPs differ: base 1, new 4"})
	// The failed test has no change to judge; it fails the gates as a
	// test failed in new.
	res := c.CheckGates(compare.Gates{compare.MaxRegressionGate("x", 0)})
	for _, f := range res.Failures {
		if f.Test == "write-bw" {
			t.Errorf("a change of a failed test: %v", f)
		}
	}
	reporttest.Equal(t, "incomplete", res.FailedLines()[:1], []string{"gate failed: write-bw RC 65536 B: the test failed in new: RNR retry exceeded"})
	reporttest.Equal(t, "warnings", c.Warnings, []string{"new: 1 of 2 tests failed: write-bw RC 65536 B"})
	var buf bytes.Buffer
	if err := WriteComparison(&buf, FormatTable, c, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "write-bw RC 65536 B: new: the test failed: RNR retry exceeded") {
		t.Errorf("table:\n%s", buf.String())
	}
}

func TestCompareJSON(t *testing.T) {
	c := compareNamed(reporttest.SingleBase(), reporttest.SingleNew())
	var buf bytes.Buffer
	if err := WriteComparison(&buf, FormatJSON, c, c.CheckGates(compare.Gates{compare.MaxRegressionGate("--max-regression 5%", 0.05)})); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Schema string `json:"schema"`
		Rows   []struct {
			Test    string `json:"test"`
			Figures []struct {
				Figure     string    `json:"figure"`
				Change     *float64  `json:"change"`
				BaseValues []float64 `json:"base_values"`
				TooFewRuns bool      `json:"too_few_runs"`
			} `json:"figures"`
		} `json:"rows"`
		Gates struct {
			Failures       []compare.GateFailure `json:"failures"`
			NotSignificant []compare.GateFailure `json:"not_significant"`
		} `json:"gates"`
	}
	if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.Schema != compare.Schema || len(v.Rows) != 2 || v.Rows[0].Figures[1].Figure != "p99" || !v.Rows[0].Figures[1].TooFewRuns ||
		v.Rows[0].Figures[1].Change == nil || len(v.Rows[0].Figures[1].BaseValues) != 1 ||
		len(v.Gates.Failures) != 3 || len(v.Gates.NotSignificant) != 0 || !v.Gates.Failures[0].TooFewRuns {
		t.Errorf("json: %+v\n%s", v, buf.String())
	}
	if err := WriteComparison(&buf, "csv", c, nil); err == nil {
		t.Error("csv comparison: no error")
	}
}

// TestCompareMismatch: another device, firmware, MTU, GID type, tool and
// tx-depth are footnoted; a test on one side only is listed.
func TestCompareMismatch(t *testing.T) {
	c := compareNamed(reporttest.BaseRuns(), reporttest.OtherDeviceRuns())
	reporttest.Equal(t, "warnings", c.Warnings, []string{
		"tool version differs: base 0.2.0 (9d41e07), new 0.3.0 (5be1c2a)",
		"device differs: base mlx5_0, new mlx5_1",
		"firmware differs: base 20.39.1002, new 22.41.1000",
		"active MTU differs: base 4096, new 1024",
		"GID type differs: base RoCE v2, new IB/RoCE v1",
		"parameter tx-depth differs: base default, new 64",
	})
	if len(c.OnlyBase) != 0 || len(c.OnlyNew) != 1 || c.OnlyNew[0].String() != "read-lat RC 2 B" {
		t.Errorf("only base %v, only new %v", c.OnlyBase, c.OnlyNew)
	}
	var buf bytes.Buffer
	if err := WriteComparison(&buf, FormatTable, c, nil); err != nil {
		t.Fatal(err)
	}
	reporttest.CheckGolden(t, "../testdata", "compare-mismatch.txt", buf.Bytes())
	for _, s := range []string{"warning: device differs: base mlx5_0, new mlx5_1", "only in new: read-lat RC 2 B"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("table lacks %q", s)
		}
	}
	// Remote hosts, kernel, CPU, loopback against two hosts.
	b, n := reporttest.BaseRuns(), reporttest.BaseRuns()
	n.Hosts.Local.Kernel = "6.13.0"
	n.Hosts.Remote = &report.Host{Hostname: "node-b"}
	n.Params.Extra = map[string]string{"tcp-port": "19515"}
	reporttest.Equal(t, "more warnings", compare.Compare(b, n, compare.Options{}).Warnings, []string{
		"setup differs: base loopback on one host, new between two hosts",
		"kernel differs: base 6.12.9, new 6.13.0",
		"parameter tcp-port differs: base default, new 19515",
	})
}

// TestCompareNoise: overlapping distributions: every delta is "~" and a
// 5% gate passes.
func TestCompareNoise(t *testing.T) {
	c := compareNamed(reporttest.BaseRuns(), reporttest.NoiseRuns())
	reporttest.Equal(t, "deltas", deltas(c), []string{"write-lat p50 +0.00% ~", "write-lat p99 +0.00% ~", "write-bw bw +0.00% ~", "write-bw msg-rate +0.00% ~"})
	for _, r := range c.Rows {
		for _, f := range r.Figures {
			if f.Significant || f.TooFewRuns || f.P == nil || *f.P <= 0.05 {
				t.Errorf("%s %s: %+v", r.Test, f.Figure, f)
			}
		}
	}
	res := c.CheckGates(compare.Gates{compare.MaxRegressionGate("--max-regression 5%", 0.05)})
	if res.Failed() || len(res.NotSignificant) != 0 {
		t.Errorf("gates on noise: %+v", res)
	}
	var buf bytes.Buffer
	if err := WriteComparison(&buf, FormatTable, c, res); err != nil {
		t.Fatal(err)
	}
	reporttest.CheckGolden(t, "../testdata", "compare-noise.txt", buf.Bytes())
	if !strings.Contains(buf.String(), "gates: --max-regression 5%: passed\n") {
		t.Errorf("no verdict:\n%s", buf.String())
	}
}

// TestCompareRegression: 5 runs each, p99 +50% and bandwidth -10% beyond
// any doubt; p50 the same noise.
func TestCompareRegression(t *testing.T) {
	c := compareNamed(reporttest.BaseRuns(), reporttest.RegressedRuns())
	reporttest.Equal(t, "deltas", deltas(c), []string{
		"write-lat p50 +0.00% ~", "write-lat p99 +50.38%", "write-bw bw -10.05%", "write-bw msg-rate -10.05%",
	})
	p99 := c.Rows[0].Figures[1]
	// Every new run is above every base run: the most extreme outcome of
	// 5 against 5, p = 2/C(10,5).
	if !p99.Significant || p99.P == nil || math.Abs(*p99.P-2.0/252) > 1e-9 || p99.TooFewRuns || p99.Test() != "p=0.008 n=5" {
		t.Errorf("p99: %+v, test %q", p99, p99.Test())
	}
	if p99.Base.Median != 1310 || p99.New.Median != 1970 || len(p99.BaseValues) != 5 {
		t.Errorf("p99 medians %v %v", p99.Base.Median, p99.New.Median)
	}
	if len(c.Warnings) != 0 || len(c.OnlyBase)+len(c.OnlyNew) != 0 {
		t.Errorf("warnings %q, only %v %v", c.Warnings, c.OnlyBase, c.OnlyNew)
	}

	gates := compare.Gates{compare.MaxRegressionGate("--max-regression 5%", 0.05)}
	reporttest.Equal(t, "--max-regression 5%", messages(c.Gate(gates)), []string{
		"gate failed: write-lat RC 2 B: p99 +50.38% > 5% (--max-regression 5%)",
		"gate failed: write-bw RC 65536 B: bw -10.05% < -5% (--max-regression 5%)",
		"gate failed: write-bw RC 65536 B: msg-rate -10.05% < -5% (--max-regression 5%)",
	})
	reporttest.Equal(t, "per-figure gates", messages(c.Gate(compare.Gates{
		compare.MaxRegressionGate("--max-p50-regression 1%", 0.01, report.FigP50),
		compare.MaxRegressionGate("--max-p99-regression 60%", 0.60, report.FigP99),
		compare.MaxRegressionGate("--max-bw-regression 10%", 0.10, report.FigGbps),
		compare.MinRatioGate("--min-bw-ratio 0.95", 0.95, report.FigGbps),
	})), []string{
		"gate failed: write-bw RC 65536 B: bw -10.05% < -10% (--max-bw-regression 10%)",
		"gate failed: write-bw RC 65536 B: bw ratio 0.899 < 0.95 (--min-bw-ratio 0.95)",
	})
	if got := c.Gate(compare.Gates{compare.MinRatioGate("--min-bw-ratio 0.85", 0.85, report.FigGbps)}); len(got) != 0 {
		t.Errorf("ratio 0.899 >= 0.85 failed: %v", got)
	}

	for _, f := range []string{FormatTable, FormatMarkdown, FormatJSON} {
		var buf bytes.Buffer
		if err := WriteComparison(&buf, f, c, c.CheckGates(gates)); err != nil {
			t.Fatal(err)
		}
		reporttest.CheckGolden(t, "../testdata", "compare-regression."+formatExt[f], buf.Bytes())
	}
}

// TestCompareTooFewRuns: one run on each side: the same +50% p99 is not
// tested, a footnote says why, its delta is shown all the same, and the
// gates judge the change alone (they fail, saying so); with significance
// required they do not.
func TestCompareTooFewRuns(t *testing.T) {
	c := compareNamed(reporttest.SingleBase(), reporttest.SingleNew())
	reporttest.Equal(t, "deltas", deltas(c), []string{"write-lat p50 +0.96% ~", "write-lat p99 +50.38% ~", "write-bw bw -10.05% ~", "write-bw msg-rate -10.05% ~"})
	p99 := c.Rows[0].Figures[1]
	if !p99.TooFewRuns || p99.Significant || p99.Change == nil || math.Abs(*p99.Change-(1.97/1.31-1)) > 1e-12 || p99.Test() != "n=1 untested" {
		t.Errorf("p99: %+v", p99)
	}
	gates := compare.Gates{compare.MaxRegressionGate("--max-regression 5%", 0.05)}
	res := c.CheckGates(gates)
	if !res.Failed() || len(res.NotSignificant) != 0 || len(res.Incomplete) != 0 {
		t.Errorf("gates on untested changes: %+v", res)
	}
	reporttest.Equal(t, "judged alone", messages(res.Failures), []string{
		"gate failed: write-lat RC 2 B: p99 +50.38% > 5% (--max-regression 5%): too few runs to test its significance (n=1; need at least 4 on each side): judged on the change alone",
		"gate failed: write-bw RC 65536 B: bw -10.05% < -5% (--max-regression 5%): too few runs to test its significance (n=1; need at least 4 on each side): judged on the change alone",
		"gate failed: write-bw RC 65536 B: msg-rate -10.05% < -5% (--max-regression 5%): too few runs to test its significance (n=1; need at least 4 on each side): judged on the change alone",
	})
	var buf bytes.Buffer
	if err := WriteComparison(&buf, FormatTable, c, res); err != nil {
		t.Fatal(err)
	}
	reporttest.CheckGolden(t, "../testdata", "compare-single.txt", buf.Bytes())
	if !strings.Contains(buf.String(), "need at least 4 runs on each side for a significance test") {
		t.Errorf("no footnote:\n%s", buf.String())
	}

	strict := c.CheckGatesWith(gates, compare.GateOptions{RequireSignificance: true})
	if strict.Failed() {
		t.Errorf("significance required: a gate failed on untested changes: %v", strict.Failures)
	}
	reporttest.Equal(t, "not significant", messages(strict.NotSignificant), []string{
		"gate not failed: write-lat RC 2 B: p99 +50.38% > 5% (--max-regression 5%): not significant, too few runs (n=1; need at least 4 on each side)",
		"gate not failed: write-bw RC 65536 B: bw -10.05% < -5% (--max-regression 5%): not significant, too few runs (n=1; need at least 4 on each side)",
		"gate not failed: write-bw RC 65536 B: msg-rate -10.05% < -5% (--max-regression 5%): not significant, too few runs (n=1; need at least 4 on each side)",
	})
}
