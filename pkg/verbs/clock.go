package verbs

import (
	"errors"
	"math"
	"strings"
)

// The timed loops read raw ticks of one clock: the TSC where it can be
// trusted, else CLOCK_MONOTONIC (in ns). Go scales ticks to ns after each
// call, with a calibration of the TSC against CLOCK_MONOTONIC made of
// bracketed reads: a point is (CLOCK_MONOTONIC, TSC, CLOCK_MONOTONIC), and
// the narrower the bracket, the better the TSC read is placed in time. A
// preemption between the reads widens a bracket, and the narrowest of many
// is kept, so one unlucky moment cannot skew the scale.

// bracket is one calibration point: the TSC read t between two
// CLOCK_MONOTONIC reads m0 and m1 (ns).
type bracket struct{ m0, t, m1 uint64 }

func (b bracket) width() uint64 { return b.m1 - b.m0 }

// mid is the monotonic time the TSC read most likely happened at.
func (b bracket) mid() float64 { return float64(b.m0) + float64(b.m1-b.m0)/2 }

// narrowest reads n brackets and returns the narrowest.
func narrowest(read func() bracket, n int) bracket {
	best := bracket{m1: math.MaxUint64}
	for range n {
		if b := read(); b.m1 >= b.m0 && b.width() < best.width() {
			best = b
		}
	}
	return best
}

// calibration maps ticks to ns on the CLOCK_MONOTONIC time line:
// ns = ns0 + (tick - tick0) * nsPerTick.
type calibration struct {
	tick0     uint64
	ns0       float64
	nsPerTick float64
	// errPPM bounds the relative error of nsPerTick (in 10^-6), from the
	// two brackets' widths over the time between them.
	errPPM float64
}

// identity is the calibration of a clock that reads ns already.
var identity = calibration{nsPerTick: 1}

// calibrationPoints is how many brackets each calibration point is the
// narrowest of.
const calibrationPoints = 200

// calibrate takes the narrowest of many brackets, waits (wait), takes the
// narrowest of many again, and returns the scale between the two points.
func calibrate(read func() bracket, wait func()) (calibration, error) {
	a := narrowest(read, calibrationPoints)
	wait()
	b := narrowest(read, calibrationPoints)
	if b.t <= a.t || b.mid() <= a.mid() {
		return calibration{}, errors.New("the TSC did not advance with CLOCK_MONOTONIC")
	}
	span := b.mid() - a.mid()
	return calibration{
		tick0:     b.t,
		ns0:       b.mid(),
		nsPerTick: span / float64(b.t-a.t),
		errPPM:    float64(a.width()+b.width()) / 2 / span * 1e6,
	}, nil
}

// ns converts an absolute tick to ns on the CLOCK_MONOTONIC time line.
func (c calibration) ns(tick uint64) uint64 {
	return uint64(c.ns0 + (float64(int64(tick-c.tick0)) * c.nsPerTick))
}

// duration converts a difference of ticks to ns.
func (c calibration) duration(ticks uint64) uint64 { return uint64(float64(ticks)*c.nsPerTick + 0.5) }

// ticks converts ns on the CLOCK_MONOTONIC time line to a tick (0 stays
// 0: no deadline).
func (c calibration) ticks(ns uint64) uint64 {
	if ns == 0 {
		return 0
	}
	return c.tick0 + uint64(int64((float64(ns)-c.ns0)/c.nsPerTick))
}

// ticksOf converts a duration in ns to ticks.
func (c calibration) ticksOf(ns uint64) uint64 { return uint64(float64(ns) / c.nsPerTick) }

// fixedTicks converts a duration in ns to ticks in fixed point, with shift
// fractional bits (the pacing schedule's unit), at least 1.
func (c calibration) fixedTicks(ns float64, shift uint) uint64 {
	return max(1, uint64(ns/c.nsPerTick*float64(uint64(1)<<shift)+0.5))
}

// driftPPM compares a new bracket with what the calibration predicts for
// its TSC read: how far the scale has drifted since, in 10^-6.
func (c calibration) driftPPM(b bracket) float64 {
	elapsed := b.mid() - c.ns0
	if elapsed <= 0 {
		return 0
	}
	predicted := c.ns0 + float64(int64(b.t-c.tick0))*c.nsPerTick
	return (predicted - b.mid()) / elapsed * 1e6
}

// scaleSamples turns raw tick differences into ns in place, dropping those
// of a clock that ran backwards (a negative difference, which would wrap):
// it returns how many samples are left at the front of s.
func (c calibration) scaleSamples(s []uint64) int {
	n := 0
	for _, d := range s {
		if int64(d) < 0 {
			continue
		}
		s[n] = c.duration(d)
		n++
	}
	return n
}

// tscInvariant tells, from /proc/cpuinfo's flags, whether the CPU declares
// its TSC invariant: constant rate (constant_tsc) and running in every
// sleep state (nonstop_tsc).
func tscInvariant(cpuinfo string) bool {
	for _, line := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != "flags" {
			continue
		}
		f := strings.Fields(v)
		has := func(flag string) bool {
			for _, x := range f {
				if x == flag {
					return true
				}
			}
			return false
		}
		return has("constant_tsc") && has("nonstop_tsc")
	}
	return false
}
