package plot

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// maxHeatmapRanks is the most ranks a heatmap is drawn for: 512 ranks are
// 261,632 cells, each with its tooltip, about 20 MB of page per matrix.
// Larger matrices are listed under the charts instead.
const maxHeatmapRanks = 512

// heatmapText is the most ranks whose cells have their value written in
// them; larger matrices have it in each cell's tooltip only.
const heatmapText = 16

// heatmap is the fabric matrix of one figure of a mesh document: an N×N
// grid of cells, rows the client rank, columns the server rank.
type heatmap struct {
	source string // the document's name
	multi  bool   // several sources: the caption names this one
	mx     *report.Matrix
	mesh   *report.Mesh
	// median is the centre of the colour scale: the matrix's median, or
	// when the document has none, the median of its values; 0 when no
	// value is usable.
	median float64
	// agg is, for a heatmap of a mesh's aggregate, HeatmapHosts (mx is the
	// host matrix, mesh the hosts as ranks) or HeatmapRails (mx the NIC
	// grid: rows the rails, columns the hosts); aggFig its figure and why
	// the mesh's size.
	agg    string
	aggFig *report.AggregateFigure
	why    string
}

// cellKind says what a cell of a heatmap shows.
type cellKind int

const (
	cellValue  cellKind = iota // a measured figure
	cellFailed                 // a link that failed (or a value that is no number)
	cellNone                   // a link that was not scheduled
)

// heatCell is one cell off the diagonal.
type heatCell struct {
	kind  cellKind
	v     float64
	bad   float64 // how much worse than the median: v/median (latency), median/v (bandwidth)
	tip   string
	gate  bool   // the link failed a gate for this figure
	text  string // written in the cell (small matrices)
	color string
}

// heatmaps are the heatmaps of the mesh documents among the sources, one
// per matrix, in document order.
func (p *plotter) heatmaps() []*heatmap {
	var out []*heatmap
	for _, s := range p.srcs {
		m := s.Doc.Mesh
		if m == nil {
			continue
		}
		if len(m.Matrices) == 0 && m.Aggregate != nil {
			out = append(out, p.aggregateHeatmaps(s)...)
			continue
		}
		if len(m.Matrices) == 0 && m.Pattern != nil {
			continue // a load pattern's steps have charts of their own
		}
		if len(m.Matrices) == 0 {
			p.notes = append(p.notes, fmt.Sprintf("%s: mesh of %d ranks: no link measured a figure, no matrix to draw (%d links failed)",
				s.Name, m.Size, len(m.FailedLinks())))
			continue
		}
		for i := range m.Matrices {
			mx := &m.Matrices[i]
			n := len(mx.Values)
			if n == 0 {
				continue
			}
			if n > maxHeatmapRanks {
				p.notes = append(p.notes, fmt.Sprintf("%s: %s %s: %d ranks, more than the %d a heatmap is drawn for (rdmabench report -o csv %s lists every link)",
					s.Name, mx.Key(), mx.Figure, n, maxHeatmapRanks, s.Name))
				continue
			}
			out = append(out, &heatmap{source: s.Name, multi: len(p.srcs) > 1, mx: mx, mesh: m, median: matrixCentre(mx)})
		}
		if m.ShowsAggregate() && len(m.Aggregate.Hosts) > 1 {
			// Past the ranks a table shows by rank: the aggregate as well
			// (but for ranks all on one host, which it would not tell apart).
			out = append(out, p.aggregateHeatmaps(s)...)
		}
	}
	return out
}

// matrixCentre is the median the colours are relative to: the matrix's
// own, else the median of its positive finite values; 0 when there is none.
func matrixCentre(mx *report.Matrix) float64 {
	if mx.Median != nil && *mx.Median > 0 && !math.IsInf(*mx.Median, 0) {
		return *mx.Median
	}
	var all []float64
	for _, row := range mx.Values {
		for _, v := range row {
			if v != nil && *v > 0 && !math.IsInf(*v, 0) {
				all = append(all, *v)
			}
		}
	}
	if len(all) == 0 {
		return 0
	}
	return report.Median(all)
}

