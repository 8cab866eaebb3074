package workloads

import (
	"math"
	"testing"
)

// The peak is the fastest stretch between checkpoints: the messages
// posted after its start and complete by its end, over its length; those
// still in flight at its start do not count for it.
func TestPeakRate(t *testing.T) {
	ms := uint64(1e6) // ns
	for _, c := range []struct {
		name string
		cps  []checkpoint
		want float64 // messages per second
	}{
		{"one checkpoint", []checkpoint{{at: 0}}, 0},
		{"nothing moved", []checkpoint{{at: 0}, {at: ms}}, 0},
		{"steady, queue drained at the ends", []checkpoint{{0, 0, 0}, {ms, 1100, 1000}, {2 * ms, 2000, 2000}}, 1e6},
		// The second ms: 4000 complete by its end, 1100 posted before its
		// start (100 of them still in flight): 2900 in 1 ms.
		{"a fast stretch", []checkpoint{{0, 0, 0}, {ms, 1100, 1000}, {2 * ms, 4000, 4000}}, 2.9e6},
		{"a clock that did not move", []checkpoint{{0, 0, 0}, {0, 100, 100}}, 0},
	} {
		if got := peakRate(c.cps); math.Abs(got-c.want) > 1e-6*c.want {
			t.Errorf("%s: peakRate = %v, want %v", c.name, got, c.want)
		}
	}
}

// A steady stream's peak is its rate, however many checkpoints it took.
func TestPeakRateSteady(t *testing.T) {
	cps := []checkpoint{{0, 0, 0}}
	for i := 1; i <= 300; i++ {
		cps = append(cps, checkpoint{at: uint64(i) * 1e6, posted: uint64(i) * 1000, completed: uint64(i) * 1000})
	}
	if got := peakRate(cps); math.Abs(got-1e6) > 1e-3 {
		t.Errorf("peakRate of a steady stream = %v, want 1e6", got)
	}
}
