package reporttest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/latency"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// CmpMesh is a mesh of N ranks (rank r on host node<r>, device mlx5_0,
// unless Host says otherwise), every link measured with write-lat (p50
// about Lat(from, to) ns) and write-bw (about 96 Gbit/s divided by
// SlowBW(from, to)), except the links Failed says failed.
type CmpMesh struct {
	N      int
	Host   func(r int) (string, string)
	Lat    func(from, to int) float64
	SlowBW func(from, to int) float64
	Failed func(from, to int) bool
}

func (c CmpMesh) Doc() *report.Document {
	doc := report.NewDocument()
	doc.Tool = report.Tool{Name: "rdmabench", Version: "0.1.0"}
	doc.Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := &report.Mesh{Size: c.N, Coordinator: "node0:19514", Tests: []string{"write-lat", "write-bw"}, Rounds: c.N - 1, Schedule: "round-robin"}
	for r := range c.N {
		host, dev := fmt.Sprintf("node%d", r), "mlx5_0"
		if c.Host != nil {
			host, dev = c.Host(r)
		}
		h := &report.Host{Hostname: host}
		if dev != "" {
			h.Device = &report.Device{Name: dev, Port: 1, LinkGbps: 100}
		}
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, State: report.RankOK, Host: h})
	}
	for from := range c.N {
		for to := range c.N {
			if from == to {
				continue
			}
			l := report.MeshLink{From: from, To: to, Round: 1}
			if c.Failed != nil && c.Failed(from, to) {
				l.Error = fmt.Sprintf("rank %d was lost", to)
				m.Links = append(m.Links, l)
				continue
			}
			ns := 1000 + float64((from*c.N+to)%5)*10
			if c.Lat != nil {
				ns = c.Lat(from, to)
			}
			rec := latency.NewRecorder(report.BasisRTTHalf)
			for range 10 {
				rec.Record(uint64(2 * ns))
			}
			gbps := 96.0
			if c.SlowBW != nil {
				gbps /= c.SlowBW(from, to)
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

// MeshFixture is a mesh of three ranks: every link measured but 2 -> 0
// (rank 2 lost mid-run), the link 1 -> 2 four times slower than the others.
func MeshFixture(t testing.TB) *report.Document {
	t.Helper()
	lat := func(p50 float64) report.Result {
		rec := latency.NewRecorder("rtt")
		rec.RecordBatch([]uint64{uint64(p50), uint64(p50), uint64(p50 * 2)})
		return report.Result{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 3, Latency: rec.Snapshot()}
	}
	bw := func(gbps float64) report.Result {
		return report.Result{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 100,
			Bandwidth: report.NewBandwidth(100*65536, 100, time.Duration(float64(100*65536*8)/gbps))}
	}
	doc := report.NewDocument()
	doc.Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	doc.End = doc.Start.Add(12 * time.Second)
	m := &report.Mesh{Size: 3, Launcher: "slurm", Coordinator: "node1:19514", Tests: []string{"write-lat", "write-bw"},
		Rounds: 3, Schedule: "round-robin"}
	for r := range 3 {
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, State: report.RankOK, Addr: "10.0.0.1:4000" + string(rune('0'+r)),
			Host: &report.Host{Hostname: "node" + string(rune('1'+r)), Device: &report.Device{Name: "rxe0", Port: 1, GID: "::ffff:10.0.0.1", GIDIndex: 1}}})
	}
	m.Ranks[2].State, m.Ranks[2].Error = report.RankLost, "rank at 10.0.0.3:5000 closed the connection"
	round := 0
	for from := range 3 {
		for to := range 3 {
			if from == to {
				continue
			}
			round++
			l := report.MeshLink{From: from, To: to, Round: round, Start: doc.Start, End: doc.Start.Add(time.Second)}
			switch {
			case from == 2 && to == 0:
				l.Start, l.End = time.Time{}, time.Time{}
				l.Error = "rank 2 lost: closed the connection"
			case from == 1 && to == 2:
				l.Results = []report.Result{lat(4000), bw(1)}
			default:
				l.Results = []report.Result{lat(1000), bw(4)}
			}
			if l.Results == nil {
				l.Results = []report.Result{}
			}
			m.Links = append(m.Links, l)
		}
	}
	m.BuildMatrices()
	doc.Mesh = m
	return doc
}

// DuplexFixture is a duplex mesh of three ranks: each pair ran once, from
// its lower rank, its ping-pong and a bidirectional stream whose reverse
// (the server's direction) is half as fast; the pair 0 <-> 2 failed. The
// pair 1 <-> 2's ping-pong is four times slower.
func DuplexFixture(t testing.TB) *report.Document {
	t.Helper()
	lat := func(p50 float64) report.Result {
		rec := latency.NewRecorder("rtt")
		rec.RecordBatch([]uint64{uint64(p50), uint64(p50), uint64(p50 * 2)})
		return report.Result{Test: "tcp-lat", Connection: "TCP", Size: 2, Iterations: 3, Latency: rec.Snapshot()}
	}
	bw := func(gbps float64) *report.Bandwidth {
		return report.NewBandwidth(100*65536, 100, time.Duration(float64(100*65536*8)/gbps))
	}
	bidi := func(fwd, rev float64) report.Result {
		r := report.Result{Test: "tcp-bw", Connection: "TCP", Size: 65536, Iterations: 100, Bandwidth: bw(fwd), Reverse: bw(rev),
			Direction: report.DirectionBoth}
		r.Total = report.Sum(r.Bandwidth, r.Reverse)
		return r
	}
	doc := report.NewDocument()
	m := &report.Mesh{Size: 3, Coordinator: "node1:19514", Tests: []string{"tcp-lat", "tcp-bw"}, Rounds: 3, Schedule: "round-robin",
		Duplex: true}
	for r := range 3 {
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, State: report.RankOK, Host: &report.Host{Hostname: "node" + string(rune('1'+r))}})
	}
	m.Links = []report.MeshLink{
		{From: 0, To: 1, Round: 1, Duplex: true, Results: []report.Result{lat(1000), bidi(4, 2)}},
		{From: 2, To: 0, Round: 2, Duplex: true, Error: "rank 2 lost", Results: []report.Result{}},
		{From: 1, To: 2, Round: 3, Duplex: true, Results: []report.Result{lat(4000), bidi(6, 3)}},
	}
	m.BuildMatrices()
	doc.Mesh = m
	return doc
}

