// Package latency records latency samples as a run measures them: a
// recorder per worker, merged at the end or at each interval, whose
// Snapshot is the document's [report.Latency]. The live recorder is kept
// apart from the snapshot that goes to JSON.
package latency

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// Histogram geometry of every latency histogram: 1 ns to 60 s, 3
// significant digits (values are within 0.1% of what was recorded).
const (
	LowestNs  = 1
	HighestNs = 60_000_000_000
	SigFigs   = 3
)

// Recorder accumulates latency samples: an HdrHistogram for the
// percentiles plus exact moments. The moments are integers: the count, the
// sum of the raw samples (128 bits) and the sum of their squares (192 bits),
// which cannot overflow or lose a bit, so merging is exact and mean and
// variance are computed only at Snapshot, in big-number arithmetic, then
// rounded once to float64 (no cancellation, unlike a float sum of squares).
// It is not safe for concurrent use: as in fortio, each worker owns a
// recorder and the recorders are merged at the end (or at each interval)
// with Merge.
//
// Samples are raw round-trip (or post-to-completion) times in nanoseconds.
// On report.BasisRTTHalf each is halved: the histogram records rtt/2 rounded to the
// nearest nanosecond, the statistics use rtt/2.0 exactly. Samples above 60 s are
// recorded as 60 s in the histogram but exactly in min, max, mean and stdev.
// Nothing is trimmed.
type Recorder struct {
	basis string
	half  bool
	hist  *hdrhistogram.Histogram

	n        int64
	sum      [2]uint64 // sum of raw samples, little-endian words
	sumSq    [3]uint64 // sum of squared raw samples, little-endian words
	min, max uint64    // raw; valid when n > 0
}

// NewRecorder returns an empty recorder on basis report.BasisRTTHalf
// or report.BasisRTT. It panics on any other basis, a programming error.
func NewRecorder(basis string) *Recorder {
	r := &Recorder{basis: basis}
	switch basis {
	case report.BasisRTTHalf:
		r.half = true
	case report.BasisRTT:
	default:
		panic(fmt.Sprintf("report: unknown latency basis %q (want %q or %q)", basis, report.BasisRTTHalf, report.BasisRTT))
	}
	r.hist = hdrhistogram.New(LowestNs, HighestNs, SigFigs)
	return r
}

// Basis returns the recorder's basis.
func (r *Recorder) Basis() string { return r.basis }

// Count returns the number of samples recorded.
func (r *Recorder) Count() int64 { return r.n }

// Record adds one raw sample in nanoseconds.
func (r *Recorder) Record(rawNs uint64) { r.record(rawNs) }

// RecordBatch adds raw samples in nanoseconds; it is Record in a loop and
// gives bit-identical results. It does not allocate.
func (r *Recorder) RecordBatch(raw []uint64) {
	for _, v := range raw {
		r.record(v)
	}
}

func (r *Recorder) record(raw uint64) {
	v := raw
	if r.half {
		v = raw>>1 + raw&1 // round half up, without overflow
	}
	if v > HighestNs {
		v = HighestNs
	}
	// Cannot fail: v is within the histogram's range and counts stay far
	// below MaxInt64.
	_ = r.hist.RecordValue(int64(v))

	if r.n == 0 || raw < r.min {
		r.min = raw
	}
	if raw > r.max {
		r.max = raw
	}
	var c uint64
	r.sum[0], c = bits.Add64(r.sum[0], raw, 0)
	r.sum[1] += c
	hi, lo := bits.Mul64(raw, raw)
	r.sumSq[0], c = bits.Add64(r.sumSq[0], lo, 0)
	r.sumSq[1], c = bits.Add64(r.sumSq[1], hi, c)
	r.sumSq[2] += c
	r.n++
}

// Merge adds other's samples to r, as if r had recorded them: histogram
// counts and the integer moments add, so the result is identical to one
// recorder having recorded every sample. other is unchanged. Both must have
// the same basis.
func (r *Recorder) Merge(other *Recorder) error {
	if other == nil || other.n == 0 {
		return nil
	}
	if other == r {
		return errors.New("report: merge a latency recorder into itself")
	}
	if other.basis != r.basis {
		return fmt.Errorf("report: merge latency recorders of different bases (%s into %s)", other.basis, r.basis)
	}
	if dropped := r.hist.Merge(other.hist); dropped != 0 {
		return fmt.Errorf("report: merge latency histograms: %d values dropped", dropped)
	}
	if r.n == 0 {
		r.min, r.max = other.min, other.max
	} else {
		r.min = min(r.min, other.min)
		r.max = max(r.max, other.max)
	}
	var c uint64
	r.sum[0], c = bits.Add64(r.sum[0], other.sum[0], 0)
	r.sum[1], _ = bits.Add64(r.sum[1], other.sum[1], c)
	r.sumSq[0], c = bits.Add64(r.sumSq[0], other.sumSq[0], 0)
	r.sumSq[1], c = bits.Add64(r.sumSq[1], other.sumSq[1], c)
	r.sumSq[2], _ = bits.Add64(r.sumSq[2], other.sumSq[2], c)
	r.n += other.n
	return nil
}

