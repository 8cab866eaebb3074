package main

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"golang.org/x/perf/benchmath"
)

// confidence is the level of every confidence interval.
const confidence = 0.95

// Agreement band: a ratio's interval inside it counts as agreement even
// when it excludes 1.
const (
	bandLo = 0.98
	bandHi = 1.02
)

// stat is the median of a set of values with its confidence interval.
type stat struct {
	N      int
	Center float64 // NaN when N == 0
	Lo, Hi float64 // ±Inf when N is too small for an interval
}

// summary computes the median of values and its confidence interval with
// benchmath's distribution-free summary (as benchstat). values is not
// modified.
func summary(values []float64) stat {
	if len(values) == 0 {
		return stat{Center: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1)}
	}
	s := benchmath.NewSample(slices.Clone(values), &benchmath.DefaultThresholds)
	sum := benchmath.AssumeNothing.Summary(s, confidence)
	lo, hi := sum.Lo, sum.Hi
	if math.IsNaN(lo) || math.IsNaN(hi) {
		lo, hi = math.Inf(-1), math.Inf(1)
	}
	return stat{N: len(values), Center: sum.Center, Lo: lo, Hi: hi}
}

// Bounded reports whether the interval is finite.
func (s stat) Bounded() bool { return !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0) }

// Agrees reports whether a ratio's interval contains 1 or lies within the
// agreement band.
func (s stat) Agrees() bool {
	if !s.Bounded() {
		return false
	}
	return (s.Lo <= 1 && 1 <= s.Hi) || (s.Lo >= bandLo && s.Hi <= bandHi)
}

type rowKey struct {
	Test     string
	Size     int
	Topology string
}

// figStat is one figure of one row.
type figStat struct {
	Ratio  stat    // per-pair ratios rdmabench / perftest
	PT, RB float64 // each tool's median figure over the same pairs; NaN: none
}

// rowSummary is one row of the comparison.
type rowSummary struct {
	rowKey
	Pairs    int // highest pair number: the pairs asked for
	Complete int // pairs where both runs succeeded
	Failed   int // failed runs, in pairs 1..Pairs
	Figs     [nFigs]figStat
	// PT and RB are each tool's settings (nil: no successful run);
	// Flags what the script added to rdmabench's command line.
	PT, RB map[string]string
	Flags  string
	// Mismatch lists what keeps the settings from matching; empty when
	// they match.
	Mismatch []string
}

// Latency reports whether the row is a latency test (else bandwidth).
func (r rowSummary) Latency() bool { return strings.HasSuffix(r.Test, "-lat") }

// summarize groups runs into rows, in the order rows first appear, and
// computes each row's statistics. Pair 0 is left out.
func summarize(runs []measurement) []rowSummary {
	var order []rowKey
	byRow := map[rowKey][]measurement{}
	for _, x := range runs {
		k := rowKey{x.Test, x.Size, x.Topology}
		if _, ok := byRow[k]; !ok {
			order = append(order, k)
		}
		byRow[k] = append(byRow[k], x)
	}
	var out []rowSummary
	for _, k := range order {
		if s, ok := summarizeRow(k, byRow[k]); ok {
			out = append(out, s)
		}
	}
	return out
}

