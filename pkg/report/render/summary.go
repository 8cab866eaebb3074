package render

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// The table of a document of repeated runs: one row per test, connection
// and size with the median of each figure over the runs, and under it the
// confidence interval of each median.

const (
	summaryLatencyTitle   = "Latency, %s: median of the runs, under it ± its 95%% confidence interval (rtt/2: one-way; rtt: round trip)"
	summaryBandwidthTitle = "Bandwidth, payload only: median of the runs, under it ± its 95% confidence interval (k, M, G: 10^3, 10^6, 10^9)"
)

var summaryLatencyLabels = []string{"test", "conn", "bytes", "runs", "basis", "min", "p50", "mean", "stdev", "p90", "p99", "p99.9", "p99.99", "max"}

// summaryBandwidthLabels are the labels of a summary's bandwidth section
// in u: its medians are those of the average (each run's peak is in the
// JSON).
func summaryBandwidthLabels(u rateUnits) []string {
	return []string{"test", "conn", "bytes", "runs", "dir", "QPs", "BW " + u.bw.Name, "MiB/s", u.msg.Name}
}

// summarySectionRates are the rate units of the bandwidth section that
// starts with the first of sums: those of their medians.
func summarySectionRates(sums []report.Summary) rateUnits {
	var bs []*report.Bandwidth
	for i := range sums {
		if summarySection(&sums[i]) != sectionBandwidth {
			break
		}
		g, ok1 := sums[i].Spread(report.FigGbps)
		m, ok2 := sums[i].Spread(report.FigMsgRate)
		if ok1 && ok2 {
			bs = append(bs, &report.Bandwidth{Gbps: g.Median, Mmsgps: m.Median})
		}
	}
	return unitsOf(bs)
}

func summarySection(s *report.Summary) section {
	switch {
	case s.Latency != nil:
		return sectionLatency
	case s.Bandwidth != nil:
		return sectionBandwidth
	case strings.HasSuffix(s.Test, "-bw"):
		return sectionBandwidth
	}
	return sectionLatency
}

// buildSummaryRows makes two rows per summary (medians, then intervals;
// only the medians with too few runs for an interval), in sections like
// buildRows.
func buildSummaryRows(doc *report.Document, sums []report.Summary, notes *footnotes) []row {
	groups := doc.Groups() // in the order of sums
	var rows []row
	cur := sectionNone
	unit := textfmt.UnitUs
	var rates rateUnits
	for i := range sums {
		s := &sums[i]
		sec := summarySection(s)
		if sec != cur {
			if sec == sectionLatency {
				unit = summarySectionUnit(sums[i:])
			} else {
				rates = summarySectionRates(sums[i:])
			}
			rows = startSection(rows, cur, sec, fmt.Sprintf(summaryLatencyTitle, unit.Name), summaryLatencyLabels, summaryBandwidthTitle, summaryBandwidthLabels(rates))
			cur = sec
		}
		note := notes.refs(i)
		first := []string{textfmt.Clean(s.Test), cmp.Or(textfmt.Clean(s.Connection), "-"), strconv.Itoa(s.Size), strconv.Itoa(s.Runs - s.Failed)}
		figs, kind := report.LatencyFigures, ""
		if sec == sectionLatency && s.Latency != nil {
			kind = basisLabel(s.Latency.Basis)
		}
		var lead []string
		if sec == sectionBandwidth {
			figs = report.BandwidthFigures
			kind, lead = "->", []string{"-"}
			if r := firstMeasured(groups[i].Results); r != nil {
				kind = dirArrow(r)
				notes.bidir = notes.bidir || r.Reversed()
				if r.Bidirectional() {
					kind = "<->"
					notes.bidir = true
				}
				if r.QPs > 0 {
					lead[0] = strconv.Itoa(r.QPs)
				}
			}
		}
		if _, ok := s.Spread(figs[0]); !ok {
			msg := fmt.Sprintf("every run failed (%d)", s.Runs)
			if s.Failed == 0 {
				msg = "no run measured anything"
			}
			rows = append(rows, errorRow(first, msg, note))
			continue
		}
		medians := append([]string{kind}, lead...)
		ranges := append([]string{""}, make([]string, len(lead))...)
		bounded := false
		for _, f := range figs {
			sp, _ := s.Spread(f)
			medians = append(medians, summaryCell(f, sp.Median, unit, rates))
			ranges = append(ranges, sp.PctRange())
			bounded = bounded || sp.Bounded()
		}
		rows = append(rows, row{cells: append(first, medians...), suffix: note})
		if bounded {
			rows = append(rows, row{cells: append([]string{"", "", "", ""}, ranges...)})
		} else {
			// A line of "±∞" says nothing: the footnote says why.
			notes.unbounded = true
		}
	}
	return rows
}

