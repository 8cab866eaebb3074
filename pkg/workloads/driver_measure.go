package workloads

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rdmabench/rdmabench/pkg/latency"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// The measurement of one size, on the loop thread that runs it: the
// warm-up, then the measured iterations or the duration (in intervals, or
// in rounds until precise enough, with --precision), and the bandwidth of
// the load a latency test runs under (--load).

// measurePing runs the client's latency loop: the warm-up (discarded),
// then the measured iterations or the duration, in batches of at most
// latBatch samples, so memory does not grow with the count and a sample
// never spans two calls. It returns the latency, and how many iterations
// ran in all.
func (d *driver) measurePing(l pingLoop, size int, r *report.Result) (*report.Latency, uint64, error) {
	s := d.spec
	if d.samples == nil {
		d.samples = make([]uint64, latBatch)
	}
	batch := d.samples
	warm, iters := s.WarmupFor(size), s.ItersFor(size)
	var ran uint64
	var backward int64
	for done := 0; done < warm; {
		n, _, err := l.ping(batch[:min(len(batch), warm-done)], 0)
		ran += uint64(n)
		if err != nil {
			return nil, ran, fmt.Errorf("warm-up: %w", err)
		}
		done += n
	}
	load := d.markLoad(size)
	rec := latency.NewRecorder(s.Info().Basis)
	iv := latency.NewRecorder(rec.Basis())
	record := func(n, valid int) {
		ran += uint64(n)
		backward += int64(n - valid)
		rec.RecordBatch(batch[:valid])
		iv.RecordBatch(batch[:valid])
	}
	if s.openEnded() {
		// Each call returns at the first sample that ends past the
		// interval's end, so intervals are as long as asked whatever the
		// latency. In precision mode each interval is a round.
		start := d.r.now()
		end, step, p := d.openEnd(start, "p50_ns")
		for ivStart := start; ; {
			ivEnd := min(ivStart+step, end)
			n, valid, err := l.ping(batch, ivEnd)
			record(n, valid)
			if err != nil {
				return nil, ran, err
			}
			now := d.r.now()
			if now < ivEnd {
				continue // the batch filled up first
			}
			x := d.latencyInterval(start, ivStart, now, iv)
			d.interval(r, x)
			ivStart = now
			// A round that ended past the cap still counts.
			if p.add(x.Latency.P50Ns, now) || now >= end {
				break
			}
		}
		r.Precision = p.result()
	} else {
		for done := 0; done < iters; {
			n, valid, err := l.ping(batch[:min(len(batch), iters-done)], 0)
			record(n, valid)
			if err != nil {
				return nil, ran, err
			}
			done += n
		}
	}
	if err := load(r); err != nil {
		return nil, ran, err
	}
	if err := l.done(); err != nil {
		return nil, ran, err
	}
	lat := rec.Snapshot()
	r.Iterations = int(rec.Count())
	if lat.Count == 0 {
		return nil, ran, fmt.Errorf("%w: no ping-pong of %d B completed in the period measured", ErrNothingMeasured, size)
	}
	if backward > 0 {
		lat.ClockBackward = backward
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d samples were dropped: the clock ran backwards during them", backward))
	}
	if c := d.r.clock(); lat.Count > 0 && lat.MinNs < 20*c.ResolutionNs {
		r.Warnings = append(r.Warnings, fmt.Sprintf("the minimum latency %.0f ns is within 20x the clock resolution %.0f ns",
			lat.MinNs, c.ResolutionNs))
	}
	return lat, ran, nil
}

