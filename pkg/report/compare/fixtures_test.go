package compare

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// Test documents and checks that the tests of pkg/report and
// pkg/report/render use too, copied from them: a package's tests cannot
// reach those of another.

// cmpMesh is a mesh of n ranks (rank r on host node<r>, device mlx5_0,
// unless host says otherwise), every link measured with write-lat (p50
// about lat(from, to) ns) and write-bw (about 96 Gbit/s divided by slow(from,
// to)), except the links failed says failed.
type cmpMesh struct {
	n      int
	host   func(r int) (string, string)
	lat    func(from, to int) float64
	slowBW func(from, to int) float64
	failed func(from, to int) bool
}

func (c cmpMesh) doc() *report.Document {
	doc := report.NewDocument()
	doc.Tool = report.Tool{Name: "rdmabench", Version: "0.1.0"}
	doc.Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := &report.Mesh{Size: c.n, Coordinator: "node0:19514", Tests: []string{"write-lat", "write-bw"}, Rounds: c.n - 1, Schedule: "round-robin"}
	for r := range c.n {
		host, dev := fmt.Sprintf("node%d", r), "mlx5_0"
		if c.host != nil {
			host, dev = c.host(r)
		}
		h := &report.Host{Hostname: host}
		if dev != "" {
			h.Device = &report.Device{Name: dev, Port: 1, LinkGbps: 100}
		}
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, State: report.RankOK, Host: h})
	}
	for from := range c.n {
		for to := range c.n {
			if from == to {
				continue
			}
			l := report.MeshLink{From: from, To: to, Round: 1}
			if c.failed != nil && c.failed(from, to) {
				l.Error = fmt.Sprintf("rank %d was lost", to)
				m.Links = append(m.Links, l)
				continue
			}
			ns := 1000 + float64((from*c.n+to)%5)*10
			if c.lat != nil {
				ns = c.lat(from, to)
			}
			rec := report.NewLatencyRecorder(report.BasisRTTHalf)
			for range 10 {
				rec.Record(uint64(2 * ns))
			}
			gbps := 96.0
			if c.slowBW != nil {
				gbps /= c.slowBW(from, to)
			}
			l.Results = []report.Result{
				{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 10, Latency: rec.Snapshot()},
				{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 1000,
					Bandwidth: report.NewBandwidth(1000*65536, 1000, time.Duration(float64(1000*65536*8)/gbps))},
			}
			m.Links = append(m.Links, l)
		}
	}
	b := report.NewMeshBuilder(m.Tests, report.Limits{}, 0)
	for i := range m.Links {
		b.Add(&m.Links[i])
	}
	b.Fill(m)
	doc.Mesh = m
	return doc
}

func mustCompareMesh(t *testing.T, base, new *report.Document, top int) *MeshComparison {
	t.Helper()
	c, err := CompareMesh(base, new, MeshOptions{BaseName: "base.json", NewName: "new.json", Top: top})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// railMesh is a rail-aligned mesh of hosts × rails ranks (rank h*rails+k
// on host node<h> with local rank k), every link measured with write-lat
// at p50 lat(from, to) ns and write-bw at 100 Gbit/s, but the link failed
// says failed; made by a MeshBuilder as rank 0 makes it.
func railMesh(t testing.TB, hosts, rails int, lat func(from, to int) float64, failed [2]int) *report.Document {
	t.Helper()
	n := hosts * rails
	doc := report.NewDocument()
	doc.Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := &report.Mesh{Size: n, Coordinator: "node0:19514", Tests: []string{"write-lat", "write-bw"}, Rounds: hosts - 1, Schedule: "rail-aligned"}
	for r := range n {
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, LocalRank: r % rails, State: report.RankOK,
			Host: &report.Host{Hostname: fmt.Sprintf("node%d", r/rails), Device: &report.Device{Name: fmt.Sprintf("mlx5_%d", r%rails), Port: 1}}})
	}
	b := report.NewMeshBuilder(m.Tests, report.Limits{}, 0)
	b.SetRanks(n)
	lats := map[float64]*report.Latency{}
	bw := report.NewBandwidth(1000*65536, 1000, time.Duration(1000*65536*8/100))
	for a := range hosts {
		for c := range hosts {
			if a == c {
				continue
			}
			for k := range rails {
				from, to := a*rails+k, c*rails+k
				l := report.MeshLink{From: from, To: to, Round: 1}
				if [2]int{from, to} == failed {
					l.Error = "rank lost"
				} else {
					ns := lat(from, to)
					if lats[ns] == nil {
						rec := report.NewLatencyRecorder(report.BasisRTT)
						rec.Record(uint64(ns))
						lats[ns] = rec.Snapshot()
					}
					l.Results = []report.Result{{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 1, Latency: lats[ns]},
						{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 1000, Bandwidth: bw}}
				}
				b.Add(&l)
			}
		}
	}
	b.Fill(m)
	doc.Mesh = m
	return doc
}

