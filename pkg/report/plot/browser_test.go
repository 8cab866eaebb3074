package plot

import (
	"context"
	"flag"
	"fmt"
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// The plots are checked in a real browser: headless Chromium (Debian's
// chromium package, which scripts/deps.sh installs), driven by chromedp.

var screenshots = flag.Bool("screenshots", false, "write a PNG of each kind of plot to docs/plots/ from the browser test")

// chromiumPath finds the browser: $RDMABENCH_CHROMIUM, else chromium (or
// its other names) on $PATH. A machine without one fails the test: the
// browser is a dependency of the test suite, like the compiler.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("RDMABENCH_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found (chromium, chromium-browser or google-chrome on $PATH, or $RDMABENCH_CHROMIUM): " +
		"the plot tests load the page in a headless browser; install it with scripts/deps.sh (Debian package chromium)")
	return ""
}

// newBrowser starts a headless Chromium with a fresh profile and nothing
// in the background (the test machines have no network: without these
// flags it keeps trying to reach Google's services).
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox, // as root, Chromium refuses to start with its sandbox
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("font-render-hinting", "none"),
		chromedp.WindowSize(1280, 1000),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	// The first Run starts the browser.
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[int]("1")); err != nil {
		t.Fatalf("start %s: %v", chromiumPath(t), err)
	}
	return bctx
}

// pageLog collects what a page reports: console errors and warnings,
// uncaught exceptions, browser log entries (blocked loads, CSP
// violations), and every request it makes.
type pageLog struct {
	mu       sync.Mutex
	problems []string
	requests []string
}

func (l *pageLog) snapshot() (problems, requests []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.problems), slices.Clone(l.requests)
}