// RailMesh is a rail-aligned mesh of hosts × rails ranks (rank h*rails+k
// on host node<h> with local rank k), every link measured with write-lat
// at p50 lat(from, to) ns and write-bw at 100 Gbit/s, but the link failed
// says failed; made by a MeshBuilder as rank 0 makes it.
func RailMesh(t testing.TB, hosts, rails int, lat func(from, to int) float64, failed [2]int) *report.Document {
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
						rec := latency.NewRecorder(report.BasisRTT)
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

// AggregateOnlyMesh is a mesh of 520 ranks, 65 hosts of 8 rails (33,280
// links), every link at 2 µs but 8 -> 16, which failed.
func AggregateOnlyMesh(t testing.TB) *report.Document {
	return RailMesh(t, 65, 8, func(from, to int) float64 { return 2000 }, [2]int{8, 16})
}

// OneHostMesh is 72 ranks on one host (a mesh of processes), every pair
// measured, rank 5 slow.
func OneHostMesh(t testing.TB) *report.Document {
	doc := RailMesh(t, 1, 1, func(from, to int) float64 { return 1000 }, [2]int{-1, -1})
	m := doc.Mesh
	// 72 ranks on one host, every pair measured, rank 5 slow.
	m.Size, m.Ranks = 72, nil
	for r := range 72 {
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, State: report.RankOK, Host: &report.Host{Hostname: "vm"}})
	}
	b := report.NewMeshBuilder(m.Tests, report.Limits{}, 0)
	rec := func(ns uint64) *report.Latency {
		l := latency.NewRecorder(report.BasisRTT)
		l.Record(ns)
		return l.Snapshot()
	}
	fast, slow := rec(1000), rec(3000)
	for from := range 72 {
		for to := range 72 {
			if from != to {
				lat := fast
				if from == 5 || to == 5 {
					lat = slow
				}
				b.Add(&report.MeshLink{From: from, To: to, Round: 1, Results: []report.Result{{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 1, Latency: lat}}})
			}
		}
	}
	b.Fill(m)
	return doc
}

