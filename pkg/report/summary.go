package report

import (
	"math"
	"slices"
	"strconv"

	"golang.org/x/perf/benchmath"
)

// Statistics of repeated runs, as benchstat computes them: the median of
// the runs with a distribution-free confidence interval (order statistics)
// and, to compare two sets of runs, the Mann-Whitney U test.
const (
	// Confidence is the level of every confidence interval.
	Confidence = 0.95
	// Alpha is the significance level of comparisons: a difference with a
	// p-value above it is noise ("~").
	Alpha = 0.05
)

// Summary is the spread over its runs of each figure of one test at one
// size (and connection), in a document of repeated runs. Failed runs (a
// result with an error) are counted but left out of the figures.
type Summary struct {
	Test       string `json:"test"`
	Connection string `json:"connection,omitempty"`
	Size       int    `json:"size"`
	// Runs is the number of runs of this test and size in the document,
	// failed ones included.
	Runs int `json:"runs"`
	// Failed is the number of those runs that recorded an error.
	Failed int `json:"failed,omitempty"`
	// Latency summarizes the latency figures of the runs that have them.
	Latency *LatencySummary `json:"latency,omitempty"`
	// Bandwidth summarizes [Result.Headline] of the runs that have one:
	// both directions summed in a bidirectional test.
	Bandwidth *BandwidthSummary `json:"bandwidth,omitempty"`
}

// Key returns the test, connection and size s summarizes.
func (s *Summary) Key() Key { return Key{Test: s.Test, Connection: s.Connection, Size: s.Size} }

// LatencySummary is the spread of each latency figure over runs, in
// nanoseconds; field names follow [Latency].
type LatencySummary struct {
	Basis   string `json:"basis"`
	MinNs   Spread `json:"min_ns"`
	P50Ns   Spread `json:"p50_ns"`
	MeanNs  Spread `json:"mean_ns"`
	StdevNs Spread `json:"stdev_ns"`
	P90Ns   Spread `json:"p90_ns"`
	P99Ns   Spread `json:"p99_ns"`
	P999Ns  Spread `json:"p99_9_ns"`
	P9999Ns Spread `json:"p99_99_ns"`
	MaxNs   Spread `json:"max_ns"`
}

// BandwidthSummary is the spread of each bandwidth figure over runs; field
// names follow [Bandwidth].
type BandwidthSummary struct {
	Gbps   Spread `json:"bw_gbps"`
	MiBps  Spread `json:"bw_mibps"`
	Mmsgps Spread `json:"msg_rate_mpps"`
}

// Spread is the median of one figure over N runs with its confidence
// interval [Lo, Hi] at level Confidence (at least [Confidence]: the
// interval's bounds are runs' values, so its level is that of the nearest
// order statistics). Lo and Hi are absent when there are too few runs for
// a bounded interval (fewer than 6 at 95%; see [MinRunsForInterval]).
type Spread struct {
	Median     float64  `json:"median"`
	Lo         *float64 `json:"lo,omitempty"`
	Hi         *float64 `json:"hi,omitempty"`
	Confidence float64  `json:"confidence,omitempty"`
	N          int      `json:"n"`
}

// Bounded reports whether s has a confidence interval.
func (s Spread) Bounded() bool { return s.Lo != nil && s.Hi != nil }

// PctRange is the half-width of the confidence interval relative to the
// median, as benchstat prints it: "±2%", "±0%", "±∞" (too few runs), "±?"
// (an interval across zero).
func (s Spread) PctRange() string {
	if !s.Bounded() {
		return "±∞"
	}
	lo, hi := *s.Lo, *s.Hi
	sign := func(v float64) int {
		switch {
		case v > 0:
			return 1
		case v < 0:
			return -1
		}
		return 0
	}
	if c := sign(s.Median); c != sign(lo) || c != sign(hi) {
		return "±?"
	}
	if s.Median == 0 {
		return "±0%"
	}
	v := math.Max(hi/s.Median-1, 1-lo/s.Median)
	return "±" + strconv.FormatFloat(100*v, 'f', 0, 64) + "%"
}

// HalfWidth is the larger distance from the median to a bound of its
// confidence interval, relative to the median (ok false without a bounded
// interval or with a median of 0).
func (s Spread) HalfWidth() (float64, bool) {
	if !s.Bounded() || s.Median == 0 {
		return 0, false
	}
	return math.Max(*s.Hi-s.Median, s.Median-*s.Lo) / math.Abs(s.Median), true
}

// SpreadOf returns the median of values with its confidence interval at
// level [Confidence] (benchmath's AssumeNothing summary, as benchstat). It
// does not modify values. An empty input gives a zero Spread.
func SpreadOf(values []float64) Spread {
	if len(values) == 0 {
		return Spread{}
	}
	s := benchmath.NewSample(slices.Clone(values), &benchmath.DefaultThresholds)
	sum := benchmath.AssumeNothing.Summary(s, Confidence)
	sp := Spread{Median: sum.Center, N: len(values)}
	if !math.IsInf(sum.Lo, 0) && !math.IsInf(sum.Hi, 0) && !math.IsNaN(sum.Lo) && !math.IsNaN(sum.Hi) {
		lo, hi := sum.Lo, sum.Hi
		sp.Lo, sp.Hi, sp.Confidence = &lo, &hi, sum.Confidence
	}
	return sp
}