// schemaNode is one schema object of the published schema.
type schemaNode = map[string]any

func loadSchemaFile(t *testing.T, data []byte) schemaNode {
	t.Helper()
	var s schemaNode
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func eq(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// bwAt returns the figures of 10000 messages of size bytes at gbps.
func bwAt(size int, gbps float64) *report.Bandwidth {
	bytes := uint64(size) * 10000
	d := time.Duration(float64(bytes) * 8 / gbps) // ns
	return report.NewBandwidth(bytes, 10000, d)
}

// latAt is a latency distribution with the given p50 and p99 (µs), the
// other figures derived from them.
func latAt(basis string, p50, p99 float64) *report.Latency {
	return lat(basis, 10000, p50*0.94, p50, p50*1.02, p50*0.07, p50*1.05, p99, p99*2.2, p99*4, p99*4.1)
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
		Clocks:  map[string]report.Clock{"tsc": {Source: "TSC (rdtsc, 2.7945 GHz, scaled against CLOCK_MONOTONIC)", ResolutionNs: 9}},
		Params:  report.Params{GIDIndex: -1, QPs: 1, Iterations: 10000, Warmup: ptr(1000), Loopback: true, Repeat: len(p50)},
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
				Latency: latAt(report.BasisRTTHalf, p50[i], p99[i])},
			report.Result{Test: "write-bw", Connection: "RC", Size: 65536, Run: run, Iterations: 10000, Warmup: 1000, QPs: 1,
				Clock: "tsc", Effective: &report.Effective{TxDepth: 128, CQMod: 1, PostList: 1, PathMTU: 4096},
				Bandwidth: bwAt(65536, gbps[i])},
		)
	}
	if len(p50) > 1 {
		doc.Summaries = report.Summarize(doc)
	}
	return doc
}

var (
	baseTime = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	newTime  = time.Date(2025, 3, 2, 12, 0, 0, 0, time.UTC)
)

// The base: 5 runs.
func baseRuns() *report.Document {
	return runsDoc("mlx5_0", baseTime,
		[]float64{1.04, 1.05, 1.03, 1.04, 1.06},
		[]float64{1.31, 1.30, 1.33, 1.32, 1.31},
		[]float64{98.5, 98.4, 98.6, 98.5, 98.3})
}

// A clear regression: p99 +50%, bandwidth -10%, p50 the same noise.
func regressedRuns() *report.Document {
	return runsDoc("mlx5_0", newTime,
		[]float64{1.05, 1.03, 1.04, 1.06, 1.04},
		[]float64{1.97, 1.95, 1.99, 1.96, 1.98},
		[]float64{88.6, 88.7, 88.5, 88.6, 88.4})
}

func lat(basis string, count int64, minUs, p50, mean, stdev, p90, p99, p999, p9999, maxUs float64) *report.Latency {
	return &report.Latency{
		Basis: basis, Count: count,
		MinNs: minUs * 1e3, P50Ns: p50 * 1e3, MeanNs: mean * 1e3, StdevNs: stdev * 1e3,
		P90Ns: p90 * 1e3, P99Ns: p99 * 1e3, P999Ns: p999 * 1e3, P9999Ns: p9999 * 1e3, MaxNs: maxUs * 1e3,
	}
}

func ptr(v int) *int { return &v }
