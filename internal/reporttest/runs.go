package reporttest

import (
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/settings"
)

// Fixed documents of repeated runs, for the golden files and the compare
// tests: every value is a literal or computed from literals.

// BwAt returns the figures of 10000 messages of size bytes at gbps.
func BwAt(size int, gbps float64) *report.Bandwidth {
	bytes := uint64(size) * 10000
	d := time.Duration(float64(bytes) * 8 / gbps) // ns
	return report.NewBandwidth(bytes, 10000, d)
}

// LatAt is a latency distribution with the given p50 and p99 (µs), the
// other figures derived from them.
func LatAt(basis string, p50, p99 float64) *report.Latency {
	return Latency(basis, 10000, p50*0.94, p50, p50*1.02, p50*0.07, p50*1.05, p99, p99*2.2, p99*4, p99*4.1)
}

// runsDoc is a loopback document of len(p50) runs of write-lat RC 2 B and
// write-bw RC 64 KiB on device dev: run i has the i-th p50, p99 (µs) and
// Gbit/s.
func runsDoc(dev string, start time.Time, p50, p99, gbps []float64) *report.Document {
	doc := &report.Document{
		Schema:  report.Schema,
		Tool:    report.Tool{Name: "rdmabench", Version: "0.2.0", Commit: "9d41e07", GoVersion: "go1.26.8", Verbs: true},
		Command: []string{"rdmabench", "suite", "--repeat", "5", "-o", "json", "--out", "new.json"},
		Start:   start,
		End:     start.Add(90 * time.Second),
		Hosts: report.Hosts{Local: report.Host{Hostname: "ci-runner", Kernel: "6.12.9", OS: "linux/amd64", CPU: "AMD EPYC 7543 32-Core Processor", CPUs: 8,
			Device: &report.Device{Name: dev, Firmware: "20.39.1002", Port: 1, PortState: "ACTIVE", LinkLayer: "Ethernet", ActiveMTU: 4096,
				GID: "::ffff:10.0.0.1", GIDIndex: 1, GIDType: "RoCE v2"}}},
		Clocks: map[string]report.Clock{"tsc": {Source: "TSC (rdtsc, 2.7945 GHz, scaled against CLOCK_MONOTONIC)", ResolutionNs: 9}},
		Params: report.Params{GIDIndex: -1, Queues: settings.Queues{QPs: 1}, Iterations: 10000, Warmup: ptr(1000),
			Loopback: true, Repeat: len(p50)},
		Results: []report.Result{},
	}
	if len(p50) == 1 {
		doc.Params.Repeat = 0
	}
	for i := range p50 {
		run := i + 1
		if len(p50) == 1 {
			run = 0
		}
		doc.Results = append(doc.Results,
			report.Result{Test: "write-lat", Connection: "RC", Size: 2, Run: run, Iterations: 10000, Warmup: 1000, QPs: 1,
				Clock: "tsc", Effective: &report.Effective{TxDepth: 1, CQMod: 1, InlineMax: 220, Inline: true, PathMTU: 4096},
				Latency: LatAt(report.BasisRTTHalf, p50[i], p99[i])},
			report.Result{Test: "write-bw", Connection: "RC", Size: 65536, Run: run, Iterations: 10000, Warmup: 1000, QPs: 1,
				Clock: "tsc", Effective: &report.Effective{TxDepth: 128, CQMod: 1, PostList: 1, PathMTU: 4096},
				Bandwidth: BwAt(65536, gbps[i])},
		)
	}
	if len(p50) > 1 {
		doc.Summaries = doc.Summarize()
	}
	return doc
}

var (
	baseTime = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	newTime  = time.Date(2025, 3, 2, 12, 0, 0, 0, time.UTC)
)

// The base: 5 runs.
func BaseRuns() *report.Document {
	return runsDoc("mlx5_0", baseTime,
		[]float64{1.04, 1.05, 1.03, 1.04, 1.06},
		[]float64{1.31, 1.30, 1.33, 1.32, 1.31},
		[]float64{98.5, 98.4, 98.6, 98.5, 98.3})
}

