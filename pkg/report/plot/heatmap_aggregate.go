package plot

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// Aggregate heatmaps of a mesh (the data-aggregate attribute of their
// figure): per host pair, and per NIC (a rail's row, a host's column).
const (
	HeatmapHosts = "hosts"
	HeatmapRails = "rails"
)

// maxHeatmapRectHosts is the most hosts whose host matrix is drawn a rect
// (with its tooltip) a cell: 128 hosts are 16,256 cells, about 2 MB of
// page. Larger ones are drawn as an image.
const maxHeatmapRectHosts = 128

// image says whether heatmap h is drawn as an image (one pixel per cell)
// rather than a rect per cell: the NIC grid, and a host matrix of more
// than maxHeatmapRectHosts hosts.
func (h *heatmap) image() bool {
	return h.agg == HeatmapRails || (h.agg == HeatmapHosts && len(h.mx.Values) > maxHeatmapRectHosts)
}

// aggregateHeatmaps are the heatmaps of a mesh's aggregate, per figure:
// the host matrix (each cell the median of the links between two hosts'
// NICs) and, with more than one rail, the NIC grid (rows the rails,
// columns the hosts, each cell the median of the NIC's links).
func (p *plotter) aggregateHeatmaps(s report.Source) []*heatmap {
	m := s.Doc.Mesh
	a := m.Aggregate
	ranks := max(m.Size, len(m.Ranks))
	// The hosts as the ranks of a mesh of their own: the rect heatmap's
	// rows, columns and tooltips.
	hostMesh := &report.Mesh{Size: len(a.Hosts)}
	for i, name := range a.Hosts {
		hostMesh.Ranks = append(hostMesh.Ranks, report.MeshRank{Rank: i, State: report.RankOK, Host: &report.Host{Hostname: name}})
	}
	var out []*heatmap
	for i := range a.Figures {
		f := &a.Figures[i]
		mx := &report.Matrix{Test: f.Test, Connection: f.Connection, Size: f.Size, Figure: f.Figure, Unit: f.Unit,
			Values: f.HostMedian, Median: f.Median}
		why := fmt.Sprintf("%d ranks on %d hosts", ranks, len(a.Hosts))
		out = append(out, &heatmap{source: s.Name, multi: len(p.srcs) > 1, mx: mx, mesh: hostMesh, median: matrixCentre(mx),
			agg: HeatmapHosts, aggFig: f, why: why})
		if a.Rails > 1 && len(f.NICs) > 0 {
			grid := &report.Matrix{Test: f.Test, Connection: f.Connection, Size: f.Size, Figure: f.Figure, Unit: f.Unit,
				Values: make([][]*float64, a.Rails), Median: f.Median}
			for r := range grid.Values {
				grid.Values[r] = make([]*float64, len(a.Hosts))
			}
			for j := range f.NICs {
				n := &f.NICs[j]
				if n.Host != nil && n.Rail != nil && *n.Rail < a.Rails && *n.Host < len(a.Hosts) && *n.Rail >= 0 && *n.Host >= 0 {
					grid.Values[*n.Rail][*n.Host] = n.Median
				}
			}
			out = append(out, &heatmap{source: s.Name, multi: len(p.srcs) > 1, mx: grid, mesh: hostMesh, median: matrixCentre(mx),
				agg: HeatmapRails, aggFig: f, why: why})
		}
	}
	return out
}

// aggregateTitle is the caption of an aggregate heatmap: what a cell is,
// and why the mesh is not drawn per rank.
func (h *heatmap) aggregateTitle(s string) string {
	switch h.agg {
	case HeatmapHosts:
		return s + "; per host pair: each cell the median of the links from the row's host's NICs to the column's (" + h.why + ": an aggregate, not cells per rank)"
	case HeatmapRails:
		return s + "; per NIC: each cell the median of the links of the column's host's NIC on the row's rail, both ways (" + h.why + ": an aggregate, not cells per rank)"
	}
	return s
}

