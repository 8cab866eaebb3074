package report

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

func compareNamed(base, new *Document) *Comparison {
	return Compare(base, new, CompareOptions{BaseName: "base.json", NewName: "new.json"})
}

// deltas returns "test figure delta" for every figure of c.
func deltas(c *Comparison) []string {
	var s []string
	for _, r := range c.Rows {
		for _, f := range r.Figures {
			s = append(s, r.Test+" "+string(f.Figure)+" "+f.Delta())
		}
	}
	return s
}

func messages(fs []GateFailure) []string {
	s := []string{}
	for _, f := range fs {
		s = append(s, f.String())
	}
	return s
}

func eq(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func TestStatisticsThresholds(t *testing.T) {
	if MinRunsForTest(0.05) != 4 || MinRunsForTest(0.01) != 5 || MinRunsForTest(1) != 1 {
		t.Errorf("MinRunsForTest: %d %d %d", MinRunsForTest(0.05), MinRunsForTest(0.01), MinRunsForTest(1))
	}
	if MinRunsForInterval != 6 {
		t.Errorf("MinRunsForInterval = %d, want 6 at 95%%", MinRunsForInterval)
	}
}

// TestCompareRegression: 5 runs each, p99 +50% and bandwidth -10% beyond
// any doubt; p50 the same noise.
func TestCompareRegression(t *testing.T) {
	c := compareNamed(baseRuns(), regressedRuns())
	eq(t, "deltas", deltas(c), []string{
		"write-lat p50 ~", "write-lat p99 +50.38%", "write-bw bw -10.05%", "write-bw msg-rate -10.05%",
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

	gates := Gates{MaxRegressionGate("--max-regression 5%", 0.05)}
	eq(t, "--max-regression 5%", messages(c.Gate(gates)), []string{
		"gate failed: write-lat RC 2 B: p99 +50.38% > 5% (--max-regression 5%)",
		"gate failed: write-bw RC 65536 B: bw -10.05% < -5% (--max-regression 5%)",
		"gate failed: write-bw RC 65536 B: msg-rate -10.05% < -5% (--max-regression 5%)",
	})
	eq(t, "per-figure gates", messages(c.Gate(Gates{
		MaxRegressionGate("--max-p50-regression 1%", 0.01, FigP50),
		MaxRegressionGate("--max-p99-regression 60%", 0.60, FigP99),
		MaxRegressionGate("--max-bw-regression 10%", 0.10, FigGbps),
		MinRatioGate("--min-bw-ratio 0.95", 0.95, FigGbps),
	})), []string{
		"gate failed: write-bw RC 65536 B: bw -10.05% < -10% (--max-bw-regression 10%)",
		"gate failed: write-bw RC 65536 B: bw ratio 0.899 < 0.95 (--min-bw-ratio 0.95)",
	})
	if got := c.Gate(Gates{MinRatioGate("--min-bw-ratio 0.85", 0.85, FigGbps)}); len(got) != 0 {
		t.Errorf("ratio 0.899 >= 0.85 failed: %v", got)
	}

	for _, f := range []string{FormatTable, FormatMarkdown, FormatJSON} {
		var buf bytes.Buffer
		if err := WriteComparison(&buf, f, c, c.CheckGates(gates)); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "compare-regression."+formatExt[f], buf.Bytes())
	}
}

// TestCompareNoise: overlapping distributions: every delta is "~" and a
// 5% gate passes.
func TestCompareNoise(t *testing.T) {
	c := compareNamed(baseRuns(), noiseRuns())
	eq(t, "deltas", deltas(c), []string{"write-lat p50 ~", "write-lat p99 ~", "write-bw bw ~", "write-bw msg-rate ~"})
	for _, r := range c.Rows {
		for _, f := range r.Figures {
			if f.Significant || f.TooFewRuns || f.P == nil || *f.P <= 0.05 {
				t.Errorf("%s %s: %+v", r.Test, f.Figure, f)
			}
		}
	}
	res := c.CheckGates(Gates{MaxRegressionGate("--max-regression 5%", 0.05)})
	if res.Failed() || len(res.NotSignificant) != 0 {
		t.Errorf("gates on noise: %+v", res)
	}
	var buf bytes.Buffer
	if err := WriteComparison(&buf, FormatTable, c, res); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "compare-noise.txt", buf.Bytes())
	if !strings.Contains(buf.String(), "gates: --max-regression 5%: passed\n") {
		t.Errorf("no verdict:\n%s", buf.String())
	}
}

// TestCompareTooFewRuns: one run on each side: the same +50% p99 is not
// tested, a footnote says why, and gates do not fail on it.
func TestCompareTooFewRuns(t *testing.T) {
	c := compareNamed(singleBase(), singleNew())
	eq(t, "deltas", deltas(c), []string{"write-lat p50 ~", "write-lat p99 ~", "write-bw bw ~", "write-bw msg-rate ~"})
	p99 := c.Rows[0].Figures[1]
	if !p99.TooFewRuns || p99.Significant || p99.Change == nil || math.Abs(*p99.Change-(1.97/1.31-1)) > 1e-12 || p99.Test() != "n=1" {
		t.Errorf("p99: %+v", p99)
	}
	res := c.CheckGates(Gates{MaxRegressionGate("--max-regression 5%", 0.05)})
	if res.Failed() {
		t.Errorf("a gate failed on untested changes: %v", res.Failures)
	}
	eq(t, "not significant", messages(res.NotSignificant), []string{
		"gate not failed: write-lat RC 2 B: p99 +50.38% > 5% (--max-regression 5%): not significant, too few runs (n=1; need at least 4 on each side)",
		"gate not failed: write-bw RC 65536 B: bw -10.05% < -5% (--max-regression 5%): not significant, too few runs (n=1; need at least 4 on each side)",
		"gate not failed: write-bw RC 65536 B: msg-rate -10.05% < -5% (--max-regression 5%): not significant, too few runs (n=1; need at least 4 on each side)",
	})
	var buf bytes.Buffer
	if err := WriteComparison(&buf, FormatTable, c, res); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "compare-single.txt", buf.Bytes())
	if !strings.Contains(buf.String(), "need at least 4 runs on each side for a significance test") {
		t.Errorf("no footnote:\n%s", buf.String())
	}
}

