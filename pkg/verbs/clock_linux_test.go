//go:build linux && cgo

package verbs

import (
	"math"
	"testing"
	"time"
)

// TestCalibrationSurvivesPreemption: a calibration whose brackets are
// disturbed on purpose (a sleep between the paired reads of every third
// one, as a preemption would) lands within 0.1% of the undisturbed one.
func TestCalibrationSurvivesPreemption(t *testing.T) {
	if hasTSC() == 0 {
		t.Skip("this CPU has no TSC: the loops use CLOCK_MONOTONIC, which needs no calibration")
	}
	wait := func() { time.Sleep(calibrationWait) }
	clean, err := calibrate(readBracket, wait)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	disturbed, err := calibrate(func() bracket {
		calls++
		return readSplitBracket(func() {
			if calls%3 == 0 {
				time.Sleep(2 * time.Millisecond)
			}
		})
	}, wait)
	if err != nil {
		t.Fatal(err)
	}
	diff := math.Abs(disturbed.nsPerTick-clean.nsPerTick) / clean.nsPerTick
	t.Logf("undisturbed %.6f ns/tick (±%.2f ppm), disturbed %.6f ns/tick (±%.2f ppm): %.5f%% apart",
		clean.nsPerTick, clean.errPPM, disturbed.nsPerTick, disturbed.errPPM, 100*diff)
	if diff > 0.001 {
		t.Fatalf("the disturbed calibration is %.4f%% off the undisturbed one (limit 0.1%%)", 100*diff)
	}
}
