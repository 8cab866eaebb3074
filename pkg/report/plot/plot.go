package plot

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// Plot kinds: the data-kind attribute of each chart of [Write]'s page,
// in page order.
const (
	// MeshHeatmap is the fabric matrix of a mesh document (`rdmabench
	// mesh`) as a heatmap, per test, size and figure: rows the client
	// rank, columns the server rank, each cell coloured by how much worse
	// than the median of all links it is.
	MeshHeatmap = "mesh-heatmap"
	// Spectrum is the latency percentile spectrum of each latency
	// result, decoded from its histogram: HdrHistogram's percentile plot,
	// x = percentile on a 1/(1-p) log axis, y = latency in µs.
	Spectrum = "spectrum"
	// LatencyBySize is p50 and p99 against message size, per latency
	// test run at two sizes or more (the median over repeated runs).
	LatencyBySize = "latency-by-size"
	// BandwidthBySize is Gbit/s against message size, per bandwidth
	// test run at two sizes or more (the median over repeated runs).
	BandwidthBySize = "bandwidth-by-size"
	// MsgRateBySize is Mmsg/s against message size, as BandwidthBySize.
	MsgRateBySize = "message-rate-by-size"
	// LatencyByTest, BandwidthByTest and MsgRateByTest are one chart
	// each of the figures that no chart above draws (p50 and p99, Gbit/s,
	// Mmsg/s of a test run at one size, or whose histogram is missing):
	// one dot per test and size and source, at the median of its runs,
	// with its 95% confidence interval where it has one: the figures
	// `compare` reads, side by side.
	LatencyByTest   = "latency-by-test"
	BandwidthByTest = "bandwidth-by-test"
	MsgRateByTest   = "message-rate-by-test"
	// StepBandwidth is, for a load pattern mesh (`rdmabench mesh
	// --pattern`), each receiver's aggregate Gbit/s per step (ranks
	// filled, hosts open): one dot per step and receiver.
	StepBandwidth = "step-bandwidth"
	// StepShare is each receiver's aggregate over its port's nominal
	// rate per step, in %, where the devices say the rate (TCP does not).
	StepShare = "step-share"
	// StepFairness is Jain's index of each receiver's flows per step.
	StepFairness = "step-fairness"
	// StepLatency is the p50 and p99 of the probe run beside each step's
	// flows: the latency under the load.
	StepLatency = "step-latency"
	// BandwidthIntervals is Gbit/s over time, per duration-mode (-D)
	// bandwidth result.
	BandwidthIntervals = "bandwidth-intervals"
	// LatencyIntervals is p50 and p99 over time, per duration-mode
	// latency result.
	LatencyIntervals = "latency-intervals"
)

// Kinds lists the kinds of chart, in page order.
var Kinds = []string{MeshHeatmap, StepBandwidth, StepShare, StepFairness, StepLatency, Spectrum, LatencyBySize, BandwidthBySize, MsgRateBySize,
	LatencyByTest, BandwidthByTest, MsgRateByTest, BandwidthIntervals, LatencyIntervals}

// spectrumTicks is the number of percentile points per halving of the
// distance to 100%, as HdrHistogram's own percentile output prints them.
const spectrumTicks = 5

// Write writes the documents as one self-contained HTML page of SVG
// charts, as `rdmabench plot FILE...` prints it: no script, no network (its
// Content-Security-Policy forbids both), viewable offline and attachable to
// a CI run. The page has, in this order:
//   - the heatmap ([MeshHeatmap]) of each matrix of each mesh
//     document: an N×N grid of the links, coloured relative to the
//     median, failed links hatched, each cell's value in its tooltip (and
//     written in it up to 16 ranks);
//   - the steps of each load pattern mesh ([StepBandwidth], [StepShare],
//     [StepFairness], [StepLatency]): per step, a dot per receiver of its
//     aggregate, share of the nominal rate and Jain's index, and the
//     probe's p50 and p99 under the load, the sources overlaid by step;
//   - the percentile spectrum ([Spectrum]) of each test and size that
//     has latency histograms, one line per result: each source and, in a
//     document of repeated runs, each run;
//   - latency, bandwidth and message rate against message size
//     ([LatencyBySize], [BandwidthBySize], [MsgRateBySize]) for each test
//     a source ran at two sizes or more, one line per source (and figure);
//   - p50 and p99, bandwidth and message rate per test and size
//     ([LatencyByTest], [BandwidthByTest], [MsgRateByTest]): each figure
//     of a source that no chart above draws (a test run at one size, a
//     latency without a histogram), beside the other sources' values of
//     the same test and size, one dot per source;
//   - bandwidth and latency over time ([BandwidthIntervals],
//     [LatencyIntervals]) for each duration-mode result.
//
// Several sources are overlaid, each in its own colour, as `compare` reads
// base and new. So every figure `compare` reads (p50, p99, Gbit/s, Mmsg/s)
// of every result is on a chart; what is not (a result that failed, a
// histogram missing or that cannot be decoded) is listed under the charts,
// under "Not plotted", with the reason. Each chart
// is an <svg> inside a <figure class="chart"> whose data-kind,
// data-test, data-connection, data-size and data-series attributes say what
// it shows, and each line a <g class="series"> with data-source, data-run,
// data-figure and data-points, so that tests and scripts can check a page
// without reading pixels.
func Write(w io.Writer, srcs []report.Source) error {
	if len(srcs) == 0 {
		return errors.New("report: plot: no documents")
	}
	for _, s := range srcs {
		if s.Doc == nil {
			return fmt.Errorf("report: plot: %s: nil document", s.Name)
		}
	}
	p := &plotter{srcs: srcs}
	heat := p.heatmaps()
	charts := append(p.steps(), p.charts()...)
	var b bytes.Buffer
	writePage(&b, srcs, heat, charts, p.notes)
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("report: write plot: %w", err)
	}
	return nil
}