// title is the heatmap's caption: test, figure, unit, median, and the
// document when several are plotted.
func (h *heatmap) title() string {
	what := h.mx.Figure.Name()
	if h.mx.Figure.IsLatency() {
		what += " latency"
	}
	s := fmt.Sprintf("%s: %s, %s", h.mx.Key(), what, meshUnit(h.mx.Figure))
	if h.mx.Duplex != "" {
		s += ", " + h.mx.Between()
	}
	if h.median > 0 {
		s += "; median " + h.mx.Figure.Format(h.median)
	} else {
		s += "; no link measured"
	}
	s = h.aggregateTitle(s)
	if h.multi {
		s += " (" + h.source + ")"
	}
	return s
}

// host is the host name of a rank, "" when the document does not say.
func (h *heatmap) host(rank int) string {
	for i := range h.mesh.Ranks {
		if r := &h.mesh.Ranks[i]; r.Rank == rank && r.Host != nil {
			return textfmt.Clean(r.Host.Hostname)
		}
	}
	return ""
}

// cells works out every cell off the diagonal, row by row: cells[i][j] for
// i != j (the diagonal entries are left zero).
func (h *heatmap) cells() [][]heatCell {
	mx, m := h.mx, h.mesh
	n := len(mx.Values)
	links := make(map[[2]int]*report.MeshLink, len(m.Links))
	for i := range m.Links {
		l := &m.Links[i]
		links[[2]int{l.From, l.To}] = l
		if l.Duplex {
			links[[2]int{l.To, l.From}] = l
		}
	}
	gates := map[[2]int][]string{}
	for _, f := range m.Failures {
		if f.From >= 0 && f.Figure == mx.Figure && f.Test == mx.Test && f.Connection == mx.Connection && f.Size == mx.Size {
			k := [2]int{f.From, f.To}
			gates[k] = append(gates[k], f.Kind+" failed: "+textfmt.Clean(f.Message))
		}
	}
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = h.host(i)
	}
	unit := meshUnit(mx.Figure)
	out := make([][]heatCell, n)
	for i := range n {
		out[i] = make([]heatCell, n)
		row := mx.Values[i]
		for j := range n {
			if i == j {
				continue
			}
			var v *float64
			if j < len(row) {
				v = row[j]
			}
			c := &out[i][j]
			tip := strconv.Itoa(i) + " → " + strconv.Itoa(j)
			if hosts[i] != "" || hosts[j] != "" {
				tip += " (" + cmp.Or(hosts[i], "?") + " → " + cmp.Or(hosts[j], "?") + ")"
			}
			tip += ": "
			l := links[[2]int{i, j}]
			valid := v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) && *v >= 0
			switch {
			case valid && (l == nil || l.Error == ""):
				c.kind, c.v = cellValue, *v
				x := *v
				if mx.Figure.IsLatency() {
					x /= 1e3
				}
				c.text = cellText(x)
				tip += mx.Figure.Name() + " " + mx.Figure.Format(*v)
				if h.median > 0 {
					c.bad = *v / h.median
					if !mx.Figure.IsLatency() {
						c.bad = h.median / *v // 0 Gbit/s: +Inf, as bad as it gets
					}
					tip += ", " + ratioText(*v/h.median) + " the median"
				}
				c.color = heatColor(c.bad)
			case v == nil && l == nil && (len(m.Links) > 0 || h.agg != ""):
				c.kind = cellNone
				tip += "not measured (not scheduled)"
			default:
				c.kind = cellFailed
				why := ""
				if l != nil {
					// The link's own error, else its test's of this key, else
					// any of its tests'.
					why = cmp.Or(l.Error, resultError(l, mx.Key()), l.Failure())
					if why == "" && v == nil {
						why = "no " + mx.Figure.Name() + " measured"
					}
				}
				switch {
				case valid:
					// A figure beside the link's error: say both.
					why += "; measured " + mx.Figure.Format(*v)
				case v != nil:
					why = strings.TrimPrefix(why+"; ", "; ") + fmt.Sprintf("the value %v %s is not a measurement", *v, unit)
				}
				tip += "failed"
				if why != "" {
					tip += ": " + textfmt.Clean(why)
				}
			}
			if g := gates[[2]int{i, j}]; len(g) > 0 {
				c.gate = true
				tip += "; " + strings.Join(g, "; ")
			}
			c.tip = tip
		}
	}
	return out
}

