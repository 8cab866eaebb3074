package plot

import (
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"html"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// heatFigure is what the page says of one heatmap, read from its HTML.
type heatFigure struct {
	attrs   map[string]string
	caption string
	cells   []heatRect
	texts   int // <text> elements among the cells
	legend  string
}

type heatRect struct {
	class, fill, title string
	width              float64
}

var (
	reAttr = regexp.MustCompile(`data-([a-z]+)="([^"]*)"`)
)

// heatFigures reads the heatmaps of a page (with string cuts: regular
// expressions are slow on the megabytes of a large mesh).
func heatFigures(t *testing.T, page string) []heatFigure {
	t.Helper()
	var out []heatFigure
	for _, fig := range strings.Split(page, `<figure class="chart heatmap"`)[1:] {
		fig, _, _ = strings.Cut(fig, "</figure>")
		head, rest, _ := strings.Cut(fig, ">\n<figcaption>")
		caption, rest, _ := strings.Cut(rest, "</figcaption>")
		f := heatFigure{attrs: map[string]string{}, caption: html.UnescapeString(caption)}
		for _, a := range reAttr.FindAllStringSubmatch(head, -1) {
			f.attrs[a[1]] = html.UnescapeString(a[2])
		}
		_, cells, ok := strings.Cut(rest, `<g class="cells"`)
		cells, rest, _ = strings.Cut(cells, "</g>")
		if !ok {
			t.Fatalf("heatmap %q has no cells", f.caption)
		}
		for _, r := range strings.Split(cells, "<rect")[1:] {
			attr := func(name string) string {
				_, v, _ := strings.Cut(r, " "+name+`="`)
				v, _, _ = strings.Cut(v, `"`)
				return v
			}
			w, err := strconv.ParseFloat(attr("width"), 64)
			_, title, ok1 := strings.Cut(r, "><title>")
			title, _, ok2 := strings.Cut(title, "</title></rect>")
			if err != nil || !ok1 || !ok2 {
				t.Fatalf("heatmap %q: cell <rect%s", f.caption, r)
			}
			f.cells = append(f.cells, heatRect{class: attr("class"), width: w, fill: attr("fill"), title: html.UnescapeString(title)})
		}
		f.texts = strings.Count(cells, "<text")
		if _, l, ok := strings.Cut(rest, `<ul class="legend heat">`); ok {
			l, _, _ = strings.Cut(l, "</ul>")
			f.legend = html.UnescapeString(l)
		}
		out = append(out, f)
	}
	return out
}

func (f *heatFigure) cell(prefix string) *heatRect {
	for i := range f.cells {
		if strings.HasPrefix(f.cells[i].title, prefix) {
			return &f.cells[i]
		}
	}
	return nil
}

// TestPlotMeshHeatmap: a mesh of four ranks (mesh.json: 3 -> 1 failed,
// 0 -> 2 four times slower, an outlier) is drawn as three heatmaps of
// N×N−N cells, the diagonal blank, the failed link hatched with its error
// in its tooltip, the outlier red and outlined, each value in its tooltip
// and its cell.
func TestPlotMeshHeatmap(t *testing.T) {
	src := reporttest.ReadFixture(t, "mesh.json")
	page := string(renderPlot(t, []report.Source{src}))
	figs := heatFigures(t, page)
	if len(figs) != 3 {
		t.Fatalf("%d heatmaps, want 3 (write-lat p50, p99; write-bw)", len(figs))
	}
	if strings.Contains(page, `class="empty"`) {
		t.Error("a page of heatmaps says it has nothing to plot")
	}
	for k, want := range []struct {
		figure, caption, direction, outlier string
		gates                               int
	}{
		{"p50", "write-lat RC 2 B: p50 latency, µs; median 1.05 µs", "high latency is bad", "0 → 2 (node1 → node3): p50 4.021 µs, 3.8× the median; outlier failed: ", 1},
		{"p99", "write-lat RC 2 B: p99 latency, µs; median 1.07 µs", "high latency is bad", "0 → 2 (node1 → node3): p99 4.04 µs, 3.8× the median", 0},
		{"bw", "write-bw RC 65536 B: bandwidth, Gbit/s; median 93.61 Gbit/s", "low bandwidth is bad", "0 → 2 (node1 → node3): bandwidth 23.10 Gbit/s, 25% of the median; outlier failed: ", 1},
	} {
		f := figs[k]
		if f.attrs["kind"] != MeshHeatmap || f.attrs["figure"] != want.figure || f.attrs["ranks"] != "4" || f.attrs["cells"] != "12" ||
			f.attrs["failed"] != "1" || f.attrs["gates"] != strconv.Itoa(want.gates) || f.attrs["source"] != "mesh.json" {
			t.Errorf("heatmap %d: attributes %v", k, f.attrs)
		}
		if f.caption != want.caption {
			t.Errorf("heatmap %d: caption %q, want %q", k, f.caption, want.caption)
		}
		if !strings.Contains(f.legend, want.direction) || !strings.Contains(f.legend, "(the median)") || !strings.Contains(f.legend, "failed") {
			t.Errorf("heatmap %d: legend %q", k, f.legend)
		}
		if len(f.cells) != 4*4-4 {
			t.Fatalf("heatmap %d: %d cells, want 12", k, len(f.cells))
		}
		// 11 values and "failed", written in the cells.
		if f.texts != 12 {
			t.Errorf("heatmap %d: %d texts in the cells, want 12", k, f.texts)
		}
		var failed []heatRect
		for i := range 4 {
			if c := f.cell(strconv.Itoa(i) + " → " + strconv.Itoa(i)); c != nil {
				t.Errorf("heatmap %d: a cell on the diagonal: %q", k, c.title)
			}
		}
		for _, c := range f.cells {
			if strings.Contains(c.class, "failed") {
				failed = append(failed, c)
				continue
			}
			if !strings.Contains(c.title, "the median") || !strings.HasPrefix(c.fill, "#") {
				t.Errorf("heatmap %d: cell %q fill %s: no value", k, c.title, c.fill)
			}
		}
		if len(failed) != 1 || !strings.HasPrefix(failed[0].title, "3 → 1 (node4 → node2): failed: rank 3 (node4) was lost") ||
			!strings.HasPrefix(failed[0].fill, "url(#hatch") {
			t.Errorf("heatmap %d: failed cells %+v", k, failed)
		}
		out := f.cell("0 → 2 ")
		if out == nil || !strings.HasPrefix(out.title, want.outlier) || strings.Contains(out.class, "gate") != (want.gates == 1) {
			t.Errorf("heatmap %d: outlier cell %+v, want title %q", k, out, want.outlier)
		} else if out.fill != heatColor(4021.0/1050) && k == 0 {
			t.Errorf("outlier fill %s", out.fill)
		}
		// The outlier is red, a link at the median pale.
		if out != nil && !redder(out.fill, f.cell("1 → 0 ").fill) {
			t.Errorf("heatmap %d: the outlier %s is not redder than a usual link %s", k, out.fill, f.cell("1 → 0 ").fill)
		}
	}
}

// redder reports whether colour a has more red over blue than b.
func redder(a, b string) bool {
	rb := func(c string) int {
		v, _ := strconv.ParseUint(strings.TrimPrefix(c, "#"), 16, 32)
		return int(v>>16&0xff) - int(v&0xff)
	}
	return rb(a) > rb(b)+60
}

// TestPlotMeshHeatmapLarge: a mesh of 256 ranks still makes a page: every
// cell with its tooltip, none with text, cells of two units or more, and
// a label every few ranks.
func TestPlotMeshHeatmapLarge(t *testing.T) {
	const n = 256
	start := time.Now()
	page := string(renderPlot(t, []report.Source{{Name: "fabric.json", Doc: reporttest.BigMeshDoc(n)}}))
	t.Logf("%d ranks: %d bytes in %v", n, len(page), time.Since(start))
	figs := heatFigures(t, page)
	if len(figs) != 1 {
		t.Fatalf("%d heatmaps", len(figs))
	}
	f := figs[0]
	if len(f.cells) != n*n-n || f.attrs["cells"] != strconv.Itoa(n*n-n) || f.attrs["failed"] != strconv.Itoa(n-1) {
		t.Errorf("%d cells, attributes %v", len(f.cells), f.attrs)
	}
	if f.texts != 0 {
		t.Errorf("%d texts in the cells of %d ranks", f.texts, n)
	}
	failed := 0
	for _, c := range f.cells {
		if c.width < 2 || c.title == "" {
			t.Fatalf("cell %+v", c)
		}
		if strings.Contains(c.class, "failed") {
			failed++
			if !strings.Contains(c.title, " → 3 ") || !strings.Contains(c.title, "failed") {
				t.Errorf("failed cell %q", c.title)
			}
		}
	}
	if failed != n-1 {
		t.Errorf("%d failed cells, want %d (every link to rank 3)", failed, n-1)
	}
	if c := f.cell("7 → 0 (node7 → node0): bandwidth "); c == nil || !redder(c.fill, f.cell("6 → 0 ").fill) {
		t.Errorf("rank 7's link at half the median: %+v", c)
	}
	// Row and column labels: every 10th rank, no host.
	if labels := strings.Count(page, `<text x=`) + strings.Count(page, `<text transform=`); labels > 2*(n/10+1)+2 {
		t.Errorf("%d labels for %d ranks", labels, n)
	}
	if len(page) > 12<<20 {
		t.Errorf("page of %d ranks: %d bytes", n, len(page))
	}
}

// TestPlotMeshOverlay: a mesh document among others draws its heatmaps
// and theirs their usual charts, in any order.
func TestPlotMeshOverlay(t *testing.T) {
	for _, files := range [][]string{{"mesh.json", "sweep.json"}, {"duration.json", "mesh.json"}} {
		page := string(renderPlot(t, plotSources(t, files)))
		figs := heatFigures(t, page)
		if len(figs) != 3 {
			t.Errorf("%v: %d heatmaps", files, len(figs))
		}
		for _, f := range figs {
			if !strings.HasSuffix(f.caption, " (mesh.json)") {
				t.Errorf("%v: caption %q does not name its document", files, f.caption)
			}
		}
		if !strings.Contains(page, `<figure class="chart" data-kind="`) {
			t.Errorf("%v: no chart of the other document", files)
		}
	}
}

// TestPlotMeshHeatmapOdd: matrices no well-behaved mesh writes, and links
// that were not scheduled, still make a page: short rows, a link with an
// error beside a value, a link whose test of another key failed, no
// median, too many ranks (listed, not drawn), no matrix at all.
func TestPlotMeshHeatmapOdd(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	m := &report.Mesh{Size: 3, Schedule: "pairs-file", Links: []report.MeshLink{
		{From: 0, To: 1, Results: []report.Result{}},
		{From: 1, To: 0, Error: "server went away"},
		{From: 2, To: 0, Error: "timed out"},
		{From: 1, To: 2, Results: []report.Result{{Test: "write-lat", Size: 2, Error: "other test"}, {Test: "write-bw", Size: 65536, Error: "IBV_WC_RETRY_EXC_ERR"}}},
		{From: 2, To: 1, Results: []report.Result{}},
	}, Matrices: []report.Matrix{{Test: "write-bw", Size: 65536, Figure: report.FigGbps, Unit: "Gbit/s",
		Values: [][]*float64{{nil, v(90)}, {v(45), nil, nil}, {v(0), nil, nil}}}}}
	doc := report.NewDocument()
	doc.Mesh = m
	figs := heatFigures(t, string(renderPlot(t, []report.Source{{Name: "odd.json", Doc: doc}})))
	if len(figs) != 1 {
		t.Fatalf("%d heatmaps", len(figs))
	}
	f := figs[0]
	if len(f.cells) != 6 || !strings.Contains(f.caption, "median 67.50 Gbit/s") {
		t.Errorf("%d cells, caption %q", len(f.cells), f.caption)
	}
	for prefix, want := range map[string]string{
		"0 → 1: ": "bandwidth 90.00 Gbit/s",
		"0 → 2: ": "not measured",
		"1 → 0: ": "failed: server went away",
		"1 → 2: ": "failed: IBV_WC_RETRY_EXC_ERR",
		"2 → 0: ": "failed: timed out; measured 0.00 Gbit/s",
		"2 → 1: ": "failed: no bandwidth measured",
	} {
		if c := f.cell(prefix); c == nil || !strings.HasPrefix(c.title, prefix+want) {
			t.Errorf("cell %s: %+v, want %q", prefix, c, want)
		}
	}

	big := reporttest.BigMeshDoc(maxHeatmapRanks + 1)
	big.Mesh.Matrices[0].Median = nil
	empty := report.NewDocument()
	empty.Mesh = &report.Mesh{Size: 2, Links: []report.MeshLink{{From: 0, To: 1, Error: "x"}, {From: 1, To: 0, Error: "x"}}}
	page := string(renderPlot(t, []report.Source{{Name: "big.json", Doc: big}, {Name: "empty.json", Doc: empty}}))
	if figs := heatFigures(t, page); len(figs) != 0 {
		t.Errorf("%d heatmaps of too many ranks and of none", len(figs))
	}
	for _, want := range []string{"big.json: write-bw RC 65536 B bw: 513 ranks, more than the 512", "empty.json: mesh of 2 ranks: no link measured a figure", `class="empty"`} {
		if !strings.Contains(html.UnescapeString(page), want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

func TestHeatScale(t *testing.T) {
	if heatColor(1) != "#eaeff3" || heatColor(16) != "#7f0000" || heatColor(1e9) != "#7f0000" || heatColor(math.Inf(1)) != "#7f0000" ||
		heatColor(0.5) != "#6baed6" || heatColor(0.001) != "#6baed6" || heatColor(0) != heatColor(math.NaN()) {
		t.Errorf("scale: 1 %s, 16 %s, inf %s, 0.5 %s, 0 %s", heatColor(1), heatColor(16), heatColor(math.Inf(1)), heatColor(0.5), heatColor(0))
	}
	// From the median on, every step worse is redder.
	prev := heatColor(1)
	for _, r := range []float64{1.1, 1.3, 1.7, 2.5, 5, 10} {
		c := heatColor(r)
		if c == prev || !strings.HasPrefix(c, "#") || len(c) != 7 {
			t.Errorf("heatColor(%v) = %s after %s", r, c, prev)
		}
		prev = c
	}
	if !darkColor("#7f0000") || darkColor("#eaeff3") || darkColor("#fee391") {
		t.Error("darkColor")
	}
	for r, want := range map[float64]string{4: "4×", 3.81: "3.8×", 1: "1×", 0.98: "0.98×", 16: "16×", 0.25: "25% of", 0.5: "50% of", 1.0 / 16: "6.2% of", 0: "0×"} {
		if got := ratioText(r); got != want {
			t.Errorf("ratioText(%v) = %q, want %q", r, got, want)
		}
	}
	for x, want := range map[float64]string{8978.43: "8978", 26.13: "26.1", 1.234: "1.23", 0.0642: "0.064", 0: "0", 0.5: "0.50"} {
		if got := cellText(x); got != want {
			t.Errorf("cellText(%v) = %q, want %q", x, got, want)
		}
	}
	for cell, want := range map[float64]int{56: 1, 13: 1, 12: 2, 2.5: 10, 2: 10, 1: 20} {
		if got := labelStep(cell); got != want {
			t.Errorf("labelStep(%v) = %d, want %d", cell, got, want)
		}
	}
}

// TestPlotMeshSource: a mesh's line among the page's sources says what it
// is, its ranks and hosts, never loopback, even with every rank on one
// host (rank 0's host the document's, no remote end); a single run on one
// host still says loopback.
func TestPlotMeshSource(t *testing.T) {
	doc := reporttest.MeshFixture(t)
	doc.Hosts = report.Hosts{Local: report.Host{Hostname: "vm", Device: &report.Device{Name: "rxe0"}}}
	for i := range doc.Mesh.Ranks {
		doc.Mesh.Ranks[i].Host.Hostname = "vm"
	}
	page := string(renderPlot(t, []report.Source{{Name: "mesh.json", Doc: doc}}))
	line := page[strings.Index(page, `<li data-source="mesh.json">`):]
	line = line[:strings.Index(line, "</li>")]
	if !strings.Contains(line, ", mesh of 3 ranks on 1 host") || strings.Contains(line, "loopback") || strings.Contains(line, "rxe0") {
		t.Errorf("the mesh's source line: %s", line)
	}
	if got := sourceLine(reporttest.DurationDoc()); !strings.Contains(got, "laptop (loopback)") {
		t.Errorf("a loopback run's source line: %s", got)
	}
}
