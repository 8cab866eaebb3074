package report

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
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
