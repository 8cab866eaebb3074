package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const header = "test\tsize\ttopology\tpair\tpos\ttool\tstatus\tmin_us\tp50_us\tmibps\tmpps\tsettings\tflags\tlog\n"

// ratios of write-lat min in pairs 1..9, in run order; sorted they are
// 0.95 0.97 0.99 1.00 1.01 1.02 1.03 1.05 1.10, median 1.01.
var minRatios = []float64{1.03, 0.95, 1.10, 1.01, 0.99, 1.05, 0.97, 1.02, 1.00}

// fixture writes a results.tsv: write-lat 2 B (loopback) with the ratios
// above and p50 equal in every pair, write-bw 65536 B (serve) with
// bandwidth ratios near 0.90 and unmatched CQ moderation, and read-lat
// with two pairs only. Pair 0 carries wild figures that must be ignored.
func fixture() string {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("# comment lines are skipped\n")
	latSet := "n=1000,warmup=0,tx_depth=1,inline=0,mtu=1024,qps=1"
	fmt.Fprintf(&b, "write-lat\t2\tloopback\t0\t1\tperftest\tok\t1\t1\t-\t-\t%s\t-\tp0\n", latSet)
	fmt.Fprintf(&b, "write-lat\t2\tloopback\t0\t2\trdmabench\tok\t900\t900\t-\t-\tn=1000,warmup=100\t-\tr0\n")
	for i, r := range minRatios {
		pair := i + 1
		pt := fmt.Sprintf("write-lat\t2\tloopback\t%d\t%%d\tperftest\tok\t100\t20\t-\t-\t%s\t-\tp\n", pair, latSet)
		rb := fmt.Sprintf("write-lat\t2\tloopback\t%d\t%%d\trdmabench\tok\t%g\t20\t-\t-\t%s\t-I 0 --warmup 0\tr\n", pair, 100*r, latSet)
		if pair%2 == 1 {
			fmt.Fprintf(&b, pt, 1)
			fmt.Fprintf(&b, rb, 2)
		} else {
			fmt.Fprintf(&b, rb, 1)
			fmt.Fprintf(&b, pt, 2)
		}
	}
	for pair := 1; pair <= 9; pair++ {
		fmt.Fprintf(&b, "write-bw\t65536\tserve\t%d\t1\tperftest\tok\t-\t-\t50\t0.0008\tn=500,cq_mod=1\t-\tp\n", pair)
		fmt.Fprintf(&b, "write-bw\t65536\tserve\t%d\t2\trdmabench\tok\t-\t-\t%g\t0.00072\tn=500,cq_mod=100\t\tr\n", pair, 45+0.1*float64(pair))
	}
	b.WriteString("read-lat\t2\tloopback\t1\t1\tperftest\tok\t30\t50\t-\t-\tn=1000\t-\tp\n")
	b.WriteString("read-lat\t2\tloopback\t1\t2\trdmabench\tok\t31\t51\t-\t-\tn=1000\t\tr\n")
	b.WriteString("read-lat\t2\tloopback\t2\t1\trdmabench\tfail\t-\t-\t-\t-\t-\t\tr\n")
	b.WriteString("read-lat\t2\tloopback\t2\t2\tperftest\tok\t30\t50\t-\t-\tn=1000\t-\tp\n")
	return b.String()
}

func TestSummarizeRatios(t *testing.T) {
	runs, err := parseRuns(strings.NewReader(fixture()))
	if err != nil {
		t.Fatal(err)
	}
	rows := summarize(runs)
	if len(rows) != 3 {
		t.Fatalf("got %d rows, want 3", len(rows))
	}

	lat := rows[0]
	if lat.Test != "write-lat" || lat.Size != 2 || lat.Topology != "loopback" || lat.Pairs != 9 || lat.Complete != 9 {
		t.Fatalf("first row: %+v", lat.rowKey)
	}
	mn := lat.Figs[figMin].Ratio
	if mn.N != 9 || mn.Center != 1.01 {
		t.Errorf("min ratio: n %d median %v, want 9 and 1.01", mn.N, mn.Center)
	}
	if !mn.Bounded() || mn.Lo > mn.Center || mn.Hi < mn.Center || mn.Lo >= mn.Hi {
		t.Errorf("min ratio interval [%v, %v] does not bracket the median %v", mn.Lo, mn.Hi, mn.Center)
	}
	// Distribution-free: the bounds are order statistics of the ratios.
	if !contains(minRatios, mn.Lo) || !contains(minRatios, mn.Hi) {
		t.Errorf("min ratio interval [%v, %v]: bounds are not sample values", mn.Lo, mn.Hi)
	}
	if !mn.Agrees() {
		t.Errorf("min ratio [%v, %v] contains 1 but is not marked as agreeing", mn.Lo, mn.Hi)
	}
	if lat.Figs[figMin].PT != 100 || lat.Figs[figMin].RB != 101 {
		t.Errorf("medians of the figures: perftest %v rdmabench %v, want 100 and 101", lat.Figs[figMin].PT, lat.Figs[figMin].RB)
	}
	p50 := lat.Figs[figP50].Ratio
	if p50.Center != 1 || p50.Lo != 1 || p50.Hi != 1 || !p50.Agrees() {
		t.Errorf("p50 ratio %v [%v, %v], want 1 [1, 1] agreeing", p50.Center, p50.Lo, p50.Hi)
	}
	if len(lat.Mismatch) != 0 {
		t.Errorf("write-lat settings: mismatch %q, want none", lat.Mismatch)
	}
	if lat.Flags != "-I 0 --warmup 0" {
		t.Errorf("flags %q", lat.Flags)
	}

	bw := rows[1]
	r := bw.Figs[figMiB].Ratio
	if r.Center != 0.91 || r.Hi >= 1 || r.Agrees() {
		t.Errorf("bandwidth ratio %v [%v, %v]: want median 0.91, an interval below 1, not agreeing", r.Center, r.Lo, r.Hi)
	}
	if m := bw.Figs[figMsg].Ratio; math.Abs(m.Center-0.9) > 1e-12 || m.Hi-m.Lo > 1e-12 {
		t.Errorf("message rate ratio %v [%v, %v], want 0.9", m.Center, m.Lo, m.Hi)
	}
	if len(bw.Mismatch) != 1 || bw.Mismatch[0] != "CQ mod 1 / 100" {
		t.Errorf("write-bw mismatch %q, want [CQ mod 1 / 100]", bw.Mismatch)
	}

	rd := rows[2]
	if rd.Pairs != 2 || rd.Complete != 1 || rd.Failed != 1 {
		t.Errorf("read-lat: pairs %d complete %d failed %d, want 2 1 1", rd.Pairs, rd.Complete, rd.Failed)
	}
	if rd.Figs[figMin].Ratio.Bounded() {
		t.Errorf("read-lat: an interval from one pair")
	}
}