// meshUnit is the unit of a matrix's cells as plots show them.
func meshUnit(f report.Figure) string {
	if f.IsLatency() {
		return "µs"
	}
	return f.Unit()
}

// resultError is the error of a link's result of key k, if any.
func resultError(l *report.MeshLink, k report.Key) string {
	for i := range l.Results {
		if r := &l.Results[i]; r.Key() == k && r.Error != "" {
			return r.Error
		}
	}
	for i := range l.ResultErrors {
		if e := &l.ResultErrors[i]; e.Key() == k {
			return e.Error
		}
	}
	return ""
}

// cellText writes a value for its cell in three or four figures: "8978",
// "26.1", "1.23", "0.064".
func cellText(x float64) string {
	a := math.Abs(x)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
	d := min(1-int(math.Floor(math.Log10(a))), 9)
	return strconv.FormatFloat(x, 'f', d, 64)
}

// ratioText writes a ratio to the median: "4×", "1.2×", "25% of".
func ratioText(r float64) string {
	switch {
	case math.IsInf(r, 0) || math.IsNaN(r):
		return fmt.Sprint(r) + "×"
	case r == 0:
		return "0×"
	case r >= 0.95:
		return twoFigures(r) + "×"
	}
	return twoFigures(100*r) + "% of"
}