// summarySectionUnit is the latency unit of the section that starts with
// the first of sums: that of their medians' p50s.
func summarySectionUnit(sums []report.Summary) textfmt.LatencyUnit {
	var p50s []float64
	for i := range sums {
		if summarySection(&sums[i]) != sectionLatency {
			break
		}
		if sp, ok := sums[i].Spread(report.FigP50); ok && sp.N > 0 {
			p50s = append(p50s, sp.Median)
		}
	}
	return textfmt.LatencyUnitOf(p50s)
}

// summaryCell formats a median in its column's unit: a latency in u, a
// rate in rates.
func summaryCell(f report.Figure, v float64, u textfmt.LatencyUnit, rates rateUnits) string {
	switch f {
	case report.FigGbps:
		return rates.bw.Cell(v)
	case report.FigMsgRate:
		return rates.msg.Cell(v)
	}
	return tableValue(f, v, u)
}

// tableValue formats a figure the way the per-run table does, a latency
// in u.
func tableValue(f report.Figure, v float64, u textfmt.LatencyUnit) string {
	switch {
	case f.IsLatency():
		return u.Cell(v)
	case f == report.FigMsgRate:
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func firstMeasured(rs []*report.Result) *report.Result {
	for _, r := range rs {
		if r.Error == "" {
			return r
		}
	}
	if len(rs) > 0 {
		return rs[0]
	}
	return nil
}

// newSummaryFootnotes numbers, per summary, the warnings of its runs (each
// text once, with the runs it came from) and the errors of its failed runs.
func newSummaryFootnotes(doc *report.Document) *footnotes {
	f := &footnotes{byResult: map[int][]int{}, failed: map[int]string{}, causes: map[string]int{}}
	fails := Failures(doc)
	failureOf := map[*report.Result]*Failure{}
	for j := range fails {
		for _, i := range fails[j].Results {
			failureOf[&doc.Results[i]] = &fails[j]
		}
	}
	groups := doc.Groups()
	for i := range groups {
		g := &groups[i]
		add := func(text string) {
			f.texts = append(f.texts, text)
			f.byResult[i] = append(f.byResult[i], len(f.texts))
		}
		var order []string
		runs := map[string][]int{}
		for _, r := range g.Results {
			for _, w := range r.Warnings {
				w = textfmt.Clean(w)
				if _, ok := runs[w]; !ok {
					order = append(order, w)
				}
				runs[w] = append(runs[w], r.Run)
			}
		}
		for _, w := range order {
			add(fmt.Sprintf("%s %d B: %s (%s)", textfmt.Clean(g.Key.Test), g.Key.Size, w, runsLabel(runs[w], len(g.Results))))
		}
		// Each cause of the group's failed runs, in a footnote that says
		// it once for every test and run it failed.
		for _, r := range g.Results {
			if fl := failureOf[r]; fl != nil {
				if n := f.cause(doc, fl); !slices.Contains(f.byResult[i], n) {
					f.byResult[i] = append(f.byResult[i], n)
				}
			}
		}
	}
	return f
}

// runsLabel says which runs a warning came from: "every run", "run 2",
// "runs 1-3, 5".
func runsLabel(runs []int, total int) string {
	if len(runs) == total && total > 1 {
		return "every run"
	}
	parts := textfmt.IntRanges(runs)
	if len(runs) == 1 {
		return "run " + parts[0]
	}
	return "runs " + strings.Join(parts, ", ")
}