// LinkStream writes the link stream rank 0 writes for doc (a mesh document
// with its links' full results): the start, a link event per link, the
// end.
func LinkStream(t *testing.T, doc *report.Document) []byte {
	t.Helper()
	var b bytes.Buffer
	head := *doc
	m := *doc.Mesh
	m.Links, m.Matrices, m.Gates, m.Failures = nil, nil, nil, nil
	head.Mesh = &m
	head.Partial = true
	if err := report.WriteEvent(&b, report.Event{Event: report.EventStart, Document: &head}); err != nil {
		t.Fatal(err)
	}
	for i := range doc.Mesh.Links {
		if err := report.WriteEvent(&b, report.Event{Event: report.EventLink, Link: &doc.Mesh.Links[i]}); err != nil {
			t.Fatal(err)
		}
	}
	end := *doc
	em := *doc.Mesh
	em.Links, em.Matrices = nil, nil
	end.Mesh = &em
	if err := report.WriteEvent(&b, report.Event{Event: report.EventEnd, Document: &end}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// MeshPlotDoc is `rdmabench mesh --out fabric.json --outlier 0.8` over four
// ranks: every link measured but 3 -> 1 (rank 3 lost the connection), the
// link 0 -> 2 four times slower than the others (an outlier in latency
// and in bandwidth).
func MeshPlotDoc() *report.Document {
	doc := report.NewDocument()
	doc.Tool = report.Tool{Name: "rdmabench", Version: "0.1.0"}
	doc.Command = []string{"rdmabench", "mesh", "--out", "fabric.json", "--outlier", "0.8"}
	doc.Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	doc.End = doc.Start.Add(24 * time.Second)
	const n = 4
	m := &report.Mesh{Size: n, Launcher: "slurm", Coordinator: "node1:19514", Tests: []string{"write-lat", "write-bw"},
		Rounds: 3, Schedule: "round-robin"}
	for r := range n {
		host := fmt.Sprintf("node%d", r+1)
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, State: report.RankOK, Addr: fmt.Sprintf("10.0.0.%d:40000", r+1),
			Host: &report.Host{Hostname: host, Device: &report.Device{Name: "mlx5_0", Port: 1, GID: fmt.Sprintf("::ffff:10.0.0.%d", r+1), GIDIndex: 3}}})
	}
	lat := func(ns float64) report.Result {
		rec := latency.NewRecorder(report.BasisRTTHalf)
		for k := range 100 {
			rec.Record(uint64(2*ns) + uint64(k%5)*20)
		}
		return report.Result{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 100, Latency: rec.Snapshot()}
	}
	bw := func(gbps float64) report.Result {
		return report.Result{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 1000,
			Bandwidth: report.NewBandwidth(1000*65536, 1000, time.Duration(float64(1000*65536*8)/gbps))}
	}
	round := 0
	for from := range n {
		for to := range n {
			if from == to {
				continue
			}
			round++
			l := report.MeshLink{From: from, To: to, Round: (round+1)/2%3 + 1, Start: doc.Start.Add(time.Duration(round) * time.Second)}
			l.End = l.Start.Add(time.Second)
			spread := float64((from*n+to)%5) * 0.01 // a link differs from the next by a few percent
			switch {
			case from == 3 && to == 1:
				l.Start, l.End = time.Time{}, time.Time{}
				l.Error = "rank 3 (node4) was lost: rank at 10.0.0.4:52114 closed the connection (reset)"
				l.Results = []report.Result{}
			case from == 0 && to == 2:
				l.Results = []report.Result{lat(4000), bw(23.1)}
			default:
				l.Results = []report.Result{lat(1000 * (1 + spread)), bw(96.5 * (1 - spread))}
			}
			m.Links = append(m.Links, l)
		}
	}
	m.BuildMatrices()
	m.CheckGates(report.Limits{}, 0.8)
	doc.Mesh = m
	return doc
}

// BigMeshDoc is the matrices of a mesh of n ranks without the links'
// results (too large to keep as a file): bandwidth around 95 Gbit/s, the
// links of rank 7 as a client at half of it, and every link to rank 3
// failed.
func BigMeshDoc(n int) *report.Document {
	doc := report.NewDocument()
	m := &report.Mesh{Size: n, Coordinator: "node0:19514", Tests: []string{"write-bw"}, Rounds: n - 1, Schedule: "round-robin"}
	for r := range n {
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, State: report.RankOK, Host: &report.Host{Hostname: fmt.Sprintf("node%d", r)}})
	}
	mx := report.Matrix{Test: "write-bw", Connection: "RC", Size: 65536, Figure: report.FigGbps, Unit: "Gbit/s", Values: make([][]*float64, n)}
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
	m.Matrices = []report.Matrix{mx}
	doc.Mesh = m
	return doc
}

