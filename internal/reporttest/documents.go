package reporttest

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/latency"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/settings"
)

// Fixed documents for the golden tables and the JSON round trip: every value
// is a literal, so the output cannot change from run to run.

// Latency is a latency distribution of count samples with the given
// figures (µs).
func Latency(basis string, count int64, minUs, p50, mean, stdev, p90, p99, p999, p9999, maxUs float64) *report.Latency {
	return &report.Latency{
		Basis: basis, Count: count,
		MinNs: minUs * 1e3, P50Ns: p50 * 1e3, MeanNs: mean * 1e3, StdevNs: stdev * 1e3,
		P90Ns: p90 * 1e3, P99Ns: p99 * 1e3, P999Ns: p999 * 1e3, P9999Ns: p9999 * 1e3, MaxNs: maxUs * 1e3,
	}
}

func ptr(v int) *int { return &v }

func bw(bytes, msgs uint64, d time.Duration) *report.Bandwidth {
	return report.NewBandwidth(bytes, msgs, d)
}

// peaked is b with its BW peak, Gbit/s.
func peaked(b *report.Bandwidth, gbps float64) *report.Bandwidth {
	b.PeakGbps = gbps
	return b
}

// SuiteDoc is `rdmabench suite` between two hosts: all ten tests.
func SuiteDoc() *report.Document {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	dev := func(gid string) *report.Device {
		return &report.Device{
			Name: "mlx5_0", Firmware: "20.39.1002", NodeGUID: "b8ce:f603:00a1:2b3c", Transport: "InfiniBand",
			Port: 1, PortState: "ACTIVE", LinkLayer: "Ethernet", ActiveMTU: 4096,
			GID: gid, GIDIndex: 3, GIDType: "RoCE v2", GIDReason: "auto: RoCE v2, IPv4", Netdev: "ens1f0np0",
		}
	}
	return &report.Document{
		Schema:  report.Schema,
		Tool:    report.Tool{Name: "rdmabench", Version: "0.1.0", Commit: "3f2a9c1", GoVersion: "go1.26.8", Verbs: true},
		Command: []string{"rdmabench", "suite", "node-b", "-d", "mlx5_0", "-n", "10000"},
		Start:   start,
		End:     start.Add(41*time.Second + 300*time.Millisecond),
		Hosts: report.Hosts{
			Local:  report.Host{Hostname: "node-a", Kernel: "6.8.0-45-generic", OS: "Ubuntu 24.04.1 LTS", CPU: "AMD EPYC 7543 32-Core Processor", CPUs: 64, Device: dev("::ffff:192.168.10.1")},
			Remote: &report.Host{Hostname: "node-b", Kernel: "6.8.0-45-generic", OS: "Ubuntu 24.04.1 LTS", CPU: "AMD EPYC 7543 32-Core Processor", CPUs: 64, Device: dev("::ffff:192.168.10.2")},
		},
		Clocks: map[string]report.Clock{
			"tsc": {Source: "TSC (rdtsc, 2.7945 GHz, scaled against CLOCK_MONOTONIC)", ResolutionNs: 9, ReportedResolutionNs: 0.358, ReadCostNs: 13.5},
			"go":  {Source: "Go time.Now (monotonic)", ResolutionNs: 20, ReadCostNs: 24.5},
		},
		Params: report.Params{
			Server: "node-b", DevicePort: settings.DevicePort{Device: "mlx5_0"}, GIDIndex: -1, Iterations: 10000, Warmup: ptr(1000),
			Extra: map[string]string{"tcp-port": "19515"},
		},
		Results: []report.Result{
			{Test: "write-lat", Connection: "RC", Size: 64, Iterations: 10000, Warmup: 1000, QPs: 1,
				Clock: "tsc", Effective: &report.Effective{TxDepth: 1, CQMod: 1, InlineMax: 220, Inline: true, PathMTU: 4096},
				Latency: Latency(report.BasisRTTHalf, 10000, 0.98, 1.04, 1.06, 0.07, 1.09, 1.31, 2.87, 5.12, 5.12)},
			{Test: "read-lat", Connection: "RC", Size: 64, Iterations: 10000, Warmup: 1000, QPs: 1,
				Clock: "tsc", Effective: &report.Effective{TxDepth: 1, CQMod: 1, PathMTU: 4096, MaxRdAtomic: 16},
				Latency: Latency(report.BasisRTT, 10000, 1.91, 2.01, 2.04, 0.11, 2.09, 2.42, 4.66, 9.87, 9.87)},
			{Test: "atomic-lat", Connection: "RC", Size: 8, Iterations: 10000, Warmup: 1000, QPs: 1,
				Latency: Latency(report.BasisRTT, 10000, 1.95, 2.06, 2.08, 0.09, 2.13, 2.47, 3.98, 7.21, 7.21)},
			{Test: "send-lat", Connection: "RC", Size: 64, Iterations: 10000, Warmup: 1000, QPs: 1,
				Latency: Latency(report.BasisRTTHalf, 10000, 1.07, 1.13, 1.16, 0.08, 1.19, 1.44, 3.02, 6.4, 6.4)},
			{Test: "tcp-lat", Connection: "TCP", Size: 64, Iterations: 10000, Warmup: 1000,
				Clock: "go", Effective: &report.Effective{Connections: 1, NoDelay: true, SendBuf: 2626560, RecvBuf: 131072},
				Latency: Latency(report.BasisRTTHalf, 10000, 11.42, 12.87, 13.31, 1.96, 14.58, 19.93, 41.2, 187.35, 187.35)},
			{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 10000, Warmup: 1000, QPs: 1,
				Clock: "tsc", Effective: &report.Effective{TxDepth: 128, CQMod: 1, PostList: 1, PathMTU: 4096},
				Bandwidth: peaked(bw(655360000, 10000, 53_210_000*time.Nanosecond), 98.91)},
			{Test: "read-bw", Connection: "RC", Size: 65536, Iterations: 10000, Warmup: 1000, QPs: 1,
				Bandwidth: peaked(bw(655360000, 10000, 54_980_000*time.Nanosecond), 96.02),
				Warnings:  []string{"tx-depth 128 reduced to 16 (max_qp_rd_atom of mlx5_0)"}},
			{Test: "atomic-bw", Connection: "RC", Size: 8, Iterations: 10000, Warmup: 1000, QPs: 1,
				Bandwidth: peaked(bw(80000, 10000, 1_190_000*time.Nanosecond), 0.5510)},
			{Test: "send-bw", Connection: "RC", Size: 65536, Iterations: 10000, Warmup: 1000, QPs: 1,
				Bandwidth: peaked(bw(655360000, 10000, 53_370_000*time.Nanosecond), 98.60)},
			{Test: "tcp-bw", Connection: "TCP", Size: 65536, Iterations: 10000, Warmup: 1000,
				Bandwidth: bw(655360000, 10000, 187_400_000*time.Nanosecond),
				Warnings:  []string{"sender CPU at 100% during the test: TCP bandwidth is CPU-bound"}},
		},
		Warnings: []string{"CPU frequency governor is \"powersave\" on node-a: latencies may vary"},
	}
}