// chart is one plot: axes and lines.
type chart struct {
	kind  string
	title string
	key   report.Key // the test, connection and size shown; Size 0 for a sweep
	// pattern is the load pattern of a chart per step (data-pattern).
	pattern string
	sweep   bool // a chart against message size: no data-size
	x, y    axis
	series  []series
}

// axis is one axis of a chart: its range, scale and labelled ticks.
type axis struct {
	label  string
	log    bool    // logarithmic (any base: positions are ratios of logarithms)
	lo, hi float64 // the range shown
	ticks  []tick
}

type tick struct {
	v     float64
	label string
}

// series is one line.
type series struct {
	name   string // what the line is, for its tooltip
	legend string // the legend entry it belongs to
	source string
	run    int
	figure string // "p50", "p99", "Gbit/s", or "" for a whole spectrum
	color  string
	dashed bool
	points []point
	// marks: draw a dot at each point, with its value as a tooltip.
	marks bool
	// dots: the points are not joined (a chart per test, not along an
	// axis); each has its own key and, where known, confidence interval.
	dots bool
}

type point struct {
	x, y float64
	tip  string
	// key names the test and size of a dot of a chart per test
	// (data-key: "write-bw/RC/65536"); lo and hi bound its confidence
	// interval when ci.
	key    string
	ci     bool
	lo, hi float64
}

// palette is a colour-blind-safe set (Okabe and Ito), without its yellow,
// too pale on white.
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"}

// plotter gathers the charts of a set of sources.
type plotter struct {
	srcs  []report.Source
	notes []string
	// drawn are the figures the charts against message size and the
	// spectra draw, per source, test and size: the charts per test draw
	// the others.
	drawn map[drawnFigure]bool
}

type drawnFigure struct {
	si  int
	key report.Key
	fig report.Figure
}

func (p *plotter) markDrawn(si int, k report.Key, figs ...report.Figure) {
	if p.drawn == nil {
		p.drawn = map[drawnFigure]bool{}
	}
	for _, f := range figs {
		p.drawn[drawnFigure{si, k, f}] = true
	}
}

// seriesName names the line of result r of source si: the source when
// there are several, the run in a document of repeated runs.
func (p *plotter) seriesName(si int, r *report.Result) string {
	var parts []string
	if len(p.srcs) > 1 {
		parts = append(parts, p.srcs[si].Name)
	}
	if r.Run > 0 && p.srcs[si].Doc.Repeated() {
		parts = append(parts, "run "+strconv.Itoa(r.Run))
	}
	if len(parts) == 0 {
		return p.srcs[si].Name
	}
	return strings.Join(parts, " ")
}

// colorOf gives sources their own colour when there are several (every
// run of a source in its colour), else each line its own.
func (p *plotter) colorOf(si, line int) string {
	if len(p.srcs) > 1 {
		return palette[si%len(palette)]
	}
	return palette[line%len(palette)]
}

// legendOf is the legend entry of line name of source si: the source when
// there are several, else the line itself.
func (p *plotter) legendOf(si int, name string) string {
	if len(p.srcs) > 1 {
		return p.srcs[si].Name
	}
	return name
}

func (p *plotter) note(si int, r *report.Result, msg string) {
	p.notes = append(p.notes, fmt.Sprintf("%s: %s%s: %s", p.srcs[si].Name, r.Key(), runSuffix(r), msg))
}

func runSuffix(r *report.Result) string {
	if r.Run > 0 {
		return " run " + strconv.Itoa(r.Run)
	}
	return ""
}

