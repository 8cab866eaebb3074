package latency_test

import (
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/report"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/rdmabench/rdmabench/pkg/latency"
)

var percentiles = []float64{50, 90, 99, 99.9, 99.99}

func pctOf(l *report.Latency) []float64 {
	return []float64{l.P50Ns, l.P90Ns, l.P99Ns, l.P999Ns, l.P9999Ns}
}

// refStats is the slow reference: exact mean through big integers, two-pass
// population variance, nearest-rank percentiles of the sorted values.
func refStats(raw []uint64, scale float64) (mean, stdev, minV, maxV float64, pct []float64) {
	sum := new(big.Int)
	for _, v := range raw {
		sum.Add(sum, new(big.Int).SetUint64(v))
	}
	q := new(big.Rat).SetFrac(sum, big.NewInt(int64(len(raw))))
	mean, _ = q.Float64()
	var ss float64
	for _, v := range raw {
		d := float64(v) - mean
		ss += d * d
	}
	stdev = math.Sqrt(ss/float64(len(raw))) * scale
	mean *= scale

	sorted := slices.Clone(raw)
	slices.Sort(sorted)
	n := len(sorted)
	for _, p := range percentiles {
		rank := int(math.Floor(p/100*float64(n) + 0.5))
		rank = min(max(rank, 1), n)
		pct = append(pct, float64(sorted[rank-1])*scale)
	}
	return mean, stdev, float64(sorted[0]) * scale, float64(sorted[n-1]) * scale, pct
}

func relClose(got, want, tol float64) bool {
	if got == want {
		return true
	}
	return math.Abs(got-want) <= tol*math.Max(math.Abs(want), 1e-300)
}

func TestRecorderAgainstReference(t *testing.T) {
	for name, gen := range reporttest.Distributions() {
		for _, basis := range []string{report.BasisRTT, report.BasisRTTHalf} {
			for _, n := range []int{1, 2, 17, 10_000, 200_000} {
				raw := reporttest.Samples(gen, n, uint64(n))
				rec := latency.NewRecorder(basis)
				for _, v := range raw {
					rec.Record(v)
				}
				got := rec.Snapshot()
				scale := 1.0
				if basis == report.BasisRTTHalf {
					scale = 0.5
				}
				mean, stdev, minV, maxV, pct := refStats(raw, scale)

				if got.Count != int64(n) || got.Basis != basis {
					t.Fatalf("%s/%s/%d: count %d basis %q", name, basis, n, got.Count, got.Basis)
				}
				if got.MinNs != minV || got.MaxNs != maxV {
					t.Errorf("%s/%s/%d: min/max %v/%v, want exact %v/%v", name, basis, n, got.MinNs, got.MaxNs, minV, maxV)
				}
				if !relClose(got.MeanNs, mean, 1e-15) {
					t.Errorf("%s/%s/%d: mean %v, want %v", name, basis, n, got.MeanNs, mean)
				}
				// The two-pass reference is itself good to about 1e-12 here.
				if !relClose(got.StdevNs, stdev, 1e-9) {
					t.Errorf("%s/%s/%d: stdev %v, want %v", name, basis, n, got.StdevNs, stdev)
				}
				// 3 significant digits: the histogram reports the highest value
				// equivalent to the ranked sample, at most 1/1024 above it (plus
				// the half nanosecond rtt/2 rounds up).
				for i, p := range pctOf(got) {
					want := pct[i]
					hi := (want + 0.5*(1-scale)*2) * (1 + 1.0/1024)
					if p < want || p > hi || p < got.MinNs || p > got.MaxNs {
						t.Errorf("%s/%s/%d: p%v = %v, want in [%v, %v]", name, basis, n, percentiles[i], p, want, hi)
					}
				}
			}
		}
	}
}