// DurationDoc is a loopback run on Soft-RoCE in duration mode: intervals, a
// bidirectional test, a failed test, a test cut short, and a run-level error.
func DurationDoc() *report.Document {
	start := time.Date(2025, 3, 2, 8, 30, 0, 0, time.UTC)
	fwd := peaked(bw(3_495_755_776, 53341, 3*time.Second), 9.412)
	rev := peaked(bw(3_422_552_064, 52224, 3*time.Second+2*time.Millisecond), 9.298)
	return &report.Document{
		Schema:  report.Schema,
		Tool:    report.Tool{Name: "rdmabench", Version: "0.1.0", Commit: "3f2a9c1", GoVersion: "go1.26.8", Verbs: true},
		Command: []string{"rdmabench", "write-bw", "--loopback", "-d", "rxe0", "-D", "3", "-b", "-s", "64K"},
		Start:   start,
		End:     start.Add(7 * time.Second),
		Hosts: report.Hosts{Local: report.Host{Hostname: "laptop", Kernel: "6.12.9", OS: "Debian GNU/Linux 13", CPUs: 8,
			Device: &report.Device{Name: "rxe0", Port: 1, PortState: "ACTIVE", LinkLayer: "Ethernet", ActiveMTU: 1024,
				GID: "fe80::5054:ff:fe12:3456", GIDIndex: 1, GIDType: "RoCE v2", Netdev: "eth0"}}},
		Clocks: map[string]report.Clock{"monotonic": {Source: "CLOCK_MONOTONIC (clock_gettime)", ResolutionNs: 30}},
		Params: report.Params{DevicePort: settings.DevicePort{Device: "rxe0"}, GIDIndex: 1,
			Operation: settings.Operation{Bidirectional: true}, DurationS: 3, Warmup: ptr(100), Loopback: true,
			Sizes: []int{65536}},
		Results: []report.Result{
			{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 53341, Warmup: 100, QPs: 1, DurationS: 3,
				Bandwidth: fwd, Reverse: rev, Total: report.Sum(fwd, rev),
				PortCounters: &report.PortCounters{Client: &report.CounterDeltas{Watched: 14,
					Deltas: map[string]uint64{"completer_retry_err": 19, "duplicate_request": 544}}},
				Intervals: []report.Interval{
					{StartS: 0, DurationS: 1, Bandwidth: bw(1_168_113_664, 17824, time.Second)},
					{StartS: 1, DurationS: 1, Bandwidth: bw(1_150_812_160, 17560, time.Second)},
					{StartS: 2, DurationS: 1, Bandwidth: bw(1_176_829_952, 17957, time.Second)},
				}},
			{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 301422, Warmup: 100, QPs: 1, DurationS: 3,
				Latency: Latency(report.BasisRTTHalf, 301422, 3.41, 4.87, 4.98, 0.66, 5.52, 7.9, 17.26, 88.03, 412.77),
				Intervals: []report.Interval{
					{StartS: 0, DurationS: 1, Latency: Latency(report.BasisRTTHalf, 100212, 3.41, 4.88, 4.99, 0.69, 5.54, 8.01, 18.4, 90.11, 412.77)},
					{StartS: 1, DurationS: 1, Latency: Latency(report.BasisRTTHalf, 100650, 3.44, 4.86, 4.97, 0.63, 5.5, 7.83, 16.93, 71.02, 95.5)},
					{StartS: 2, DurationS: 1, Latency: Latency(report.BasisRTTHalf, 100560, 3.42, 4.87, 4.98, 0.65, 5.52, 7.86, 16.52, 85.7, 101.2)},
				}},
			{Test: "send-bw", Connection: "UD", Size: 4096, Warmup: 100, QPs: 1, DurationS: 3,
				Error: "post send: work completion IBV_WC_RETRY_EXC_ERR (transport retry counter exceeded): the peer did not answer; check the GID index and RoCE mode"},
			{Test: "tcp-bw", Connection: "TCP", Size: 65536, Iterations: 15800, Warmup: 100, DurationS: 3,
				Bandwidth: bw(1_035_468_800, 15800, 1_300*time.Millisecond),
				Intervals: []report.Interval{
					{StartS: 0, DurationS: 1, Bandwidth: bw(797_048_832, 12162, time.Second)},
					{StartS: 1, DurationS: 0.3, Bandwidth: bw(238_419_968, 3638, 300*time.Millisecond)},
				},
				Warnings: []string{"stopped after 1.3 s of 3 s"},
				Error:    "read tcp 127.0.0.1:41522->127.0.0.1:19515: connection reset by peer"},
		},
		Error: "interrupted (SIGINT)",
	}
}