// keys returns the keys of every result of every source, in order of first
// appearance.
func (p *plotter) keys() []report.Key {
	var keys []report.Key
	seen := map[report.Key]bool{}
	for _, s := range p.srcs {
		for i := range s.Doc.Results {
			if k := s.Doc.Results[i].Key(); !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// each calls f for every result of key k without an error, source by
// source, in document order.
func (p *plotter) each(k report.Key, f func(si int, r *report.Result)) {
	for si, s := range p.srcs {
		for i := range s.Doc.Results {
			if r := &s.Doc.Results[i]; r.Key() == k && r.Error == "" {
				f(si, r)
			}
		}
	}
}

func (p *plotter) charts() []*chart {
	keys := p.keys()
	p.failed()
	var out []*chart
	for _, k := range keys {
		if c := p.spectrum(k); c != nil {
			out = append(out, c)
		}
	}
	out = append(out, p.sweeps(keys)...)
	for _, kind := range []string{LatencyByTest, BandwidthByTest, MsgRateByTest} {
		if c := p.byTest(kind, keys); c != nil {
			out = append(out, c)
		}
	}
	for _, k := range keys {
		out = append(out, p.intervals(k)...)
	}
	return out
}

// failed lists the results that failed: none of their figures is drawn.
func (p *plotter) failed() {
	for si, s := range p.srcs {
		for i := range s.Doc.Results {
			if r := &s.Doc.Results[i]; r.Error != "" {
				p.note(si, r, "the test failed: "+textfmt.Clean(r.Error))
			}
		}
	}
}

// spectrum is the percentile spectrum chart of key k, or nil when no
// result of k has a histogram.
func (p *plotter) spectrum(k report.Key) *chart {
	c := &chart{kind: Spectrum, key: k, title: k.String() + ": latency by percentile"}
	maxCount := int64(1)
	basis := ""
	p.each(k, func(si int, r *report.Result) {
		l := r.Latency
		if l == nil || l.Count == 0 {
			return
		}
		if l.Histogram == "" {
			p.note(si, r, "no latency histogram: no percentile spectrum")
			return
		}
		h, err := l.DecodeHistogram()
		if err != nil {
			p.note(si, r, err.Error())
			return
		}
		if h.TotalCount() == 0 {
			p.note(si, r, "empty latency histogram")
			return
		}
		basis = l.Basis
		name := p.seriesName(si, r)
		s := series{legend: p.legendOf(si, name), source: p.srcs[si].Name, run: r.Run,
			color: p.colorOf(si, len(c.series)), points: spectrumPoints(h, l)}
		s.name = fmt.Sprintf("%s: p50 %s µs, p99 %s µs, p99.9 %s µs, max %s µs, %d samples", name,
			textfmt.Num(l.P50Ns/1e3), textfmt.Num(l.P99Ns/1e3), textfmt.Num(l.P999Ns/1e3), textfmt.Num(l.MaxNs/1e3), l.Count)
		c.series = append(c.series, s)
		maxCount = max(maxCount, h.TotalCount())
		p.markDrawn(si, k, report.FigP50, report.FigP99)
	})
	if len(c.series) == 0 {
		return nil
	}
	decades := max(1, int(math.Ceil(math.Log10(float64(maxCount))-1e-9)))
	c.x = axis{label: "percentile", log: true, lo: 1, hi: math.Pow(10, float64(decades))}
	for d := 0; d <= decades; d++ {
		c.x.ticks = append(c.x.ticks, tick{math.Pow(10, float64(d)), percentileLabel(d)})
	}
	// A tail far above the body would flatten the body on a linear axis.
	if lo, hi := seriesRange(c.series); hi > 20*lo {
		c.y = logAxis(latencyLabel(basis)+", log scale", lo, hi)
	} else {
		c.y = linearAxis(latencyLabel(basis), hi)
	}
	return c
}

// spectrumPoints are the points of h's percentile spectrum: x = 1/(1-p),
// y = µs. Values are clamped to the result's exact min and max, as its
// percentiles are, and the 0th percentile is the min; the 100th percentile (x infinite) is drawn at x = the
// sample count, where the largest of N samples stands.
func spectrumPoints(h *hdrhistogram.Histogram, l *report.Latency) []point {
	n := float64(h.TotalCount())
	var pts []point
	for _, b := range h.CumulativeDistributionWithTicks(spectrumTicks) {
		x := n
		if b.Quantile < 100 {
			x = min(100/(100-b.Quantile), n)
		}
		y := min(max(float64(b.ValueAt), l.MinNs), l.MaxNs) / 1e3
		if b.Quantile == 0 {
			y = l.MinNs / 1e3 // the lowest sample, not its bucket's top
		}
		if len(pts) > 0 && x <= pts[len(pts)-1].x {
			pts[len(pts)-1].y = max(pts[len(pts)-1].y, y)
			continue
		}
		pts = append(pts, point{x: x, y: y})
	}
	return pts
}

// percentileLabel labels x = 10^d on a 1/(1-p) axis: "0%", "90%", "99%",
// "99.9%", ...
func percentileLabel(d int) string {
	if d == 0 {
		return "0%"
	}
	return strconv.FormatFloat(100-100/math.Pow(10, float64(d)), 'f', max(d-2, 0), 64) + "%"
}

func latencyLabel(basis string) string {
	switch basis {
	case report.BasisRTTHalf:
		return "latency, µs (one-way: rtt/2)"
	case report.BasisRTT:
		return "latency, µs (round trip)"
	}
	return "latency, µs"
}

// sweeps are the charts against message size: one per test and
// connection that a source ran at two sizes or more.
func (p *plotter) sweeps(keys []report.Key) []*chart {
	type tc struct{ test, conn string }
	var order []tc
	sizes := map[tc][]int{}
	for _, k := range keys {
		if k.Size <= 0 {
			continue // not on a logarithmic axis (and no run has it)
		}
		t := tc{k.Test, k.Connection}
		if _, ok := sizes[t]; !ok {
			order = append(order, t)
		}
		sizes[t] = append(sizes[t], k.Size)
	}
	var out []*chart
	for _, t := range order {
		if len(sizes[t]) < 2 {
			continue
		}
		slices.Sort(sizes[t])
		name := t.test
		if t.conn != "" {
			name += " " + t.conn
		}
		lat := &chart{kind: LatencyBySize, sweep: true, key: report.Key{Test: t.test, Connection: t.conn},
			title: name + ": latency by message size"}
		bw := &chart{kind: BandwidthBySize, sweep: true, key: lat.key, title: name + ": bandwidth by message size"}
		mr := &chart{kind: MsgRateBySize, sweep: true, key: lat.key, title: name + ": message rate by message size"}
		basis := ""
		for si, s := range p.srcs {
			// The median over runs of each figure, per size.
			sums := map[int]report.Summary{}
			for _, sum := range s.Doc.Summarize() {
				if sum.Test == t.test && sum.Connection == t.conn {
					sums[sum.Size] = sum
				}
			}
			line := func(c *chart, f report.Figure, scale float64, unit string, dashed bool) {
				var pts []point
				var drawn []report.Key
				for _, size := range sizes[t] {
					sum, ok := sums[size]
					if !ok {
						continue
					}
					sp, ok := sum.Spread(f)
					if !ok || sp.N == 0 {
						continue
					}
					v := sp.Median / scale
					tip := fmt.Sprintf("%s: %s %s %s", sizeLabel(size), f.Label(), textfmt.Num(v), unit)
					if sp.N > 1 {
						tip += fmt.Sprintf(" (median of %d runs)", sp.N)
					}
					pts = append(pts, point{x: float64(size), y: v, tip: tip})
					drawn = append(drawn, report.Key{Test: t.test, Connection: t.conn, Size: size})
				}
				if len(pts) < 2 {
					return
				}
				for _, k := range drawn {
					p.markDrawn(si, k, f)
				}
				label := s.Name + " " + f.Label()
				c.series = append(c.series, series{name: label, legend: label, source: s.Name, figure: f.Label(),
					color: palette[si%len(palette)], dashed: dashed, points: pts, marks: true})
			}
			line(lat, report.FigP50, 1e3, "µs", false)
			line(lat, report.FigP99, 1e3, "µs", true)
			line(bw, report.FigGbps, 1, "Gbit/s", false)
			line(mr, report.FigMsgRate, 1, "Mmsg/s", false)
			if basis == "" {
				for _, sum := range sums {
					if sum.Latency != nil {
						basis = sum.Latency.Basis
					}
				}
			}
		}
		if len(lat.series) > 0 {
			lat.x = sizeAxis(sizes[t])
			lo, hi := seriesRange(lat.series)
			lat.y = logAxis(latencyLabel(basis), lo, hi)
			out = append(out, lat)
		}
		if len(bw.series) > 0 {
			bw.x = sizeAxis(sizes[t])
			_, hi := seriesRange(bw.series)
			bw.y = linearAxis("bandwidth, Gbit/s", hi)
			out = append(out, bw)
		}
		if len(mr.series) > 0 {
			mr.x = sizeAxis(sizes[t])
			_, hi := seriesRange(mr.series)
			mr.y = linearAxis("message rate, Mmsg/s", hi)
			out = append(out, mr)
		}
	}
	return out
}

// byTest is the chart of kind LatencyByTest, BandwidthByTest or
// MsgRateByTest: along x the tests and sizes one of whose figures of
// the kind a source has and no other chart draws, and at each one dot per
// source and figure, the median of its runs with its confidence interval;
// nil when every such figure is drawn already.
func (p *plotter) byTest(kind string, keys []report.Key) *chart {
	figs, unit, scale, label := []report.Figure{report.FigGbps}, "Gbit/s", 1.0, "bandwidth, Gbit/s"
	title := "bandwidth per test (median of the runs)"
	switch kind {
	case LatencyByTest:
		figs, unit, scale, label = []report.Figure{report.FigP50, report.FigP99}, "µs", 1e3, "latency, µs"
		title = "latency per test, p50 and p99 (median of the runs)"
	case MsgRateByTest:
		figs, unit, label = []report.Figure{report.FigMsgRate}, "Mmsg/s", "message rate, Mmsg/s"
		title = "message rate per test (median of the runs)"
	}
	sums := make([]map[report.Key]report.Summary, len(p.srcs))
	for si, s := range p.srcs {
		sums[si] = map[report.Key]report.Summary{}
		for _, sum := range s.Doc.Summarize() {
			sums[si][report.Key{Test: sum.Test, Connection: sum.Connection, Size: sum.Size}] = sum
		}
	}
	value := func(si int, k report.Key, f report.Figure) (report.Spread, bool) {
		sum, ok := sums[si][k]
		if !ok {
			return report.Spread{}, false
		}
		sp, ok := sum.Spread(f)
		return sp, ok && sp.N > 0
	}
	var cats []report.Key
	for _, k := range keys {
		undrawn := false
		for si := range p.srcs {
			for _, f := range figs {
				if _, ok := value(si, k, f); ok && !p.drawn[drawnFigure{si, k, f}] {
					undrawn = true
				}
			}
		}
		if undrawn {
			cats = append(cats, k)
		}
	}
	if len(cats) == 0 {
		return nil
	}
	c := &chart{kind: kind, sweep: true, title: title}
	lines := len(p.srcs) * len(figs)
	basis := ""
	for si, s := range p.srcs {
		for fi, f := range figs {
			line := si*len(figs) + fi
			// The dots of one test and size side by side, in source order.
			off := 0.0
			if lines > 1 {
				off = -0.2 + 0.4*float64(line)/float64(lines-1)
			}
			var pts []point
			for ci, k := range cats {
				sp, ok := value(si, k, f)
				if !ok {
					continue
				}
				if l := sums[si][k].Latency; l != nil && basis == "" {
					basis = l.Basis
				}
				v := sp.Median / scale
				tip := fmt.Sprintf("%s: %s %s %s", k, f.Label(), smallNum(v), unit)
				pt := point{x: float64(ci+1) + off, y: v, key: fmt.Sprintf("%s/%s/%d", textfmt.Clean(k.Test), textfmt.Clean(k.Connection), k.Size)}
				if sp.N > 1 {
					tip += fmt.Sprintf(" (median of %d runs", sp.N)
					if sp.Bounded() {
						pt.ci, pt.lo, pt.hi = true, *sp.Lo/scale, *sp.Hi/scale
						tip += fmt.Sprintf(", %g%% confidence interval %s to %s", 100*report.Confidence, smallNum(pt.lo), smallNum(pt.hi))
					}
					tip += ")"
				}
				pt.tip = tip
				pts = append(pts, pt)
			}
			if len(pts) == 0 {
				continue
			}
			name := s.Name
			if len(figs) > 1 {
				name += " " + f.Label()
			}
			c.series = append(c.series, series{name: name, legend: name, source: s.Name, figure: f.Label(),
				color: palette[si%len(palette)], dashed: fi > 0, points: pts, marks: true, dots: true})
		}
	}
	if kind == LatencyByTest {
		label = latencyLabel(basis)
	}
	c.x = axis{lo: 0.5, hi: float64(len(cats)) + 0.5}
	for ci, k := range cats {
		// Two lines: the test and connection, then the size; with many
		// tests the connection goes with the size, so that names do not
		// run into each other.
		first, second := textfmt.Clean(k.Test), sizeLabel(k.Size)
		if k.Connection != "" && len(cats) > 6 {
			second = textfmt.Clean(k.Connection) + " " + second
		} else if k.Connection != "" {
			first += " " + textfmt.Clean(k.Connection)
		}
		c.x.ticks = append(c.x.ticks, tick{float64(ci + 1), first + "\n" + second})
	}
	// A value far below the others would sit on the axis of a linear scale.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range c.series {
		for _, pt := range s.points {
			lo, hi = min(lo, pt.y), max(hi, pt.y)
			if pt.ci {
				lo, hi = min(lo, pt.lo), max(hi, pt.hi)
			}
		}
	}
	// Some room above and below, so that no dot sits on the frame.
	if lo > 0 && hi > 20*lo {
		c.y = logAxis(label+", log scale", lo/1.1, hi*1.1)
	} else {
		c.y = linearAxis(label, hi*1.05)
	}
	return c
}

// smallNum writes v as textfmt.Num does, and a value below 0.1 with three
// significant digits ("0.00131") rather than rounded to nothing.
func smallNum(v float64) string {
	if v != 0 && math.Abs(v) < 0.1 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return textfmt.Num(v)
}

// intervals are the over-time charts of key k: bandwidth and latency per
// interval of each duration-mode result.
func (p *plotter) intervals(k report.Key) []*chart {
	name := k.String()
	bw := &chart{kind: BandwidthIntervals, key: k, title: name + ": bandwidth per interval"}
	lat := &chart{kind: LatencyIntervals, key: k, title: name + ": latency per interval"}
	end, basis := 0.0, ""
	lines := 0
	p.each(k, func(si int, r *report.Result) {
		if len(r.Intervals) == 0 {
			return
		}
		sname := p.seriesName(si, r)
		var bwPts, p50, p99 []point
		for _, iv := range r.Intervals {
			x := iv.StartS + iv.DurationS/2
			end = max(end, iv.StartS+iv.DurationS)
			span := fmt.Sprintf("%s-%s s", textfmt.Num(iv.StartS), textfmt.Num(iv.StartS+iv.DurationS))
			if b := iv.Bandwidth; b != nil {
				bwPts = append(bwPts, point{x: x, y: b.Gbps, tip: fmt.Sprintf("%s: %s Gbit/s", span, textfmt.Num(b.Gbps))})
			}
			if l := iv.Latency; l != nil && l.Count > 0 {
				basis = l.Basis
				p50 = append(p50, point{x: x, y: l.P50Ns / 1e3, tip: fmt.Sprintf("%s: p50 %s µs", span, textfmt.Num(l.P50Ns/1e3))})
				p99 = append(p99, point{x: x, y: l.P99Ns / 1e3, tip: fmt.Sprintf("%s: p99 %s µs", span, textfmt.Num(l.P99Ns/1e3))})
			}
		}
		color := p.colorOf(si, lines)
		lines++
		src := p.srcs[si].Name
		if len(bwPts) > 0 {
			bw.series = append(bw.series, series{name: sname, legend: p.legendOf(si, sname), source: src, run: r.Run,
				figure: "Gbit/s", color: color, points: bwPts, marks: true})
		}
		if len(p50) > 0 {
			lat.series = append(lat.series,
				series{name: sname + " p50", legend: p.legendOf(si, sname) + " p50", source: src, run: r.Run,
					figure: "p50", color: color, points: p50, marks: true},
				series{name: sname + " p99", legend: p.legendOf(si, sname) + " p99", source: src, run: r.Run,
					figure: "p99", color: color, dashed: true, points: p99, marks: true})
		}
	})
	var out []*chart
	for _, c := range []*chart{bw, lat} {
		if len(c.series) == 0 {
			continue
		}
		c.x = linearAxis("time since the end of warm-up, s", end)
		label := "bandwidth, Gbit/s"
		if c == lat {
			label = latencyLabel(basis)
		}
		_, hi := seriesRange(c.series)
		c.y = linearAxis(label, hi)
		out = append(out, c)
	}
	return out
}

// seriesRange is the smallest and largest y of the lines.
func seriesRange(ss []series) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, pt := range s.points {
			lo, hi = min(lo, pt.y), max(hi, pt.y)
		}
	}
	return lo, hi
}