// MinRunsForInterval is the fewest runs that give a bounded confidence
// interval of the median at level [Confidence] (6 at 95%).
var MinRunsForInterval = func() int {
	for n := 2; n <= 50; n++ {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i)
		}
		if SpreadOf(v).Bounded() {
			return n
		}
	}
	return 51
}()

// MinRunsForTest returns the fewest runs on each side with which the
// Mann-Whitney U test can find a difference significant at level alpha:
// the smallest n whose most extreme outcome, 2/C(2n, n), is at most alpha
// (4 at 0.05).
func MinRunsForTest(alpha float64) int {
	c := 2.0 // C(2n, n) for n = 1
	for n := 1; n < 100; n++ {
		if 2/c <= alpha {
			return n
		}
		// C(2(n+1), n+1) = C(2n, n) * (2n+1)(2n+2) / (n+1)^2
		c = c * float64(2*n+1) * float64(2*n+2) / float64((n+1)*(n+1))
	}
	return 100
}

// Repeated reports whether doc holds repeated runs: a result with a
// [Result.Run] above 1.
func (doc *Document) Repeated() bool {
	for i := range doc.Results {
		if doc.Results[i].Run > 1 {
			return true
		}
	}
	return false
}

// Runs returns the number of runs in doc: the highest [Result.Run], or 1
// when doc has results without run numbers, 0 when it has none.
func (doc *Document) Runs() int {
	n := 0
	for i := range doc.Results {
		n = max(n, doc.Results[i].Run, 1)
	}
	return n
}

// Group is the results of one key, in document order.
type Group struct {
	Key     Key
	Results []*Result
}

// Groups gathers doc's results by key, in the order of each key's
// first result.
func (doc *Document) Groups() []Group {
	var groups []Group
	at := map[Key]int{}
	for i := range doc.Results {
		r := &doc.Results[i]
		k := r.Key()
		j, ok := at[k]
		if !ok {
			j = len(groups)
			at[k] = j
			groups = append(groups, Group{Key: k})
		}
		groups[j].Results = append(groups[j].Results, r)
	}
	return groups
}

// Values returns f's value in each result of g that measured it without
// an error, in run order: the values [Group.Summarize] and a comparison's
// U test take.
func (g *Group) Values(f Figure) []float64 {
	var v []float64
	for _, r := range g.Results {
		if r.Error != "" {
			continue
		}
		if x, ok := f.Of(r); ok {
			v = append(v, x)
		}
	}
	return v
}

// Summarize returns one Summary per test, connection and size of doc (in
// the order of their first result), over all of its runs. It works on any
// document; in one without repeated runs each Summary has one run and no
// bounded confidence interval. The run that writes a document of repeated
// runs stores the result in [Document.Summaries].
func (doc *Document) Summarize() []Summary {
	if doc == nil {
		return nil
	}
	groups := doc.Groups()
	sums := make([]Summary, 0, len(groups))
	for i := range groups {
		sums = append(sums, groups[i].Summarize())
	}
	return sums
}

// Summarize is the [Summary] of one group of [Document.Groups], as
// [Document.Summarize] makes it.
func (g *Group) Summarize() Summary {
	s := Summary{Test: g.Key.Test, Connection: g.Key.Connection, Size: g.Key.Size, Runs: len(g.Results)}
	basis := ""
	for _, r := range g.Results {
		if r.Error != "" {
			s.Failed++
		}
		if basis == "" && r.Latency != nil {
			basis = r.Latency.Basis
		}
	}
	if v := g.Values(FigP50); len(v) > 0 {
		s.Latency = &LatencySummary{
			Basis:   basis,
			MinNs:   SpreadOf(g.Values(FigMin)),
			P50Ns:   SpreadOf(v),
			MeanNs:  SpreadOf(g.Values(FigMean)),
			StdevNs: SpreadOf(g.Values(FigStdev)),
			P90Ns:   SpreadOf(g.Values(FigP90)),
			P99Ns:   SpreadOf(g.Values(FigP99)),
			P999Ns:  SpreadOf(g.Values(FigP999)),
			P9999Ns: SpreadOf(g.Values(FigP9999)),
			MaxNs:   SpreadOf(g.Values(FigMax)),
		}
	}
	if v := g.Values(FigGbps); len(v) > 0 {
		s.Bandwidth = &BandwidthSummary{
			Gbps:   SpreadOf(v),
			MiBps:  SpreadOf(g.Values(FigMiBps)),
			Mmsgps: SpreadOf(g.Values(FigMsgRate)),
		}
	}
	return s
}

// Spread returns the spread of figure f in s, and false when s has none.
func (s *Summary) Spread(f Figure) (Spread, bool) {
	if f.IsLatency() {
		l := s.Latency
		if l == nil {
			return Spread{}, false
		}
		return pickLatency(f, l.MinNs, l.P50Ns, l.MeanNs, l.StdevNs, l.P90Ns, l.P99Ns, l.P999Ns, l.P9999Ns, l.MaxNs)
	}
	b := s.Bandwidth
	if b == nil {
		return Spread{}, false
	}
	return pickBandwidth(f, b.Gbps, b.MiBps, b.Mmsgps)
}
