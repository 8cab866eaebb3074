package plot

import (
	"bytes"
	"fmt"
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"math"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/compare"
)

// plotPages are the pages the golden and browser tests render: each a set
// of fixture documents, as `rdmabench plot FILE...` reads them.
var plotPages = []struct {
	name  string
	files []string
}{
	// Measured: two documents of five runs each, with real histograms.
	{"examples", []string{"../../../docs/examples/base.json", "../../../docs/examples/new.json"}},
	// Two documents overlaid: every kind against message size, and a
	// spectrum per test and size.
	{"sweep", []string{"sweep.json", "sweep-mtu1024.json"}},
	// Duration mode: intervals; no histograms (a note says so).
	{"duration", []string{"duration.json"}},
	// Repeated runs without histograms and at one size: nothing to plot.
	{"repeat", []string{"repeat.json"}},
	// A mesh of four ranks: its matrices as heatmaps, one link failed,
	// one an outlier.
	{"mesh", []string{"mesh.json"}},
	// A mesh overlaid with a pair's document: the heatmaps of the one,
	// the charts of the other.
	{"mesh-overlay", []string{"mesh.json", "duration.json"}},
	// A load pattern mesh (--pattern incast:2) of three steps: each
	// receiver's aggregate, share and Jain's index, the probe's latency
	// per step; one flow failed, one probe lost.
	{"pattern", []string{"pattern.json"}},
}

func plotSources(t *testing.T, files []string) []report.Source {
	var srcs []report.Source
	for _, f := range files {
		srcs = append(srcs, reporttest.ReadFixture(t, f))
	}
	return srcs
}