// writeImageHeatmap writes an aggregate heatmap as a <figure class="chart
// heatmap"> holding an SVG with the grid as an embedded PNG, one pixel a
// cell, scaled without smoothing, and its labels and legend: a page of a
// million cells as rects would take a hundred megabytes.
func writeImageHeatmap(b *bytes.Buffer, h *heatmap, id int) {
	mx := h.mx
	rows := len(mx.Values)
	cols := 0
	for _, r := range mx.Values {
		cols = max(cols, len(r))
	}
	img := image.NewRGBA(image.Rect(0, 0, max(cols, 1), max(rows, 1)))
	var values, none int
	for i, row := range mx.Values {
		for j := range cols {
			var v *float64
			if j < len(row) {
				v = row[j]
			}
			c := color.RGBA{0xff, 0xff, 0xff, 0xff}
			if v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) && *v >= 0 {
				values++
				bad := 0.0
				if h.median > 0 {
					bad = *v / h.median
					if !mx.Figure.IsLatency() {
						bad = h.median / *v
					}
				}
				r, g, b := heatRGB(bad)
				c = color.RGBA{r, g, b, 0xff}
			} else {
				none++
			}
			img.SetRGBA(j, i, c)
		}
	}
	var pngData bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	_ = enc.Encode(&pngData, img) // into a buffer: no error but from the image, which is valid
	// Cells of whole pixels, the grid about heatGrid wide; rows of the NIC
	// grid taller, so that a rail reads as a band.
	cw := max(1, math.Floor(heatGrid/float64(max(cols, 1))))
	ch := cw
	if h.agg == HeatmapRails {
		ch = max(cw, math.Floor(heatGrid/4/float64(max(rows, 1))))
	}
	labelW := 60.0
	left, top := 22+labelW, 22.0+labelW
	gw, gh := cw*float64(cols), ch*float64(rows)
	w, ht := left+gw+12, top+gh+10
	med := ""
	if h.median > 0 {
		med = strconv.FormatFloat(h.median, 'g', -1, 64)
	}
	title := h.title()
	fmt.Fprintf(b, "<figure class=\"chart heatmap\" data-kind=\"%s\" data-aggregate=\"%s\" data-source=\"%s\" data-test=\"%s\" data-connection=\"%s\" data-size=\"%d\" data-figure=\"%s\" data-unit=\"%s\" data-median=\"%s\" data-rows=\"%d\" data-columns=\"%d\" data-cells=\"%d\" data-empty=\"%d\">\n",
		MeshHeatmap, h.agg, esc(h.source), esc(mx.Test), esc(mx.Connection), mx.Size, esc(string(mx.Figure)), esc(mx.Unit), med, rows, cols, values, none)
	fmt.Fprintf(b, "<figcaption>%s</figcaption>\n", esc(title))
	fmt.Fprintf(b, "<svg class=\"heatmap\" width=\"%s\" height=\"%s\" viewBox=\"0 0 %s %s\" role=\"img\" aria-label=\"%s\" xmlns=\"http://www.w3.org/2000/svg\">\n",
		f1(w), f1(ht), f1(w), f1(ht), esc(title))
	rowWord, colWord := "client host (from)", "server host (to)"
	if h.agg == HeatmapRails {
		rowWord, colWord = "rail", "host"
	}
	fmt.Fprintf(b, "<g class=\"axis\"><text class=\"label\" x=\"%s\" y=\"13\" text-anchor=\"middle\">%s</text>", f1(left+gw/2), colWord)
	fmt.Fprintf(b, "<text class=\"label\" transform=\"translate(13 %s) rotate(-90)\" text-anchor=\"middle\">%s</text>", f1(top+gh/2), rowWord)
	cstep := labelStep(cw)
	for j := 0; j < cols; j += cstep {
		c := float64(j)*cw + cw/2
		fmt.Fprintf(b, "<text transform=\"translate(%s %s) rotate(-90)\" font-size=\"%d\">%d</text>", f1(left+c+4), f1(top-5), heatFont, j)
	}
	rstep := labelStep(ch)
	for i := 0; i < rows; i += rstep {
		c := float64(i)*ch + ch/2
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" text-anchor=\"end\" font-size=\"%d\">%d</text>", f1(left-5), f1(top+c+4), heatFont, i)
	}
	b.WriteString("</g>\n")
	fmt.Fprintf(b, "<image id=\"heatimg%d\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" preserveAspectRatio=\"none\" style=\"image-rendering:pixelated\" href=\"data:image/png;base64,%s\"/>\n",
		id, f1(left), f1(top), f1(gw), f1(gh), base64.StdEncoding.EncodeToString(pngData.Bytes()))
	fmt.Fprintf(b, "<rect class=\"frame\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\"/>\n", f1(left), f1(top), f1(gw), f1(gh))
	b.WriteString("</svg>\n")
	writeHeatLegend(b, h, false, none > 0, false)
	writeWorstList(b, h)
	b.WriteString("</figure>\n")
}

// writeWorstList lists under an image heatmap, which has no tooltips, the
// worst cells' links: the NICs of the worst median, or the hosts'.
func writeWorstList(b *bytes.Buffer, h *heatmap) {
	f := h.aggFig
	if f == nil {
		return
	}
	rows := f.Hosts
	what := "hosts"
	if h.agg == HeatmapRails {
		rows, what = f.NICs, "NICs"
	}
	worst := (&report.AggregateFigure{Figure: f.Figure, NICs: rows}).WorstNICs(report.MeshWorstNICs)
	if len(worst) == 0 {
		return
	}
	fmt.Fprintf(b, "<p class=\"worst\">The %d %s of the worst median:</p>\n<ol class=\"worst\">", len(worst), what)
	for _, r := range worst {
		var name []string
		if r.Rank != nil {
			name = append(name, "rank "+strconv.Itoa(*r.Rank))
		}
		if r.Host != nil && *r.Host >= 0 && *r.Host < len(h.mesh.Ranks) {
			name = append(name, "host "+strconv.Itoa(*r.Host)+" "+textfmt.Clean(h.host(*r.Host)))
		}
		if r.Rail != nil {
			name = append(name, "rail "+strconv.Itoa(*r.Rail))
		}
		s := strings.Join(name, ", ")
		if r.Median != nil {
			s += ": median " + f.Figure.Format(*r.Median)
		}
		if r.Worst != nil {
			s += fmt.Sprintf("; worst link %d → %d, %s", r.Worst.From, r.Worst.To, f.Figure.Format(r.Worst.Value))
		}
		fmt.Fprintf(b, "<li>%s</li>", esc(s))
	}
	b.WriteString("</ol>\n")
}