func summarizeRow(k rowKey, runs []measurement) (rowSummary, bool) {
	s := rowSummary{rowKey: k}
	type pair struct{ pt, rb *measurement }
	pairs := map[int]*pair{}
	var ptSet, rbSet, flags []string
	for i := range runs {
		x := &runs[i]
		if x.Pair < 1 {
			continue
		}
		s.Pairs = max(s.Pairs, x.Pair)
		if !x.OK {
			s.Failed++
			continue
		}
		p := pairs[x.Pair]
		if p == nil {
			p = &pair{}
			pairs[x.Pair] = p
		}
		if x.Tool == perftest {
			p.pt = x
			ptSet = appendNew(ptSet, x.Settings)
		} else {
			p.rb = x
			rbSet = appendNew(rbSet, x.Settings)
			flags = appendNew(flags, x.Flags)
		}
	}
	if s.Pairs == 0 {
		return s, false
	}
	var ratios, pt, rb [nFigs][]float64
	for n := 1; n <= s.Pairs; n++ {
		p := pairs[n]
		if p == nil || p.pt == nil || p.rb == nil {
			continue
		}
		s.Complete++
		for f := range nFigs {
			a, b := p.rb.Figs[f], p.pt.Figs[f]
			if math.IsNaN(a) || math.IsNaN(b) || b <= 0 {
				continue
			}
			ratios[f] = append(ratios[f], a/b)
			pt[f] = append(pt[f], b)
			rb[f] = append(rb[f], a)
		}
	}
	for f := range nFigs {
		s.Figs[f] = figStat{Ratio: summary(ratios[f]), PT: summary(pt[f]).Center, RB: summary(rb[f]).Center}
	}
	s.Flags = strings.Join(flags, " | ")
	s.PT, s.RB, s.Mismatch = matchSettings(ptSet, rbSet)
	return s, true
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// matchSettings compares the settings each tool reported over a row's
// runs: every key both report must have the same value, and each tool
// must have run with one set of settings throughout.
func matchSettings(ptSet, rbSet []string) (pt, rb map[string]string, mismatch []string) {
	if len(ptSet) == 0 || len(rbSet) == 0 {
		return first(ptSet), first(rbSet), []string{"no successful run of both tools"}
	}
	pt, rb = parseSettings(ptSet[0]), parseSettings(rbSet[0])
	if len(ptSet) > 1 {
		mismatch = append(mismatch, "perftest's settings varied between runs")
	}
	if len(rbSet) > 1 {
		mismatch = append(mismatch, "rdmabench's settings varied between runs")
	}
	for _, k := range keysOf(pt, rb) {
		a, okA := pt[k]
		b, okB := rb[k]
		if okA && okB && a != "" && b != "" && a != b {
			mismatch = append(mismatch, fmt.Sprintf("%s %s / %s", titleOf(k), a, b))
		}
	}
	return pt, rb, mismatch
}

func first(set []string) map[string]string {
	if len(set) == 0 {
		return nil
	}
	return parseSettings(set[0])
}

// keysOf lists the keys of the maps: the known ones in settingKeys order,
// then the others sorted.
func keysOf(maps ...map[string]string) []string {
	var keys, extra []string
	for _, sk := range settingKeys {
		for _, m := range maps {
			if _, ok := m[sk.key]; ok {
				keys = append(keys, sk.key)
				break
			}
		}
	}
	for _, m := range maps {
		for k := range m {
			if !slices.Contains(keys, k) && !slices.Contains(extra, k) {
				extra = append(extra, k)
			}
		}
	}
	slices.Sort(extra)
	return append(keys, extra...)
}

func titleOf(key string) string {
	for _, sk := range settingKeys {
		if sk.key == key {
			return sk.title
		}
	}
	return key
}

// timeSummary is the time-to-an-answer comparison.
type timeSummary struct {
	Pairs    int
	Complete int
	Failed   int
	Ratio    stat    // per-pair ratios of wall time, rdmabench / perftest
	PT, RB   float64 // median wall time, s
}

func summarizeTime(runs []timeRun) timeSummary {
	var s timeSummary
	type pair struct{ pt, rb float64 }
	pairs := map[int]*pair{}
	for _, x := range runs {
		if x.Pair < 1 {
			continue
		}
		s.Pairs = max(s.Pairs, x.Pair)
		if !x.OK || math.IsNaN(x.WallS) {
			s.Failed++
			continue
		}
		p := pairs[x.Pair]
		if p == nil {
			p = &pair{math.NaN(), math.NaN()}
			pairs[x.Pair] = p
		}
		if x.Tool == perftest {
			p.pt = x.WallS
		} else {
			p.rb = x.WallS
		}
	}
	var ratios, pt, rb []float64
	for n := 1; n <= s.Pairs; n++ {
		p := pairs[n]
		if p == nil || math.IsNaN(p.pt) || math.IsNaN(p.rb) || p.pt <= 0 {
			continue
		}
		s.Complete++
		ratios = append(ratios, p.rb/p.pt)
		pt = append(pt, p.pt)
		rb = append(rb, p.rb)
	}
	s.Ratio = summary(ratios)
	s.PT, s.RB = summary(pt).Center, summary(rb).Center
	return s
}