// openPage loads the HTML file at path in a new tab and returns the tab
// once the page has loaded and the browser has painted it.
func openPage(t *testing.T, browser context.Context, path string) (context.Context, *pageLog) {
	t.Helper()
	log := &pageLog{}
	tab, cancel := chromedp.NewContext(browser, chromedp.WithListener(func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			log.mu.Lock()
			log.requests = append(log.requests, e.Request.URL)
			log.mu.Unlock()
		}
	}))
	t.Cleanup(cancel)
	messages := chromedp.Console(tab)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			switch m.Type {
			case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException, "assert":
				log.mu.Lock()
				log.problems = append(log.problems, strings.TrimSpace(m.String()+" "+m.URL))
				log.mu.Unlock()
			}
		}
	}()
	u := (&url.URL{Scheme: "file", Path: path}).String()
	if err := chromedp.Do(tab, chromedp.Navigate(u), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
		t.Fatalf("load %s: %v", u, err)
	}
	// Two animation frames: the page has been laid out and painted.
	state, err := chromedp.Run(tab, chromedp.Evaluate[string](
		`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(document.readyState))))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", u, err)
	}
	if state != "complete" {
		t.Errorf("%s: document.readyState %q after load", path, state)
	}
	return tab, log
}

// check fails t on anything the page reported and on any request besides
// the page itself: a self-contained page fetches nothing.
func (l *pageLog) check(t *testing.T, path string) {
	t.Helper()
	problems, requests := l.snapshot()
	for _, p := range problems {
		t.Errorf("%s: %s", filepath.Base(path), p)
	}
	for _, r := range requests {
		if u, err := url.Parse(r); err != nil || u.Scheme != "file" || u.Path != path {
			t.Errorf("%s: the page requested %s", filepath.Base(path), r)
		}
	}
}

// chartDOM is what the browser shows of one chart.
type chartDOM struct {
	Kind, Test, Connection string
	Size                   string
	Series                 string // the data-series attribute
	Lines                  []struct {
		Source, Run, Figure string
		Points              int // data-points
		Vertices            int // vertices of the drawn path
		Marks               int // dots drawn
		// Keys are the data-key of each dot of a chart per test; Centers:
		// the centre of every dot lies within the frame.
		Keys    []string
		Centers bool
		// Inside: the path's box lies within the chart's frame.
		Inside bool
		Width  float64 // the path's box, in SVG units
	}
	Legend    int
	Width     float64 // the rendered <svg>, in CSS pixels
	TickTexts int
}

const chartsJS = `[...document.querySelectorAll('figure.chart:not(.heatmap)')].map(f => {
  const frame = f.querySelector('rect.frame').getBBox();
  const svg = f.querySelector('svg').getBoundingClientRect();
  return {
    Kind: f.dataset.kind, Test: f.dataset.test, Connection: f.dataset.connection, Size: f.dataset.size || '',
    Series: f.dataset.series,
    Lines: [...f.querySelectorAll('g.series')].map(g => {
      const p = g.querySelector('path'), b = (p || g).getBBox();
      return {
        Source: g.dataset.source, Run: g.dataset.run, Figure: g.dataset.figure,
        Points: +g.dataset.points,
        Vertices: p ? (p.getAttribute('d').match(/[ML]/g) || []).length : 0,
        Marks: g.querySelectorAll('circle').length,
        Keys: [...g.querySelectorAll('circle[data-key]')].map(c => c.dataset.key),
        Centers: [...g.querySelectorAll('circle')].every(c => {
          const x = +c.getAttribute('cx'), y = +c.getAttribute('cy');
          return x >= frame.x && x <= frame.x + frame.width && y >= frame.y && y <= frame.y + frame.height;
        }),
        Inside: b.x >= frame.x - 0.5 && b.y >= frame.y - 0.5 && b.x + b.width <= frame.x + frame.width + 0.5 && b.y + b.height <= frame.y + frame.height + 0.5,
        Width: b.width,
      };
    }),
    Legend: f.querySelectorAll('ul.legend li').length,
    Width: svg.width,
    TickTexts: f.querySelectorAll('g.axis text').length,
  };
})`

// heatmapDOM is what the browser shows of one heatmap.
type heatmapDOM struct {
	Source, Figure, Test string
	Ranks, Cells, Failed int     // its data- attributes
	Drawn                int     // rects among the cells
	DrawnFailed          int     // rects of class failed
	HatchedFailed        int     // failed rects painted with a pattern that is on the page
	Titled               int     // rects with a non-empty tooltip
	Texts                int     // texts among the cells
	Inside               bool    // every cell lies within the frame
	CellPx               float64 // the smallest cell's rendered width, CSS pixels
	Width                float64 // the rendered <svg>, CSS pixels
	Legend               int
	Caption              string
}

const heatmapsJS = `[...document.querySelectorAll('figure.chart.heatmap')].map(f => {
  const frame = f.querySelector('rect.frame').getBBox();
  const rects = [...f.querySelectorAll('g.cells rect')];
  let inside = true, px = Infinity;
  for (const r of rects) {
    const b = r.getBBox();
    inside = inside && b.x >= frame.x - 0.5 && b.y >= frame.y - 0.5 && b.x + b.width <= frame.x + frame.width + 0.5 && b.y + b.height <= frame.y + frame.height + 0.5;
    px = Math.min(px, r.getBoundingClientRect().width);
  }
  const failed = rects.filter(r => r.classList.contains('failed'));
  const hatched = failed.filter(r => {
    const m = /^url\("?#([^")]+)"?\)$/.exec(getComputedStyle(r).fill);
    return m && f.querySelector('pattern#' + m[1]) !== null;
  });
  return {
    Source: f.dataset.source, Figure: f.dataset.figure, Test: f.dataset.test,
    Ranks: +f.dataset.ranks, Cells: +f.dataset.cells, Failed: +f.dataset.failed,
    Drawn: rects.length, DrawnFailed: failed.length, HatchedFailed: hatched.length,
    Titled: rects.filter(r => r.querySelector('title') && r.querySelector('title').textContent.length > 0).length,
    Texts: f.querySelectorAll('g.cells text').length,
    Inside: inside, CellPx: rects.length ? px : 0,
    Width: f.querySelector('svg').getBoundingClientRect().width,
    Legend: f.querySelectorAll('ul.legend li').length,
    Caption: f.querySelector('figcaption').textContent,
  };
})`

// wantHeatmaps is the heatmaps a page of srcs must show, worked out from
// the documents alone: per source and matrix ("source test figure"), its
// ranks and failed links (no value off the diagonal, where a link was
// scheduled, or any link when the document lists none; or a link with an
// error).
func wantHeatmaps(srcs []report.Source) map[string][2]int {
	want := map[string][2]int{}
	for _, s := range srcs {
		m := s.Doc.Mesh
		if m == nil {
			continue
		}
		scheduled, broken := map[[2]int]bool{}, map[[2]int]bool{}
		for _, l := range m.Links {
			scheduled[[2]int{l.From, l.To}] = true
			broken[[2]int{l.From, l.To}] = l.Error != ""
		}
		for _, mx := range m.Matrices {
			n := len(mx.Values)
			if n == 0 || n > maxHeatmapRanks {
				continue
			}
			failed := 0
			for i := range n {
				for j := range n {
					k := [2]int{i, j}
					if i != j && (broken[k] || (j >= len(mx.Values[i]) || mx.Values[i][j] == nil) && (scheduled[k] || len(m.Links) == 0)) {
						failed++
					}
				}
			}
			want[fmt.Sprintf("%s %s %s", s.Name, mx.Test, mx.Figure)] = [2]int{n, failed}
		}
	}
	return want
}

// checkHeatmaps checks the heatmaps of the page in tab against srcs: each
// has N×N−N cells, each with its tooltip, inside its frame and at least a
// pixel wide, the failed ones hatched, their values written in them when
// N ≤ 16 and not otherwise. It returns how many there are.
func checkHeatmaps(t *testing.T, tab context.Context, srcs []report.Source) int {
	t.Helper()
	heats, err := chromedp.Run(tab, chromedp.Evaluate[[]heatmapDOM](heatmapsJS))
	if err != nil {
		t.Fatal(err)
	}
	want := wantHeatmaps(srcs)
	got := map[string][2]int{}
	for _, h := range heats {
		id := fmt.Sprintf("%s %s %s", h.Source, h.Test, h.Figure)
		got[id] = [2]int{h.Ranks, h.Failed}
		cells := h.Ranks*h.Ranks - h.Ranks
		if h.Cells != cells || h.Drawn != cells || h.Titled != cells || h.DrawnFailed != h.Failed || h.HatchedFailed != h.Failed {
			t.Errorf("%s: %d ranks, %d cells (data-cells %d), %d with a tooltip, %d failed (data-failed %d), %d hatched",
				id, h.Ranks, h.Drawn, h.Cells, h.Titled, h.DrawnFailed, h.Failed, h.HatchedFailed)
		}
		if !h.Inside || h.CellPx < 1 || h.Width < 200 || h.Legend < 3 || !strings.Contains(h.Caption, "median") {
			t.Errorf("%s: cells inside the frame %v, smallest %.2f px, %.0f px wide, %d legend entries, caption %q",
				id, h.Inside, h.CellPx, h.Width, h.Legend, h.Caption)
		}
		if wantTexts := h.Ranks <= heatmapText; (h.Texts > 0) != wantTexts {
			t.Errorf("%s: %d ranks, %d texts in the cells", id, h.Ranks, h.Texts)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("heatmaps (source test figure: [ranks failed])\n got %v\nwant %v", got, want)
	}
	return len(heats)
}

// wantCharts is what a page of srcs must show, worked out from the
// documents alone: per kind, the charts (by test, connection, size) and
// the lines of each.
func wantCharts(srcs []report.Source) map[string]map[string]int {
	want := map[string]map[string]int{}
	add := func(kind, chart string, lines int) {
		if want[kind] == nil {
			want[kind] = map[string]int{}
		}
		want[kind][chart] += lines
	}
	type tc struct{ test, conn string }
	// A load pattern's steps: one chart of each kind over every pattern
	// mesh, a line per source for its receivers (ranks) and one for its
	// hosts, p50 and p99 for the probe.
	patternTest := ""
	for _, s := range srcs {
		m := s.Doc.Mesh
		if m == nil || m.Pattern == nil {
			continue
		}
		if patternTest == "" {
			patternTest = m.Pattern.Test
		}
		id := patternTest + "//"
		var rank, host, rankShare, hostShare, probe bool
		for _, st := range m.Steps {
			for _, rc := range st.Receivers {
				rank = rank || rc.Measured > 0
				rankShare = rankShare || rc.Measured > 0 && rc.Share != nil
			}
			for _, rc := range st.Hosts {
				host = host || rc.Measured > 0
				hostShare = hostShare || rc.Measured > 0 && rc.Share != nil
			}
			probe = probe || st.Probe != nil && st.Probe.Latency != nil && st.Probe.Error == ""
		}
		for _, l := range []struct {
			kinds []string
			on    bool
		}{{[]string{StepBandwidth, StepFairness}, rank}, {[]string{StepBandwidth, StepFairness}, host},
			{[]string{StepShare}, rankShare}, {[]string{StepShare}, hostShare}} {
			for _, kind := range l.kinds {
				if l.on {
					add(kind, id, 1)
				}
			}
		}
		if probe {
			add(StepLatency, id, 2)
		}
	}
	for _, s := range srcs {
		sizes := map[tc]map[int]bool{}
		lat, bw := map[tc]bool{}, map[tc]bool{}
		for _, r := range s.Doc.Results {
			if r.Error != "" {
				continue
			}
			id := fmt.Sprintf("%s/%s/%d", r.Test, r.Connection, r.Size)
			if r.Latency != nil && r.Latency.Histogram != "" {
				add(Spectrum, id, 1)
			}
			var ivBW, ivLat bool
			for _, iv := range r.Intervals {
				ivBW = ivBW || iv.Bandwidth != nil
				ivLat = ivLat || iv.Latency != nil
			}
			if ivBW {
				add(BandwidthIntervals, id, 1)
			}
			if ivLat {
				add(LatencyIntervals, id, 2) // p50 and p99
			}
			k := tc{r.Test, r.Connection}
			if sizes[k] == nil {
				sizes[k] = map[int]bool{}
			}
			sizes[k][r.Size] = true
			lat[k] = lat[k] || r.Latency != nil
			bw[k] = bw[k] || r.Headline() != nil
		}
		for k, sz := range sizes {
			if len(sz) < 2 {
				continue
			}
			id := k.test + "/" + k.conn + "/"
			if lat[k] {
				add(LatencyBySize, id, 2)
			}
			if bw[k] {
				add(BandwidthBySize, id, 1)
				add(MsgRateBySize, id, 1)
			}
		}
	}
	// The charts per test: a line per source and figure with a value at a
	// test and size where some source's figure is on no other chart.
	type line struct {
		si  int
		fig report.Figure
	}
	byTest := map[string]map[line]bool{}
	undrawn := map[string]map[report.Key]bool{}
	vals := func(d *report.Document) map[report.Key]map[report.Figure]bool {
		v := map[report.Key]map[report.Figure]bool{}
		for _, sum := range d.Summarize() {
			k := report.Key{Test: sum.Test, Connection: sum.Connection, Size: sum.Size}
			v[k] = map[report.Figure]bool{}
			for _, f := range []report.Figure{report.FigP50, report.FigP99, report.FigGbps, report.FigMsgRate} {
				if sp, ok := sum.Spread(f); ok && sp.N > 0 {
					v[k][f] = true
				}
			}
		}
		return v
	}
	kindOf := map[report.Figure]string{report.FigP50: LatencyByTest, report.FigP99: LatencyByTest, report.FigGbps: BandwidthByTest, report.FigMsgRate: MsgRateByTest}
	all := make([]map[report.Key]map[report.Figure]bool, len(srcs))
	for si, s := range srcs {
		all[si] = vals(s.Doc)
		sizes := map[tc]map[report.Figure]int{}
		hist := map[report.Key]bool{}
		for _, r := range s.Doc.Results {
			if r.Error == "" && r.Latency != nil && r.Latency.Histogram != "" {
				hist[r.Key()] = true
			}
		}
		for k, figs := range all[si] {
			t := tc{k.Test, k.Connection}
			if sizes[t] == nil {
				sizes[t] = map[report.Figure]int{}
			}
			for f := range figs {
				if k.Size > 0 {
					sizes[t][f]++
				}
			}
		}
		for k, figs := range all[si] {
			for f := range figs {
				if (f.IsLatency() && hist[k]) || (k.Size > 0 && sizes[tc{k.Test, k.Connection}][f] >= 2) {
					continue
				}
				if undrawn[kindOf[f]] == nil {
					undrawn[kindOf[f]] = map[report.Key]bool{}
				}
				undrawn[kindOf[f]][k] = true
			}
		}
	}
	for kind, keys := range undrawn {
		for k := range keys {
			for si := range srcs {
				for f := range all[si][k] {
					if kindOf[f] == kind {
						if byTest[kind] == nil {
							byTest[kind] = map[line]bool{}
						}
						byTest[kind][line{si, f}] = true
					}
				}
			}
		}
	}
	for kind, lines := range byTest {
		add(kind, "//", len(lines))
	}
	return want
}

// seriesDOM is one line or set of dots of the page, with its chart's
// attributes.
type seriesDOM struct {
	Kind, Test, Connection, Size string
	Source, Figure               string
	Points                       int
	Keys                         []string
}

const seriesJS = `[...document.querySelectorAll('figure.chart:not(.heatmap) g.series')].map(g => {
  const f = g.closest('figure');
  return {
    Kind: f.dataset.kind, Test: f.dataset.test, Connection: f.dataset.connection, Size: f.dataset.size || '',
    Source: g.dataset.source, Figure: g.dataset.figure, Points: +g.dataset.points,
    Keys: [...g.querySelectorAll('circle[data-key]')].map(c => c.dataset.key),
  };
})`

// checkEveryFigure checks that the page in tab draws every figure compare
// reads (p50 and p99, Gbit/s, Mmsg/s) of every result of srcs that did
// not fail, and lists each result that failed under "Not plotted" with
// its reason, from what the browser shows: a spectrum covers p50 and p99
// of its test and size, a line against message size its figure at every
// size the source has it, a dot of a chart per test its figure there.
func checkEveryFigure(t *testing.T, tab context.Context, srcs []report.Source) {
	t.Helper()
	lines, err := chromedp.Run(tab, chromedp.Evaluate[[]seriesDOM](seriesJS))
	if err != nil {
		t.Fatal(err)
	}
	notes, err := chromedp.Run(tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll('ul.notes li')].map(l => l.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	type fig struct {
		source, key, figure string
	}
	idx := map[string]int{}
	for i, s := range srcs {
		idx[s.Name] = i
	}
	covered := map[fig]bool{}
	for _, l := range lines {
		switch l.Kind {
		case Spectrum:
			k := l.Test + "/" + l.Connection + "/" + l.Size
			covered[fig{l.Source, k, "p50"}], covered[fig{l.Source, k, "p99"}] = true, true
		case LatencyBySize, BandwidthBySize, MsgRateBySize:
			var sizes []int
			for _, sum := range srcs[idx[l.Source]].Doc.Summarize() {
				if sp, ok := sum.Spread(figureOfLabel(l.Figure)); ok && sp.N > 0 && sum.Test == l.Test && sum.Connection == l.Connection {
					sizes = append(sizes, sum.Size)
				}
			}
			if len(sizes) != l.Points {
				t.Errorf("%s %s/%s %s %s: %d points, the document has %d sizes", l.Kind, l.Test, l.Connection, l.Source, l.Figure, l.Points, len(sizes))
			}
			for _, size := range sizes {
				covered[fig{l.Source, fmt.Sprintf("%s/%s/%d", l.Test, l.Connection, size), l.Figure}] = true
			}
		case LatencyByTest, BandwidthByTest, MsgRateByTest:
			for _, k := range l.Keys {
				covered[fig{l.Source, k, l.Figure}] = true
			}
		}
	}
	drawn, listed := 0, 0
	for _, s := range srcs {
		for i := range s.Doc.Results {
			r := &s.Doc.Results[i]
			k := fmt.Sprintf("%s/%s/%d", r.Test, r.Connection, r.Size)
			if r.Error != "" {
				want := fmt.Sprintf("%s: %s%s: the test failed: ", s.Name, r.Key(), runSuffix(r))
				if !slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
					t.Errorf("%s %s: failed, not listed under Not plotted (%q)", s.Name, k, notes)
				}
				listed++
				continue
			}
			for _, f := range []report.Figure{report.FigP50, report.FigP99, report.FigGbps, report.FigMsgRate} {
				if _, ok := f.Of(r); !ok {
					continue
				}
				if !covered[fig{s.Name, k, f.Label()}] {
					t.Errorf("%s %s%s: %s is on no chart", s.Name, k, runSuffix(r), f.Label())
				}
				drawn++
			}
		}
	}
	t.Logf("%d figures drawn, %d failed results listed", drawn, listed)
}

// figureOfLabel is the figure a series' data-figure names.
func figureOfLabel(label string) report.Figure {
	switch label {
	case "Gbit/s":
		return report.FigGbps
	case "Mmsg/s":
		return report.FigMsgRate
	}
	return report.Figure(label)
}

// TestPlotInBrowser loads the page of each fixture set in headless
// Chromium: it loads without a console error, an exception or a request
// for anything but itself; it has the charts and lines the documents call
// for, each line drawn with as many vertices as it has points and inside
// its chart's frame. With -screenshots it writes docs/plots/*.png.
func TestPlotInBrowser(t *testing.T) {
	browser := newBrowser(t)
	dir := t.TempDir()
	shots := map[string]bool{}
	for _, pg := range plotPages {
		t.Run(pg.name, func(t *testing.T) {
			srcs := plotSources(t, pg.files)
			path := filepath.Join(dir, pg.name+".html")
			if err := os.WriteFile(path, renderPlot(t, srcs), 0o644); err != nil {
				t.Fatal(err)
			}
			tab, log := openPage(t, browser, path)
			charts, err := chromedp.Run(tab, chromedp.Evaluate[[]chartDOM](chartsJS))
			if err != nil {
				t.Fatal(err)
			}
			log.check(t, path)

			want := wantCharts(srcs)
			got := map[string]map[string]int{}
			for _, c := range charts {
				if got[c.Kind] == nil {
					got[c.Kind] = map[string]int{}
				}
				id := c.Test + "/" + c.Connection + "/" + c.Size
				got[c.Kind][id] += len(c.Lines)
				if c.Series != fmt.Sprint(len(c.Lines)) {
					t.Errorf("%s %s: data-series %s, %d lines", c.Kind, id, c.Series, len(c.Lines))
				}
				if c.Legend == 0 || c.TickTexts < 4 || c.Width < 300 {
					t.Errorf("%s %s: %d legend entries, %d axis labels, %.0f px wide", c.Kind, id, c.Legend, c.TickTexts, c.Width)
				}
				for _, l := range c.Lines {
					if slices.Contains([]string{LatencyByTest, BandwidthByTest, MsgRateByTest,
						StepBandwidth, StepShare, StepFairness, StepLatency}, c.Kind) {
						// Dots, not joined: each with its test and size
						// (its step and receiver).
						if l.Points < 1 || l.Vertices != 0 || l.Marks != l.Points || len(l.Keys) != l.Points || !l.Centers {
							t.Errorf("%s, %s %s: %d points, %d vertices, %d dots, %d keys, centres inside the frame %v",
								c.Kind, l.Source, l.Figure, l.Points, l.Vertices, l.Marks, len(l.Keys), l.Centers)
						}
						continue
					}
					if l.Points < 2 || l.Vertices != l.Points || !l.Inside || l.Width <= 0 {
						t.Errorf("%s %s, %s run %s %s: %d points, %d vertices, inside the frame %v, %.1f wide",
							c.Kind, id, l.Source, l.Run, l.Figure, l.Points, l.Vertices, l.Inside, l.Width)
					}
					if c.Kind != Spectrum && l.Marks != l.Points {
						t.Errorf("%s %s: %d dots for %d points", c.Kind, id, l.Marks, l.Points)
					}
					if !slices.ContainsFunc(srcs, func(s report.Source) bool { return s.Name == l.Source }) {
						t.Errorf("%s %s: line of unknown source %q", c.Kind, id, l.Source)
					}
				}
			}
			for _, kind := range Kinds {
				if fmt.Sprint(got[kind]) != fmt.Sprint(want[kind]) {
					t.Errorf("%s: charts (test/connection/size: lines)\n got %v\nwant %v", kind, got[kind], want[kind])
				}
			}
			checkEveryFigure(t, tab, srcs)
			heats := checkHeatmaps(t, tab, srcs)
			if len(charts) == 0 && heats == 0 {
				empty, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll('p.empty').length`))
				if err != nil || empty != 1 {
					t.Errorf("a page with no chart does not say so: %v", err)
				}
			}
			if *screenshots {
				for _, kind := range Kinds {
					drawn := len(got[kind]) > 0
					if kind == MeshHeatmap {
						drawn = heats > 0
					}
					if !drawn || shots[kind] {
						continue
					}
					shots[kind] = true
					sel := chromedp.CSS(fmt.Sprintf(`figure.chart[data-kind="%s"]`, kind))
					png, err := chromedp.Run(tab, chromedp.Screenshot(sel))
					if err != nil {
						t.Fatal(err)
					}
					out := filepath.Join("..", "..", "..", "docs", "plots", kind+".png")
					if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(out, png, 0o644); err != nil {
						t.Fatal(err)
					}
					t.Logf("wrote %s (%s)", out, pg.name)
				}
			}
		})
	}
	if *screenshots && len(shots) != len(Kinds) {
		t.Errorf("screenshots of %d kinds of plot, want %d", len(shots), len(Kinds))
	}
}

