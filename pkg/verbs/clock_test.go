package verbs

import (
	"math"
	"testing"
)

// fakeClocks is a TSC at 2.5 ticks per ns beside CLOCK_MONOTONIC; each
// bracket's reads are 40 ns apart, and every third bracket is preempted
// for 4 ms between its first two reads when disturbed.
type fakeClocks struct {
	now       uint64 // ns
	disturbed bool
	calls     int
}

const fakeTicksPerNs = 2.5

func (f *fakeClocks) read() bracket {
	f.calls++
	m0 := f.now
	f.now += 40
	if f.disturbed && f.calls%3 == 0 {
		f.now += 4_000_000
	}
	t := uint64(float64(f.now) * fakeTicksPerNs)
	f.now += 40
	return bracket{m0, t, f.now}
}

func (f *fakeClocks) wait() { f.now += 50_000_000 }

func TestCalibrateKeepsTheNarrowestBracket(t *testing.T) {
	for _, disturbed := range []bool{false, true} {
		f := &fakeClocks{now: 1e9, disturbed: disturbed}
		c, err := calibrate(f.read, f.wait)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.nsPerTick, 1/fakeTicksPerNs; math.Abs(got-want)/want > 1e-6 {
			t.Errorf("disturbed %v: %v ns per tick, want %v", disturbed, got, want)
		}
		if c.errPPM <= 0 || c.errPPM > 10 {
			t.Errorf("disturbed %v: error bound %v ppm", disturbed, c.errPPM)
		}
		// Ticks and ns convert both ways on one time line.
		tick := uint64(float64(f.now) * fakeTicksPerNs)
		if ns := c.ns(tick); math.Abs(float64(ns)-float64(f.now)) > 100 {
			t.Errorf("tick %d is %d ns, want about %d", tick, ns, f.now)
		}
		if back := c.ticks(c.ns(tick)); math.Abs(float64(back)-float64(tick)) > 3 {
			t.Errorf("ticks(ns(%d)) = %d", tick, back)
		}
	}
}

func TestCalibrateRefusesAStoppedTSC(t *testing.T) {
	now := uint64(0)
	read := func() bracket { now += 10; return bracket{now, 7, now + 5} }
	if _, err := calibrate(read, func() { now += 1e6 }); err == nil {
		t.Fatal("a TSC that does not advance was calibrated")
	}
}

func TestScaleSamplesDropsBackwardClock(t *testing.T) {
	c := calibration{nsPerTick: 0.5}
	back := uint64(math.MaxUint64 - 9) // t1 - t0 with t1 ten ticks before t0
	s := []uint64{100, back, 40, 0}
	if n := c.scaleSamples(s); n != 3 || s[0] != 50 || s[1] != 20 || s[2] != 0 {
		t.Fatalf("scaled %v to %d samples, want [50 20 0]", s, n)
	}
}

func TestDrift(t *testing.T) {
	c := calibration{tick0: 1000, ns0: 1e6, nsPerTick: 1}
	// 1 s later the TSC shows 1 s + 100 us: 100 ppm fast.
	if got := c.driftPPM(bracket{m0: 1e6 + 1e9, t: 1000 + 1e9 + 1e5, m1: 1e6 + 1e9}); math.Abs(got-100) > 1e-6 {
		t.Fatalf("drift %v ppm, want 100", got)
	}
}

func TestTSCInvariant(t *testing.T) {
	for cpuinfo, want := range map[string]bool{
		"processor\t: 0\nflags\t\t: fpu tsc constant_tsc rep_good nonstop_tsc cpuid\n": true,
		"flags\t\t: fpu tsc constant_tsc\n":                                            false,
		"flags\t\t: fpu tsc nonstop_tsc\n":                                             false,
		"model name\t: QEMU Virtual CPU version 2.5+\nflags\t\t: fpu tsc\n":            false,
		"": false,
	} {
		if got := tscInvariant(cpuinfo); got != want {
			t.Errorf("tscInvariant(%q) = %v, want %v", cpuinfo, got, want)
		}
	}
}
