package report

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
	"math/bits"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Latency bases: what one recorded value means.
const (
	// BasisRTTHalf: one-way latency, half of each measured round trip
	// (write-lat, send-lat, tcp-lat ping-pong).
	BasisRTTHalf = "rtt_half"
	// BasisRTT: the full round trip, post to completion (read-lat,
	// atomic-lat).
	BasisRTT = "rtt"
)

// Histogram geometry of every latency histogram: 1 ns to 60 s, 3
// significant digits (values are within 0.1% of what was recorded).
const (
	HistLowestNs  = 1
	HistHighestNs = 60_000_000_000
	HistSigFigs   = 3
)

// Latency is the exported statistics of a set of latency samples, in
// nanoseconds on the document's [Latency.Basis].
//
// Count, MinNs and MaxNs are exact; MeanNs and StdevNs are exact up to
// their final rounding to float64. StdevNs is the population standard
// deviation (the sum of squared deviations divided by the count, like
// perftest), not the sample one (divided by count-1). Percentiles come from the HdrHistogram (nearest rank, the
// highest value equivalent to the ranked sample within 3 significant digits,
// clamped to [MinNs, MaxNs]); P50Ns is perftest's "typical". A Latency with
// Count 0 has all figures 0.
type Latency struct {
	Basis string `json:"basis"` // BasisRTTHalf or BasisRTT
	Count int64  `json:"count"`
	// ClockBackward counts the samples dropped because the clock read less
	// at their end than at their start; they are not in Count.
	ClockBackward int64   `json:"clock_backward,omitempty"`
	MinNs         float64 `json:"min_ns"`
	MeanNs        float64 `json:"mean_ns"`
	StdevNs       float64 `json:"stdev_ns"`
	P50Ns         float64 `json:"p50_ns"`
	P90Ns         float64 `json:"p90_ns"`
	P99Ns         float64 `json:"p99_ns"`
	P999Ns        float64 `json:"p99_9_ns"`
	P9999Ns       float64 `json:"p99_99_ns"`
	MaxNs         float64 `json:"max_ns"`
	// Histogram is the HdrHistogram of the samples (in ns, on Basis) in the
	// standard V2 compressed, base64 form ("HISTFAAA..."), readable by any
	// HdrHistogram implementation; see [Latency.DecodeHistogram].
	Histogram string `json:"histogram"`
}

// LatencyRecorder accumulates latency samples: an HdrHistogram for the
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
// On BasisRTTHalf each is halved: the histogram records rtt/2 rounded to the
// nearest nanosecond, the statistics use rtt/2.0 exactly. Samples above 60 s are
// recorded as 60 s in the histogram but exactly in min, max, mean and stdev.
// Nothing is trimmed.
type LatencyRecorder struct {
	basis string
	half  bool
	hist  *hdrhistogram.Histogram

	n        int64
	sum      [2]uint64 // sum of raw samples, little-endian words
	sumSq    [3]uint64 // sum of squared raw samples, little-endian words
	min, max uint64    // raw; valid when n > 0
}

// NewLatencyRecorder returns an empty recorder on basis BasisRTTHalf or
// BasisRTT. It panics on any other basis, a programming error.
func NewLatencyRecorder(basis string) *LatencyRecorder {
	r := &LatencyRecorder{basis: basis}
	switch basis {
	case BasisRTTHalf:
		r.half = true
	case BasisRTT:
	default:
		panic(fmt.Sprintf("report: unknown latency basis %q (want %q or %q)", basis, BasisRTTHalf, BasisRTT))
	}
	r.hist = hdrhistogram.New(HistLowestNs, HistHighestNs, HistSigFigs)
	return r
}

// Basis returns the recorder's basis.
func (r *LatencyRecorder) Basis() string { return r.basis }

// Count returns the number of samples recorded.
func (r *LatencyRecorder) Count() int64 { return r.n }

// Record adds one raw sample in nanoseconds.
func (r *LatencyRecorder) Record(rawNs uint64) { r.record(rawNs) }

// RecordBatch adds raw samples in nanoseconds; it is Record in a loop and
// gives bit-identical results. It does not allocate.
func (r *LatencyRecorder) RecordBatch(raw []uint64) {
	for _, v := range raw {
		r.record(v)
	}
}

func (r *LatencyRecorder) record(raw uint64) {
	v := raw
	if r.half {
		v = raw>>1 + raw&1 // round half up, without overflow
	}
	if v > HistHighestNs {
		v = HistHighestNs
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
func (r *LatencyRecorder) Merge(other *LatencyRecorder) error {
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
func (r *LatencyRecorder) Reset() {
	r.hist.Reset()
	r.n, r.sum, r.sumSq, r.min, r.max = 0, [2]uint64{}, [3]uint64{}, 0, 0
}

// Snapshot returns the statistics of the samples recorded so far; the
// recorder is unchanged and may keep recording.
func (r *LatencyRecorder) Snapshot() *Latency {
	l := &Latency{Basis: r.basis, Count: r.n}
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
func (r *LatencyRecorder) moments() (mean, stdev float64) {
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

// DecodeHistogram decodes l's [Latency.Histogram] string (V2 compressed,
// base64) into an HdrHistogram, refusing geometries that would need more
// than MaxHistogramCounters counters.
func (l *Latency) DecodeHistogram() (*hdrhistogram.Histogram, error) {
	s := l.Histogram
	if s == "" {
		return nil, errors.New("report: decode histogram: empty string")
	}
	if err := checkHistogramSize(s); err != nil {
		return nil, fmt.Errorf("report: decode histogram: %w", err)
	}
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("report: decode histogram: %w", err)
	}
	return h, nil
}

// checkHistogramSize reads the geometry from an encoded histogram's header
// (after the 8-byte cookie and length, a zlib stream whose first 40 bytes
// are: cookie, payload length, normalizing offset, significant digits as
// big-endian int32; lowest and highest trackable values as int64; a
// float64) and bounds the counters it needs from above. Anything malformed
// is left for hdrhistogram.Decode to report.
func checkHistogramSize(s string) error {
	if len(s) > 64<<20 {
		return fmt.Errorf("encoded histogram of %d bytes is too large", len(s))
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw) < 8 {
		return nil
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		return nil
	}
	defer zr.Close()
	var hdr [40]byte
	if _, err := io.ReadFull(zr, hdr[:]); err != nil {
		return nil
	}
	sig := int32(binary.BigEndian.Uint32(hdr[12:16]))
	highest := int64(binary.BigEndian.Uint64(hdr[24:32]))
	if sig < 0 || sig > 5 || highest <= 0 {
		return nil
	}
	// Sub-buckets: 2*10^sig rounded up to a power of two; buckets: one per
	// doubling from there to highest (an upper bound: a lowest value above 1
	// only needs fewer).
	subMag := bits.Len64(2*pow10(sig) - 1)
	buckets := max(bits.Len64(uint64(highest))-subMag+2, 1)
	if counters := int64(buckets+1) << (subMag - 1); counters > MaxHistogramCounters {
		return fmt.Errorf("histogram geometry (highest value %d, %d significant digits) needs %d counters, more than %d", highest, sig, counters, MaxHistogramCounters)
	}
	return nil
}

func pow10(n int32) uint64 {
	p := uint64(1)
	for range n {
		p *= 10
	}
	return p
}
