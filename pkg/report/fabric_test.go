package report

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report/schema"
)

// TestMergeLatency: merging the snapshots of two recorders gives what one
// recorder of every sample gives (the mean and stdev up to rounding).
func TestMergeLatency(t *testing.T) {
	for _, basis := range []string{BasisRTT, BasisRTTHalf} {
		all := NewLatencyRecorder(basis)
		var parts []*Latency
		rng := rand.New(rand.NewPCG(1, 2))
		for p := range 3 {
			r := NewLatencyRecorder(basis)
			for range 1000 * (p + 1) {
				v := uint64(1000 + rng.ExpFloat64()*float64(500*(p+1)))
				r.Record(v)
				all.Record(v)
			}
			parts = append(parts, r.Snapshot())
		}
		got, err := MergeLatency(parts...)
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
		h, err := DecodeHistogram(got.Histogram)
		if err != nil || h.TotalCount() != want.Count {
			t.Fatalf("merged histogram: %v, %d samples", err, h.TotalCount())
		}
	}
	if _, err := MergeLatency(NewLatencyRecorder(BasisRTT).Snapshot(), NewLatencyRecorder(BasisRTTHalf).Snapshot()); err == nil {
		t.Fatal("merged latencies of different bases")
	}
	if l, err := MergeLatency(); l != nil || err != nil {
		t.Fatalf("nothing merged: %+v, %v", l, err)
	}
}

// fabricDoc is a document with each fabric part: a bandwidth result on two
// threads with its placement, one on two devices, and a latency under load.
func fabricDoc() *Document {
	doc := NewDocument()
	doc.Tool = Tool{Name: "rdmabench", Version: "dev"}
	bw := func(msgs uint64, size int, ns int64) *Bandwidth {
		return NewBandwidth(msgs*uint64(size), msgs, time.Duration(ns))
	}
	rec := NewLatencyRecorder(BasisRTTHalf)
	rec.RecordBatch([]uint64{3000, 3200, 5000})
	node := 0
	doc.Results = []Result{
		{Test: "write-bw", Connection: "RC", Size: 2, Iterations: 100, QPs: 4, Bandwidth: bw(400, 2, 1e6),
			Effective: &Effective{TxDepth: 128, Threads: 2, RateLimitGbps: 0.5, RateLimiter: "sw"},
			Threads: []Thread{{End: "client", Index: 0, QPs: []int{0, 1}, Bandwidth: bw(200, 2, 1e6)},
				{End: "client", Index: 1, QPs: []int{2, 3}, Bandwidth: bw(200, 2, 9e5)}},
			Placement: &Placement{Client: &EndPlacement{Policy: PlaceCPUList, CPUs: []int{0, 1}, Used: []int{0, 1}},
				Server: &EndPlacement{Policy: PlaceNUMA, NUMANode: &node, CPUs: []int{0, 1, 2, 3}}}},
		{Test: "send-bw", Connection: "RC", Size: 4096, Iterations: 100, QPs: 1, Bandwidth: Sum(bw(100, 4096, 1e6), bw(100, 4096, 2e6)),
			Devices: []DeviceResult{{Device: "mlx5_0", ServerDevice: "mlx5_2", Iterations: 100, Bandwidth: bw(100, 4096, 1e6)},
				{Device: "mlx5_1", ServerDevice: "mlx5_3", Iterations: 100, Bandwidth: bw(100, 4096, 2e6)}}},
		{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 3, Latency: rec.Snapshot(),
			Load: &Load{Test: "write-bw", Connection: "RC", Size: 65536, QPs: 4, Bandwidth: bw(1000, 65536, 1e8)}},
	}
	return doc
}

func TestFabricRendering(t *testing.T) {
	doc := fabricDoc()
	var b bytes.Buffer
	if err := WriteTable(&b, doc); err != nil {
		t.Fatal(err)
	}
	table := b.String()
	for _, want := range []string{"thread 0", "thread 1", "0-1", "2-3", "mlx5_0 / mlx5_2", "mlx5_1 / mlx5_3",
		"under load: write-bw, 4 QPs of 65536 B, 5.243 Gbit/s", "threads 2", "rate-limit 0.5 Gbit/s sw",
		"loop threads: client pinned to cores 0-1", "server on NUMA node 0 (cores 0-3)", "mlx5_1 / mlx5_3                 100"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	b.Reset()
	if err := WriteMarkdown(&b, doc); err != nil || !strings.Contains(b.String(), "thread 1") {
		t.Errorf("markdown: %v\n%s", err, b.String())
	}
	b.Reset()
	if err := WriteJSON(&b, doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(b.Bytes()); err != nil {
		t.Fatalf("the document does not follow the schema: %v", err)
	}
	for _, f := range Formats {
		b.Reset()
		if err := Write(&b, f, doc); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
