package render

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// meshTableHosts is the most hosts whose host matrix a table prints; a
// mesh of more hosts gets a row per host instead.
const meshTableHosts = 16

// aggregateRanksLine counts the ranks, their hosts and rails, and their
// states.
func aggregateRanksLine(m *report.Mesh) string {
	states := map[string]int{}
	for i := range m.Ranks {
		states[m.Ranks[i].State]++
	}
	s := fmt.Sprintf("%d on %d hosts, %d rails", max(m.Size, len(m.Ranks)), len(m.Aggregate.Hosts), m.Aggregate.Rails)
	var parts []string
	for _, st := range []string{report.RankOK, report.RankLost, report.RankUnregistered} {
		if states[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", states[st], st))
		}
	}
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s + "; the per-link figures are in the link stream"
}

// meshRankNames names ranks in an aggregate's text: "12 (node7 rail 3)".
type meshRankNames struct {
	a    *report.MeshAggregate
	host []int
	rail []int
}

func newMeshRankNames(m *report.Mesh) meshRankNames {
	r := meshRankNames{a: m.Aggregate}
	r.host, r.rail = m.RankPlaces()
	return r
}

func (r meshRankNames) hostName(h int) string {
	if h >= 0 && h < len(r.a.Hosts) {
		return r.a.Hosts[h]
	}
	return "?"
}

func (r meshRankNames) rank(k int) string {
	if k < 0 || k >= len(r.host) {
		return strconv.Itoa(k)
	}
	return fmt.Sprintf("%d (%s rail %d)", k, r.hostName(r.host[k]), r.rail[k])
}

func (r meshRankNames) link(w *report.WorstLink) string {
	if w == nil {
		return "-"
	}
	return r.rank(w.From) + " -> " + r.rank(w.To)
}

// writeAggregateText writes a mesh's aggregate: per figure its rails,
// its host matrix (or, past meshTableHosts hosts, a row per host) and its
// worst NICs.
func writeAggregateText(b *bytes.Buffer, m *report.Mesh, md bool, width int) {
	a := m.Aggregate
	names := newMeshRankNames(m)
	for i := range a.Figures {
		f := &a.Figures[i]
		fig := f.Figure
		what := fig.Name()
		if fig.IsLatency() {
			what += " latency"
		}
		u := aggregateUnit(f)
		cell := func(v *float64) string { return meshCell(fig, v, u) }
		head := fmt.Sprintf("%s: %s (%s), %d links", f.Key(), what, meshTableUnit(fig, u), f.Links)
		if f.Median != nil {
			head += "; median of the links " + formatIn(fig, *f.Median, u)
		}
		b.WriteByte('\n')
		heading(b, head, md)
		slowWord := fmt.Sprintf("slow (≥ %d× the median)", report.SlowFactor)
		if !fig.IsLatency() {
			slowWord = fmt.Sprintf("slow (≤ 1/%d of the median)", report.SlowFactor)
		}
		if len(f.Rails) > 1 || (len(f.Rails) == 1 && a.Rails > 1) {
			rows := [][]string{{"rail", "links", "median", "tail (1%)", "worst", slowWord, "worst link"}}
			for _, r := range f.Rails {
				rows = append(rows, []string{strconv.Itoa(*r.Rail), strconv.Itoa(r.Links), cell(r.Median),
					cell(r.Tail), worstValue(fig, r.Worst, u), strconv.Itoa(r.Slow), names.link(r.Worst)})
			}
			b.WriteByte('\n')
			heading(b, "per rail (the links between NICs of one rail)", md)
			writeRows(b, rows, md, width)
		}
		if len(a.Hosts) <= meshTableHosts {
			b.WriteByte('\n')
			heading(b, "per host pair: the median of the links from the row's host to the column's", md)
			rows := [][]string{{"from\\to"}}
			for h := range a.Hosts {
				rows[0] = append(rows[0], strconv.Itoa(h))
			}
			for h, row := range f.HostMedian {
				r := []string{strconv.Itoa(h) + " " + a.Hosts[h]}
				for _, v := range row {
					r = append(r, cell(v))
				}
				rows = append(rows, r)
			}
			writeRows(b, rows, md, width)
		} else {
			b.WriteByte('\n')
			heading(b, "per host (its links both ways)", md)
			rows := [][]string{{"host", "links", "median", "tail (1%)", "worst", slowWord, "worst link"}}
			for _, r := range f.Hosts {
				rows = append(rows, []string{strconv.Itoa(*r.Host) + " " + names.hostName(*r.Host), strconv.Itoa(r.Links),
					cell(r.Median), cell(r.Tail), worstValue(fig, r.Worst, u), strconv.Itoa(r.Slow), names.link(r.Worst)})
			}
			writeRows(b, rows, md, width)
		}
		if nics := f.WorstNICs(report.MeshWorstNICs); len(nics) > 0 {
			what := "NICs"
			if a.Rails <= 1 {
				what = "ranks"
			}
			b.WriteByte('\n')
			heading(b, fmt.Sprintf("the %d %s of the worst median", len(nics), what), md)
			rows := [][]string{{"rank", "links", "median", "tail (1%)", "worst", slowWord, "worst link"}}
			for _, r := range nics {
				rows = append(rows, []string{names.rank(*r.Rank), strconv.Itoa(r.Links), cell(r.Median),
					cell(r.Tail), worstValue(fig, r.Worst, u), strconv.Itoa(r.Slow), names.link(r.Worst)})
			}
			writeRows(b, rows, md, width)
		}
	}
}