func TestRecordBatchEqualsRecord(t *testing.T) {
	for name, gen := range reporttest.Distributions() {
		raw := reporttest.Samples(gen, 50_000, 7)
		one, batch, chunks := latency.NewRecorder(report.BasisRTTHalf), latency.NewRecorder(report.BasisRTTHalf), latency.NewRecorder(report.BasisRTTHalf)
		for _, v := range raw {
			one.Record(v)
		}
		batch.RecordBatch(raw)
		for c := range slices.Chunk(raw, 333) {
			chunks.RecordBatch(c)
		}
		want := one.Snapshot()
		if got := batch.Snapshot(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: RecordBatch\n got %+v\nwant %+v", name, got, want)
		}
		if got := chunks.Snapshot(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: RecordBatch in chunks\n got %+v\nwant %+v", name, got, want)
		}
	}
}

func TestRecordBatchDoesNotAllocate(t *testing.T) {
	raw := reporttest.Samples(reporttest.Distributions()["wide"], 4096, 1)
	rec := latency.NewRecorder(report.BasisRTTHalf)
	if a := testing.AllocsPerRun(100, func() { rec.RecordBatch(raw) }); a != 0 {
		t.Errorf("RecordBatch: %v allocations per call, want 0", a)
	}
	if a := testing.AllocsPerRun(1000, func() { rec.Record(12345) }); a != 0 {
		t.Errorf("Record: %v allocations per call, want 0", a)
	}
}

func TestMergeEqualsCombinedRecording(t *testing.T) {
	for name, gen := range reporttest.Distributions() {
		raw := reporttest.Samples(gen, 100_000, 3)
		all := latency.NewRecorder(report.BasisRTT)
		all.RecordBatch(raw)

		// Uneven workers, one of them empty, merged into a fresh recorder.
		workers := []*latency.Recorder{latency.NewRecorder(report.BasisRTT), latency.NewRecorder(report.BasisRTT), latency.NewRecorder(report.BasisRTT), latency.NewRecorder(report.BasisRTT)}
		workers[0].RecordBatch(raw[:10])
		workers[1].RecordBatch(raw[10:60_000])
		workers[3].RecordBatch(raw[60_000:])
		merged := latency.NewRecorder(report.BasisRTT)
		for _, w := range workers {
			if err := merged.Merge(w); err != nil {
				t.Fatal(err)
			}
		}
		// Integer moments and histogram counts add: the merge is exact.
		if got, want := merged.Snapshot(), all.Snapshot(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: merged\n got %+v\nwant %+v", name, got, want)
		}
		if !latency.RecorderHistogram(merged).Equals(latency.RecorderHistogram(all)) {
			t.Errorf("%s: merged histogram differs from the combined one", name)
		}
		// The sources are unchanged.
		if workers[1].Count() != 59_990 {
			t.Errorf("merge changed its source: count %d", workers[1].Count())
		}
	}
}

func TestMergeErrors(t *testing.T) {
	a, b := latency.NewRecorder(report.BasisRTT), latency.NewRecorder(report.BasisRTTHalf)
	b.Record(10)
	if err := a.Merge(b); err == nil {
		t.Error("merging different bases: no error")
	}
	a.Record(10)
	if err := a.Merge(a); err == nil {
		t.Error("merging a recorder into itself: no error")
	}
	if err := a.Merge(nil); err != nil {
		t.Errorf("merging nil: %v", err)
	}
	if a.Count() != 1 {
		t.Errorf("failed merges changed the recorder: count %d", a.Count())
	}
}

