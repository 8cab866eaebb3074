//go:build linux && cgo

package verbs

/*
#include "rb.h"
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// calibrationWait separates the two points of the TSC's calibration.
const calibrationWait = 50 * time.Millisecond

var clock struct {
	sync.Once
	name   string
	source string
	cal    calibration
}

// initClock picks the loops' clock once: the TSC where the CPU declares it
// invariant (constant_tsc and nonstop_tsc) and the kernel's own clocksource
// is the TSC (so it is synchronised across CPUs), calibrated against
// CLOCK_MONOTONIC; else CLOCK_MONOTONIC. The source says why.
func initClock() {
	clock.Do(func() {
		cs, _ := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
		cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
		clock.name, clock.cal = "monotonic", identity
		why := ""
		switch {
		case hasTSC() == 0:
			why = "this CPU has no TSC"
		case !tscInvariant(string(cpuinfo)):
			why = "the CPU does not declare its TSC invariant (constant_tsc, nonstop_tsc)"
		case strings.TrimSpace(string(cs)) != "tsc":
			why = "the kernel's clocksource is " + strings.TrimSpace(string(cs)) + ", not the TSC"
		}
		if why == "" {
			cal, err := calibrate(readBracket, func() { time.Sleep(calibrationWait) })
			if err != nil {
				why = err.Error()
			} else {
				C.rb_clock_use_tsc(1)
				clock.name, clock.cal = "tsc", cal
				clock.source = fmt.Sprintf("TSC (rdtsc, %.4f GHz, calibrated against CLOCK_MONOTONIC to %.2f ppm)",
					1/cal.nsPerTick, cal.errPPM)
				return
			}
		}
		clock.source = "CLOCK_MONOTONIC (clock_gettime): " + why
	})
}

func readBracket() bracket {
	var b bracket
	C.rb_clock_bracket((*C.uint64_t)(&b.m0), (*C.uint64_t)(&b.t), (*C.uint64_t)(&b.m1))
	return b
}

// readSplitBracket reads a bracket in three calls, with between() after the
// first read: a preemption at the worst place, on purpose, to prove the
// calibration robust to it.
func readSplitBracket(between func()) bracket {
	m0 := uint64(C.rb_mono_ns())
	between()
	t := uint64(C.rb_read_tsc())
	return bracket{m0, t, uint64(C.rb_mono_ns())}
}

// Now reads the clock the timed loops use, in ns on the CLOCK_MONOTONIC
// time line.
func Now() uint64 {
	initClock()
	return clock.cal.ns(uint64(C.rb_ticks()))
}

var clockFacts = sync.OnceValue(func() ClockInfo {
	initClock()
	var rep C.double
	var step C.uint64_t
	var cost C.double
	C.rb_clock_measure(&rep, &step, &cost)
	reported := float64(rep)
	if clock.name == "tsc" {
		reported = clock.cal.nsPerTick
	}
	return ClockInfo{
		Name:                 clock.name,
		Source:               clock.source,
		ReportedResolutionNs: reported,
		ResolutionNs:         max(float64(step)*clock.cal.nsPerTick, reported),
		ReadCostNs:           float64(cost) * clock.cal.nsPerTick,
		CalibrationPPM:       clock.cal.errPPM,
	}
})

// Clock measures the loops' clock once (a few ms) and returns its
// source, resolution, read cost and calibration.
func Clock() ClockInfo { return clockFacts() }

// ClockDrift checks the TSC's calibration again: how far, in 10^-6, the
// TSC has drifted from CLOCK_MONOTONIC since it was calibrated (ok false
// when the loops read CLOCK_MONOTONIC itself).
func ClockDrift() (ppm float64, ok bool) {
	initClock()
	if clock.name != "tsc" {
		return 0, false
	}
	return clock.cal.driftPPM(narrowest(readBracket, calibrationPoints)), true
}

// hasTSC tells whether this build can read a TSC.
func hasTSC() int { return int(C.rb_clock_has_tsc()) }
