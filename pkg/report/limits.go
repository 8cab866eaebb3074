package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// Limits are absolute thresholds on the results of a run, for the simplest
// CI gate (`--limit-p99 20us --limit-bw 90Gbps`); perftest's -w/-y do the
// same. A zero field sets no limit. Latency limits apply on each test's
// basis (one-way for rtt/2 tests, the round trip for rtt tests).
type Limits struct {
	// A latency figure above its limit fails.
	P50, P99, P999, Mean, Max time.Duration
	// MinGbps: a bandwidth ([Result.Headline], Gbit/s) below it fails.
	MinGbps float64
	// MinMsgRate: a message rate (messages per second) below it fails.
	MinMsgRate float64
	// MinLinkFraction: an RDMA bandwidth below this fraction of the
	// link's nominal rate ([Effective.LinkGbps]) fails; TCP results are
	// not checked against it.
	MinLinkFraction float64
}

// IsZero reports whether l sets no limit.
func (l Limits) IsZero() bool { return l == Limits{} }

// LimitFailure is one figure of one test and size that misses a limit.
type LimitFailure struct {
	Key
	// Run is the run of the result that missed the limit; 0 in a
	// document of one run, and when the figure is the median of repeated
	// runs (Runs > 1).
	Run  int `json:"run,omitempty"`
	Runs int `json:"runs,omitempty"`
	// Figure, Value and Limit are in the figure's unit (ns for latency,
	// Gbit/s, Mmsg/s).
	Figure Figure  `json:"figure"`
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	// Message says it for a person: "write-lat RC 2 B: p99 23.4 µs >
	// limit 20 µs".
	Message string `json:"message"`
}

func (f LimitFailure) String() string { return f.Message }

type limit struct {
	fig   Figure
	value float64 // in the figure's unit
	name  string  // as messages show it
	// link, when set, makes the limit this fraction of each result's link
	// rate (value is then unused).
	link float64
}

// against returns the value of lim for a result whose link rate is
// linkGbps (the limit's own value when it is not relative to the link);
// ok is false when it is relative and the link rate is unknown.
func (lim limit) against(linkGbps float64) (float64, bool) {
	if lim.link == 0 {
		return lim.value, true
	}
	return lim.link * linkGbps, linkGbps > 0
}

func (l Limits) list() []limit {
	var ls []limit
	for _, x := range []struct {
		fig Figure
		d   time.Duration
	}{{FigP50, l.P50}, {FigP99, l.P99}, {FigP999, l.P999}, {FigMean, l.Mean}, {FigMax, l.Max}} {
		if x.d > 0 {
			ls = append(ls, limit{fig: x.fig, value: float64(x.d.Nanoseconds()), name: string(x.fig)})
		}
	}
	if l.MinGbps > 0 {
		ls = append(ls, limit{fig: FigGbps, value: l.MinGbps, name: "bandwidth"})
	}
	if l.MinMsgRate > 0 {
		ls = append(ls, limit{fig: FigMsgRate, value: l.MinMsgRate / 1e6, name: "message rate"})
	}
	if l.MinLinkFraction > 0 {
		ls = append(ls, limit{fig: FigGbps, link: l.MinLinkFraction, name: "bandwidth"})
	}
	return ls
}

