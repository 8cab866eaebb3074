package reporttest

import (
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
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
			Server: "node-b", Device: "mlx5_0", GIDIndex: -1, Iterations: 10000, Warmup: ptr(1000),
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
				Bandwidth: bw(655360000, 10000, 53_210_000*time.Nanosecond)},
			{Test: "read-bw", Connection: "RC", Size: 65536, Iterations: 10000, Warmup: 1000, QPs: 1,
				Bandwidth: bw(655360000, 10000, 54_980_000*time.Nanosecond),
				Warnings:  []string{"tx-depth 128 reduced to 16 (max_qp_rd_atom of mlx5_0)"}},
			{Test: "atomic-bw", Connection: "RC", Size: 8, Iterations: 10000, Warmup: 1000, QPs: 1,
				Bandwidth: bw(80000, 10000, 1_190_000*time.Nanosecond)},
			{Test: "send-bw", Connection: "RC", Size: 65536, Iterations: 10000, Warmup: 1000, QPs: 1,
				Bandwidth: bw(655360000, 10000, 53_370_000*time.Nanosecond)},
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
	fwd := bw(3_495_755_776, 53341, 3*time.Second)
	rev := bw(3_422_552_064, 52224, 3*time.Second+2*time.Millisecond)
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
		Params: report.Params{Device: "rxe0", GIDIndex: 1, Bidirectional: true, DurationS: 3, Warmup: ptr(100), Loopback: true, Sizes: []int{65536}},
		Results: []report.Result{
			{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 53341, Warmup: 100, QPs: 1, DurationS: 3,
				Bandwidth: fwd, Reverse: rev, Total: report.Sum(fwd, rev),
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