// twoFigures writes x > 0 with two significant figures (all of its whole
// part), without trailing zeros: "3.8", "1", "0.98", "16", "250".
func twoFigures(x float64) string {
	s := strconv.FormatFloat(x, 'f', max(0, 1-int(math.Floor(math.Log10(x)))), 64)
	if strings.Contains(s, ".") {
		s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// heatStops is the colour scale, by log2 of how much worse than the median
// a link is: blue better, a pale grey-blue at the median, then yellow,
// orange and red to a dark red at 16 times worse. Blue against orange and
// red stays apart for the common colour-vision deficiencies.
var heatStops = []struct {
	at      float64
	r, g, b uint8
}{
	{-1, 0x6b, 0xae, 0xd6},
	{-0.3, 0xc6, 0xdb, 0xef},
	{0, 0xea, 0xef, 0xf3},
	{0.263, 0xfe, 0xe3, 0x91}, // 1.2×
	{0.585, 0xfe, 0xc4, 0x4f}, // 1.5×
	{1, 0xf0, 0x7f, 0x26},     // 2×
	{2, 0xd7, 0x30, 0x1f},     // 4×
	{4, 0x7f, 0x00, 0x00},     // 16×
}

// heatLegend are the ratios the legend shows a swatch of.
var heatLegend = []float64{0.5, 1, 1.2, 1.5, 2, 4, 16}

// heatColor is the colour of a cell bad times worse than the median (0:
// no median to compare with).
func heatColor(bad float64) string {
	r, g, b := heatRGB(bad)
	return rgb(r, g, b)
}

// heatRGB is heatColor's colour as its components.
func heatRGB(bad float64) (r, g, b uint8) {
	if bad == 0 || math.IsNaN(bad) {
		return 0xc9, 0xd3, 0xdc
	}
	x := math.Log2(bad) // +Inf for infinitely bad: clamped below
	first, last := heatStops[0], heatStops[len(heatStops)-1]
	if x <= first.at {
		return first.r, first.g, first.b
	}
	if x >= last.at {
		return last.r, last.g, last.b
	}
	for k := 1; k < len(heatStops); k++ {
		a, b := heatStops[k-1], heatStops[k]
		if x <= b.at {
			t := (x - a.at) / (b.at - a.at)
			mix := func(p, q uint8) uint8 { return uint8(math.Round(float64(p) + t*(float64(q)-float64(p)))) }
			return mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)
		}
	}
	return last.r, last.g, last.b
}

func rgb(r, g, b uint8) string { return fmt.Sprintf("#%02x%02x%02x", r, g, b) }

// darkColor reports whether white text reads better than black on c.
func darkColor(c string) bool {
	v, err := strconv.ParseUint(strings.TrimPrefix(c, "#"), 16, 32)
	if err != nil {
		return false
	}
	lin := func(x uint64) float64 {
		f := float64(x&0xff) / 255
		if f <= 0.04045 {
			return f / 12.92
		}
		return math.Pow((f+0.055)/1.055, 2.4)
	}
	l := 0.2126*lin(v>>16) + 0.7152*lin(v>>8) + 0.0722*lin(v)
	return l < 0.22
}

// Heatmap geometry, in SVG user units (CSS pixels at the natural size).
const (
	heatGrid    = 640 // the grid's side, about
	heatMaxCell = 56
	heatMinCell = 2
	heatFont    = 11 // labels
)

// labelStep is every how many ranks a row and column gets a label: every
// one when the cells are tall enough for the text, else every 2, 5, 10,
// 20, 50, ...
func labelStep(cell float64) int {
	for _, s := range []int{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000} {
		if float64(s)*cell >= heatFont+2 {
			return s
		}
	}
	return 1000
}

// writeHeatmap writes heatmap h as a <figure class="chart heatmap">: the
// grid (no rect on the diagonal), the rank labels, and a legend of the
// colour scale and the marks. Its data-ranks, data-cells, data-failed and
// data-gates attributes count what it draws; each cell is a <rect> of <g
// class="cells"> with its tooltip, class "failed" for a link that failed,
// "none" for one not scheduled, "gate" for one that failed a gate.
func writeHeatmap(b *bytes.Buffer, h *heatmap, id int) {
	if h.image() {
		writeImageHeatmap(b, h, id)
		return
	}
	mx := h.mx
	n := len(mx.Values)
	cells := h.cells()
	lay := heatLayout{n: n, cell: min(heatMaxCell, max(heatMinCell, math.Floor(heatGrid/float64(n)*4)/4))}
	lay.step = labelStep(lay.cell)
	labels := h.labels(lay.step)
	longest := 0
	for _, l := range labels {
		longest = max(longest, len([]rune(l)))
	}
	labelW := math.Ceil(float64(longest)*heatFont*0.62) + 8
	lay.left, lay.top = 22+labelW, 22+labelW
	lay.side = lay.cell * float64(n)
	w, ht := lay.left+lay.side+12, lay.top+lay.side+10
	failed, none, gated := countCells(cells)
	med := ""
	if h.median > 0 {
		med = strconv.FormatFloat(h.median, 'g', -1, 64)
	}
	aggAttr := ""
	if h.agg != "" {
		aggAttr = fmt.Sprintf(" data-aggregate=\"%s\"", h.agg)
	}
	fmt.Fprintf(b, "<figure class=\"chart heatmap\" data-kind=\"%s\"%s data-source=\"%s\" data-test=\"%s\" data-connection=\"%s\" data-size=\"%d\" data-figure=\"%s\" data-unit=\"%s\" data-median=\"%s\" data-ranks=\"%d\" data-cells=\"%d\" data-failed=\"%d\" data-gates=\"%d\">\n",
		MeshHeatmap, aggAttr, esc(h.source), esc(mx.Test), esc(mx.Connection), mx.Size, esc(string(mx.Figure)), esc(mx.Unit), med, n, n*n-n, failed, gated)
	fmt.Fprintf(b, "<figcaption>%s</figcaption>\n", esc(h.title()))
	fmt.Fprintf(b, "<svg class=\"heatmap\" width=\"%s\" height=\"%s\" viewBox=\"0 0 %s %s\" role=\"img\" aria-label=\"%s\" xmlns=\"http://www.w3.org/2000/svg\">\n",
		f1(w), f1(ht), f1(w), f1(ht), esc(h.title()))
	hatch := fmt.Sprintf("hatch%d", id)
	// Hatching: on cells too small to show stripes, denser, so that a
	// failed link still reads darker than any measured one near the median.
	hs, stripe := max(4, min(8, lay.cell/3)), 1.0/3
	if lay.cell < 8 {
		stripe = 0.5
	}
	fmt.Fprintf(b, "<defs><pattern id=\"%s\" patternUnits=\"userSpaceOnUse\" width=\"%s\" height=\"%s\" patternTransform=\"rotate(45)\"><rect width=\"%s\" height=\"%s\" fill=\"#d4d4d4\"/><rect width=\"%s\" height=\"%s\" fill=\"#6f6f6f\"/></pattern></defs>\n",
		hatch, f1(hs), f1(hs), f1(hs), f1(hs), f1(max(1, hs*stripe)), f1(hs))
	lay.writeAxes(b, h, labels)
	lay.writeCells(b, cells, hatch)
	fmt.Fprintf(b, "<rect class=\"frame\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\"/>\n", f1(lay.left), f1(lay.top), f1(lay.side), f1(lay.side))
	b.WriteString("</svg>\n")
	writeHeatLegend(b, h, failed > 0, none > 0, gated > 0)
	b.WriteString("</figure>\n")
}

// heatLayout is where a heatmap's matrix of n ranks stands: cells of cell
// points from (left, top), side in all, a label every step ranks.
type heatLayout struct {
	n                     int
	cell, left, top, side float64
	step                  int
}

// labels are the row and column labels: the rank, and its host when every
// host is short and every rank has a label (step 1).
func (h *heatmap) labels(step int) []string {
	n := len(h.mx.Values)
	withHosts := step == 1 && n <= heatmapText
	for i := range n {
		if hn := h.host(i); len([]rune(hn)) > 16 || hn == "" {
			withHosts = false
		}
	}
	labels := make([]string, n)
	for i := range n {
		labels[i] = strconv.Itoa(i)
		if withHosts {
			labels[i] += " " + h.host(i)
		}
	}
	return labels
}

// countCells counts the cells off the diagonal that failed, that no link
// ran in, and that failed a gate.
func countCells(cells [][]heatCell) (failed, none, gated int) {
	for i := range cells {
		for j := range cells[i] {
			if i == j {
				continue
			}
			switch cells[i][j].kind {
			case cellFailed:
				failed++
			case cellNone:
				none++
			}
			if cells[i][j].gate {
				gated++
			}
		}
	}
	return failed, none, gated
}

// writeAxes writes the axis titles and the labels of the rows and columns.
func (lay heatLayout) writeAxes(b *bytes.Buffer, h *heatmap, labels []string) {
	who := "rank"
	if h.agg != "" {
		who = "host"
	}
	fmt.Fprintf(b, "<g class=\"axis\"><text class=\"label\" x=\"%s\" y=\"13\" text-anchor=\"middle\">server %s (to)</text>", f1(lay.left+lay.side/2), who)
	fmt.Fprintf(b, "<text class=\"label\" transform=\"translate(13 %s) rotate(-90)\" text-anchor=\"middle\">client %s (from)</text>", f1(lay.top+lay.side/2), who)
	fs := min(heatFont, max(7, float64(lay.step)*lay.cell*0.8))
	for i := 0; i < lay.n; i += lay.step {
		c := float64(i)*lay.cell + lay.cell/2
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" text-anchor=\"end\" font-size=\"%s\">%s</text>", f1(lay.left-5), f1(lay.top+c+fs*0.35), f1(fs), esc(labels[i]))
		fmt.Fprintf(b, "<text transform=\"translate(%s %s) rotate(-90)\" font-size=\"%s\">%s</text>", f1(lay.left+c+fs*0.35), f1(lay.top-5), f1(fs), esc(labels[i]))
	}
	b.WriteString("</g>\n")
}

