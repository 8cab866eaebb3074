package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report/schema"
)

// meshFixture is a mesh of three ranks: every link measured but 2 -> 0
// (rank 2 lost mid-run), the link 1 -> 2 four times slower than the others.
func meshFixture(t testing.TB) *Document {
	t.Helper()
	lat := func(p50 float64) Result {
		rec := NewLatencyRecorder("rtt")
		rec.RecordBatch([]uint64{uint64(p50), uint64(p50), uint64(p50 * 2)})
		return Result{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 3, Latency: rec.Snapshot()}
	}
	bw := func(gbps float64) Result {
		return Result{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 100,
			Bandwidth: NewBandwidth(100*65536, 100, time.Duration(float64(100*65536*8)/gbps))}
	}
	doc := NewDocument()
	doc.Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	doc.End = doc.Start.Add(12 * time.Second)
	m := &Mesh{Size: 3, Launcher: "slurm", Coordinator: "node1:19514", Tests: []string{"write-lat", "write-bw"},
		Rounds: 3, Schedule: "round-robin"}
	for r := range 3 {
		m.Ranks = append(m.Ranks, MeshRank{Rank: r, State: RankOK, Addr: "10.0.0.1:4000" + string(rune('0'+r)),
			Host: &Host{Hostname: "node" + string(rune('1'+r)), Device: &Device{Name: "rxe0", Port: 1, GID: "::ffff:10.0.0.1", GIDIndex: 1}}})
	}
	m.Ranks[2].State, m.Ranks[2].Error = RankLost, "rank at 10.0.0.3:5000 closed the connection"
	round := 0
	for from := range 3 {
		for to := range 3 {
			if from == to {
				continue
			}
			round++
			l := MeshLink{From: from, To: to, Round: round, Start: doc.Start, End: doc.Start.Add(time.Second)}
			switch {
			case from == 2 && to == 0:
				l.Start, l.End = time.Time{}, time.Time{}
				l.Error = "rank 2 lost: closed the connection"
			case from == 1 && to == 2:
				l.Results = []Result{lat(4000), bw(1)}
			default:
				l.Results = []Result{lat(1000), bw(4)}
			}
			if l.Results == nil {
				l.Results = []Result{}
			}
			m.Links = append(m.Links, l)
		}
	}
	m.BuildMatrices()
	doc.Mesh = m
	return doc
}

func TestMeshMatrices(t *testing.T) {
	doc := meshFixture(t)
	m := doc.Mesh
	if got := len(m.Matrices); got != 3 {
		t.Fatalf("%d matrices, want 3 (write-lat p50, p99; write-bw bw)", got)
	}
	p50 := m.Matrices[0]
	if p50.Test != "write-lat" || p50.Figure != FigP50 || p50.Unit != "ns" {
		t.Errorf("first matrix %+v", p50)
	}
	if p50.Values[0][0] != nil || p50.Values[2][0] != nil {
		t.Error("the diagonal and the failed link 2 -> 0 have values")
	}
	if v := p50.Values[1][2]; v == nil || *v < 3900 || *v > 4100 {
		t.Errorf("1 -> 2 p50 %v, want about 4000", v)
	}
	bw := m.Matrices[2]
	if bw.Figure != FigGbps || bw.Median == nil || *bw.Median < 3.9 || *bw.Median > 4.1 {
		t.Errorf("bandwidth matrix %+v", bw)
	}
}