// PatternDoc is `rdmabench mesh --pattern incast:2 write-bw -D 1s` over
// four ranks, two a host (ranks 0 and 1 on node0, 2 and 3 on node1), each
// port 100 Gbit/s, made of its steps as the mesh makes them
// (report.NewMeshStep), and a third step into every rank:
//   - step 1 into rank 1: 0 -> 1 at 40 and 2 -> 1 at 50 Gbit/s (90% of
//     the link), the probe 0 -> 1 at p50 2 µs, p99 5 µs;
//   - step 2 into rank 3: 0 -> 3 at 30 Gbit/s, 1 -> 3 failed
//     (IBV_WC_RETRY_EXC_ERR), the probe lost;
//   - step 3, every rank receiving 20 Gbit/s from each other rank but
//     2 -> 0 at 5: per host too (node0, node1), the probe 2 -> 3 at p50
//     3 µs, p99 40 µs.
func PatternDoc() *report.Document {
	doc := report.NewDocument()
	doc.Tool = report.Tool{Name: "rdmabench", Version: "0.1.0"}
	doc.Command = []string{"rdmabench", "mesh", "--pattern", "incast:2", "write-bw", "-D", "1s", "--out", "incast.json"}
	doc.Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	doc.End = doc.Start.Add(10 * time.Second)
	const n = 4
	hosts := []string{"node0", "node0", "node1", "node1"}
	m := &report.Mesh{Size: n, Coordinator: "node0:19514", Tests: []string{"write-bw"}, Schedule: "pattern",
		Pattern: &report.MeshPattern{Name: "incast:2", Test: "write-bw", Probe: "write-lat", DurationNs: int64(time.Second), Seed: 1}}
	for r := range n {
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, State: report.RankOK, Addr: fmt.Sprintf("10.0.0.%d:40000", r+1),
			Host: &report.Host{Hostname: hosts[r], Device: &report.Device{Name: fmt.Sprintf("mlx5_%d", r%2), Port: 1, LinkGbps: 100}}})
	}
	at := doc.Start
	flow := func(from, to int, gbps float64) report.MeshLink {
		l := report.MeshLink{From: from, To: to, Start: at, End: at.Add(time.Second)}
		if gbps > 0 {
			l.Results = []report.Result{{Test: "write-bw", Connection: "RC", Size: 65536,
				Bandwidth: report.NewBandwidth(1000*65536, 1000, time.Duration(float64(1000*65536*8)/gbps))}}
		} else {
			l.Results = []report.Result{{Test: "write-bw", Connection: "RC", Size: 65536, Error: "IBV_WC_RETRY_EXC_ERR"}}
		}
		return l
	}
	probe := func(from, to int, p50, p99 float64) *report.MeshLink {
		l := &report.MeshLink{From: from, To: to, Start: at, End: at.Add(time.Second), Probe: true}
		if p50 == 0 {
			l.Error = fmt.Sprintf("rank %d was lost", to)
			return l
		}
		rec := latency.NewRecorder(report.BasisRTTHalf)
		for k := range 100 {
			ns := p50
			if k >= 98 {
				ns = p99
			}
			rec.Record(uint64(2 * ns))
		}
		l.Results = []report.Result{{Test: "write-lat", Connection: "RC", Size: 2, Latency: rec.Snapshot()}}
		return l
	}
	link := map[int]float64{0: 100, 1: 100, 2: 100, 3: 100}
	m.Steps = append(m.Steps, report.NewMeshStep(report.StepInput{Step: 1, Receiver: 1, Ranks: []int{0, 1, 2}, Duration: time.Second,
		Flows: []report.MeshLink{flow(0, 1, 40), flow(2, 1, 50)}, Probe: probe(0, 1, 2000, 5000), LinkGbps: link, Hosts: hosts}))
	at = at.Add(2 * time.Second)
	m.Steps = append(m.Steps, report.NewMeshStep(report.StepInput{Step: 2, Receiver: 3, Ranks: []int{0, 1, 3}, Duration: time.Second,
		Flows: []report.MeshLink{flow(0, 3, 30), flow(1, 3, 0)}, Probe: probe(0, 3, 0, 0), LinkGbps: link, Hosts: hosts}))
	at = at.Add(2 * time.Second)
	var all []report.MeshLink
	for from := range n {
		for to := range n {
			if from != to {
				gbps := 20.0
				if from == 2 && to == 0 {
					gbps = 5
				}
				all = append(all, flow(from, to, gbps))
			}
		}
	}
	m.Steps = append(m.Steps, report.NewMeshStep(report.StepInput{Step: 3, Receiver: -1, Ranks: []int{0, 1, 2, 3}, Duration: time.Second,
		Flows: all, Probe: probe(2, 3, 3000, 40000), LinkGbps: link, Hosts: hosts}))
	// No pairs: the links and matrices are empty, as a pattern leaves them.
	m.Links, m.Matrices = []report.MeshLink{}, []report.Matrix{}
	doc.Mesh = m
	return doc
}
