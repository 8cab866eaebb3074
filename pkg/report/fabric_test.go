package report_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/latency"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// TestMergeLatency: merging the snapshots of two recorders gives what one
// recorder of every sample gives (the mean and stdev up to rounding).
func TestMergeLatency(t *testing.T) {
	for _, basis := range []string{report.BasisRTT, report.BasisRTTHalf} {
		all := latency.NewRecorder(basis)
		var parts []*report.Latency
		rng := rand.New(rand.NewPCG(1, 2))
		for p := range 3 {
			r := latency.NewRecorder(basis)
			for range 1000 * (p + 1) {
				v := uint64(1000 + rng.ExpFloat64()*float64(500*(p+1)))
				r.Record(v)
				all.Record(v)
			}
			parts = append(parts, r.Snapshot())
		}
		got, err := report.MergeLatency(parts...)
		if err != nil {
			t.Fatal(err)
		}
		want := all.Snapshot()
		if got.Count != want.Count || got.MinNs != want.MinNs || got.MaxNs != want.MaxNs || got.Basis != basis ||
			got.P50Ns != want.P50Ns || got.P90Ns != want.P90Ns || got.P99Ns != want.P99Ns || got.P999Ns != want.P999Ns || got.P9999Ns != want.P9999Ns {
			t.Fatalf("%s: merged %+v, one recorder %+v", basis, got, want)
		}
		if math.Abs(got.MeanNs-want.MeanNs) > 1e-9*want.MeanNs || math.Abs(got.StdevNs-want.StdevNs) > 1e-6*want.StdevNs {
			t.Fatalf("%s: mean %g stdev %g, one recorder %g %g", basis, got.MeanNs, got.StdevNs, want.MeanNs, want.StdevNs)
		}
		h, err := got.DecodeHistogram()
		if err != nil || h.TotalCount() != want.Count {
			t.Fatalf("merged histogram: %v, %d samples", err, h.TotalCount())
		}
	}
	if _, err := report.MergeLatency(latency.NewRecorder(report.BasisRTT).Snapshot(), latency.NewRecorder(report.BasisRTTHalf).Snapshot()); err == nil {
		t.Fatal("merged latencies of different bases")
	}
	if l, err := report.MergeLatency(); l != nil || err != nil {
		t.Fatalf("nothing merged: %+v, %v", l, err)
	}
}