// FabricDoc is a document with each fabric part: a bandwidth result on two
// threads with its placement, one on two devices, and a latency under load.
func FabricDoc() *report.Document {
	doc := report.NewDocument()
	doc.Tool = report.Tool{Name: "rdmabench", Version: "dev"}
	bw := func(msgs uint64, size int, ns int64) *report.Bandwidth {
		return report.NewBandwidth(msgs*uint64(size), msgs, time.Duration(ns))
	}
	rec := latency.NewRecorder(report.BasisRTTHalf)
	rec.RecordBatch([]uint64{3000, 3200, 5000})
	node := 0
	doc.Results = []report.Result{
		{Test: "write-bw", Connection: "RC", Size: 2, Iterations: 100, QPs: 4, Bandwidth: bw(400, 2, 1e6),
			Effective: &report.Effective{TxDepth: 128, Threads: 2, RateLimitGbps: 0.5, RateLimiter: "sw"},
			Threads: []report.Thread{{End: "client", Index: 0, QPs: []int{0, 1}, Bandwidth: bw(200, 2, 1e6)},
				{End: "client", Index: 1, QPs: []int{2, 3}, Bandwidth: bw(200, 2, 9e5)}},
			Placement: &report.Placement{Client: &report.EndPlacement{Policy: report.PlaceCPUList, CPUs: []int{0, 1}, Used: []int{0, 1}},
				Server: &report.EndPlacement{Policy: report.PlaceNUMA, NUMANode: &node, CPUs: []int{0, 1, 2, 3}}}},
		{Test: "send-bw", Connection: "RC", Size: 4096, Iterations: 100, QPs: 1, Bandwidth: report.Sum(bw(100, 4096, 1e6), bw(100, 4096, 2e6)),
			Devices: []report.DeviceResult{{Device: "mlx5_0", ServerDevice: "mlx5_2", Iterations: 100, Bandwidth: bw(100, 4096, 1e6)},
				{Device: "mlx5_1", ServerDevice: "mlx5_3", Iterations: 100, Bandwidth: bw(100, 4096, 2e6)}}},
		{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 3, Latency: rec.Snapshot(),
			Load: &report.Load{Test: "write-bw", Connection: "RC", Size: 65536, QPs: 4, Bandwidth: bw(1000, 65536, 1e8)}},
	}
	return doc
}