func TestCheckMesh(t *testing.T) {
	doc := meshFixture(t)
	fails := CheckMesh(doc.Mesh, Limits{}, 0.5)
	var msgs []string
	for _, f := range fails {
		msgs = append(msgs, f.Message)
		if f.From != 1 || f.To != 2 || f.Kind != FailOutlier {
			t.Errorf("outlier %+v: want only the link 1 -> 2", f)
		}
	}
	if len(fails) != 2 { // p50 and bandwidth of 1 -> 2 (not p99: too noisy)
		t.Errorf("%d outliers, want 2:\n%s", len(fails), strings.Join(msgs, "\n"))
	}
	fails = CheckMesh(doc.Mesh, Limits{MinGbps: 2, P50: 100 * time.Microsecond}, 0)
	if len(fails) != 1 || fails[0].Kind != FailLimit || fails[0].From != 1 || fails[0].To != 2 || fails[0].Figure != FigGbps {
		t.Errorf("limit failures %+v, want the bandwidth of 1 -> 2", fails)
	}
	if doc.Mesh.Gates == nil || doc.Mesh.Gates.Limits["bw"] != 2 {
		t.Errorf("gates recorded %+v", doc.Mesh.Gates)
	}
	fails = CheckMesh(doc.Mesh, Limits{MinMsgRate: 1e3}, 0)
	if len(fails) != 0 {
		t.Errorf("a message rate every link meets failed: %+v", fails)
	}
	// A limit relative to the link is recorded as a share, not as a value.
	CheckMesh(doc.Mesh, Limits{MinLinkFraction: 0.9, P99: time.Second}, 0)
	if g := doc.Mesh.Gates; g == nil || g.LinkShares["bw"] != 0.9 || len(g.Limits) != 1 || g.Limits["p99"] != 1e9 {
		t.Errorf("gates recorded %+v, want the p99 limit and a 0.9 link share", g)
	}
}