// writeCells writes the cells, failed ones hatched with the pattern
// hatch: a gap between them when they are large enough to spare one, and
// each one's figure in it when the matrix is small enough to read them.
func (lay heatLayout) writeCells(b *bytes.Buffer, cells [][]heatCell, hatch string) {
	cell, n := lay.cell, lay.n
	gap := 0.0
	if cell >= 8 {
		gap = 1
	}
	text := n <= heatmapText
	tfs := 0.0
	if text {
		longest := len("failed")
		for i := range n {
			for j := range n {
				longest = max(longest, len(cells[i][j].text))
			}
		}
		tfs = min(12, (cell-gap-4)/(0.6*float64(longest)))
	}
	cs, gw := f1(cell-gap), max(1, min(2.5, cell/8))
	fmt.Fprintf(b, "<g class=\"cells\" stroke-width=\"%s\">\n", f1(gw))
	for i := range n {
		y := f1(lay.top + float64(i)*cell + gap/2)
		for j := range n {
			if i == j {
				continue
			}
			c := &cells[i][j]
			x := f1(lay.left + float64(j)*cell + gap/2)
			var cls []string
			fill := c.color
			switch c.kind {
			case cellFailed:
				cls, fill = append(cls, "failed"), "url(#"+hatch+")"
			case cellNone:
				cls, fill = append(cls, "none"), "#ffffff"
			}
			if c.gate {
				cls = append(cls, "gate")
			}
			b.WriteString("<rect")
			if len(cls) > 0 {
				fmt.Fprintf(b, " class=\"%s\"", strings.Join(cls, " "))
			}
			fmt.Fprintf(b, " x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"><title>%s</title></rect>", x, y, cs, cs, fill, esc(c.tip))
			if text {
				t, cls := c.text, ""
				switch {
				case c.kind == cellFailed:
					t, cls = "failed", " class=\"failed\""
				case c.kind == cellValue && darkColor(c.color):
					cls = " class=\"light\""
				}
				if t != "" && tfs >= 5 {
					fmt.Fprintf(b, "<text%s x=\"%s\" y=\"%s\" text-anchor=\"middle\" font-size=\"%s\">%s</text>",
						cls, f1(lay.left+float64(j)*cell+cell/2), f1(lay.top+float64(i)*cell+cell/2+tfs*0.35), f1(tfs), esc(t))
				}
			}
		}
		b.WriteByte('\n')
	}
	b.WriteString("</g>\n")
}

// writeHeatLegend writes what the colours and marks of h mean: which way
// is bad, a swatch per step of the scale with its value, then failed,
// unscheduled and gate-failed links when there are any.
func writeHeatLegend(b *bytes.Buffer, h *heatmap, failed, none, gated bool) {
	f := h.mx.Figure
	bad := "high latency is bad: red cells are slower than the median"
	if !f.IsLatency() {
		bad = "low " + f.Name() + " is bad: red cells are below the median"
	}
	b.WriteString("<ul class=\"legend heat\">")
	fmt.Fprintf(b, "<li class=\"direction\">%s; rows ran the client end, columns the server</li>", esc(bad))
	if h.median > 0 {
		for k, r := range heatLegend {
			v := h.median * r
			if !f.IsLatency() {
				v = h.median / r
			}
			label := f.Format(v)
			if r != 1 {
				label += " (" + ratioText(v/h.median) + " the median)"
			} else {
				label += " (the median)"
			}
			switch {
			case k == 0 && f.IsLatency():
				label = "≤ " + label
			case k == 0:
				label = "≥ " + label
			case k == len(heatLegend)-1 && f.IsLatency():
				label = "≥ " + label
			case k == len(heatLegend)-1:
				label = "≤ " + label
			}
			fmt.Fprintf(b, "<li><span class=\"box\" style=\"background:%s\"></span>%s</li>", heatColor(r), esc(label))
		}
	}
	if failed {
		b.WriteString("<li><span class=\"box failed\"></span>failed</li>")
	}
	if none {
		b.WriteString("<li><span class=\"box none\"></span>not measured</li>")
	}
	if gated {
		b.WriteString("<li><span class=\"box gate\"></span>failed a gate (--limit-*, --outlier)</li>")
	}
	b.WriteString("</ul>\n")
}