// TestCompareMismatch: another device, firmware, MTU, GID type, tool and
// tx-depth are footnoted; a test on one side only is listed.
func TestCompareMismatch(t *testing.T) {
	c := compareNamed(baseRuns(), otherDeviceRuns())
	eq(t, "warnings", c.Warnings, []string{
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
	checkGolden(t, "compare-mismatch.txt", buf.Bytes())
	for _, s := range []string{"warning: device differs: base mlx5_0, new mlx5_1", "only in new: read-lat RC 2 B"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("table lacks %q", s)
		}
	}
	// Remote hosts, kernel, CPU, loopback against two hosts.
	b, n := baseRuns(), baseRuns()
	n.Hosts.Local.Kernel = "6.13.0"
	n.Hosts.Remote = &Host{Hostname: "node-b"}
	n.Params.Extra = map[string]string{"tcp-port": "19515"}
	eq(t, "more warnings", Compare(b, n, CompareOptions{}).Warnings, []string{
		"setup differs: base loopback on one host, new between two hosts",
		"kernel differs: base 6.12.9, new 6.13.0",
		"parameter tcp-port differs: base default, new 19515",
	})
}

// TestCompareFailedRuns: failed runs are left out and noted; a test that
// failed on one side has no delta.
func TestCompareFailedRuns(t *testing.T) {
	n := regressedRuns()
	n.Results[2].Error = "timeout" // write-lat, run 2
	n.Results[2].Latency = nil
	c := compareNamed(baseRuns(), n)
	row := c.Rows[0]
	if got := row.Figures[1]; len(got.NewValues) != 4 || !got.Significant {
		t.Errorf("p99 with a failed run: %+v", got)
	}
	eq(t, "notes", row.Notes, []string{"new: 1 of 5 runs failed and are left out (timeout)"})

	one := singleNew()
	one.Results[1] = Result{Test: "write-bw", Connection: "RC", Size: 65536, QPs: 4, Error: "RNR retry exceeded"}
	c = compareNamed(singleBase(), one)
	bw := c.Rows[1]
	if bw.Kind != "bandwidth" || bw.Figures[0].Delta() != "-" || bw.Figures[0].Change != nil {
		t.Errorf("failed test: %+v", bw)
	}
	eq(t, "notes", bw.Notes, []string{"new: the test failed: RNR retry exceeded", "QPs differ: base 1, new 4"})
	if fs := c.Gate(Gates{MaxRegressionGate("x", 0)}); len(fs) != 0 {
		t.Errorf("gate on a failed test: %v", fs)
	}
	var buf bytes.Buffer
	if err := WriteComparison(&buf, FormatTable, c, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "write-bw RC 65536 B: new: the test failed: RNR retry exceeded") {
		t.Errorf("table:\n%s", buf.String())
	}
}

func TestCompareJSON(t *testing.T) {
	c := compareNamed(singleBase(), singleNew())
	var buf bytes.Buffer
	if err := WriteComparison(&buf, FormatJSON, c, c.CheckGates(Gates{MaxRegressionGate("--max-regression 5%", 0.05)})); err != nil {
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
			Failures       []GateFailure `json:"failures"`
			NotSignificant []GateFailure `json:"not_significant"`
		} `json:"gates"`
	}
	if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.Schema != CompareSchema || len(v.Rows) != 2 || v.Rows[0].Figures[1].Figure != "p99" || !v.Rows[0].Figures[1].TooFewRuns ||
		v.Rows[0].Figures[1].Change == nil || len(v.Rows[0].Figures[1].BaseValues) != 1 ||
		len(v.Gates.Failures) != 0 || len(v.Gates.NotSignificant) != 3 {
		t.Errorf("json: %+v\n%s", v, buf.String())
	}
	if err := WriteComparison(&buf, "csv", c, nil); err == nil {
		t.Error("csv comparison: no error")
	}
}

