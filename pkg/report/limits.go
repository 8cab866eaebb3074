package report

import (
	"fmt"
	"strconv"
	"time"
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
}

func (l Limits) list() []limit {
	var ls []limit
	for _, x := range []struct {
		fig Figure
		d   time.Duration
	}{{FigP50, l.P50}, {FigP99, l.P99}, {FigP999, l.P999}, {FigMean, l.Mean}, {FigMax, l.Max}} {
		if x.d > 0 {
			ls = append(ls, limit{x.fig, float64(x.d.Nanoseconds()), string(x.fig)})
		}
	}
	if l.MinGbps > 0 {
		ls = append(ls, limit{FigGbps, l.MinGbps, "bandwidth"})
	}
	if l.MinMsgRate > 0 {
		ls = append(ls, limit{FigMsgRate, l.MinMsgRate / 1e6, "message rate"})
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
func CheckLimits(doc *Document, l Limits) []LimitFailure {
	if doc == nil || l.IsZero() {
		return nil
	}
	var fails []LimitFailure
	checked := map[Figure]bool{}
	check := func(lim limit, k Key, run, runs int, v float64) {
		checked[lim.fig] = true
		var over bool
		if lim.fig.HigherIsBetter() {
			over = v < lim.value
		} else {
			over = v > lim.value
		}
		if !over {
			return
		}
		f := LimitFailure{Key: k, Run: run, Runs: runs, Figure: lim.fig, Value: v, Limit: lim.value}
		where := k.String()
		if run > 0 {
			where += fmt.Sprintf(", run %d", run)
		}
		val := lim.fig.Format(v)
		if runs > 1 {
			val += fmt.Sprintf(" (median of %d runs)", runs)
		}
		op := ">"
		if lim.fig.HigherIsBetter() {
			op = "<"
		}
		f.Message = fmt.Sprintf("%s: %s %s %s limit %s", where, lim.name, val, op, formatLimit(lim))
		fails = append(fails, f)
	}
	lims := l.list()
	if doc.Repeated() {
		for _, s := range Summarize(doc) {
			for _, lim := range lims {
				if sp, ok := s.Spread(lim.fig); ok && sp.N > 0 {
					check(lim, s.Key(), 0, sp.N, sp.Median)
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
					check(lim, KeyOf(r), r.Run, 0, v)
				}
			}
		}
	}
	for _, lim := range lims {
		if !checked[lim.fig] {
			kind := "latency"
			if lim.fig.HigherIsBetter() {
				kind = "bandwidth"
			}
			fails = append(fails, LimitFailure{Figure: lim.fig, Limit: lim.value,
				Message: fmt.Sprintf("limit %s %s: no result has a %s to check it against", lim.name, formatLimit(lim), kind)})
		}
	}
	return fails
}

func formatLimit(lim limit) string {
	switch {
	case lim.fig.IsLatency():
		return num(lim.value/1e3) + " µs"
	case lim.fig == FigMsgRate:
		return strconv.FormatFloat(lim.value, 'f', -1, 64) + " Mmsg/s"
	}
	return strconv.FormatFloat(lim.value, 'f', -1, 64) + " Gbit/s"
}