func TestMeshRender(t *testing.T) {
	doc := meshFixture(t)
	CheckMesh(doc.Mesh, Limits{}, 0.5)
	doc.Mesh.Blame = &MeshBlame{Multiplier: 4, MinSpread: 1, MaxSpread: 1, Figures: []BlameFigure{
		{Test: "write-lat", Connection: "RC", Size: 2, Figure: FigP50, Links: 5, FleetMedian: 1000, Spread: 1, Limit: 16},
		{Test: "write-bw", Connection: "RC", Size: 65536, Figure: FigGbps, Links: 5, FleetMedian: 4, Spread: 1, Limit: 0.0625}}}

	var js bytes.Buffer
	if err := Write(&js, FormatJSON, doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(js.Bytes()); err != nil {
		t.Fatalf("the mesh document does not follow the schema: %v", err)
	}
	back, err := ReadJSON(bytes.NewReader(js.Bytes()))
	if err != nil || back.Mesh == nil || len(back.Mesh.Links) != 6 {
		t.Fatalf("read back: %v", err)
	}

	var tb bytes.Buffer
	if err := Write(&tb, FormatTable, back); err != nil {
		t.Fatal(err)
	}
	table := strings.ReplaceAll(tb.String(), "\n         ", " ") // unwrapped
	for _, want := range []string{
		"3 ranks (slurm), coordinator node1:19514, round-robin schedule: 3 rounds, 6 links, 5 measured, 1 failed",
		"write-lat RC 2 B: p50 latency (µs), from the row's rank to the column's; median 1 µs",
		"write-bw RC 65536 B: bandwidth (Gbit/s), from the row's rank to the column's; median 4.00 Gbit/s",
		"link 2 -> 0 failed: rank 2 lost",
		"outlier failed: 1 -> 2 write-bw RC 65536 B: bandwidth 1.000 Gbit/s < 2.000 Gbit/s (0.5 × the median 4.000 Gbit/s of all links)",
		"outlier failed: 1 -> 2 write-lat RC 2 B: p50 4.001 µs > 2 µs (the median 1 µs of all links ÷ 0.5)",
		"lost: rank at 10.0.0.3:5000 closed the connection",
		"blame    multiplier 4, spread at least 100%, at most 100%; write-lat RC 2 B p50: bad above 16× the fleet median of 1 µs (spread 100%); " +
			"write-bw RC 65536 B bandwidth: bad below 0.0625× the fleet median of 4.000 Gbit/s (spread 100%)",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	// The p50 matrix: row 1 holds 1.00 to rank 0 and 4.00 to rank 2; row
	// 2 has no value to rank 0.
	if !strings.Contains(table, "from\\to     0     1     2\n0              1.00  1.00\n1        1.00        4.00\n2           -  1.00      \n") {
		t.Errorf("p50 matrix:\n%s", table)
	}

	var md bytes.Buffer
	if err := Write(&md, FormatMarkdown, back); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| from \\ to | 0 | 1 | 2 |") || !strings.Contains(md.String(), "| **1** | 1.00 |  | 4.00 |") {
		t.Errorf("markdown:\n%s", md.String())
	}

	var cs bytes.Buffer
	if err := Write(&cs, FormatCSV, back); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&cs).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != strings.Join(MeshCSVHeader, ",") {
		t.Errorf("header %v", rows[0])
	}
	if len(rows) != 1+3*6 { // three matrices, six links each
		t.Errorf("%d rows, want %d", len(rows), 1+3*6)
	}
	failedRows := 0
	for _, r := range rows[1:] {
		if r[5] == "2" && r[7] == "0" {
			failedRows++
			if r[9] != "" || !strings.Contains(r[11], "rank 2 lost") {
				t.Errorf("failed link row %v", r)
			}
		}
	}
	if failedRows != 3 {
		t.Errorf("%d rows for the failed link, want 3", failedRows)
	}

	for _, f := range []string{FormatGobench, FormatOpenMetrics, FormatBenchActionLatency} {
		if err := Write(&bytes.Buffer{}, f, back); err == nil || !strings.Contains(err.Error(), "mesh document renders as") {
			t.Errorf("%s of a mesh document: %v", f, err)
		}
	}
	// Several mesh documents: one long CSV with their names.
	var two bytes.Buffer
	if err := WriteSources(&two, FormatCSV, []Source{{"a.json", back}, {"b.json", back}}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(two.String(), "\nb.json,"); n != 3*6 {
		t.Errorf("%d rows of b.json", n)
	}
	if err := WriteSources(&bytes.Buffer{}, FormatCSV, []Source{{"a.json", back}, {"p.json", NewDocument()}}); err == nil {
		t.Error("a mesh and a pair document in one CSV")
	}
}

// A link figure that is not a number is refused on reading, as a result's.
func TestMeshHostile(t *testing.T) {
	doc := meshFixture(t)
	var js bytes.Buffer
	if err := WriteJSON(&js, doc); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(js.String(), `"from": 1,`, `"from": -7,`, 1)
	if _, err := ReadJSON(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "negative from") {
		t.Errorf("a negative rank: %v", err)
	}
}

// duplexFixture is a duplex mesh of three ranks: each pair ran once, from
// its lower rank, its ping-pong and a bidirectional stream whose reverse
// (the server's direction) is half as fast; the pair 0 <-> 2 failed. The
// pair 1 <-> 2's ping-pong is four times slower.
func duplexFixture(t testing.TB) *Document {
	t.Helper()
	lat := func(p50 float64) Result {
		rec := NewLatencyRecorder("rtt")
		rec.RecordBatch([]uint64{uint64(p50), uint64(p50), uint64(p50 * 2)})
		return Result{Test: "tcp-lat", Connection: "TCP", Size: 2, Iterations: 3, Latency: rec.Snapshot()}
	}
	bw := func(gbps float64) *Bandwidth {
		return NewBandwidth(100*65536, 100, time.Duration(float64(100*65536*8)/gbps))
	}
	bidi := func(fwd, rev float64) Result {
		r := Result{Test: "tcp-bw", Connection: "TCP", Size: 65536, Iterations: 100, Bandwidth: bw(fwd), Reverse: bw(rev),
			Direction: DirectionBoth}
		r.Total = Sum(r.Bandwidth, r.Reverse)
		return r
	}
	doc := NewDocument()
	m := &Mesh{Size: 3, Coordinator: "node1:19514", Tests: []string{"tcp-lat", "tcp-bw"}, Rounds: 3, Schedule: "round-robin",
		Duplex: true}
	for r := range 3 {
		m.Ranks = append(m.Ranks, MeshRank{Rank: r, State: RankOK, Host: &Host{Hostname: "node" + string(rune('1'+r))}})
	}
	m.Links = []MeshLink{
		{From: 0, To: 1, Round: 1, Duplex: true, Results: []Result{lat(1000), bidi(4, 2)}},
		{From: 2, To: 0, Round: 2, Duplex: true, Error: "rank 2 lost", Results: []Result{}},
		{From: 1, To: 2, Round: 3, Duplex: true, Results: []Result{lat(4000), bidi(6, 3)}},
	}
	m.BuildMatrices()
	doc.Mesh = m
	return doc
}

// A duplex link fills both cells of its pair: a ping-pong's figure in
// both, each direction of a bidirectional stream in its own (the client's
// from -> to, the server's to -> from), never the sum; a failed one leaves
// both empty and shows in both rows of the CSV. Its limits are checked on
// each direction's bandwidth and once on its ping-pong.
func TestMeshDuplexMatrices(t *testing.T) {
	doc := duplexFixture(t)
	m := doc.Mesh
	if len(m.Matrices) != 3 {
		t.Fatalf("%d matrices", len(m.Matrices))
	}
	near := func(v *float64, want float64) bool { return v != nil && *v > 0.97*want && *v < 1.03*want }
	p50, bw := m.Matrices[0], m.Matrices[2]
	if p50.Duplex != DuplexPingPong || m.Matrices[1].Duplex != DuplexPingPong || bw.Duplex != DuplexBidirectional {
		t.Errorf("duplex %q %q %q", p50.Duplex, m.Matrices[1].Duplex, bw.Duplex)
	}
	if !near(p50.Values[0][1], 1000) || !near(p50.Values[1][0], 1000) || !near(p50.Values[1][2], 4000) || !near(p50.Values[2][1], 4000) {
		t.Errorf("p50 cells %v", p50.Values)
	}
	if !near(bw.Values[0][1], 4) || !near(bw.Values[1][0], 2) || !near(bw.Values[1][2], 6) || !near(bw.Values[2][1], 3) {
		t.Errorf("bandwidth cells %v", bw.Values)
	}
	for _, mx := range m.Matrices {
		if mx.Values[0][2] != nil || mx.Values[2][0] != nil {
			t.Errorf("%s %s: the failed pair 0 <-> 2 has values", mx.Key(), mx.Figure)
		}
	}
	// Limits: the ping-pong 1 <-> 2 fails its p50 once; the two slow
	// directions fail the bandwidth limit, each by its own figure.
	fails := CheckMesh(m, Limits{P50: 2 * time.Microsecond, MinGbps: 2.5}, 0)
	var got []string
	for _, f := range fails {
		got = append(got, fmt.Sprintf("%d->%d %s", f.From, f.To, f.Figure))
	}
	if want := "[1->0 bw 1->2 p50]"; fmt.Sprint(got) != want {
		t.Errorf("failures %v, want %s", got, want)
	}
	// The table says what the cells are; the CSV has both directions of
	// the failed pair, with its error.
	var tb bytes.Buffer
	if err := Write(&tb, FormatTable, doc); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"duplex", "each pair's ping-pong, both ways at once, in both its cells",
		"from the row's rank to the column's, both directions sending at once", "link 2 <-> 0 failed: rank 2 lost"} {
		if !strings.Contains(tb.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, tb.String())
		}
	}
	var cb bytes.Buffer
	if err := Write(&cb, FormatCSV, doc); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&cb).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]bool{}
	for _, r := range rows[1:] {
		if r[11] != "" {
			failed[r[0]+" "+r[3]+" "+r[5]+"->"+r[7]+" round "+r[10]] = true
		}
	}
	if len(rows) != 1+3*6 || len(failed) != 6 || !failed["tcp-bw bw 0->2 round 2"] || !failed["tcp-bw bw 2->0 round 2"] {
		t.Errorf("%d rows, failed %v", len(rows), failed)
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(js.Bytes()); err != nil {
		t.Errorf("the duplex document does not follow the schema: %v", err)
	}
}