func TestSummarize(t *testing.T) {
	doc := repeatDoc()
	sums := Summarize(doc)
	var keys []string
	for _, s := range sums {
		keys = append(keys, s.Key().String())
	}
	eq(t, "keys", keys, []string{"write-lat RC 2 B", "write-bw RC 65536 B", "send-bw UC 65536 B", "atomic-lat RC 8 B"})
	wl := sums[0]
	if wl.Runs != 6 || wl.Failed != 0 || wl.Latency == nil || wl.Bandwidth != nil || wl.Latency.Basis != BasisRTTHalf {
		t.Fatalf("write-lat: %+v", wl)
	}
	// p99 over the runs: 1300 1310 1310 1320 1330 1350: median 1315, and
	// with 6 runs the 95% interval is [min, max] (98.4%).
	p99 := wl.Latency.P99Ns
	if p99.Median != 1315 || !p99.Bounded() || *p99.Lo != 1300 || *p99.Hi != 1350 || p99.N != 6 || p99.Confidence < 0.95 || p99.PctRange() != "±3%" {
		t.Errorf("p99 spread %+v %s", p99, p99.PctRange())
	}
	sb := sums[2]
	if sb.Runs != 5 || sb.Failed != 1 || sb.Bandwidth == nil || sb.Bandwidth.Gbps.N != 4 || sb.Bandwidth.Gbps.Bounded() || sb.Bandwidth.Gbps.PctRange() != "±∞" {
		t.Errorf("send-bw: %+v", sb)
	}
	if al := sums[3]; al.Runs != 1 || al.Latency.P50Ns.Median != 2060 || al.Latency.P50Ns.Bounded() {
		t.Errorf("atomic-lat: %+v", al)
	}
	if !doc.Repeated() || doc.Runs() != 6 || suiteDoc().Repeated() || suiteDoc().Runs() != 1 || NewDocument().Runs() != 0 {
		t.Error("Repeated/Runs")
	}
	if got := Summarize(suiteDoc()); len(got) != len(suiteDoc().Results) || got[0].Runs != 1 {
		t.Errorf("summaries of one run: %d", len(got))
	}

	// The document's summaries survive JSON.
	var buf bytes.Buffer
	if err := WriteJSON(&buf, doc); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Summaries, doc.Summaries) || back.Results[3].Run != 2 {
		t.Errorf("summaries after JSON differ")
	}
}

func TestSpreadPctRange(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		s    Spread
		want string
	}{
		{Spread{Median: 100, Lo: f(98), Hi: f(101)}, "±2%"},
		{Spread{Median: 100}, "±∞"},
		{Spread{Median: 0, Lo: f(0), Hi: f(0)}, "±0%"},
		{Spread{Median: 1, Lo: f(-1), Hi: f(2)}, "±?"},
	} {
		if got := tc.s.PctRange(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.s, got, tc.want)
		}
	}
	if s := SpreadOf(nil); s.N != 0 || s.Bounded() {
		t.Errorf("spread of nothing: %+v", s)
	}
}

// TestSettingsMemory: where the buffers lived is a setting when it is not
// host pages registered with ibv_reg_mr, and compare names a difference.
func TestSettingsMemory(t *testing.T) {
	host := &Effective{TxDepth: 128, Memory: &Memory{Kind: MemHost, PageBytes: 4096, Registration: RegMR}}
	huge := &Effective{TxDepth: 128, Memory: &Memory{Kind: MemHugePages, PageBytes: 2 << 20, Pages: 1, Registration: RegMR}}
	for _, s := range host.settings() {
		if s.name == "mem" {
			t.Fatalf("host pages are a setting: %v", s)
		}
	}
	d := settingsDiff(host, huge)
	if len(d) != 1 || d[0] != "mem base -, new hugepages 2 MiB pages, ibv_reg_mr" {
		t.Fatalf("diff %q", d)
	}
	gpu := &Memory{Kind: MemCUDA, Registration: RegDmabufMR, GPU: &GPU{Index: 1}}
	if s := gpu.Text(); s != "cuda:1, ibv_reg_dmabuf_mr" {
		t.Fatalf("%q", s)
	}
	odp := &Memory{Kind: MemHost, Registration: RegMR, ODP: true}
	if s := odp.Text(); s != "host, ibv_reg_mr (ODP)" {
		t.Fatalf("%q", s)
	}
}