// linearAxis runs from 0 to a round number at or above top, with about
// five ticks of 1, 2 or 5 times a power of ten.
func linearAxis(label string, top float64) axis {
	if !(top > 0) || math.IsInf(top, 0) {
		top = 1
	}
	raw := top / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 5} {
		if raw <= m*mag {
			step = m * mag
			break
		}
	}
	n := int(math.Ceil(top/step - 1e-9))
	a := axis{label: label, lo: 0, hi: float64(n) * step}
	for i := 0; i <= n; i++ {
		v := float64(i) * step
		a.ticks = append(a.ticks, tick{v, tickNum(v)})
	}
	return a
}

// logAxis runs over whole decades around [lo, hi], a tick at each decade
// (and at 2 and 5 times it when there are fewer than three).
func logAxis(label string, lo, hi float64) axis {
	if !(lo > 0) || math.IsInf(lo, 0) {
		lo = 1
	}
	if !(hi > lo) || math.IsInf(hi, 0) {
		hi = lo * 10
	}
	d0 := int(math.Floor(math.Log10(lo) + 1e-9))
	d1 := int(math.Ceil(math.Log10(hi) - 1e-9))
	if d1 <= d0 {
		d1 = d0 + 1
	}
	a := axis{label: label, log: true, lo: math.Pow(10, float64(d0)), hi: math.Pow(10, float64(d1))}
	mults := []float64{1}
	if d1-d0 < 3 {
		mults = []float64{1, 2, 5}
	}
	for d := d0; d <= d1; d++ {
		for _, m := range mults {
			if v := m * math.Pow(10, float64(d)); v <= a.hi*(1+1e-9) {
				a.ticks = append(a.ticks, tick{v, tickNum(v)})
			}
		}
	}
	return a
}

