//go:build linux && cgo

package workloads

// The drift of the RDMA loops' clock over a run, for the document's
// clocks (plan.go).

import "github.com/rdmabench/rdmabench/pkg/verbs"

// clockDrift measures, at the end of a run, how far the loops' TSC has
// drifted from its calibration (ok false when they read CLOCK_MONOTONIC).
func clockDrift() (ppm float64, name string, ok bool) {
	ppm, ok = verbs.ClockDrift()
	return ppm, verbs.Clock().Name, ok
}
