package report

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report/schema"
)

// railMesh is a rail-aligned mesh of hosts × rails ranks (rank h*rails+k
// on host node<h> with local rank k), every link measured with write-lat
// at p50 lat(from, to) ns and write-bw at 100 Gbit/s, but the link failed
// says failed; made by a MeshBuilder as rank 0 makes it.
func railMesh(t testing.TB, hosts, rails int, lat func(from, to int) float64, failed [2]int) *Document {
	t.Helper()
	n := hosts * rails
	doc := NewDocument()
	doc.Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := &Mesh{Size: n, Coordinator: "node0:19514", Tests: []string{"write-lat", "write-bw"}, Rounds: hosts - 1, Schedule: "rail-aligned"}
	for r := range n {
		m.Ranks = append(m.Ranks, MeshRank{Rank: r, LocalRank: r % rails, State: RankOK,
			Host: &Host{Hostname: fmt.Sprintf("node%d", r/rails), Device: &Device{Name: fmt.Sprintf("mlx5_%d", r%rails), Port: 1}}})
	}
	b := NewMeshBuilder(m.Tests, Limits{}, 0)
	b.SetRanks(n)
	lats := map[float64]*Latency{}
	bw := NewBandwidth(1000*65536, 1000, time.Duration(1000*65536*8/100))
	for a := range hosts {
		for c := range hosts {
			if a == c {
				continue
			}
			for k := range rails {
				from, to := a*rails+k, c*rails+k
				l := MeshLink{From: from, To: to, Round: 1}
				if [2]int{from, to} == failed {
					l.Error = "rank lost"
				} else {
					ns := lat(from, to)
					if lats[ns] == nil {
						rec := NewLatencyRecorder(BasisRTT)
						rec.Record(uint64(ns))
						lats[ns] = rec.Snapshot()
					}
					l.Results = []Result{{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 1, Latency: lats[ns]},
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

// TestMeshAggregate: past 64 ranks the summary has the aggregate; a host
// pair's cell is the median of the links from one host's NICs to the
// other's, a NIC's row names its worst link, and a rail's row counts its
// slow links.
func TestMeshAggregate(t *testing.T) {
	const hosts, rails = 9, 8 // 72 ranks
	// From host a to host c on rail k: 1000 + 100 k ns, so the median of
	// the 8 rails is 1350; host 2's rail 5 NIC (rank 21) 4 × slower.
	lat := func(from, to int) float64 {
		v := 1000 + 100*float64(from%rails)
		if from == 21 || to == 21 {
			v *= 4
		}
		return v
	}
	doc := railMesh(t, hosts, rails, lat, [2]int{-1, -1})
	m := doc.Mesh
	if len(m.Matrices) != 3 || m.Aggregate == nil || len(m.Links) != hosts*(hosts-1)*rails || m.LinkCount != 0 {
		t.Fatalf("72 ranks: %d matrices, aggregate %v, %d links (count %d)", len(m.Matrices), m.Aggregate != nil, len(m.Links), m.LinkCount)
	}
	a := m.Aggregate
	if len(a.Hosts) != hosts || a.Hosts[3] != "node3" || a.Rails != rails || len(a.Figures) != 3 {
		t.Fatalf("aggregate: hosts %v, rails %d, %d figures", a.Hosts, a.Rails, len(a.Figures))
	}
	p50 := &a.Figures[0]
	if p50.Figure != FigP50 || p50.Links != hosts*(hosts-1)*rails {
		t.Fatalf("first figure %s with %d links", p50.Figure, p50.Links)
	}
	// The p50 of one sample is the sample, to HdrHistogram's precision.
	near := func(v *float64, want float64) bool { return v != nil && *v > want*0.995 && *v < want*1.005 }
	for x := range hosts {
		for y := range hosts {
			v := p50.HostMedian[x][y]
			if x == y {
				if v != nil {
					t.Errorf("host %d to itself: %v, want none", x, *v)
				}
				continue
			}
			// The median of the eight rails' values: their middle two.
			vals := []float64{}
			for k := range rails {
				vals = append(vals, lat(x*rails+k, y*rails+k))
			}
			slices.Sort(vals)
			want := (vals[3] + vals[4]) / 2
			if !near(v, want) {
				t.Errorf("host %d -> %d: %v, want %v", x, y, v, want)
			}
		}
	}
	if !near(p50.HostMedian[0][1], 1350) || !near(p50.HostMedian[2][0], 1350) {
		t.Errorf("host 0 -> 1 %v, 2 -> 0 %v: want 1350", *p50.HostMedian[0][1], *p50.HostMedian[2][0])
	}
	nic := p50.NICs[21]
	if *nic.Rank != 21 || *nic.Host != 2 || *nic.Rail != 5 || nic.Links != 2*(hosts-1) || !near(nic.Median, 6000) ||
		nic.Worst == nil || (nic.Worst.From != 21 && nic.Worst.To != 21) || nic.Slow != 2*(hosts-1) {
		t.Errorf("rank 21's row %+v worst %+v", nic, nic.Worst)
	}
	rail5 := p50.Rails[5]
	if *rail5.Rail != 5 || rail5.Links != hosts*(hosts-1) || rail5.Slow != 2*(hosts-1) || !near(rail5.Median, 1500) || !near(&rail5.Worst.Value, 6000) {
		t.Errorf("rail 5's row %+v", rail5)
	}
	if h := p50.Hosts[2]; *h.Host != 2 || h.Links != 2*(hosts-1)*rails || h.Slow != 2*(hosts-1) {
		t.Errorf("host 2's row %+v", h)
	}

	var txt bytes.Buffer
	if err := writeMesh(&txt, FormatTable, doc); err != nil {
		t.Fatal(err)
	}
	out := txt.String()
	for _, want := range []string{"ranks    72 on 9 hosts, 8 rails: 72 ok", "per host pair: the median of the links",
		"per rail (the links between NICs of one rail)", "21 (node2 rail 5)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table has no %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "from the row's rank to the column's") || strings.Contains(out, "rank 3  ") {
		t.Errorf("the table of 72 ranks has a rank matrix or a line per rank:\n%s", out)
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(js.Bytes()); err != nil {
		t.Error(err)
	}
}

// aggregateOnlyMesh is a mesh of 520 ranks, 65 hosts of 8 rails (33,280
// links), every link at 2 µs but 8 -> 16, which failed.
func aggregateOnlyMesh(t testing.TB) *Document {
	return railMesh(t, 65, 8, func(from, to int) float64 { return 2000 }, [2]int{8, 16})
}

// TestMeshAggregateOnly: past 512 ranks the summary has no rank matrices
// and lists only the failed link; its JSON reads back (compact, valid), its
// table has a row per host and no matrix (its plot draws the aggregate:
// TestPlotMeshAggregateOnly).
func TestMeshAggregateOnly(t *testing.T) {
	const hosts, rails = 65, 8 // 520 ranks, 33,280 links
	doc := aggregateOnlyMesh(t)
	m := doc.Mesh
	if len(m.Matrices) != 0 || m.Aggregate == nil || len(m.Links) != 1 || m.LinkTotal() != hosts*(hosts-1)*rails {
		t.Fatalf("520 ranks: %d matrices, aggregate %v, %d links listed of %d", len(m.Matrices), m.Aggregate != nil, len(m.Links), m.LinkTotal())
	}
	if f := m.FailedLinks(); len(f) != 1 || f[0].From != 8 || f[0].To != 16 {
		t.Errorf("failed links %+v", f)
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, doc); err != nil {
		t.Fatal(err)
	}
	if bytes.Count(js.Bytes(), []byte("\n")) != 1 {
		t.Errorf("the summary of 520 ranks is not written on one line")
	}
	if err := schema.Validate(js.Bytes()); err != nil {
		t.Error(err)
	}
	back, err := ReadJSON(bytes.NewReader(js.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if back.Mesh.LinkCount != m.LinkCount || len(back.Mesh.Aggregate.Figures) != 3 ||
		len(back.Mesh.Aggregate.Figures[2].HostMedian) != hosts {
		t.Fatalf("read back: %+v", back.Mesh.Aggregate)
	}
	var txt bytes.Buffer
	if err := writeMesh(&txt, FormatTable, back); err != nil {
		t.Fatal(err)
	}
	out := txt.String()
	if !strings.Contains(out, "per host (its links both ways)") || !strings.Contains(out, "64 node64") ||
		strings.Contains(out, "from\\to") || !strings.Contains(out, "33280 links, 33279") ||
		!strings.Contains(out, "link 8 -> 16 failed: rank lost") {
		t.Errorf("table of 520 ranks:\n%s", out)
	}
}

// TestMeshAggregateStream: a link stream of 520 ranks reads as the same
// summary as its builder made.
func TestMeshAggregateStream(t *testing.T) {
	const hosts, rails = 65, 8
	lat := func(from, to int) float64 { return float64(1000 + (from*7+to)%13*10) }
	want := railMesh(t, hosts, rails, lat, [2]int{-1, -1})
	var s bytes.Buffer
	head := *want
	hm := *want.Mesh
	hm.Links, hm.Matrices, hm.Aggregate, hm.LinkCount = nil, nil, nil, 0
	head.Mesh = &hm
	if err := WriteEvent(&s, Event{Event: EventStart, Document: &head}); err != nil {
		t.Fatal(err)
	}
	// The links as a stream, with their results.
	rec := map[float64]*Latency{}
	bw := NewBandwidth(1000*65536, 1000, time.Duration(1000*65536*8/100))
	for a := range hosts {
		for c := range hosts {
			if a == c {
				continue
			}
			for k := range rails {
				from, to := a*rails+k, c*rails+k
				ns := lat(from, to)
				if rec[ns] == nil {
					r := NewLatencyRecorder(BasisRTT)
					r.Record(uint64(ns))
					rec[ns] = r.Snapshot()
				}
				l := MeshLink{From: from, To: to, Round: 1, Results: []Result{
					{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 1, Latency: rec[ns]},
					{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 1000, Bandwidth: bw}}}
				if err := WriteEvent(&s, Event{Event: EventLink, Link: &l}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	got, err := ReadJSON(&s)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := WriteJSON(&a, &Document{Mesh: &Mesh{Aggregate: want.Mesh.Aggregate}}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&b, &Document{Mesh: &Mesh{Aggregate: got.Mesh.Aggregate}}); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() || got.Mesh.LinkTotal() != want.Mesh.LinkTotal() || len(got.Mesh.Matrices) != 0 {
		t.Errorf("the stream's aggregate differs from the builder's (%d links, %d matrices)", got.Mesh.LinkTotal(), len(got.Mesh.Matrices))
	}
}

// TestCompareMeshHosts: two summaries of 520 ranks (no rank matrices)
// compare per host pair: the host pair made slower on every rail is the
// most changed, and the comparison says how it compared.
func TestCompareMeshHosts(t *testing.T) {
	const hosts, rails = 65, 8
	base := railMesh(t, hosts, rails, func(from, to int) float64 { return 2000 }, [2]int{-1, -1})
	slow := railMesh(t, hosts, rails, func(from, to int) float64 {
		if from/rails == 3 && to/rails == 4 {
			return 3000
		}
		return 2000
	}, [2]int{-1, -1})
	c, err := CompareMesh(base, slow, MeshCompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Matrices) != 3 || c.Base.Ranks != 520 || c.New.Links != hosts*(hosts-1)*rails {
		t.Fatalf("%d matrices, %d ranks, %d links", len(c.Matrices), c.Base.Ranks, c.New.Links)
	}
	p50 := c.Matrices[0]
	if p50.Links != hosts*(hosts-1) || len(p50.Top) != 1 || p50.Top[0].From != 3 || p50.Top[0].To != 4 ||
		p50.Top[0].FromHost != "node3" || p50.Top[0].Change == nil || *p50.Top[0].Change < 0.49 || *p50.Top[0].Change > 0.51 {
		t.Errorf("p50: %d host pairs, top %+v", p50.Links, p50.Top)
	}
	if len(c.Warnings) == 0 || !strings.HasPrefix(c.Warnings[0], "compared per host pair (65 and 65 hosts)") {
		t.Errorf("warnings %q", c.Warnings)
	}
}

// TestMeshAggregateCSV: the CSV of a summary past the rank matrices has a
// row per host pair and figure, and the failed link.
func TestMeshAggregateCSV(t *testing.T) {
	doc := railMesh(t, 65, 8, func(from, to int) float64 { return 2000 }, [2]int{8, 16})
	var b bytes.Buffer
	if err := writeMesh(&b, FormatCSV, doc); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if want := 1 + 3*65*64 + 1; len(lines) != want || lines[1] != "write-lat,RC,2,p50,ns,,node0,,node1,2000,," ||
		!strings.HasPrefix(lines[len(lines)-1], ",,,,,8,node1,16,node2,,1,rank lost") {
		t.Errorf("%d lines, want %d: %q ... %q", len(lines), want, lines[1], lines[len(lines)-1])
	}
}

// TestMeshAggregateHostile: an aggregate no mesh makes is refused when
// read, naming what is wrong, rather than rendered.
func TestMeshAggregateHostile(t *testing.T) {
	for _, tc := range []struct {
		name, json, want string
	}{
		{"ragged", `{"hosts":["a","b"],"rails":1,"figures":[{"test":"t","size":2,"figure":"p50","unit":"ns","links":1,"host_median":[[null,1]],"hosts":[],"nics":[],"rails":[]}]}`,
			"host_median has 1 rows for 2 hosts"},
		{"no rank", `{"hosts":["a"],"rails":1,"figures":[{"test":"t","size":2,"figure":"p50","unit":"ns","links":1,"host_median":[[null]],"hosts":[],"nics":[{"host":0,"rail":0,"links":1,"slow":0}],"rails":[]}]}`,
			"a row of nics without its rank"},
		{"negative", `{"hosts":["a"],"rails":1,"figures":[{"test":"t","size":2,"figure":"p50","unit":"ns","links":1,"host_median":[[-1]],"hosts":[],"nics":[],"rails":[]}]}`,
			"negative host_median value"},
	} {
		doc := `{"schema":"rdmabench/result/v1","results":[],"mesh":{"size":1,"coordinator":"x","tests":["t"],"rounds":0,"schedule":"round-robin","ranks":[],"links":[],"matrices":[],"aggregate":` + tc.json + `}}`
		_, err := ReadJSON(strings.NewReader(doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// oneHostMesh is 72 ranks on one host (a mesh of processes), every pair
// measured, rank 5 slow.
func oneHostMesh(t testing.TB) *Document {
	doc := railMesh(t, 1, 1, func(from, to int) float64 { return 1000 }, [2]int{-1, -1})
	m := doc.Mesh
	// 72 ranks on one host, every pair measured, rank 5 slow.
	m.Size, m.Ranks = 72, nil
	for r := range 72 {
		m.Ranks = append(m.Ranks, MeshRank{Rank: r, State: RankOK, Host: &Host{Hostname: "vm"}})
	}
	b := NewMeshBuilder(m.Tests, Limits{}, 0)
	rec := func(ns uint64) *Latency { l := NewLatencyRecorder(BasisRTT); l.Record(ns); return l.Snapshot() }
	fast, slow := rec(1000), rec(3000)
	for from := range 72 {
		for to := range 72 {
			if from != to {
				lat := fast
				if from == 5 || to == 5 {
					lat = slow
				}
				b.Add(&MeshLink{From: from, To: to, Round: 1, Results: []Result{{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 1, Latency: lat}}})
			}
		}
	}
	b.Fill(m)
	return doc
}

// TestMeshAggregateOneHost: 72 ranks on one host (a mesh of processes):
// the table lists the worst ranks (and the plot draws the rank matrices
// alone, no host matrix of one cell: TestPlotMeshAggregateOneHost).
func TestMeshAggregateOneHost(t *testing.T) {
	doc := oneHostMesh(t)
	var txt bytes.Buffer
	if err := writeMesh(&txt, FormatTable, doc); err != nil {
		t.Fatal(err)
	}
	if out := txt.String(); !strings.Contains(out, "the 10 ranks of the worst median") || !strings.Contains(out, "\n5 (vm rail 0)") {
		t.Errorf("table:\n%s", out)
	}
}
