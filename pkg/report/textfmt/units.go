package textfmt

import (
	"cmp"
	"math"
	"strconv"
)

// A table's rate column takes one unit for all its cells, with the SI
// prefix (bit/s: k, M, G; msg/s: k, M) that keeps its largest figure at or
// above 1, named in its header ([RateUnit]); a rate said on its own (in a
// gate's or a limit's message) takes the prefix of its own figure:
// "98.53 Gbit/s", "368.4 Mbit/s", "702.7 msg/s". Both write four
// significant digits, as benchstat prints values. JSON, CSV and the other
// machine forms keep their fixed units.

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

// RateUnit is the unit a table column shows its rates in: one for the
// whole column (the bandwidth of a section of the results table, its
// message rate), named in its header ("BW Gbit/s", "Mmsg/s"), so that the
// rows of a sweep read against each other.
type RateUnit struct {
	Name   string  // "Gbit/s", "Mbit/s", "kbit/s", "bit/s"; "Mmsg/s", "kmsg/s", "msg/s"
	factor float64 // the figure's unit (Gbit/s, Mmsg/s) in this one
}

// The units of rate columns where no figure picks one.
var (
	UnitGbps = RateUnit{"Gbit/s", 1}
	UnitMpps = RateUnit{"Mmsg/s", 1}
)

// BandwidthUnitOf picks a bandwidth column's unit from its figures (in
// Gbit/s): the largest prefix (G, M, k) that leaves the largest figure at
// least 1, as benchstat scales a column. With no figure, Gbit/s.
func BandwidthUnitOf(gbps []float64) RateUnit {
	return rateUnitOf(gbps, 1e9, "bit/s", bitPrefixes, UnitGbps)
}

// MsgRateUnitOf is BandwidthUnitOf for a message-rate column (figures in
// Mmsg/s): Mmsg/s, kmsg/s or msg/s. With no figure, Mmsg/s.
func MsgRateUnitOf(mmsgps []float64) RateUnit {
	return rateUnitOf(mmsgps, 1e6, "msg/s", msgPrefixes, UnitMpps)
}

func rateUnitOf(vs []float64, base float64, unit string, ps []prefix, none RateUnit) RateUnit {
	top, any := 0.0, false
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) || v == 0 {
			continue
		}
		top, any = max(top, math.Abs(v)), true
	}
	if !any {
		return none
	}
	p := ps[len(ps)-1]
	for _, q := range ps {
		// At least 1 once rounded to four significant digits.
		if top*base/q.factor >= 0.99995 {
			p = q
			break
		}
	}
	return RateUnit{Name: p.Name + unit, factor: base / p.factor}
}

// Cell formats v (in the column's figure unit: Gbit/s or Mmsg/s) in u,
// without the unit, with four significant digits ("98.53", "0.5378",
// "0.002899"); a figure of 1000 or more of u has no decimals.
func (u RateUnit) Cell(v float64) string {
	x := v * cmp.Or(u.factor, 1)
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	prec := 3
	switch a := math.Abs(x); {
	case a >= 999.95:
		prec = 0
	case a >= 99.995:
		prec = 1
	case a >= 9.9995:
		prec = 2
	case a < 0.99995:
		prec = 3 + int(math.Ceil(-math.Log10(a)))
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
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

// Cell formats ns (nanoseconds) in u, without the unit.
func (u LatencyUnit) Cell(Ns float64) string {
	return strconv.FormatFloat(Ns/u.Ns, 'f', u.Digits, 64)
}

// GbitLimit writes a bandwidth limit (in Gbit/s) as a person gives it:
// with the prefix its figures take in messages and the digits given
// ("90 Gbit/s", "500 Mbit/s").
func GbitLimit(gbps float64) string { return givenRate(gbps*1e9, "bit/s", bitPrefixes) }

// MmsgLimit is GbitLimit for a message-rate limit in Mmsg/s ("1 Mmsg/s").
func MmsgLimit(mmsgps float64) string { return givenRate(mmsgps*1e6, "msg/s", msgPrefixes) }

// givenRate writes base (in the base unit) with the largest prefix of ps
// that leaves it at least 1, its digits as given (no float noise).
func givenRate(base float64, unit string, ps []prefix) string {
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
