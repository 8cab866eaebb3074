package report

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"
)

// Fixture documents with latency histograms, for the plots: a suite run
// at five sizes between two hosts, and the same run with the path MTU
// forced down to 1024 bytes. The samples come from a seeded generator and
// the histograms from LatencyRecorder, so the documents are the same on
// every run; they are kept in testdata/ (rewritten with -update) and the
// plot tests (pkg/report/plot) read them from there, as `rdmabench plot`
// would.

// sweepSizes are the sizes of the sweep fixtures: -s 2,64,1K,16K,256K.
var sweepSizes = []int{2, 64, 1024, 16384, 262144}

// sweepLatency is a latency result of n samples around a one-way (or
// round-trip, on BasisRTT) latency of us µs: a narrow body, 1% of samples
// delayed by up to a third more, 0.1% by 3 to 8 times.
func sweepLatency(basis string, us float64, n int, seed uint64) *Latency {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	rec := NewLatencyRecorder(basis)
	scale := 1.0
	if basis == BasisRTTHalf {
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

// sweepDoc is `rdmabench suite node-b -d mlx5_0 -s 2,64,1K,16K,256K`,
// with -m 1024 when mtu1024.
func sweepDoc(mtu1024 bool) *Document {
	doc := suiteDoc()
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
	rdmaEff := &Effective{TxDepth: 1, CQMod: 1, InlineMax: 220, PathMTU: pathMTU}
	tcpEff := &Effective{Connections: 1, NoDelay: true, SendBuf: 2626560, RecvBuf: 131072}
	var res []Result
	addLat := func(test, conn, basis, clock string, fixed float64, sizes []int, eff *Effective) {
		for _, s := range sizes {
			seed++
			res = append(res, Result{Test: test, Connection: conn, Size: s, Iterations: 10000, Warmup: 1000, QPs: 1,
				Clock: clock, Effective: eff, Latency: sweepLatency(basis, latUs(fixed, s, basis == BasisRTT), 10000, seed)})
		}
	}
	addBW := func(test, conn, clock string, ceiling float64, half int, sizes []int, eff *Effective) {
		for _, s := range sizes {
			g := gbps(ceiling, half, s)
			bytes := uint64(s) * 10000
			res = append(res, Result{Test: test, Connection: conn, Size: s, Iterations: 10000, Warmup: 1000, QPs: 1,
				Clock: clock, Effective: eff, Bandwidth: NewBandwidth(bytes, 10000, time.Duration(float64(bytes)*8/g))})
		}
	}
	addLat("write-lat", "RC", BasisRTTHalf, "tsc", 0.98, sweepSizes, rdmaEff)
	addLat("read-lat", "RC", BasisRTT, "tsc", 1.92, sweepSizes, rdmaEff)
	addLat("send-lat", "RC", BasisRTTHalf, "tsc", 1.06, sweepSizes, rdmaEff)
	addLat("atomic-lat", "RC", BasisRTT, "tsc", 1.96, []int{8}, rdmaEff)
	addLat("tcp-lat", "TCP", BasisRTTHalf, "go", 11.4, sweepSizes, tcpEff)
	bwEff := &Effective{TxDepth: 128, CQMod: 100, PostList: 1, PathMTU: pathMTU}
	addBW("write-bw", "RC", "tsc", 98.4, 2048, sweepSizes, bwEff)
	addBW("read-bw", "RC", "tsc", 97.1, 3072, sweepSizes, bwEff)
	addBW("send-bw", "RC", "tsc", 97.9, 2560, sweepSizes, bwEff)
	addBW("atomic-bw", "RC", "tsc", 0.54, 1, []int{8}, bwEff)
	addBW("tcp-bw", "TCP", "go", 31.5, 16384, sweepSizes, tcpEff)
	doc.Results = res
	return doc
}

// The fixture files and the documents they hold.
var plotFixtures = map[string]func() *Document{
	"sweep.json":         func() *Document { return sweepDoc(false) },
	"sweep-mtu1024.json": func() *Document { return sweepDoc(true) },
	"mesh.json":          meshPlotDoc,
}

// TestPlotFixtures: the fixture documents in testdata/ are what their
// generators make (rewritten with -update).
func TestPlotFixtures(t *testing.T) {
	for name, gen := range plotFixtures {
		var buf bytes.Buffer
		if err := WriteJSON(&buf, gen()); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, name, buf.Bytes())
	}
}

// fixture reads a document of testdata/ (or any path) as `rdmabench plot`
// would.
func fixture(t *testing.T, path string) Source {
	t.Helper()
	if filepath.Dir(path) == "." {
		path = filepath.Join("testdata", path)
	}
	doc, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return Source{Name: filepath.Base(path), Doc: doc}
}

// meshPlotDoc is `rdmabench mesh --out fabric.json --outlier 0.8` over four
// ranks: every link measured but 3 -> 1 (rank 3 lost the connection), the
// link 0 -> 2 four times slower than the others (an outlier in latency
// and in bandwidth).
func meshPlotDoc() *Document {
	doc := NewDocument()
	doc.Tool = Tool{Name: "rdmabench", Version: "0.1.0"}
	doc.Command = []string{"rdmabench", "mesh", "--out", "fabric.json", "--outlier", "0.8"}
	doc.Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	doc.End = doc.Start.Add(24 * time.Second)
	const n = 4
	m := &Mesh{Size: n, Launcher: "slurm", Coordinator: "node1:19514", Tests: []string{"write-lat", "write-bw"},
		Rounds: 3, Schedule: "round-robin"}
	for r := range n {
		host := fmt.Sprintf("node%d", r+1)
		m.Ranks = append(m.Ranks, MeshRank{Rank: r, State: RankOK, Addr: fmt.Sprintf("10.0.0.%d:40000", r+1),
			Host: &Host{Hostname: host, Device: &Device{Name: "mlx5_0", Port: 1, GID: fmt.Sprintf("::ffff:10.0.0.%d", r+1), GIDIndex: 3}}})
	}
	lat := func(ns float64) Result {
		rec := NewLatencyRecorder(BasisRTTHalf)
		for k := range 100 {
			rec.Record(uint64(2*ns) + uint64(k%5)*20)
		}
		return Result{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 100, Latency: rec.Snapshot()}
	}
	bw := func(gbps float64) Result {
		return Result{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 1000,
			Bandwidth: NewBandwidth(1000*65536, 1000, time.Duration(float64(1000*65536*8)/gbps))}
	}
	round := 0
	for from := range n {
		for to := range n {
			if from == to {
				continue
			}
			round++
			l := MeshLink{From: from, To: to, Round: (round+1)/2%3 + 1, Start: doc.Start.Add(time.Duration(round) * time.Second)}
			l.End = l.Start.Add(time.Second)
			spread := float64((from*n+to)%5) * 0.01 // a link differs from the next by a few percent
			switch {
			case from == 3 && to == 1:
				l.Start, l.End = time.Time{}, time.Time{}
				l.Error = "rank 3 (node4) was lost: rank at 10.0.0.4:52114 closed the connection (reset)"
				l.Results = []Result{}
			case from == 0 && to == 2:
				l.Results = []Result{lat(4000), bw(23.1)}
			default:
				l.Results = []Result{lat(1000 * (1 + spread)), bw(96.5 * (1 - spread))}
			}
			m.Links = append(m.Links, l)
		}
	}
	m.BuildMatrices()
	CheckMesh(m, Limits{}, 0.8)
	doc.Mesh = m
	return doc
}

// bigMeshDoc is the matrices of a mesh of n ranks without the links'
// results (too large to keep as a file): bandwidth around 95 Gbit/s, the
// links of rank 7 as a client at half of it, and every link to rank 3
// failed.
func bigMeshDoc(n int) *Document {
	doc := NewDocument()
	m := &Mesh{Size: n, Coordinator: "node0:19514", Tests: []string{"write-bw"}, Rounds: n - 1, Schedule: "round-robin"}
	for r := range n {
		m.Ranks = append(m.Ranks, MeshRank{Rank: r, State: RankOK, Host: &Host{Hostname: fmt.Sprintf("node%d", r)}})
	}
	mx := Matrix{Test: "write-bw", Connection: "RC", Size: 65536, Figure: FigGbps, Unit: "Gbit/s", Values: make([][]*float64, n)}
	for i := range n {
		mx.Values[i] = make([]*float64, n)
		for j := range n {
			if i == j || j == 3 {
				continue
			}
			v := 95 + float64((i*7+j*13)%11)/5
			if i == 7 {
				v /= 2
			}
			mx.Values[i][j] = &v
		}
	}
	med := 95.0
	mx.Median = &med
	m.Matrices = []Matrix{mx}
	doc.Mesh = m
	return doc
}