// TestPlotHeatmapInBrowserLarge: the heatmap of a mesh of 256 ranks loads
// and shows every cell, at least a pixel wide, without a problem.
func TestPlotHeatmapInBrowserLarge(t *testing.T) {
	browser := newBrowser(t)
	srcs := []report.Source{{Name: "fabric.json", Doc: reporttest.BigMeshDoc(256)}}
	path := filepath.Join(t.TempDir(), "fabric.html")
	if err := os.WriteFile(path, renderPlot(t, srcs), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tab, log := openPage(t, browser, path)
	t.Logf("loaded in %v", time.Since(start))
	if n := checkHeatmaps(t, tab, srcs); n != 1 {
		t.Errorf("%d heatmaps", n)
	}
	log.check(t, path)
}

// TestPageLogCatchesProblems: the checks above would see a page that
// fetches something or fails: a blocked image, a script that throws.
func TestPageLogCatchesProblems(t *testing.T) {
	browser := newBrowser(t)
	path := filepath.Join(t.TempDir(), "bad.html")
	bad := `<!DOCTYPE html><html><head><meta charset="utf-8"><title>bad</title></head><body>
<img src="http://127.0.0.1:9/x.png" alt=""><script>console.error("boom"); throw new Error("thrown");</script></body></html>`
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, log := openPage(t, browser, path)
	var problems, requests string
	// The failed load may be reported after the page has loaded.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		p, r := log.snapshot()
		problems, requests = strings.Join(p, "\n"), strings.Join(r, "\n")
		if strings.Contains(problems, "thrown") && strings.Contains(problems, "x.png") {
			break
		}
	}
	for _, want := range []string{"boom", "thrown", "x.png"} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems do not mention %q:\n%s", want, problems)
		}
	}
	if !strings.Contains(requests, "http://127.0.0.1:9/x.png") {
		t.Errorf("the image request was not seen: %s", requests)
	}
}