// tickNum labels a tick: "0.0001", "0.5", "200", "20k", "1M".
func tickNum(v float64) string {
	switch {
	case v > 0 && v < 0.01:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case v >= 1e6:
		return textfmt.Num(v/1e6) + "M"
	case v >= 1e4:
		return textfmt.Num(v/1e3) + "k"
	}
	return textfmt.Num(v)
}

// sizeAxis is a log2 axis over the message sizes, a tick at each size when
// there are few, else at powers of two (every second, fourth, ... when
// there are many).
func sizeAxis(sizes []int) axis {
	sizes = slices.Compact(slices.Sorted(slices.Values(sizes)))
	lo, hi := float64(sizes[0]), float64(sizes[len(sizes)-1])
	if hi <= lo {
		hi = lo * 2
	}
	a := axis{label: "message size", log: true, lo: lo, hi: hi}
	if len(sizes) <= 10 {
		for _, s := range sizes {
			a.ticks = append(a.ticks, tick{float64(s), sizeLabel(s)})
		}
		return a
	}
	e0, e1 := int(math.Ceil(math.Log2(max(lo, 1))-1e-9)), int(math.Floor(math.Log2(hi)+1e-9))
	e1 = min(e1, 62) // 1<<e stays an int
	step := 1
	for (e1-e0)/step > 11 {
		step *= 2
	}
	for e := e0; e <= e1; e++ {
		if e%step == 0 {
			a.ticks = append(a.ticks, tick{math.Ldexp(1, e), sizeLabel(1 << e)})
		}
	}
	return a
}

