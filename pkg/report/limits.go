package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
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

// ParseLimitDuration parses a latency limit: a positive duration with a
// unit, as Go writes them ("20us", "20µs", "1.5ms", "800ns"). A bare number
// is refused: its unit would be a guess.
func ParseLimitDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("latency limit %q has no unit: write e.g. %sus or %sns", s, s, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("latency limit %q: want a duration such as 20us, 1.5ms or 800ns", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("latency limit %q must be positive", s)
	}
	return d, nil
}

var (
	bitUnits  = []string{"bps", "bit/s", "bits/s", "b/s", "bit", "bits", "b"}
	byteUnits = []string{"Bps", "B/s", "byte/s", "bytes/s", "B"}
	rateUnits = []string{"/s", "msg/s", "msgs/s", "pps", "mps"}
)

// ParseBandwidth parses a bandwidth limit and returns it in Gbit/s (10^9
// bit/s). Bits: "90Gbps", "90Gbit/s", "90Gb/s", "100G" (a prefix alone
// means bits, as link speeds are written), "800Mbps". Bytes: "12.5GB/s",
// "11GBps", "10GiB/s" (binary prefixes Ki, Mi, Gi, Ti). A bare number is
// refused: bits or bytes, and which prefix, would be a guess.
func ParseBandwidth(s string) (float64, error) {
	v, mult, unit, err := parseQuantity(s, "bandwidth")
	if err != nil {
		return 0, err
	}
	switch {
	case unit == "" && mult == 1:
		return 0, fmt.Errorf("bandwidth %q has no unit: write e.g. %sGbps (bits) or %sGB/s (bytes)", s, strings.TrimSpace(s), strings.TrimSpace(s))
	case unit == "" || slices.Contains(bitUnits, unit):
		return v * mult / 1e9, nil
	case slices.Contains(byteUnits, unit):
		return v * mult * 8 / 1e9, nil
	}
	return 0, fmt.Errorf("bandwidth %q: unknown unit %q (want bps, bit/s or B/s, with a prefix: 90Gbps, 100G, 12.5GB/s)", s, unit)
}

// ParseRate parses a message-rate limit and returns it in messages per
// second: "10M", "10Mmsg/s", "10Mpps", "500k", "2.5e6", "2500000/s".
func ParseRate(s string) (float64, error) {
	v, mult, unit, err := parseQuantity(s, "message rate")
	if err != nil {
		return 0, err
	}
	if unit != "" && !slices.Contains(rateUnits, unit) {
		return 0, fmt.Errorf("message rate %q: unknown unit %q (want a count per second: 10M, 10Mmsg/s, 10Mpps)", s, unit)
	}
	return v * mult, nil
}

// parseQuantity splits "12.5 GiB/s" into 12.5, 2^30 and "B/s". The unit is
// matched before the prefix, so "10msg/s" is 10 msg/s, not 10 milli-"sg/s".
// Prefixes are decimal (k, M, G, T, either case: there is no milli-anything
// in a bandwidth) or binary (Ki, Mi, Gi, Ti). The value must be positive.
func parseQuantity(s, what string) (v, mult float64, unit string, err error) {
	t := strings.TrimSpace(s)
	end := 0
	for end < len(t) {
		c := t[end]
		if c >= '0' && c <= '9' || c == '.' || ((c == 'e' || c == 'E') && end > 0 && end+1 < len(t) && (unicode.IsDigit(rune(t[end+1])) || t[end+1] == '-' || t[end+1] == '+')) {
			end++
			continue
		}
		if (c == '-' || c == '+') && end > 0 && (t[end-1] == 'e' || t[end-1] == 'E') {
			end++
			continue
		}
		break
	}
	if end == 0 {
		return 0, 0, "", fmt.Errorf("%s %q: want a number with a unit", what, s)
	}
	v, perr := strconv.ParseFloat(t[:end], 64)
	if perr != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, 0, "", fmt.Errorf("%s %q: %q is not a number", what, s, t[:end])
	}
	if v <= 0 {
		return 0, 0, "", fmt.Errorf("%s %q must be positive", what, s)
	}
	rest := strings.TrimSpace(t[end:])
	all := append(append(append([]string{}, bitUnits...), byteUnits...), rateUnits...)
	if rest == "" || slices.Contains(all, rest) {
		return v, 1, rest, nil
	}
	exp := strings.IndexByte("kmgt", byte(unicode.ToLower(rune(rest[0]))))
	if exp < 0 {
		return 0, 0, "", fmt.Errorf("%s %q: unknown unit %q", what, s, rest)
	}
	mult = math.Pow(1000, float64(exp+1))
	rest = rest[1:]
	if strings.HasPrefix(rest, "i") {
		mult = math.Pow(1024, float64(exp+1))
		rest = rest[1:]
	}
	return v, mult, strings.TrimSpace(rest), nil
}