// FullDoc is suiteDoc with real histograms from recorders.
func FullDoc() *report.Document {
	doc := SuiteDoc()
	gen := Distributions()["rdma"]
	for i := range doc.Results {
		r := &doc.Results[i]
		if r.Latency == nil {
			continue
		}
		rec := latency.NewRecorder(r.Latency.Basis)
		rec.RecordBatch(Samples(gen, 1000, uint64(i)))
		r.Latency = rec.Snapshot()
	}
	d := DurationDoc()
	doc.Results = append(doc.Results, d.Results...)
	doc.Error = d.Error
	return doc
}

// sweepLatency is a latency result of n samples around a one-way (or
// round-trip, on BasisRTT) latency of us µs: a narrow body, 1% of samples
// delayed by up to a third more, 0.1% by 3 to 8 times.
func sweepLatency(basis string, us float64, n int, seed uint64) *report.Latency {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	rec := latency.NewRecorder(basis)
	scale := 1.0
	if basis == report.BasisRTTHalf {
		scale = 2 // the recorder halves round trips
	}
	for range n {
		v := us * (1 + 0.03*math.Abs(rng.NormFloat64()))
		switch u := rng.Float64(); {
		case u < 0.001:
			v *= 3 + 5*rng.Float64()
		case u < 0.011:
			v *= 1 + rng.ExpFloat64()/3
		}
		rec.Record(uint64(math.Round(v * 1e3 * scale)))
	}
	return rec.Snapshot()
}

