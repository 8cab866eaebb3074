package report

import "time"

// Bandwidth is the throughput of one direction (or the sum of both) over a
// measured period: payload bytes and messages, not headers.
type Bandwidth struct {
	Bytes      uint64 `json:"bytes"`
	Messages   uint64 `json:"messages"`
	DurationNs int64  `json:"duration_ns"`
	// Gbps is payload bits per second / 10^9.
	Gbps float64 `json:"bw_gbps"`
	// MiBps is payload bytes per second / 2^20.
	MiBps float64 `json:"bw_mibps"`
	// Mmsgps is messages per second / 10^6.
	Mmsgps float64 `json:"msg_rate_mpps"`
	// PeakGbps is perftest's BW peak, Gbit/s: the payload rate of the
	// fastest stretch of the measured period, from the moment some
	// messages were still to be posted to one by which they had all
	// completed, the whole period among the stretches (so never below
	// Gbps). The stretches begin and end at checkpoints the sender's timed
	// loop notes after a poll now and then (at least 10 µs apart, 256 at
	// most), not at each message as perftest's do, so it reads at or below
	// what perftest would find in the same run. Absent where it was not
	// measured: for a
	// sum (of two directions, devices or loop threads, whose fastest
	// stretches need not coincide), for TCP, and in documents written
	// before it was.
	PeakGbps float64 `json:"bw_peak_gbps,omitempty"`
}

// NewBandwidth returns the figures for bytes and messages moved in d (on the
// sender: last completion minus first post). A non-positive d gives zero
// rates rather than infinities.
func NewBandwidth(bytes, messages uint64, d time.Duration) *Bandwidth {
	b := &Bandwidth{Bytes: bytes, Messages: messages, DurationNs: int64(d)}
	if d > 0 {
		s := d.Seconds()
		b.Gbps = float64(bytes) * 8 / 1e9 / s
		b.MiBps = float64(bytes) / (1 << 20) / s
		b.Mmsgps = float64(messages) / 1e6 / s
	}
	return b
}

// Sum combines the two directions of a bidirectional test: bytes and
// messages add, the duration is the longer of the two, and the rates add
// (each direction's rate over its own period, as perftest reports -b). A
// nil argument counts as nothing; Sum(nil, nil) is nil.
func Sum(a, b *Bandwidth) *Bandwidth {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		c := *b
		return &c
	case b == nil:
		c := *a
		return &c
	}
	return &Bandwidth{
		Bytes:      a.Bytes + b.Bytes,
		Messages:   a.Messages + b.Messages,
		DurationNs: max(a.DurationNs, b.DurationNs),
		Gbps:       a.Gbps + b.Gbps,
		MiBps:      a.MiBps + b.MiBps,
		Mmsgps:     a.Mmsgps + b.Mmsgps,
	}
}
