package report_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/report"
)

func TestStatisticsThresholds(t *testing.T) {
	if report.MinRunsForTest(0.05) != 4 || report.MinRunsForTest(0.01) != 5 || report.MinRunsForTest(1) != 1 {
		t.Errorf("MinRunsForTest: %d %d %d", report.MinRunsForTest(0.05), report.MinRunsForTest(0.01), report.MinRunsForTest(1))
	}
	if report.MinRunsForInterval != 6 {
		t.Errorf("MinRunsForInterval = %d, want 6 at 95%%", report.MinRunsForInterval)
	}
}

func TestSummarize(t *testing.T) {
	doc := reporttest.RepeatDoc()
	sums := doc.Summarize()
	var keys []string
	for _, s := range sums {
		keys = append(keys, s.Key().String())
	}
	reporttest.Equal(t, "keys", keys, []string{"write-lat RC 2 B", "write-bw RC 65536 B", "send-bw UC 65536 B", "atomic-lat RC 8 B"})
	wl := sums[0]
	if wl.Runs != 6 || wl.Failed != 0 || wl.Latency == nil || wl.Bandwidth != nil || wl.Latency.Basis != report.BasisRTTHalf {
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
	if !doc.Repeated() || doc.Runs() != 6 || reporttest.SuiteDoc().Repeated() || reporttest.SuiteDoc().Runs() != 1 || report.NewDocument().Runs() != 0 {
		t.Error("Repeated/Runs")
	}
	if got := reporttest.SuiteDoc().Summarize(); len(got) != len(reporttest.SuiteDoc().Results) || got[0].Runs != 1 {
		t.Errorf("summaries of one run: %d", len(got))
	}

	// The document's summaries survive JSON.
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, doc); err != nil {
		t.Fatal(err)
	}
	back, err := report.ReadJSON(&buf)
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
		s    report.Spread
		want string
	}{
		{report.Spread{Median: 100, Lo: f(98), Hi: f(101)}, "±2%"},
		{report.Spread{Median: 100}, "±∞"},
		{report.Spread{Median: 0, Lo: f(0), Hi: f(0)}, "±0%"},
		{report.Spread{Median: 1, Lo: f(-1), Hi: f(2)}, "±?"},
	} {
		if got := tc.s.PctRange(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.s, got, tc.want)
		}
	}
	if s := report.SpreadOf(nil); s.N != 0 || s.Bounded() {
		t.Errorf("spread of nothing: %+v", s)
	}
}

// TestSettingsMemory: where the buffers lived is a setting when it is not
// host pages registered with ibv_reg_mr, and compare names a difference.
func TestSettingsMemory(t *testing.T) {
	host := &report.Effective{TxDepth: 128, Memory: &report.Memory{Kind: report.MemHost, PageBytes: 4096, Registration: report.RegMR}}
	huge := &report.Effective{TxDepth: 128, Memory: &report.Memory{Kind: report.MemHugePages, PageBytes: 2 << 20, Pages: 1, Registration: report.RegMR}}
	if s, ok := report.SettingNamed(host, "mem"); ok {
		t.Fatalf("host pages are a setting: %v", s)
	}
	d := report.SettingsDiff(host, huge)
	if len(d) != 1 || d[0] != "mem base -, new hugepages 2 MiB pages, ibv_reg_mr" {
		t.Fatalf("diff %q", d)
	}
	gpu := &report.Memory{Kind: report.MemCUDA, Registration: report.RegDmabufMR, GPU: &report.GPU{Index: 1}}
	if s := gpu.Text(); s != "cuda:1, ibv_reg_dmabuf_mr" {
		t.Fatalf("%q", s)
	}
	odp := &report.Memory{Kind: report.MemHost, Registration: report.RegMR, ODP: true}
	if s := odp.Text(); s != "host, ibv_reg_mr (ODP)" {
		t.Fatalf("%q", s)
	}
}