// CheckLimits returns one LimitFailure per figure of a result of doc that
// misses a limit of l, in document order. In a document of repeated runs
// ([Document.Repeated]) the figure checked is the median over the runs
// of each test and size, so one slow run does not fail a gate on its own;
// otherwise each result is checked. Results with an error are not checked
// (the run fails on its own). A limit that no result of doc has a figure
// for (a latency limit on a bandwidth test) is a failure too, so that a
// misconfigured gate cannot pass silently.
func (doc *Document) CheckLimits(l Limits) []LimitFailure {
	if doc == nil || l.IsZero() {
		return nil
	}
	var fails []LimitFailure
	checked := map[limit]bool{}
	check := func(lim limit, k Key, run, runs int, v, linkGbps float64) {
		if lim.link > 0 && strings.HasPrefix(k.Test, "tcp-") {
			return // a TCP stream has no RDMA link to measure against
		}
		checked[lim] = true
		where := k.String()
		if run > 0 {
			where += fmt.Sprintf(", run %d", run)
		}
		limValue, ok := lim.against(linkGbps)
		if !ok {
			fails = append(fails, LimitFailure{Key: k, Run: run, Runs: runs, Figure: lim.fig, Value: v,
				Message: fmt.Sprintf("%s: %s %s: the result records no link rate to measure it against", where, lim.name, formatLimit(lim, 0))})
			return
		}
		var over bool
		if lim.fig.HigherIsBetter() {
			over = v < limValue
		} else {
			over = v > limValue
		}
		if !over {
			return
		}
		f := LimitFailure{Key: k, Run: run, Runs: runs, Figure: lim.fig, Value: v, Limit: limValue}
		val, limText := limitFigures(lim, v, linkGbps)
		if runs > 1 {
			val += fmt.Sprintf(" (median of %d runs)", runs)
		}
		op := ">"
		if lim.fig.HigherIsBetter() {
			op = "<"
		}
		f.Message = fmt.Sprintf("%s: %s %s %s limit %s", where, lim.name, val, op, limText)
		fails = append(fails, f)
	}
	lims := l.list()
	if doc.Repeated() {
		links := map[Key]float64{} // the link rate of each test and size (its runs ran alike)
		for i := range doc.Results {
			if r := &doc.Results[i]; r.Effective != nil && r.Effective.LinkGbps > 0 {
				links[r.Key()] = r.Effective.LinkGbps
			}
		}
		for _, s := range doc.Summarize() {
			for _, lim := range lims {
				if sp, ok := s.Spread(lim.fig); ok && sp.N > 0 {
					check(lim, s.Key(), 0, sp.N, sp.Median, links[s.Key()])
				}
			}
		}
	} else {
		for i := range doc.Results {
			r := &doc.Results[i]
			if r.Error != "" {
				continue
			}
			for _, lim := range lims {
				if v, ok := lim.fig.Of(r); ok {
					var link float64
					if r.Effective != nil {
						link = r.Effective.LinkGbps
					}
					check(lim, r.Key(), r.Run, 0, v, link)
				}
			}
		}
	}
	for _, lim := range lims {
		if !checked[lim] {
			kind := "a latency"
			if lim.fig.HigherIsBetter() {
				kind = "a bandwidth"
			}
			if lim.link > 0 {
				kind = "an RDMA bandwidth"
			}
			fails = append(fails, LimitFailure{Figure: lim.fig, Limit: lim.value,
				Message: fmt.Sprintf("limit %s %s: no result has %s to check it against", lim.name, formatLimit(lim, 0), kind)})
		}
	}
	return fails
}

// limitFigures write a figure v that misses lim and lim for one message,
// in the unit formatting of lim's figure (see [Figure.FormatAll]).
func limitFigures(lim limit, v, linkGbps float64) (val, limText string) {
	if lim.link > 0 {
		return lim.fig.FormatAll(v)[0], formatLimit(lim, linkGbps)
	}
	return lim.fig.FormatAll(v, lim.value)[0], limitFigure(lim.fig, lim.value, textfmt.LatencyUnitOf([]float64{v, lim.value}))
}

// formatLimit writes lim for a message, in the unit formatting of its
// figure; a limit relative to the link says what it makes of linkGbps
// (when known).
func formatLimit(lim limit, linkGbps float64) string {
	if lim.link > 0 {
		s := strconv.FormatFloat(100*lim.link, 'f', -1, 64) + "% of the link"
		if linkGbps > 0 {
			s += fmt.Sprintf(" (%s of %s Gbit/s)", textfmt.Num(lim.link*linkGbps), textfmt.Num(linkGbps))
		}
		return s
	}
	return limitFigure(lim.fig, lim.value, textfmt.LatencyUnitOf([]float64{lim.value}))
}

// limitFigure writes a limit of f (in f's unit) as a threshold given by
// a person: with the prefix its figures take in messages and the digits
// given ("90 Gbit/s", "500 Mbit/s", "1 Mmsg/s"), a latency in u with up
// to three decimals.
func limitFigure(f Figure, v float64, u textfmt.LatencyUnit) string {
	switch {
	case f.IsLatency():
		return textfmt.Num(v/u.Ns) + " " + u.Name
	case f == FigGbps:
		return textfmt.GbitLimit(v)
	case f == FigMsgRate:
		return textfmt.MmsgLimit(v)
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " " + f.Unit()
}