// A host-level mesh's table says that its cells are sums over the ranks'
// lanes, and its document follows the schema.
func TestMeshHostLevelTable(t *testing.T) {
	doc := duplexFixture(t)
	m := doc.Mesh
	m.HostLevel = true
	for i := range m.Ranks {
		m.Ranks[i].Lanes = []string{"mlx5_0", "mlx5_1"}
	}
	var tb bytes.Buffer
	if err := Write(&tb, FormatTable, doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tb.String(), "lanes    ranks are hosts: each link ran on every device of both at once") {
		t.Errorf("the table does not say it is host-level:\n%s", tb.String())
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(js.Bytes()); err != nil || !strings.Contains(js.String(), `"host_level": true`) ||
		!strings.Contains(js.String(), `"lanes": [`) {
		t.Errorf("the host-level document: %v", err)
	}
}

// Past 64 ranks a duplex mesh's aggregate counts its cells: each
// direction of a bidirectional stream on its own, a ping-pong in both;
// the host matrix tells the slow direction of one host pair.
func TestMeshDuplexAggregate(t *testing.T) {
	const n = 66 // 33 hosts of 2 NICs
	doc := NewDocument()
	m := &Mesh{Size: n, Coordinator: "node0:19514", Tests: []string{"tcp-lat", "tcp-bw"}, Schedule: "round-robin", Duplex: true}
	for r := range n {
		m.Ranks = append(m.Ranks, MeshRank{Rank: r, State: RankOK, LocalRank: r % 2,
			Host: &Host{Hostname: fmt.Sprintf("node%02d", r/2)}})
	}
	lat := func(p50 float64) Result {
		rec := NewLatencyRecorder("rtt")
		rec.RecordBatch([]uint64{uint64(p50), uint64(p50), uint64(p50)})
		return Result{Test: "tcp-lat", Connection: "TCP", Size: 2, Iterations: 3, Latency: rec.Snapshot()}
	}
	bw := func(gbps float64) *Bandwidth { return NewBandwidth(65536, 1, time.Duration(float64(65536*8)/gbps)) }
	b := NewMeshBuilder(m.Tests, Limits{}, 0)
	b.SetRanks(n)
	for i := range n {
		for j := i + 1; j < n; j++ {
			rev := 10.0
			if i/2 == 0 && j/2 == 1 {
				rev = 1 // node01 -> node00 slow
			}
			r := Result{Test: "tcp-bw", Connection: "TCP", Size: 65536, Iterations: 1, Bandwidth: bw(10), Reverse: bw(rev),
				Direction: DirectionBoth}
			r.Total = Sum(r.Bandwidth, r.Reverse)
			b.Add(&MeshLink{From: i, To: j, Round: 1, Duplex: true, Results: []Result{lat(1000), r}})
		}
	}
	b.Fill(m)
	doc.Mesh = m
	if b.Links() != n*(n-1)/2 || len(m.Links) != n*(n-1)/2 || m.Aggregate == nil || len(m.Aggregate.Hosts) != 33 {
		t.Fatalf("%d links added, %d listed, aggregate %v", b.Links(), len(m.Links), m.Aggregate != nil)
	}
	for _, f := range m.Aggregate.Figures {
		if f.Links != n*(n-1) {
			t.Errorf("%s %s: %d cells, want %d", f.Key(), f.Figure, f.Links, n*(n-1))
		}
		for _, row := range f.NICs {
			if row.Links != 2*(n-1) {
				t.Errorf("%s %s: NIC %d has %d cells, want %d", f.Key(), f.Figure, *row.Rank, row.Links, 2*(n-1))
			}
		}
		if f.Figure == FigGbps {
			slow, fast := f.HostMedian[1][0], f.HostMedian[0][1]
			if slow == nil || fast == nil || *slow > 1.1 || *fast < 9.9 {
				t.Errorf("host pair 1 -> 0 %v, 0 -> 1 %v: want the slow direction alone", slow, fast)
			}
		}
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(js.Bytes()); err != nil {
		t.Errorf("the duplex aggregate does not follow the schema: %v", err)
	}
}