// sizeLabel writes a size in bytes with a binary prefix when it is a whole
// number of them: "2 B", "4 KiB", "1 MiB", "1500 B".
func sizeLabel(n int) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return strconv.Itoa(n>>u.shift) + " " + u.name
		}
	}
	return strconv.Itoa(n) + " B"
}

// --- the page ---

// Chart geometry, in SVG user units.
const (
	plotW, plotH                         = 720, 330
	padLeft, padRight, padTop, padBottom = 64, 30, 14, 48
)

const pageStyle = `body{font:14px/1.4 system-ui,-apple-system,"Segoe UI","DejaVu Sans",sans-serif;color:#1b1b1b;background:#fff;margin:24px;max-width:1560px}
h1{font-size:20px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sources{margin:0 0 8px;padding-left:20px;color:#333}.sources code{font-size:12px;color:#555}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:20px}
figure.chart{margin:0;border:1px solid #e3e3e3;border-radius:6px;padding:10px 12px}
figcaption{font-weight:600;margin-bottom:4px}
svg{width:100%;height:auto;display:block;font-size:12px}
svg text{font-family:system-ui,"DejaVu Sans",sans-serif;fill:#333}
.grid line{stroke:#e8e8e8;stroke-width:1}.frame{fill:none;stroke:#999;stroke-width:1}
.series path{fill:none;stroke-width:1.8;stroke-linejoin:round;stroke-linecap:round}
.series path.dashed{stroke-dasharray:6 4}.series circle{stroke:#fff;stroke-width:1}
ul.legend{list-style:none;margin:6px 0 0;padding:0;display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12px}
ul.legend span.swatch{display:inline-block;width:22px;height:0;border-top:3px solid;vertical-align:middle;margin-right:6px}
ul.legend span.swatch.dashed{border-top-style:dashed}
.notes{color:#8a4b00}.empty{color:#555}
figure.heatmap{overflow-x:auto}svg.heatmap{width:auto;max-width:100%;height:auto}
.heatmap rect.gate{stroke:#000}.heatmap g.cells text{fill:#1b1b1b}.heatmap g.cells text.light{fill:#fff}
.heatmap g.cells text.failed{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}.heatmap rect.none{stroke:#ccc;stroke-width:1}
ul.legend span.box{display:inline-block;width:14px;height:14px;vertical-align:middle;margin-right:6px;border:1px solid #bbb;box-sizing:border-box}
ul.legend span.box.failed{background:repeating-linear-gradient(45deg,#6f6f6f 0 2px,#d4d4d4 2px 6px)}
ul.legend span.box.none{background:#fff}ul.legend span.box.gate{border:2px solid #000;background:#eaeff3}
ul.legend li.direction{flex-basis:100%;color:#333}`