func worstValue(f report.Figure, w *report.WorstLink, u textfmt.LatencyUnit) string {
	if w == nil {
		return "-"
	}
	return meshCell(f, &w.Value, u)
}

// aggregateUnit is the latency unit of an aggregate figure's tables:
// that of its NICs' medians.
func aggregateUnit(f *report.AggregateFigure) textfmt.LatencyUnit {
	var vs []float64
	for _, r := range f.NICs {
		if r.Median != nil {
			vs = append(vs, *r.Median)
		}
	}
	if len(vs) == 0 && f.Median != nil {
		vs = append(vs, *f.Median)
	}
	return textfmt.LatencyUnitOf(vs)
}

// heading writes a line of a mesh table: bold in Markdown.
func heading(b *bytes.Buffer, s string, md bool) {
	if md {
		fmt.Fprintf(b, "**%s**\n\n", mdEscape(s))
		return
	}
	b.WriteString(textfmt.Clean(s) + "\n")
}

// writeRows writes rows (the first the header) as aligned columns, the
// first left-aligned, in blocks of columns that each fit width (0: one
// block), or as a Markdown table.
func writeRows(b *bytes.Buffer, rows [][]string, md bool, width int) {
	if md {
		for i, r := range rows {
			b.WriteString("|")
			for _, c := range r {
				fmt.Fprintf(b, " %s |", mdEscape(c))
			}
			b.WriteByte('\n')
			if i == 0 {
				b.WriteString("|---|")
				for range r[1:] {
					b.WriteString("---:|")
				}
				b.WriteByte('\n')
			}
		}
		b.WriteByte('\n')
		return
	}
	var colw []int
	for _, r := range rows {
		for j, c := range r {
			if j >= len(colw) {
				colw = append(colw, 0)
			}
			colw[j] = max(colw[j], len([]rune(c)))
		}
	}
	for g, cols := range columnBlocks(colw, width) {
		if g > 0 {
			b.WriteByte('\n')
		}
		for _, r := range rows {
			var line strings.Builder
			for _, j := range cols {
				if j >= len(r) {
					break
				}
				c := r[j]
				pad := strings.Repeat(" ", colw[j]-len([]rune(c)))
				switch {
				case j == 0:
					line.WriteString(c + pad)
				case j == len(r)-1 && !isNumber(c):
					line.WriteString("  " + c)
				default:
					line.WriteString("  " + pad + c)
				}
			}
			b.WriteString(textfmt.Clean(strings.TrimRight(line.String(), " ")) + "\n")
		}
	}
}

// isNumber says whether a cell is a number (right-aligned) or "-".
func isNumber(s string) bool {
	if s == "-" || s == "" {
		return true
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}
