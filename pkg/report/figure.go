package report

import (
	"fmt"
	"math"
	"strconv"

	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// Figure names one number of a result: what summaries, comparisons, gates
// and limits look at. Latency figures are in nanoseconds; bandwidth figures
// are those of [Result.Headline].
type Figure string

// The figures of a result.
const (
	FigMin     Figure = "min"
	FigP50     Figure = "p50"
	FigMean    Figure = "mean"
	FigStdev   Figure = "stdev"
	FigP90     Figure = "p90"
	FigP99     Figure = "p99"
	FigP999    Figure = "p99.9"
	FigP9999   Figure = "p99.99"
	FigMax     Figure = "max"
	FigGbps    Figure = "bw"       // Gbit/s (10^9 bit/s)
	FigMiBps   Figure = "bw-mib"   // MiB/s (2^20 byte/s)
	FigMsgRate Figure = "msg-rate" // Mmsg/s (10^6 messages/s)
)

// LatencyFigures and BandwidthFigures are every figure of each kind, in
// the order tables show them.
var (
	LatencyFigures   = []Figure{FigMin, FigP50, FigMean, FigStdev, FigP90, FigP99, FigP999, FigP9999, FigMax}
	BandwidthFigures = []Figure{FigGbps, FigMiBps, FigMsgRate}
)

// IsLatency reports whether f is a latency figure (nanoseconds, lower is
// better).
func (f Figure) IsLatency() bool {
	switch f {
	case FigGbps, FigMiBps, FigMsgRate:
		return false
	}
	return true
}

// HigherIsBetter reports whether a larger value of f is an improvement
// (bandwidth, message rate) rather than a regression (latency).
func (f Figure) HigherIsBetter() bool { return !f.IsLatency() }

// Unit is the unit of f's values: "ns", "Gbit/s", "MiB/s" or "Mmsg/s".
func (f Figure) Unit() string {
	switch f {
	case FigGbps:
		return "Gbit/s"
	case FigMiBps:
		return "MiB/s"
	case FigMsgRate:
		return "Mmsg/s"
	}
	return "ns"
}

// Label is how tables name f: "p99", "Gbit/s", "Mmsg/s".
func (f Figure) Label() string {
	if f.IsLatency() {
		return string(f)
	}
	return f.Unit()
}

// Name names f in prose, as mesh tables and plots do: "p50", "bandwidth",
// "message rate".
func (f Figure) Name() string {
	switch f {
	case FigGbps, FigMiBps:
		return "bandwidth"
	case FigMsgRate:
		return "message rate"
	}
	return string(f)
}

// Format writes v (in f's unit) for a person: latencies in µs with up to
// three decimals ("23.4 µs"), rates with their unit ("98.53 Gbit/s").
func (f Figure) Format(v float64) string {
	if f.IsLatency() {
		return textfmt.Num(v/1e3) + " µs"
	}
	if f == FigMsgRate {
		return strconv.FormatFloat(v, 'f', 4, 64) + " " + f.Unit()
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + " " + f.Unit()
}

// FormatAll writes vs (values of f, in f's unit) for one message, each
// with its unit, in the unit formatting f has in tables: a rate scaled as
// its cell is ("368.4 Mbit/s", "702.7 msg/s"), latencies all in the one
// unit a table of them would take ("4.021 µs > 1.312 µs", "1.234 ms > 900
// µs" never), up to three decimals, so that the figures of a message read
// against each other.
func (f Figure) FormatAll(vs ...float64) []string {
	out := make([]string, len(vs))
	u := textfmt.LatencyUnitOf(vs)
	for i, v := range vs {
		switch {
		case f.IsLatency():
			out[i] = textfmt.Num(v/u.Ns) + " " + u.Name
		case f == FigGbps:
			out[i] = textfmt.GbitCell(v)
		case f == FigMsgRate:
			out[i] = textfmt.MmsgCell(v)
		default:
			out[i] = f.Format(v)
		}
	}
	return out
}

// Of returns the value of f in r, and false when r has no such figure (a
// latency figure of a bandwidth test, a latency without samples, a test
// that measured nothing) or when it is not a finite number (a sum of two
// huge rates): statistics over it would mean nothing.
func (f Figure) Of(r *Result) (float64, bool) {
	var v float64
	var ok bool
	if f.IsLatency() {
		l := r.Latency
		if l == nil || l.Count == 0 {
			return 0, false
		}
		v, ok = pickLatency(f, l.MinNs, l.P50Ns, l.MeanNs, l.StdevNs, l.P90Ns, l.P99Ns, l.P999Ns, l.P9999Ns, l.MaxNs)
	} else {
		b := r.Headline()
		if b == nil {
			return 0, false
		}
		v, ok = pickBandwidth(f, b.Gbps, b.MiBps, b.Mmsgps)
	}
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// pickLatency returns, of the latency figures given in their fixed order,
// the one f names: the one place that maps a Figure to a latency field,
// whatever the fields hold (a value, a spread over runs).
func pickLatency[T any](f Figure, min, p50, mean, stdev, p90, p99, p999, p9999, max T) (T, bool) {
	switch f {
	case FigMin:
		return min, true
	case FigP50:
		return p50, true
	case FigMean:
		return mean, true
	case FigStdev:
		return stdev, true
	case FigP90:
		return p90, true
	case FigP99:
		return p99, true
	case FigP999:
		return p999, true
	case FigP9999:
		return p9999, true
	case FigMax:
		return max, true
	}
	var zero T
	return zero, false
}

// pickBandwidth is pickLatency for the bandwidth figures.
func pickBandwidth[T any](f Figure, gbps, mibps, msgRate T) (T, bool) {
	switch f {
	case FigGbps:
		return gbps, true
	case FigMiBps:
		return mibps, true
	case FigMsgRate:
		return msgRate, true
	}
	var zero T
	return zero, false
}

// Headline returns the bandwidth that stands for r in summaries,
// comparisons, limits, CSV and the Go benchmark format: in a bidirectional
// test both directions summed ([Result.Total], or the sum of the two), else
// this side's [Result.Bandwidth]. It is nil when r has no bandwidth.
func (r *Result) Headline() *Bandwidth {
	if r.Bidirectional() {
		if r.Total != nil {
			return r.Total
		}
		return Sum(r.Bandwidth, r.Reverse)
	}
	return r.Bandwidth
}

// Key identifies a test at a message size across runs and documents: the
// results of repeated runs share a key, and compare matches results by it.
type Key struct {
	Test       string `json:"test"`
	Connection string `json:"connection,omitempty"`
	Size       int    `json:"size"`
}

// Key returns r's key.
func (r *Result) Key() Key { return Key{Test: r.Test, Connection: r.Connection, Size: r.Size} }

// String is the key as messages show it: "write-lat RC 2 B".
func (k Key) String() string {
	s := textfmt.Clean(k.Test)
	if k.Connection != "" {
		s += " " + textfmt.Clean(k.Connection)
	}
	return s + fmt.Sprintf(" %d B", k.Size)
}
