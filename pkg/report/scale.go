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
	Name   string
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
	return strconv.FormatFloat(x, 'f', prec, 64) + " " + p.Name + unit
}

// GbitCell is a bandwidth in Gbit/s, scaled.
func GbitCell(gbps float64) string { return scaledRate(gbps*1e9, "bit/s", bitPrefixes) }

// MmsgCell is a message rate in Mmsg/s, scaled.
func MmsgCell(mmsgps float64) string { return scaledRate(mmsgps*1e6, "msg/s", msgPrefixes) }

// LatencyUnit is the unit a table shows its latencies in: one unit for a
// whole table (a section of the results table, a comparison, a mesh
// matrix), so that its columns and rows read against each other, never
// one per cell.
type LatencyUnit struct {
	Name   string
	Ns     float64 // nanoseconds in one unit
	Digits int     // decimals
}

var (
	UnitNs = LatencyUnit{"ns", 1, 0}
	UnitUs = LatencyUnit{"µs", 1e3, 2}
	UnitMs = LatencyUnit{"ms", 1e6, 3}
)

// LatencyUnitOf picks a table's unit from the p50s (in ns) of what it
// shows: µs, as perftest prints latencies, unless every p50 is below 1 µs
// (then ns, no decimals) or at least 1 ms (then ms, three decimals). With
// no p50, µs.
func LatencyUnitOf(p50s []float64) LatencyUnit {
	Ns, ms, any := true, true, false
	for _, v := range p50s {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		any = true
		Ns = Ns && v < 999.5 // still below 1000 once rounded
		ms = ms && v >= 1e6
	}
	switch {
	case !any:
		return UnitUs
	case Ns:
		return UnitNs
	case ms:
		return UnitMs
	}
	return UnitUs
}

// MessageFigures writes vs (values of f, in f's unit) for one message,
// each with its unit, in the unit formatting f has in tables: a rate
// scaled as its cell is ("368.4 Mbit/s", "702.7 msg/s"), latencies all in
// the one unit a table of them would take ("4.021 µs > 1.312 µs", "1.234
// ms > 900 µs" never), up to three decimals, so that the figures of a
// message read against each other.
func MessageFigures(f Figure, vs ...float64) []string {
	out := make([]string, len(vs))
	u := LatencyUnitOf(vs)
	for i, v := range vs {
		switch {
		case f.IsLatency():
			out[i] = Num(v/u.Ns) + " " + u.Name
		case f == FigGbps:
			out[i] = GbitCell(v)
		case f == FigMsgRate:
			out[i] = MmsgCell(v)
		default:
			out[i] = f.Format(v)
		}
	}
	return out
}

// limitFigure writes a limit of f (in f's unit) as a threshold given by
// a person: with the prefix its figures take in messages and the digits
// given ("90 Gbit/s", "500 Mbit/s", "1 Mmsg/s"), a latency in u with up
// to three decimals.
func limitFigure(f Figure, v float64, u LatencyUnit) string {
	var base float64
	var unit string
	var ps []prefix
	switch {
	case f.IsLatency():
		return Num(v/u.Ns) + " " + u.Name
	case f == FigGbps:
		base, unit, ps = v*1e9, "bit/s", bitPrefixes
	case f == FigMsgRate:
		base, unit, ps = v*1e6, "msg/s", msgPrefixes
	default:
		return strconv.FormatFloat(v, 'f', -1, 64) + " " + f.Unit()
	}
	p := ps[len(ps)-1]
	for _, q := range ps {
		if math.Abs(base)/q.factor >= 0.99995 {
			p = q
			break
		}
	}
	x, _ := strconv.ParseFloat(strconv.FormatFloat(base/p.factor, 'g', 6, 64), 64) // no float noise
	return strconv.FormatFloat(x, 'f', -1, 64) + " " + p.Name + unit
}

// Cell formats ns (nanoseconds) in u, without the unit.
func (u LatencyUnit) Cell(Ns float64) string {
	return strconv.FormatFloat(Ns/u.Ns, 'f', u.Digits, 64)
}