func writePage(b *bytes.Buffer, srcs []report.Source, heat []*heatmap, charts []*chart, notes []string) {
	names := make([]string, len(srcs))
	for i, s := range srcs {
		names[i] = s.Name
	}
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	// Self-contained: nothing may be fetched and nothing may run.
	csp := "default-src 'none'; style-src 'unsafe-inline'"
	for _, h := range heat {
		if h.image() {
			csp += "; img-src data:" // a large heatmap's embedded image
			break
		}
	}
	fmt.Fprintf(b, "<meta http-equiv=\"Content-Security-Policy\" content=\"%s\">\n", csp)
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	fmt.Fprintf(b, "<title>rdmabench: %s</title>\n", esc(strings.Join(names, ", ")))
	b.WriteString("<style>\n" + pageStyle + "\n</style>\n</head>\n<body>\n")
	fmt.Fprintf(b, "<h1>rdmabench: %s</h1>\n<ul class=\"sources\">\n", esc(strings.Join(names, " vs ")))
	for _, s := range srcs {
		fmt.Fprintf(b, "<li data-source=\"%s\"><b>%s</b>: %s</li>\n", esc(s.Name), esc(s.Name), esc(sourceLine(s.Doc)))
	}
	b.WriteString("</ul>\n")
	if len(charts) == 0 && len(heat) == 0 {
		b.WriteString("<p class=\"empty\">Nothing to plot: no result with a figure.</p>\n")
	}
	if len(heat) > 0 {
		fmt.Fprintf(b, "<section id=\"%s\" data-kind=\"%s\">\n<h2>%s</h2>\n<div class=\"charts\">\n", MeshHeatmap, MeshHeatmap, esc(kindTitle(MeshHeatmap)))
		for i, h := range heat {
			writeHeatmap(b, h, i)
		}
		b.WriteString("</div>\n</section>\n")
	}
	for _, kind := range Kinds {
		var cs []*chart
		for _, c := range charts {
			if c.kind == kind {
				cs = append(cs, c)
			}
		}
		if len(cs) == 0 {
			continue
		}
		fmt.Fprintf(b, "<section id=\"%s\" data-kind=\"%s\">\n<h2>%s</h2>\n<div class=\"charts\">\n", kind, kind, esc(kindTitle(kind)))
		for _, c := range cs {
			writeChart(b, c)
		}
		b.WriteString("</div>\n</section>\n")
	}
	if len(notes) > 0 {
		b.WriteString("<h2>Not plotted</h2>\n<ul class=\"notes\">\n")
		for _, n := range notes {
			fmt.Fprintf(b, "<li>%s</li>\n", esc(n))
		}
		b.WriteString("</ul>\n")
	}
	b.WriteString("</body>\n</html>\n")
}

func kindTitle(kind string) string {
	switch kind {
	case MeshHeatmap:
		return "Fabric matrix: every link, rows the client rank, columns the server rank"
	case StepBandwidth:
		return "Load pattern: each receiver's aggregate bandwidth per step (ranks filled, hosts open)"
	case StepShare:
		return "Load pattern: each receiver's aggregate over its nominal rate per step (ranks filled, hosts open)"
	case StepFairness:
		return "Load pattern: Jain's index of each receiver's flows per step (1: all got the same)"
	case StepLatency:
		return "Load pattern: latency under the load per step (the probe beside the flows; p50 filled, p99 open)"
	case Spectrum:
		return "Latency percentile spectrum"
	case LatencyBySize:
		return "Latency by message size (p50 solid, p99 dashed)"
	case BandwidthBySize:
		return "Bandwidth by message size"
	case MsgRateBySize:
		return "Message rate by message size"
	case LatencyByTest:
		return "Latency per test (p50 filled, p99 open; median of the runs, bars the 95% confidence interval)"
	case BandwidthByTest:
		return "Bandwidth per test (median of the runs, bars the 95% confidence interval)"
	case MsgRateByTest:
		return "Message rate per test (median of the runs, bars the 95% confidence interval)"
	case BandwidthIntervals:
		return "Bandwidth over time"
	case LatencyIntervals:
		return "Latency over time (p50 solid, p99 dashed)"
	}
	return kind
}

// sourceLine says where a document comes from: tool, time, hosts (a
// mesh's ranks and hosts), device, command.
func sourceLine(doc *report.Document) string {
	parts := []string{cmp.Or(doc.Tool.Name, "rdmabench") + " " + cmp.Or(doc.Tool.Version, "devel")}
	if !doc.Start.IsZero() {
		parts = append(parts, doc.Start.UTC().Format("2006-01-02 15:04:05Z"))
	}
	if n := doc.Runs(); n > 1 {
		parts = append(parts, strconv.Itoa(n)+" runs")
	}
	h := doc.Hosts.Local
	host := h.Hostname
	switch {
	case doc.Mesh != nil:
		// A mesh is between its ranks, never loopback; rank 0's host and
		// device are one rank's.
		host = "mesh of " + doc.Mesh.Shape()
	case doc.Hosts.Remote != nil:
		host += " → " + doc.Hosts.Remote.Hostname
	case host != "":
		host += " (loopback)"
	}
	if host != "" {
		parts = append(parts, host)
	}
	if d := h.Device; d != nil && doc.Mesh == nil {
		dev := d.Name
		if d.Firmware != "" {
			dev += ", fw " + d.Firmware
		}
		if d.ActiveMTU > 0 {
			dev += ", MTU " + strconv.Itoa(d.ActiveMTU)
		}
		parts = append(parts, dev)
	}
	if doc.Partial {
		parts = append(parts, "partial")
	}
	if stop := doc.Stopped(); stop != "" {
		parts = append(parts, "stopped: "+stop)
	}
	line := textfmt.Clean(strings.Join(parts, ", "))
	if len(doc.Command) > 0 {
		line += ": " + textfmt.Clean(strings.Join(doc.Command, " "))
	}
	return line
}

