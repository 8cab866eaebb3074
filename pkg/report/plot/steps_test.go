package plot

import (
	"html"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// stepDotOf is one dot of a chart per step, read from the page.
type stepDotOf struct {
	source, figure, key, title string
	cy                         float64
}

// stepChart reads the chart of kind from a page: its attributes and
// dots; ok is false when the page has no such chart.
func stepChart(t *testing.T, page, kind string) (attrs map[string]string, dots []stepDotOf, ok bool) {
	t.Helper()
	start := strings.Index(page, `<figure class="chart" data-kind="`+kind+`"`)
	if start < 0 {
		return nil, nil, false
	}
	fig := page[start : start+strings.Index(page[start:], "</figure>")]
	head, _, _ := strings.Cut(fig, ">")
	attrs = map[string]string{}
	for _, a := range reAttr.FindAllStringSubmatch(head, -1) {
		attrs[a[1]] = html.UnescapeString(a[2])
	}
	for _, g := range strings.Split(fig, `<g class="series"`)[1:] {
		g, _, _ = strings.Cut(g, "</g>")
		ghead, _, _ := strings.Cut(g, ">")
		ga := map[string]string{}
		for _, a := range reAttr.FindAllStringSubmatch(ghead, -1) {
			ga[a[1]] = html.UnescapeString(a[2])
		}
		for _, c := range strings.Split(g, `<circle class="dot"`)[1:] {
			attr := func(name string) string {
				_, v, _ := strings.Cut(c, " "+name+`="`)
				v, _, _ = strings.Cut(v, `"`)
				return html.UnescapeString(v)
			}
			cy, err := strconv.ParseFloat(attr("cy"), 64)
			if err != nil {
				t.Fatalf("%s: dot %q: %v", kind, c, err)
			}
			_, title, _ := strings.Cut(c, "<title>")
			title, _, _ = strings.Cut(title, "</title>")
			dots = append(dots, stepDotOf{source: ga["source"], figure: ga["figure"], key: attr("data-key"), title: html.UnescapeString(title), cy: cy})
		}
	}
	return attrs, dots, true
}

func dotKeys(dots []stepDotOf) []string {
	var out []string
	for _, d := range dots {
		out = append(out, d.figure+" "+d.key)
	}
	return out
}

func dotOf(t *testing.T, dots []stepDotOf, figure, key string) stepDotOf {
	t.Helper()
	for _, d := range dots {
		if d.figure == figure && d.key == key {
			return d
		}
	}
	t.Fatalf("no dot %s %s among %q", figure, key, dotKeys(dots))
	return stepDotOf{}
}

// TestPlotPatternSteps: a load pattern mesh is drawn as its steps: each
// receiver's aggregate (ranks and hosts), its share of the link, Jain's
// index, the probe's p50 and p99, one dot per step and receiver with its
// figures in the tooltip; a failed flow and a lost probe are listed, and
// no empty matrix is.
func TestPlotPatternSteps(t *testing.T) {
	doc := reporttest.PatternDoc()
	page := string(renderPlot(t, []report.Source{{Name: "incast.json", Doc: doc}}))
	if strings.Contains(page, "no matrix to draw") || strings.Contains(page, "Nothing to plot") {
		t.Error("a pattern mesh is said to have nothing to plot")
	}
	wantKeys := map[string][]string{
		StepBandwidth: {"aggregate 1/rank 1", "aggregate 2/rank 3", "aggregate 3/rank 0", "aggregate 3/rank 1", "aggregate 3/rank 2",
			"aggregate 3/rank 3", "aggregate 3/node0", "aggregate 3/node1"},
		StepShare: {"share 1/rank 1", "share 2/rank 3", "share 3/rank 0", "share 3/rank 1", "share 3/rank 2", "share 3/rank 3",
			"share 3/node0", "share 3/node1"},
		StepFairness: {"jain 1/rank 1", "jain 2/rank 3", "jain 3/rank 0", "jain 3/rank 1", "jain 3/rank 2", "jain 3/rank 3",
			"jain 3/node0", "jain 3/node1"},
		StepLatency: {"p50 1/probe 0 -> 1", "p50 3/probe 2 -> 3", "p99 1/probe 0 -> 1", "p99 3/probe 2 -> 3"},
	}
	charts := map[string][]stepDotOf{}
	for kind, want := range wantKeys {
		attrs, dots, ok := stepChart(t, page, kind)
		if !ok {
			t.Fatalf("no %s chart", kind)
		}
		if attrs["pattern"] != "incast:2" || attrs["test"] != "write-bw" {
			t.Errorf("%s: attributes %v", kind, attrs)
		}
		reporttest.Equal(t, kind, dotKeys(dots), want)
		charts[kind] = dots
	}
	bw := charts[StepBandwidth]
	for _, c := range []struct{ figure, key, title string }{
		{"aggregate", "1/rank 1", "receivers: step 1, rank 1: aggregate 90 Gbit/s over 2 flows, 90.0% of its 100 Gbit/s link, Jain 0.988"},
		{"aggregate", "2/rank 3", "receivers: step 2, rank 3: aggregate 30 Gbit/s over 1 of 2 flows, 30.0% of its 100 Gbit/s link"},
		{"aggregate", "3/node0", "hosts: step 3, node0: aggregate 105 Gbit/s over 6 flows, 52.5% of its 200 Gbit/s link"},
	} {
		if d := dotOf(t, bw, c.figure, c.key); !strings.HasPrefix(d.title, c.title) {
			t.Errorf("dot %s: %q, want %q...", c.key, d.title, c.title)
		}
	}
	// Higher is higher: 90 Gbit/s above 30, a share of 90% above 30%,
	// rank 0's Jain (one flow at a quarter of the others) below rank 1's
	// (all equal), p99 above p50.
	for _, c := range []struct {
		kind, fig, hi, lo string
	}{
		{StepBandwidth, "aggregate", "1/rank 1", "2/rank 3"},
		{StepShare, "share", "1/rank 1", "2/rank 3"},
		{StepFairness, "jain", "3/rank 1", "3/rank 0"},
	} {
		if hi, lo := dotOf(t, charts[c.kind], c.fig, c.hi), dotOf(t, charts[c.kind], c.fig, c.lo); hi.cy >= lo.cy {
			t.Errorf("%s: %s (cy %v) not above %s (cy %v)", c.kind, c.hi, hi.cy, c.lo, lo.cy)
		}
	}
	p50, p99 := dotOf(t, charts[StepLatency], "p50", "1/probe 0 -> 1"), dotOf(t, charts[StepLatency], "p99", "1/probe 0 -> 1")
	if p99.cy >= p50.cy || !strings.Contains(p50.title, "step 1, write-lat 0 -> 1 under the load: p50 2 µs") ||
		!strings.Contains(p99.title, "p99 5 µs") {
		t.Errorf("probe of step 1: p50 %+v, p99 %+v", p50, p99)
	}
	for _, want := range []string{
		"<li>incast.json: step 2: 1 of 2 flows failed: 1 -&gt; 3: IBV_WC_RETRY_EXC_ERR</li>",
		"<li>incast.json: step 2: the probe 0 -&gt; 3: rank 3 was lost</li>",
		`<text x="`, `">step 1<tspan`, `into rank 1</tspan>`, `4 receivers</tspan>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page has no %q", want)
		}
	}
}

// TestPlotPatternOverlay: two pattern meshes are overlaid step by step,
// a dot per source; beside a pair mesh, the heatmaps of the one and the
// steps of the other; over TCP (no nominal rate) there is no share chart.
func TestPlotPatternOverlay(t *testing.T) {
	base, next := reporttest.PatternDoc(), reporttest.PatternDoc()
	for i := range next.Mesh.Steps {
		for j := range next.Mesh.Steps[i].Receivers {
			rc := &next.Mesh.Steps[i].Receivers[j]
			rc.AggregateGbps /= 2
			rc.Share, rc.LinkGbps, rc.NoShare = nil, 0, "tcp-bw: TCP has no nominal rate of its own"
		}
		next.Mesh.Steps[i].Hosts = nil
	}
	page := string(renderPlot(t, []report.Source{{Name: "base.json", Doc: base}, {Name: "new.json", Doc: next}}))
	_, dots, _ := stepChart(t, page, StepBandwidth)
	var got []string
	for _, d := range dots {
		if d.key == "1/rank 1" {
			got = append(got, d.source+" "+d.title)
		}
	}
	reporttest.Equal(t, "step 1 into rank 1", got, []string{
		"base.json base.json receivers: step 1, rank 1: aggregate 90 Gbit/s over 2 flows, 90.0% of its 100 Gbit/s link, Jain 0.988, min/median 0.89, max/median 1.11",
		"new.json new.json receivers: step 1, rank 1: aggregate 45 Gbit/s over 2 flows, Jain 0.988, min/median 0.89, max/median 1.11",
	})
	// One tick a step, whatever the sources that ran it.
	fig := page[strings.Index(page, `<figure class="chart" data-kind="`+StepBandwidth+`"`):]
	fig, _, _ = strings.Cut(fig, "</figure>")
	if n := strings.Count(fig, "into rank 1<"); n != 1 {
		t.Errorf("the tick of step 1 drawn %d times over two sources, want once", n)
	}
	_, share, _ := stepChart(t, page, StepShare)
	for _, d := range share {
		if d.source != "base.json" {
			t.Errorf("a share drawn for new.json, which has none: %+v", d)
		}
	}

	page = string(renderPlot(t, []report.Source{reporttest.ReadFixture(t, "mesh.json"), {Name: "incast.json", Doc: base}}))
	if n := len(heatFigures(t, page)); n != 3 {
		t.Errorf("%d heatmaps of mesh.json beside a pattern, want 3", n)
	}
	if _, _, ok := stepChart(t, page, StepFairness); !ok {
		t.Error("no steps beside a pair mesh")
	}
	tcp := reporttest.PatternDoc()
	tcp.Mesh.Steps = tcp.Mesh.Steps[:1]
	rc := &tcp.Mesh.Steps[0].Receivers[0]
	rc.Share, rc.LinkGbps = nil, 0
	page = string(renderPlot(t, []report.Source{{Name: "tcp.json", Doc: tcp}}))
	if _, _, ok := stepChart(t, page, StepShare); ok {
		t.Error("a share chart without a nominal rate")
	}
	if _, _, ok := stepChart(t, page, StepBandwidth); !ok {
		t.Error("no bandwidth chart without a nominal rate")
	}
}
