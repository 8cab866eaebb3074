package report

import (
	"math"
	"strconv"
)

// Tables show a rate with the SI prefix that keeps its value at or above
// 1 (bit/s: k, M, G; msg/s: k, M), with four significant digits, as
// benchstat prints values: "98.53 Gbit/s", "368.4 Mbit/s", "702.7 msg/s".
// JSON, CSV and the other machine forms keep their fixed units.

type prefix struct {
	name   string
	factor float64
}

var (
	bitPrefixes = []prefix{{"G", 1e9}, {"M", 1e6}, {"k", 1e3}, {"", 1}}
	msgPrefixes = []prefix{{"M", 1e6}, {"k", 1e3}, {"", 1}}
)

// scaledRate formats v (in the base unit) with the largest prefix of ps
// that leaves it at least 1, and the unit after it.
func scaledRate(v float64, unit string, ps []prefix) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', 0, 64) + " " + unit
	}
	p := ps[len(ps)-1]
	for _, q := range ps {
		// At least 1 once rounded to four significant digits.
		if math.Abs(v)/q.factor >= 0.99995 {
			p = q
			break
		}
	}
	x := v / p.factor
	prec := 3
	switch a := math.Abs(x); {
	case a >= 99.995:
		prec = 1
	case a >= 9.9995:
		prec = 2
	case a < 0.99995: // below the smallest prefix
		prec = 3 + int(math.Ceil(-math.Log10(a)))
	}
	return strconv.FormatFloat(x, 'f', prec, 64) + " " + p.name + unit
}

// gbitCell is a bandwidth in Gbit/s, scaled.
func gbitCell(gbps float64) string { return scaledRate(gbps*1e9, "bit/s", bitPrefixes) }

// mmsgCell is a message rate in Mmsg/s, scaled.
func mmsgCell(mmsgps float64) string { return scaledRate(mmsgps*1e6, "msg/s", msgPrefixes) }

// scaledValue formats a figure for the results and comparison tables:
// latencies in µs with two decimals, bandwidth and message rate scaled,
// MiB/s with two decimals.
func scaledValue(f Figure, v float64) string {
	switch f {
	case FigGbps:
		return gbitCell(v)
	case FigMsgRate:
		return mmsgCell(v)
	}
	return tableValue(f, v)
}

// figureLabel names a figure in the comparison table: its unit when every
// value has it ("p99 µs", "MiB/s"), else what it is ("bandwidth").
func figureLabel(f Figure) string {
	switch {
	case f.IsLatency():
		return f.Label() + " µs"
	case f == FigGbps:
		return "bandwidth"
	case f == FigMsgRate:
		return "msg rate"
	}
	return f.Label()
}