// A clear regression: p99 +50%, bandwidth -10%, p50 the same noise.
func RegressedRuns() *report.Document {
	return runsDoc("mlx5_0", newTime,
		[]float64{1.05, 1.03, 1.04, 1.06, 1.04},
		[]float64{1.97, 1.95, 1.99, 1.96, 1.98},
		[]float64{88.6, 88.7, 88.5, 88.6, 88.4})
}

// Pure noise: every figure overlaps the base's.
func NoiseRuns() *report.Document {
	return runsDoc("mlx5_0", newTime,
		[]float64{1.05, 1.04, 1.03, 1.05, 1.04},
		[]float64{1.32, 1.31, 1.30, 1.33, 1.31},
		[]float64{98.4, 98.6, 98.5, 98.3, 98.5})
}

// One run on each side, with the same +50% p99 as regressedRuns.
func SingleBase() *report.Document {
	return runsDoc("mlx5_0", baseTime, []float64{1.04}, []float64{1.31}, []float64{98.5})
}

func SingleNew() *report.Document {
	return runsDoc("mlx5_0", newTime, []float64{1.05}, []float64{1.97}, []float64{88.6})
}

// The noise on another device, firmware, MTU, with another tool and
// tx-depth, and with a test the base does not have.
func OtherDeviceRuns() *report.Document {
	doc := NoiseRuns()
	d := doc.Hosts.Local.Device
	d.Name, d.Firmware, d.ActiveMTU, d.GIDType = "mlx5_1", "22.41.1000", 1024, "IB/RoCE v1"
	doc.Tool.Version, doc.Tool.Commit = "0.3.0", "5be1c2a"
	doc.Params.TxDepth = 64
	for i := range doc.Results {
		if r := &doc.Results[i]; r.Test == "write-bw" {
			e := *r.Effective
			e.TxDepth, e.PathMTU = 64, 1024
			r.Effective = &e
		}
	}
	doc.Results = append(doc.Results, report.Result{Test: "read-lat", Connection: "RC", Size: 2, Run: 1, Iterations: 10000,
		Latency: LatAt(report.BasisRTT, 2.01, 2.42)})
	return doc
}

// RepeatDoc is a document of 6 runs (enough for confidence intervals) of
// two tests, one with a warning in every run, then 5 runs of a
// bidirectional test of which one failed, then a test of one run only.
func RepeatDoc() *report.Document {
	doc := runsDoc("mlx5_0", baseTime,
		[]float64{1.04, 1.05, 1.03, 1.04, 1.06, 1.04},
		[]float64{1.31, 1.30, 1.33, 1.32, 1.31, 1.35},
		[]float64{98.5, 98.4, 98.6, 98.5, 98.3, 98.5})
	for i := range doc.Results {
		r := &doc.Results[i]
		if r.Test == "write-bw" {
			r.Warnings = []string{"tx-depth 128 reduced to 16 (max_qp_rd_atom of mlx5_0)"}
		}
	}
	gb := []float64{18.4, 18.5, 18.3, 18.4, 18.6}
	for i, g := range gb {
		fwd, rev := BwAt(65536, g/2), BwAt(65536, g/2-0.1)
		r := report.Result{Test: "send-bw", Connection: "UC", Size: 65536, Run: i + 1, Iterations: 10000, QPs: 2,
			Bandwidth: fwd, Reverse: rev, Total: report.Sum(fwd, rev)}
		if i == 2 {
			r = report.Result{Test: "send-bw", Connection: "UC", Size: 65536, Run: 3, QPs: 2,
				Error: "post send: work completion IBV_WC_RETRY_EXC_ERR (transport retry counter exceeded)"}
		}
		doc.Results = append(doc.Results, r)
	}
	doc.Results = append(doc.Results, report.Result{Test: "atomic-lat", Connection: "RC", Size: 8, Run: 1, Iterations: 10000,
		Latency:  LatAt(report.BasisRTT, 2.06, 2.47),
		Warnings: []string{"CPU frequency changed during the test"}})
	doc.Summaries = doc.Summarize()
	return doc
}