func mustDecode(t *testing.T, s string) *hdrhistogram.Histogram {
	t.Helper()
	h, err := (&report.Latency{Histogram: s}).DecodeHistogram()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHistogramRoundTrip(t *testing.T) {
	for name, gen := range reporttest.Distributions() {
		rec := latency.NewRecorder(report.BasisRTTHalf)
		rec.RecordBatch(reporttest.Samples(gen, 20_000, 11))
		snap := rec.Snapshot()
		if len(snap.Histogram) < 8 || snap.Histogram[:8] != "HISTFAAA" {
			t.Errorf("%s: histogram %.12q... is not V2 compressed base64", name, snap.Histogram)
		}
		// Decode with hdrhistogram-go itself, as any other reader would.
		h, err := hdrhistogram.Decode([]byte(snap.Histogram))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		live := latency.RecorderHistogram(rec)
		if h.TotalCount() != snap.Count || h.Min() != live.Min() || h.Max() != live.Max() {
			t.Errorf("%s: decoded count/min/max %d/%d/%d, recorded %d/%d/%d", name,
				h.TotalCount(), h.Min(), h.Max(), snap.Count, live.Min(), live.Max())
		}
		if h.LowestTrackableValue() != latency.LowestNs || h.HighestTrackableValue() != latency.HighestNs || h.SignificantFigures() != latency.SigFigs {
			t.Errorf("%s: decoded geometry %d..%d, %d digits", name, h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures())
		}
		for i, p := range percentiles {
			if got, want := h.ValueAtPercentile(p), live.ValueAtPercentile(p); got != want {
				t.Errorf("%s: decoded p%v = %d, recorded %d", name, p, got, want)
			}
			// And the snapshot's figure is that value, clamped to [min, max].
			if want := min(max(float64(h.ValueAtPercentile(p)), snap.MinNs), snap.MaxNs); pctOf(snap)[i] != want {
				t.Errorf("%s: snapshot p%v = %v, histogram says %v", name, p, pctOf(snap)[i], want)
			}
		}
		if d := float64(h.Max()) - snap.MaxNs; d < 0 || d > 0.5+snap.MaxNs/1024 {
			t.Errorf("%s: decoded max %d, exact %v", name, h.Max(), snap.MaxNs)
		}
	}
	if _, err := (&report.Latency{Histogram: ""}).DecodeHistogram(); err == nil {
		t.Error("DecodeHistogram(\"\"): no error")
	}
	if _, err := (&report.Latency{Histogram: "HISTFAAAnot base64!"}).DecodeHistogram(); err == nil {
		t.Error("DecodeHistogram(garbage): no error")
	}
}

func TestRTTHalf(t *testing.T) {
	raw := []uint64{1001, 2000, 3, 40_000}
	half, full := latency.NewRecorder(report.BasisRTTHalf), latency.NewRecorder(report.BasisRTT)
	half.RecordBatch(raw)
	full.RecordBatch(raw)
	h, f := half.Snapshot(), full.Snapshot()
	if h.Basis != "rtt_half" || f.Basis != "rtt" {
		t.Fatalf("bases %q, %q", h.Basis, f.Basis)
	}
	if h.MinNs != 1.5 || h.MaxNs != 20_000 || h.MeanNs != 43004.0/8 {
		t.Errorf("rtt_half min/max/mean %v/%v/%v, want 1.5/20000/%v", h.MinNs, h.MaxNs, h.MeanNs, 43004.0/8)
	}
	if h.MeanNs != f.MeanNs/2 || h.StdevNs != f.StdevNs/2 || h.MinNs != f.MinNs/2 || h.MaxNs != f.MaxNs/2 {
		t.Errorf("rtt_half is not half of rtt: %+v vs %+v", h, f)
	}
	for i, p := range pctOf(h) {
		if q := pctOf(f)[i] / 2; math.Abs(p-q) > 0.5+q/1024 {
			t.Errorf("p%v: rtt_half %v, rtt/2 %v", percentiles[i], p, q)
		}
	}
	// The histogram holds the halves too.
	if hh := mustDecode(t, h.Histogram); hh.Max() < 19_990 || hh.Max() > 20_020 {
		t.Errorf("rtt_half histogram max %d, want about 20000", hh.Max())
	}
}

func TestEmptyRecorder(t *testing.T) {
	for _, basis := range []string{report.BasisRTT, report.BasisRTTHalf} {
		l := latency.NewRecorder(basis).Snapshot()
		want := report.Latency{Basis: basis, Histogram: l.Histogram}
		if *l != want {
			t.Errorf("empty snapshot %+v, want all zero", *l)
		}
		if h := mustDecode(t, l.Histogram); h.TotalCount() != 0 {
			t.Errorf("empty histogram has %d values", h.TotalCount())
		}
		if _, err := json.Marshal(l); err != nil { // no NaN or Inf
			t.Errorf("empty snapshot does not encode: %v", err)
		}
	}
}

func TestClampAbove60s(t *testing.T) {
	rec := latency.NewRecorder(report.BasisRTT)
	rec.RecordBatch([]uint64{1000, 120_000_000_000, math.MaxUint64})
	l := rec.Snapshot()
	if l.Count != 3 || l.MinNs != 1000 || l.MaxNs != float64(uint64(math.MaxUint64)) {
		t.Errorf("count/min/max %d/%v/%v", l.Count, l.MinNs, l.MaxNs)
	}
	// The mean uses the exact 128-bit sum: no overflow.
	if want := (1000 + 120e9 + 18446744073709551615.0) / 3; !relClose(l.MeanNs, want, 1e-15) {
		t.Errorf("mean %v, want %v", l.MeanNs, want)
	}
	h := mustDecode(t, l.Histogram)
	if h.TotalCount() != 3 || !h.ValuesAreEquivalent(h.Max(), latency.HighestNs) {
		t.Errorf("histogram count %d max %d, want 3 and 60 s", h.TotalCount(), h.Max())
	}
	half := latency.NewRecorder(report.BasisRTTHalf)
	half.Record(math.MaxUint64) // rounding the half must not overflow
	if got := half.Snapshot().MaxNs; got != float64(uint64(math.MaxUint64))/2 {
		t.Errorf("rtt_half of MaxUint64: %v", got)
	}
}

func TestReset(t *testing.T) {
	rec := latency.NewRecorder(report.BasisRTTHalf)
	rec.RecordBatch(reporttest.Samples(reporttest.Distributions()["wide"], 1000, 5))
	rec.Reset()
	if got, want := rec.Snapshot(), latency.NewRecorder(report.BasisRTTHalf).Snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("after Reset %+v, want %+v", got, want)
	}
	rec.Record(10)
	if l := rec.Snapshot(); l.Count != 1 || l.MinNs != 5 || l.MaxNs != 5 || l.MeanNs != 5 || l.StdevNs != 0 {
		t.Errorf("after Reset and Record(10): %+v", l)
	}
}

func TestUnknownBasisPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewRecorder(\"one-way\") did not panic")
		}
	}()
	latency.NewRecorder("one-way")
}

func BenchmarkRecordBatch(b *testing.B) {
	raw := reporttest.Samples(reporttest.Distributions()["rdma"], 4096, 1)
	rec := latency.NewRecorder(report.BasisRTTHalf)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw) * 8))
	for b.Loop() {
		rec.RecordBatch(raw)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(raw)), "ns/sample")
}

func BenchmarkSnapshot(b *testing.B) {
	rec := latency.NewRecorder(report.BasisRTTHalf)
	rec.RecordBatch(reporttest.Samples(reporttest.Distributions()["rdma"], 100_000, 1))
	b.ReportAllocs()
	for b.Loop() {
		rec.Snapshot()
	}
}

// TestMerge: merging the snapshots of two recorders gives what one
// recorder of every sample gives (the mean and stdev up to rounding).
func TestMerge(t *testing.T) {
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
		got, err := latency.Merge(parts...)
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
	if _, err := latency.Merge(latency.NewRecorder(report.BasisRTT).Snapshot(), latency.NewRecorder(report.BasisRTTHalf).Snapshot()); err == nil {
		t.Fatal("merged latencies of different bases")
	}
	if l, err := latency.Merge(); l != nil || err != nil {
		t.Fatalf("nothing merged: %+v, %v", l, err)
	}
}