func writeChart(b *bytes.Buffer, c *chart) {
	fmt.Fprintf(b, "<figure class=\"chart\" data-kind=\"%s\" data-test=\"%s\" data-connection=\"%s\"", c.kind, esc(c.key.Test), esc(c.key.Connection))
	if !c.sweep {
		fmt.Fprintf(b, " data-size=\"%d\"", c.key.Size)
	}
	if c.pattern != "" {
		fmt.Fprintf(b, " data-pattern=\"%s\"", esc(c.pattern))
	}
	fmt.Fprintf(b, " data-series=\"%d\">\n<figcaption>%s</figcaption>\n", len(c.series), esc(c.title))
	fmt.Fprintf(b, "<svg viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\" xmlns=\"http://www.w3.org/2000/svg\">\n", plotW, plotH, esc(c.title))
	x0, x1 := float64(padLeft), float64(plotW-padRight)
	y0, y1 := float64(plotH-padBottom), float64(padTop)
	px := func(v float64) float64 { return x0 + c.x.pos(v)*(x1-x0) }
	py := func(v float64) float64 { return y0 + c.y.pos(v)*(y1-y0) }

	b.WriteString("<g class=\"grid\">")
	for _, t := range c.x.ticks {
		fmt.Fprintf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>", f1(px(t.v)), f1(y0), f1(px(t.v)), f1(y1))
	}
	for _, t := range c.y.ticks {
		fmt.Fprintf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>", f1(x0), f1(py(t.v)), f1(x1), f1(py(t.v)))
	}
	b.WriteString("</g>\n")
	fmt.Fprintf(b, "<rect class=\"frame\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\"/>\n", f1(x0), f1(y1), f1(x1-x0), f1(y0-y1))
	b.WriteString("<g class=\"axis x\">")
	for _, t := range c.x.ticks {
		first, second, two := strings.Cut(t.label, "\n")
		if !two {
			fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" text-anchor=\"middle\">%s</text>", f1(px(t.v)), f1(y0+16), esc(t.label))
			continue
		}
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" text-anchor=\"middle\">%s<tspan x=\"%s\" dy=\"14\">%s</tspan></text>",
			f1(px(t.v)), f1(y0+16), esc(first), f1(px(t.v)), esc(second))
	}
	if c.x.label != "" {
		fmt.Fprintf(b, "<text class=\"label\" x=\"%s\" y=\"%d\" text-anchor=\"middle\">%s</text>", f1((x0+x1)/2), plotH-8, esc(c.x.label))
	}
	b.WriteString("</g>\n")
	b.WriteString("<g class=\"axis y\">")
	for _, t := range c.y.ticks {
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" text-anchor=\"end\">%s</text>", f1(x0-6), f1(py(t.v)+4), esc(t.label))
	}
	fmt.Fprintf(b, "<text class=\"label\" transform=\"translate(14 %s) rotate(-90)\" text-anchor=\"middle\">%s</text></g>\n", f1((y0+y1)/2), esc(c.y.label))

	for _, s := range c.series {
		fmt.Fprintf(b, "<g class=\"series\" data-source=\"%s\" data-run=\"%d\" data-figure=\"%s\" data-points=\"%d\">", esc(s.source), s.run, esc(s.figure), len(s.points))
		if s.dots {
			writeDots(b, &s, px, py)
			continue
		}
		fmt.Fprintf(b, "<title>%s</title><path", esc(s.name))
		if s.dashed {
			b.WriteString(" class=\"dashed\"")
		}
		fmt.Fprintf(b, " stroke=\"%s\" d=\"", s.color)
		for i, pt := range s.points {
			if i == 0 {
				b.WriteByte('M')
			} else {
				b.WriteByte('L')
			}
			b.WriteString(f1(px(pt.x)) + "," + f1(py(pt.y)))
		}
		b.WriteString("\"/>")
		if s.marks {
			for _, pt := range s.points {
				fmt.Fprintf(b, "<circle cx=\"%s\" cy=\"%s\" r=\"3\" fill=\"%s\"><title>%s</title></circle>", f1(px(pt.x)), f1(py(pt.y)), s.color, esc(s.name+": "+pt.tip))
			}
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n<ul class=\"legend\">")
	seen := map[string]bool{}
	for _, s := range c.series {
		if seen[s.legend] {
			continue
		}
		seen[s.legend] = true
		cls := "swatch"
		if s.dashed {
			cls += " dashed"
		}
		fmt.Fprintf(b, "<li><span class=\"%s\" style=\"border-color:%s\"></span>%s</li>", cls, s.color, esc(s.legend))
	}
	b.WriteString("</ul>\n</figure>\n")
}

// writeDots draws the points of s unjoined: each a dot (open for a dashed
// series) with its key and tooltip, over a bar for its confidence
// interval.
func writeDots(b *bytes.Buffer, s *series, px, py func(float64) float64) {
	fmt.Fprintf(b, "<title>%s</title>", esc(s.name))
	fill := s.color
	if s.dashed {
		fill = "#fff"
	}
	for _, pt := range s.points {
		if pt.ci {
			fmt.Fprintf(b, "<line class=\"ci\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" style=\"stroke:%s;stroke-width:2;stroke-linecap:round\"/>",
				f1(px(pt.x)), f1(py(pt.lo)), f1(px(pt.x)), f1(py(pt.hi)), s.color)
		}
		fmt.Fprintf(b, "<circle class=\"dot\" data-key=\"%s\" cx=\"%s\" cy=\"%s\" r=\"4.5\" style=\"fill:%s;stroke:%s;stroke-width:2\"><title>%s</title></circle>",
			esc(pt.key), f1(px(pt.x)), f1(py(pt.y)), fill, s.color, esc(s.name+": "+pt.tip))
	}
	b.WriteString("</g>\n")
}

// pos is where v falls on the axis, from 0 (lo) to 1 (hi), clamped.
func (a axis) pos(v float64) float64 {
	var p float64
	if a.log {
		if v <= 0 {
			return 0
		}
		p = math.Log(v/a.lo) / math.Log(a.hi/a.lo)
	} else {
		p = (v - a.lo) / (a.hi - a.lo)
	}
	if math.IsNaN(p) {
		return 0
	}
	return min(max(p, 0), 1)
}

// f1 writes a coordinate with one decimal.
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func esc(s string) string { return html.EscapeString(s) }