// Reset empties the recorder for reuse (e.g. at each interval).
func (r *Recorder) Reset() {
	r.hist.Reset()
	r.n, r.sum, r.sumSq, r.min, r.max = 0, [2]uint64{}, [3]uint64{}, 0, 0
}

// Snapshot returns the statistics of the samples recorded so far; the
// recorder is unchanged and may keep recording.
func (r *Recorder) Snapshot() *report.Latency {
	l := &report.Latency{Basis: r.basis, Count: r.n}
	if enc, err := r.hist.Encode(hdrhistogram.V2CompressedEncodingCookieBase); err == nil {
		l.Histogram = string(enc)
	}
	if r.n == 0 {
		return l
	}
	scale := 1.0
	if r.half {
		scale = 0.5 // exact in binary floating point
	}
	l.MinNs = float64(r.min) * scale
	l.MaxNs = float64(r.max) * scale
	l.MeanNs, l.StdevNs = r.moments()
	l.MeanNs *= scale
	l.StdevNs *= scale

	pct := func(p float64) float64 {
		v := float64(r.hist.ValueAtPercentile(p))
		return min(max(v, l.MinNs), l.MaxNs)
	}
	l.P50Ns = pct(50)
	l.P90Ns = pct(90)
	l.P99Ns = pct(99)
	l.P999Ns = pct(99.9)
	l.P9999Ns = pct(99.99)
	return l
}

// moments returns the mean and the population standard deviation of the
// raw samples: sum/n and sqrt((n*sumSq - sum^2) / n^2), exact until the
// final rounding (the square root is taken with 128 bits of precision).
func (r *Recorder) moments() (mean, stdev float64) {
	n := new(big.Int).SetInt64(r.n)
	sum := words(r.sum[:])
	mean, _ = new(big.Rat).SetFrac(sum, n).Float64()

	v := new(big.Int).Mul(n, words(r.sumSq[:])) // n*sumSq - sum^2 >= 0
	v.Sub(v, new(big.Int).Mul(sum, sum))
	if v.Sign() <= 0 {
		return mean, 0
	}
	const prec = 128
	f := new(big.Float).SetPrec(prec).SetInt(v)
	f.Quo(f, new(big.Float).SetPrec(prec).SetInt(new(big.Int).Mul(n, n)))
	stdev, _ = f.Sqrt(f).Float64()
	return mean, stdev
}

// words makes a big.Int of little-endian 64-bit words.
func words(w []uint64) *big.Int {
	x := new(big.Int)
	for i := len(w) - 1; i >= 0; i-- {
		x.Lsh(x, 64)
		x.Or(x, new(big.Int).SetUint64(w[i]))
	}
	return x
}

// Merge returns the statistics of the samples of every l together,
// as if one recorder had recorded them all: the histograms merged, the
// count, min and max exact, the mean and the population stdev from each
// set's (exact up to rounding), the percentiles from the merged histogram
// by the same rule as a recorder's. Every l must have the same basis.
func Merge(ls ...*report.Latency) (*report.Latency, error) {
	var out *report.Latency
	var hist *hdrhistogram.Histogram
	var sum, sumSq float64
	for _, l := range ls {
		if l == nil {
			continue
		}
		if out == nil {
			out = &report.Latency{Basis: l.Basis}
		} else if l.Basis != out.Basis {
			return nil, fmt.Errorf("report: merge latencies of different bases (%s and %s)", out.Basis, l.Basis)
		}
		h, err := l.DecodeHistogram()
		if err != nil {
			return nil, err
		}
		if hist == nil {
			hist = hdrhistogram.New(h.LowestTrackableValue(), h.HighestTrackableValue(), int(h.SignificantFigures()))
		}
		if dropped := hist.Merge(h); dropped != 0 {
			return nil, fmt.Errorf("report: merge latency histograms: %d values dropped", dropped)
		}
		if l.Count > 0 {
			if out.Count == 0 {
				out.MinNs, out.MaxNs = l.MinNs, l.MaxNs
			}
			out.MinNs, out.MaxNs = min(out.MinNs, l.MinNs), max(out.MaxNs, l.MaxNs)
		}
		n := float64(l.Count)
		sum += n * l.MeanNs
		sumSq += n * (l.StdevNs*l.StdevNs + l.MeanNs*l.MeanNs)
		out.Count += l.Count
		out.ClockBackward += l.ClockBackward
	}
	if out == nil {
		return nil, nil
	}
	if enc, err := hist.Encode(hdrhistogram.V2CompressedEncodingCookieBase); err == nil {
		out.Histogram = string(enc)
	}
	if out.Count == 0 {
		return out, nil
	}
	n := float64(out.Count)
	out.MeanNs = sum / n
	out.StdevNs = math.Sqrt(max(0, sumSq/n-out.MeanNs*out.MeanNs))
	pct := func(p float64) float64 { return min(max(float64(hist.ValueAtPercentile(p)), out.MinNs), out.MaxNs) }
	out.P50Ns, out.P90Ns, out.P99Ns, out.P999Ns, out.P9999Ns = pct(50), pct(90), pct(99), pct(99.9), pct(99.99)
	return out, nil
}