func TestAgrees(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   bool
	}{
		{0.97, 1.03, true},   // contains 1
		{1.001, 1.019, true}, // within the band
		{0.981, 0.995, true},
		{0.97, 0.99, false},
		{1.01, 1.03, false},
		{math.Inf(-1), math.Inf(1), false},
	} {
		if got := (stat{N: 9, Center: (c.lo + c.hi) / 2, Lo: c.lo, Hi: c.hi}).Agrees(); got != c.want {
			t.Errorf("[%v, %v]: agrees %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
}

func TestRender(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.tsv")
	if err := os.WriteFile(path, []byte(fixture()), 0o666); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{path}, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"| write-lat | 2 | loopback | 9 | 1.010 [",
		"| 1.000 [1.000, 1.000] ✓ | 100.00 | 101.00 | 20.00 | 20.00 | matched |",
		"| write-bw | 65536 | serve | 9 | 0.910 [",
		"**not matched**: CQ mod 1 / 100",
		"| read-lat | 2 | loopback | 1 of 2 (1 run failed) | 1.033 (too few pairs for an interval)",
		"| write-lat | 2 | loopback | 1000 / 1000 | 0 / 0 |",
		"`-I 0 --warmup 0`",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

func TestTime(t *testing.T) {
	tsv := "pair\tpos\ttool\tstatus\twall_s\tlog\n" +
		"0\t1\trdmabench\tok\t99\tw\n0\t2\tperftest\tok\t1\tw\n"
	// ratios 0.5, 0.6, ..., 1.0 over six pairs; median 0.75.
	for pair := 1; pair <= 6; pair++ {
		rb := 10 * (0.4 + 0.1*float64(pair))
		tsv += fmt.Sprintf("%d\t1\tperftest\tok\t10\tp\n%d\t2\trdmabench\tok\t%g\tr\n", pair, pair, rb)
	}
	runs, err := parseTimes(strings.NewReader(tsv))
	if err != nil {
		t.Fatal(err)
	}
	s := summarizeTime(runs)
	if s.Complete != 6 || math.Abs(s.Ratio.Center-0.75) > 1e-9 || s.PT != 10 {
		t.Errorf("time: %+v, want 6 pairs, ratio 0.75, perftest 10 s", s)
	}
	if !s.Ratio.Bounded() || s.Ratio.Lo > s.Ratio.Center || s.Ratio.Hi < s.Ratio.Center {
		t.Errorf("time ratio interval [%v, %v] does not bracket %v", s.Ratio.Lo, s.Ratio.Hi, s.Ratio.Center)
	}
	var out bytes.Buffer
	if err := renderTime(&out, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| 6 | 7.50 | 10.00 | 0.750 [") {
		t.Errorf("time table:\n%s", out.String())
	}
}

func TestParseErrors(t *testing.T) {
	for name, in := range map[string]string{
		"no header":  "write-lat\t2\tloopback\t1\t1\tperftest\tok\t1\t1\t-\t-\t-\t-\tp\n",
		"bad header": "test\tsize\n",
		"fields":     header + "write-lat\t2\n",
		"status":     header + "write-lat\t2\tloopback\t1\t1\tperftest\tmaybe\t1\t1\t-\t-\t-\t-\tp\n",
		"tool":       header + "write-lat\t2\tloopback\t1\t1\tqperf\tok\t1\t1\t-\t-\t-\t-\tp\n",
		"figure":     header + "write-lat\t2\tloopback\t1\t1\tperftest\tok\tfast\t1\t-\t-\t-\t-\tp\n",
	} {
		if _, err := parseRuns(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := run(nil, &bytes.Buffer{}); err == nil {
		t.Error("no file: no error")
	}
}

func contains(list []float64, v float64) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