// measureStream runs the sending side of a bandwidth test: the warm-up,
// then the measured messages, the duration (whose intervals tile the
// measured period: the last one ends at the last completion) or the rounds
// of precision mode.
func (d *driver) measureStream(ctx context.Context, l streamLoop, size int, r *report.Result) (*report.Bandwidth, error) {
	s := d.spec
	warm, iters := s.WarmupFor(size), s.ItersFor(size)
	if warm > 0 {
		if err := l.warmup(warm, s.openEnded()); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	if d.o.streaming != nil {
		d.o.streaming(l)
	}
	bw := func(msgs, from, to uint64) *report.Bandwidth {
		return report.NewBandwidth(msgs*uint64(size), msgs, elapsed(from, to))
	}
	if s.openEnded() {
		// The stream runs on; each interval counts the completions in it.
		// In precision mode each interval is a round.
		start := d.r.now()
		end, step, p := d.openEnd(start, "bw_gbps")
		ivStart, prev := start, uint64(0)
		closeInterval := func(at, msgs uint64) *report.Bandwidth {
			b := bw(msgs-prev, ivStart, at)
			d.interval(r, report.Interval{StartS: float64(ivStart-start) / 1e9, DurationS: float64(at-ivStart) / 1e9, Bandwidth: b})
			ivStart, prev = at, msgs
			return b
		}
		for {
			next := min(ivStart+step, end)
			if err := l.send(next); err != nil {
				return nil, err
			}
			now := d.r.now()
			if (now >= end && p == nil) || d.stopped() {
				break // the last interval ends at the last completion
			}
			if now >= next {
				// A round that ended, even past the cap, counts.
				msgs, _, _ := l.measured()
				if b := closeInterval(now, msgs); p.add(b.Gbps, now) || now >= end {
					break
				}
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
		if err := l.finish(); err != nil {
			return nil, err
		}
		if msgs, _, last := l.measured(); msgs > prev {
			closeInterval(max(last, ivStart), msgs) // the rest of the duration, or TCP's last ack
		}
		r.Precision = p.result()
	} else {
		if err := l.round(uint64(iters)); err != nil {
			return nil, err
		}
		if err := l.end(); err != nil {
			return nil, err
		}
	}
	msgs, first, last := l.measured()
	r.Iterations = iters
	if s.openEnded() {
		r.Iterations = int(msgs)
	}
	if msgs == 0 {
		return nil, fmt.Errorf("%w: no message of %d B completed in the period measured (the stream made no progress)", ErrNothingMeasured, size)
	}
	b := bw(msgs, first, last)
	if ps, ok := l.(peakStream); ok && msgs > 0 {
		if rate, ok := ps.peak(); ok {
			// The whole measured period is one of the stretches.
			b.PeakGbps = max(b.Gbps, rate*float64(size)*8/1e9)
		}
	}
	return b, nil
}

// ErrNothingMeasured is a test whose measured period (a duration, or
// precision mode's rounds) ended with no message completed: a result of
// zero, or of a negative span, would read as a figure.
var ErrNothingMeasured = errors.New("nothing measured")

// elapsed is the span from one clock reading to a later one; zero when
// to is not after from (a stream with no completion has no last one).
func elapsed(from, to uint64) time.Duration {
	if to <= from {
		return 0
	}
	return time.Duration(to - from)
}

// latencyInterval closes the interval [from, to] of the latency recorder
// iv, which it resets.
func (d *driver) latencyInterval(start, from, to uint64, iv *latency.Recorder) report.Interval {
	x := report.Interval{StartS: float64(from-start) / 1e9, DurationS: float64(to-from) / 1e9, Latency: iv.Snapshot()}
	iv.Reset()
	return x
}

// precisionRounds keeps the rounds of precision mode: each interval of
// precisionRound is one, and they stop once the median of their figures is
// known to the precision asked (with at least report.MinRunsForInterval
// rounds). A nil *precisionRounds is no precision mode.
type precisionRounds struct {
	figure string
	target float64 // fraction
	values []float64
	met    bool
}

// openEnd returns when an open-ended size ends, how long its intervals
// are, and in precision mode its rounds (else nil): a duration ends at the
// duration, precision mode at its cap.
func (d *driver) openEnd(start uint64, figure string) (end, step uint64, p *precisionRounds) {
	s := d.spec
	if s.Precision == 0 {
		return start + uint64(s.Duration), uint64(s.Interval), nil
	}
	return start + uint64(s.PrecisionCap), uint64(precisionRound), &precisionRounds{figure: figure, target: s.Precision}
}

// add records a round's figure and tells whether the rounds are precise
// enough to stop.
func (p *precisionRounds) add(v float64, _ uint64) bool {
	if p == nil {
		return false
	}
	p.values = append(p.values, v)
	if len(p.values) < report.MinRunsForInterval {
		return false
	}
	if h, ok := report.SpreadOf(p.values).HalfWidth(); ok && h <= p.target {
		p.met = true
	}
	return p.met
}

func (p *precisionRounds) result() *report.Precision {
	if p == nil {
		return nil
	}
	sp := report.SpreadOf(p.values)
	out := &report.Precision{Figure: p.figure, TargetPct: 100 * p.target, Met: p.met, Rounds: len(p.values),
		Median: sp.Median, Lo: sp.Lo, Hi: sp.Hi}
	if h, ok := sp.HalfWidth(); ok {
		pct := 100 * h
		out.HalfWidthPct = &pct
	}
	return out
}

// interval records a finished interval of this end's result (the server's
// goes to the client with --reverse) and reports the client's.
func (d *driver) interval(r *report.Result, iv report.Interval) {
	r.Intervals = append(r.Intervals, iv)
	if d.role != clientEnd {
		return
	}
	if d.o.progress != nil {
		d.o.progress(Progress{Run: d.o.run, Test: d.spec.Test, Size: r.Size, Interval: &iv})
	}
}

// stopped tells whether an open-ended stream was told to stop (the load of
// a latency test that is over).
func (d *driver) stopped() bool {
	select {
	case <-d.o.stop:
		return true
	default:
		return false
	}
}

// markLoad, under a load (--load), reads what the load completed so far
// and returns what records, at the end of the size's measured samples,
// the load's bandwidth between the two; without a load it does nothing.
func (d *driver) markLoad(size int) func(*report.Result) error {
	p := d.o.load
	if p == nil {
		return func(*report.Result) error { return nil }
	}
	l := &p.spec
	m0, ok0 := p.mark()
	t0 := d.r.now()
	return func(r *report.Result) error {
		m1, ok1 := p.mark()
		t1 := d.r.now()
		if !ok0 || !ok1 {
			return fmt.Errorf("the load (%s) stopped during the measurement: %w", l.Test, p.failure())
		}
		size := l.Sizes[0]
		r.Load = &report.Load{Test: l.Test, Connection: l.Connection, Size: size, QPs: l.QPs,
			Bandwidth: report.NewBandwidth((m1-m0)*uint64(size), m1-m0, time.Duration(t1-t0))}
		return nil
	}
}