// SweepDoc is `rdmabench suite node-b -d mlx5_0 -s 2,64,1K,16K,256K`,
// with -m 1024 when mtu1024.
func SweepDoc(mtu1024 bool) *report.Document {
	doc := SuiteDoc()
	doc.Warnings = nil
	doc.Command = []string{"rdmabench", "suite", "node-b", "-d", "mlx5_0", "-s", "2,64,1K,16K,256K", "-n", "10000"}
	doc.Params.Sizes = sweepSizes
	pathMTU, seed := 4096, uint64(1)
	if mtu1024 {
		doc.Command = append(doc.Command, "-m", "1024")
		doc.Params.MTU = 1024
		doc.Start = doc.Start.Add(time.Hour)
		doc.End = doc.End.Add(time.Hour)
		pathMTU, seed = 1024, 2
	}
	// One-way (or round-trip) latency at size s: a fixed part, the time on
	// the wire at 100 Gbit/s, and a cost per packet.
	latUs := func(fixed float64, s int, rtt bool) float64 {
		packets := float64(max(1, (s+pathMTU-1)/pathMTU))
		v := fixed + float64(s)*8/100e3 + 0.012*packets
		if rtt {
			v += float64(s) * 8 / 100e3
		}
		return v
	}
	// Bandwidth at size s: a ceiling reached at large sizes, lower with
	// more packets per byte.
	gbps := func(ceiling float64, half, s int) float64 {
		if pathMTU == 1024 {
			ceiling *= 0.91
		}
		return ceiling * float64(s) / float64(s+half)
	}
	rdmaEff := &report.Effective{TxDepth: 1, CQMod: 1, InlineMax: 220, PathMTU: pathMTU}
	tcpEff := &report.Effective{Connections: 1, NoDelay: true, SendBuf: 2626560, RecvBuf: 131072}
	var res []report.Result
	addLat := func(test, conn, basis, clock string, fixed float64, sizes []int, eff *report.Effective) {
		for _, s := range sizes {
			seed++
			res = append(res, report.Result{Test: test, Connection: conn, Size: s, Iterations: 10000, Warmup: 1000, QPs: 1,
				Clock: clock, Effective: eff, Latency: sweepLatency(basis, latUs(fixed, s, basis == report.BasisRTT), 10000, seed)})
		}
	}
	addBW := func(test, conn, clock string, ceiling float64, half int, sizes []int, eff *report.Effective) {
		for _, s := range sizes {
			g := gbps(ceiling, half, s)
			bytes := uint64(s) * 10000
			res = append(res, report.Result{Test: test, Connection: conn, Size: s, Iterations: 10000, Warmup: 1000, QPs: 1,
				Clock: clock, Effective: eff, Bandwidth: report.NewBandwidth(bytes, 10000, time.Duration(float64(bytes)*8/g))})
		}
	}
	addLat("write-lat", "RC", report.BasisRTTHalf, "tsc", 0.98, sweepSizes, rdmaEff)
	addLat("read-lat", "RC", report.BasisRTT, "tsc", 1.92, sweepSizes, rdmaEff)
	addLat("send-lat", "RC", report.BasisRTTHalf, "tsc", 1.06, sweepSizes, rdmaEff)
	addLat("atomic-lat", "RC", report.BasisRTT, "tsc", 1.96, []int{8}, rdmaEff)
	addLat("tcp-lat", "TCP", report.BasisRTTHalf, "go", 11.4, sweepSizes, tcpEff)
	bwEff := &report.Effective{TxDepth: 128, CQMod: 100, PostList: 1, PathMTU: pathMTU}
	addBW("write-bw", "RC", "tsc", 98.4, 2048, sweepSizes, bwEff)
	addBW("read-bw", "RC", "tsc", 97.1, 3072, sweepSizes, bwEff)
	addBW("send-bw", "RC", "tsc", 97.9, 2560, sweepSizes, bwEff)
	addBW("atomic-bw", "RC", "tsc", 0.54, 1, []int{8}, bwEff)
	addBW("tcp-bw", "TCP", "go", 31.5, 16384, sweepSizes, tcpEff)
	doc.Results = res
	return doc
}

// ReadFixture reads a fixture document of pkg/report/testdata (a bare
// name, from one of pkg/report's packages) or of any path as `rdmabench
// plot` would. Those documents are made by generators in pkg/report's
// tests: sweep.json and sweep-mtu1024.json a suite at five sizes with
// latency histograms, mesh.json a mesh of four ranks with one link lost
// and one four times slower than the others.
func ReadFixture(t *testing.T, path string) report.Source {
	t.Helper()
	if filepath.Dir(path) == "." {
		path = filepath.Join("..", "testdata", path)
	}
	doc, err := report.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return report.Source{Name: filepath.Base(path), Doc: doc}
}

// sweepSizes are the sizes of the sweep fixtures: -s 2,64,1K,16K,256K.
var sweepSizes = []int{2, 64, 1024, 16384, 262144}

// Distributions of raw samples (ns) the recorder must get right.
func Distributions() map[string]func(r *rand.Rand) uint64 {
	return map[string]func(r *rand.Rand) uint64{
		// A narrow RDMA-like peak with a long tail.
		"rdma": func(r *rand.Rand) uint64 {
			if r.IntN(1000) == 0 {
				return 2000 + uint64(r.ExpFloat64()*50000)
			}
			return 1800 + uint64(r.NormFloat64()*40+40)
		},
		// Log-uniform over 1 ns .. 60 s: every histogram bucket.
		"wide": func(r *rand.Rand) uint64 {
			return uint64(math.Exp(r.Float64() * math.Log(latency.HighestNs)))
		},
		// A large offset and a small spread: naive sum-of-squares variance
		// loses everything here.
		"offset": func(r *rand.Rand) uint64 { return 50_000_000_000 + uint64(r.IntN(1000)) },
		// Tiny values including 0 and odd values (rtt/2 rounding).
		"tiny": func(r *rand.Rand) uint64 { return uint64(r.IntN(8)) },
	}
}

func Samples(gen func(*rand.Rand) uint64, n int, seed uint64) []uint64 {
	r := rand.New(rand.NewPCG(seed, 42))
	s := make([]uint64, n)
	for i := range s {
		s[i] = gen(r)
	}
	return s
}