func renderPlot(t *testing.T, srcs []report.Source) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, srcs); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestPlotGolden: the page of each fixture set (the measured examples are
// large and checked only in the browser).
func TestPlotGolden(t *testing.T) {
	for _, pg := range plotPages {
		if pg.name == "examples" {
			continue
		}
		t.Run(pg.name, func(t *testing.T) {
			reporttest.CheckGolden(t, "testdata", "plot-"+pg.name+".html", renderPlot(t, plotSources(t, pg.files)))
		})
	}
}

func TestWritePlotErrors(t *testing.T) {
	if err := Write(&bytes.Buffer{}, nil); err == nil {
		t.Error("no documents: no error")
	}
	if err := Write(&bytes.Buffer{}, []report.Source{{Name: "x.json"}}); err == nil || !strings.Contains(err.Error(), "x.json") {
		t.Errorf("nil document: %v", err)
	}
	// A corrupt histogram is listed on the page, not fatal.
	doc := reporttest.ReadFixture(t, "sweep.json").Doc
	doc.Results[0].Latency.Histogram = "HISTFAAAnot-base64"
	page := string(renderPlot(t, []report.Source{{Name: "bad.json", Doc: doc}}))
	if !strings.Contains(page, "bad.json: write-lat RC 2 B: report: decode histogram") {
		t.Errorf("corrupt histogram not listed:\n%s", page)
	}
}

// TestSpectrumPoints: the spectrum rises from the minimum to the maximum
// on a strictly increasing x, ends at x = the sample count, and passes
// through the document's own percentiles.
func TestSpectrumPoints(t *testing.T) {
	for _, r := range reporttest.ReadFixture(t, "sweep.json").Doc.Results {
		l := r.Latency
		if l == nil {
			continue
		}
		h, err := l.DecodeHistogram()
		if err != nil {
			t.Fatal(err)
		}
		pts := spectrumPoints(h, l)
		if len(pts) < 10 {
			t.Fatalf("%s: %d points", r.Key(), len(pts))
		}
		for i := 1; i < len(pts); i++ {
			if pts[i].x <= pts[i-1].x || pts[i].y < pts[i-1].y {
				t.Fatalf("%s: point %d %v after %v", r.Key(), i, pts[i], pts[i-1])
			}
		}
		first, last := pts[0], pts[len(pts)-1]
		if first.x != 1 || first.y != l.MinNs/1e3 || last.x != float64(l.Count) || last.y != l.MaxNs/1e3 {
			t.Errorf("%s: spectrum from %v to %v; min %v max %v count %d", r.Key(), first, last, l.MinNs, l.MaxNs, l.Count)
		}
		// The point at x = 100 (p99) is the document's p99.
		for _, p := range pts {
			if math.Abs(p.x-100) < 1e-9 && p.y != l.P99Ns/1e3 {
				t.Errorf("%s: p99 point %v, document p99 %v ns", r.Key(), p, l.P99Ns)
			}
		}
	}
}

func TestPlotAxes(t *testing.T) {
	for d, want := range []string{"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"} {
		if got := percentileLabel(d); got != want {
			t.Errorf("percentileLabel(%d) = %q, want %q", d, got, want)
		}
	}
	for n, want := range map[int]string{2: "2 B", 1024: "1 KiB", 1536: "1536 B", 65536: "64 KiB", 8 << 20: "8 MiB", 1 << 30: "1 GiB"} {
		if got := sizeLabel(n); got != want {
			t.Errorf("sizeLabel(%d) = %q, want %q", n, got, want)
		}
	}
	for v, want := range map[float64]string{0.5: "0.5", 200: "200", 5000: "5000", 20000: "20k", 1e6: "1M", 2.5e6: "2.5M"} {
		if got := tickNum(v); got != want {
			t.Errorf("tickNum(%v) = %q, want %q", v, got, want)
		}
	}
	a := linearAxis("", 98.4)
	if a.hi != 100 || len(a.ticks) != 6 || a.ticks[1].label != "20" {
		t.Errorf("linear axis to 98.4: %+v", a)
	}
	if a := linearAxis("", 0); a.hi != 1 {
		t.Errorf("linear axis of nothing: %+v", a)
	}
	l := logAxis("", 0.98, 45.3)
	if l.lo != 0.1 || l.hi != 100 || l.ticks[0].label != "0.1" || l.ticks[len(l.ticks)-1].label != "100" {
		t.Errorf("log axis 0.98..45.3: %+v", l)
	}
	var all []int
	for s := 2; s <= 8<<20; s *= 2 {
		all = append(all, s)
	}
	if s := sizeAxis(all); s.lo != 2 || s.hi != 8<<20 || len(s.ticks) < 8 || len(s.ticks) > 12 || s.ticks[len(s.ticks)-1].label != "4 MiB" {
		t.Errorf("size axis of -a: %+v", s)
	}
	if s := sizeAxis([]int{65536, 2, 64, 64}); len(s.ticks) != 3 || s.ticks[0].label != "2 B" || s.ticks[2].label != "64 KiB" {
		t.Errorf("size axis of three sizes: %+v", s.ticks)
	}
	for _, v := range []float64{-1, 0, 1e-9, 1, 1e12} {
		if p := l.pos(v); p < 0 || p > 1 || math.IsNaN(p) {
			t.Errorf("pos(%v) = %v", v, p)
		}
	}
}

// TestPlotSingleSizeBandwidth: the measured pair's bandwidth tests, each
// run at one size, are on the charts per test, a dot per file for each
// figure compare reads, with the medians compare compares (write-bw
// 78.8% down); a failed test is listed with its error.
func TestPlotSingleSizeBandwidth(t *testing.T) {
	srcs := plotSources(t, plotPages[0].files)
	page := string(renderPlot(t, srcs))
	c := compare.Compare(srcs[0].Doc, srcs[1].Doc, compare.Options{})
	for _, kind := range []string{BandwidthByTest, MsgRateByTest} {
		start := strings.Index(page, `<figure class="chart" data-kind="`+kind+`"`)
		if start < 0 {
			t.Fatalf("no %s chart", kind)
		}
		chart := page[start : start+strings.Index(page[start:], "</figure>")]
		for _, src := range []string{"base.json", "new.json"} {
			for _, k := range []string{"write-bw/RC/65536", "read-bw/RC/65536", "send-bw/RC/65536", "atomic-bw/RC/8", "tcp-bw/TCP/65536"} {
				if !strings.Contains(chart, `data-key="`+k+`"`) || !strings.Contains(chart, `data-source="`+src+`"`) {
					t.Errorf("%s: no dot of %s for %s", kind, src, k)
				}
			}
		}
	}
	for _, row := range c.Rows {
		if row.Test != "write-bw" {
			continue
		}
		fc := row.Figures[0]
		for _, s := range []struct {
			name string
			v    float64
		}{{"base.json", fc.Base.Median}, {"new.json", fc.New.Median}} {
			want := fmt.Sprintf("%s: write-bw RC 65536 B: Gbit/s %s Gbit/s (median of 5 runs", s.name, smallNum(s.v))
			if !strings.Contains(page, want) {
				t.Errorf("no dot %q", want)
			}
		}
		if fc.Delta() != "-78.82%" {
			t.Errorf("compare: write-bw %s", fc.Delta())
		}
	}
	doc := reporttest.ReadFixture(t, "sweep.json").Doc
	doc.Results[len(doc.Results)-1].Error = "IBV_WC_RETRY_EXC_ERR"
	page = string(renderPlot(t, []report.Source{{Name: "bad.json", Doc: doc}}))
	if !strings.Contains(page, "<li>bad.json: tcp-bw TCP 262144 B: the test failed: IBV_WC_RETRY_EXC_ERR</li>") {
		t.Error("a failed test is not listed under Not plotted")
	}
}
