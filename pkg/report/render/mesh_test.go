package render

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/schema"
)

// A duplex link fills both cells of its pair: a ping-pong's figure in
// both, each direction of a bidirectional stream in its own (the client's
// from -> to, the server's to -> from), never the sum; a failed one leaves
// both empty and shows in both rows of the CSV. Its limits are checked on
// each direction's bandwidth and once on its ping-pong.
func TestMeshDuplexMatrices(t *testing.T) {
	doc := reporttest.DuplexFixture(t)
	m := doc.Mesh
	if len(m.Matrices) != 3 {
		t.Fatalf("%d matrices", len(m.Matrices))
	}
	near := func(v *float64, want float64) bool { return v != nil && *v > 0.97*want && *v < 1.03*want }
	p50, bw := m.Matrices[0], m.Matrices[2]
	if p50.Duplex != report.DuplexPingPong || m.Matrices[1].Duplex != report.DuplexPingPong || bw.Duplex != report.DuplexBidirectional {
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
	fails := m.CheckGates(report.Limits{P50: 2 * time.Microsecond, MinGbps: 2.5}, 0)
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
	if err := report.WriteJSON(&js, doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(js.Bytes()); err != nil {
		t.Errorf("the duplex document does not follow the schema: %v", err)
	}
}

// A host-level mesh's table says that its cells are sums over the ranks'
// lanes, and its document follows the schema.
func TestMeshHostLevelTable(t *testing.T) {
	doc := reporttest.DuplexFixture(t)
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
	if err := report.WriteJSON(&js, doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(js.Bytes()); err != nil || !strings.Contains(js.String(), `"host_level": true`) ||
		!strings.Contains(js.String(), `"lanes": [`) {
		t.Errorf("the host-level document: %v", err)
	}
}

func TestMeshRender(t *testing.T) {
	doc := reporttest.MeshFixture(t)
	doc.Mesh.CheckGates(report.Limits{}, 0.5)
	doc.Mesh.Blame = &report.MeshBlame{Multiplier: 4, MinSpread: 1, MaxSpread: 1, Figures: []report.BlameFigure{
		{Test: "write-lat", Connection: "RC", Size: 2, Figure: report.FigP50, Links: 5, FleetMedian: 1000, Spread: 1, Limit: 16},
		{Test: "write-bw", Connection: "RC", Size: 65536, Figure: report.FigGbps, Links: 5, FleetMedian: 4, Spread: 1, Limit: 0.0625}}}

	var js bytes.Buffer
	if err := Write(&js, FormatJSON, doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(js.Bytes()); err != nil {
		t.Fatalf("the mesh document does not follow the schema: %v", err)
	}
	back, err := report.ReadJSON(bytes.NewReader(js.Bytes()))
	if err != nil || back.Mesh == nil || len(back.Mesh.Links) != 6 {
		t.Fatalf("read back: %v", err)
	}

	var tb bytes.Buffer
	if err := Write(&tb, FormatTable, back); err != nil {
		t.Fatal(err)
	}
	table := strings.ReplaceAll(tb.String(), "\n         ", " ") // unwrapped
	for _, want := range []string{
		"3 ranks on 3 hosts (slurm), coordinator node1:19514, round-robin schedule: 3 rounds, 6 links, 5 measured, 1 failed",
		"write-lat RC 2 B: p50 latency (µs), from the row's rank to the column's; median of the 5 links 1 µs",
		"write-bw RC 65536 B: bandwidth (Gbit/s), from the row's rank to the column's; median of the 5 links 4.00 Gbit/s",
		"link 2 -> 0 failed: rank 2 lost",
		"outlier failed: 1 -> 2 write-bw RC 65536 B: bandwidth 1.000 Gbit/s < 2.000 Gbit/s (0.5 × the median 4.000 Gbit/s of all links)",
		"outlier failed: 1 -> 2 write-lat RC 2 B: p50 4.001 µs > 2 µs (the median 1 µs of all links ÷ 0.5)",
		"lost: rank at 10.0.0.3:5000 closed the connection",
		"blame    multiplier 4, spread at least 100%, at most 100%; write-lat RC 2 B p50: bad above 16× the fleet median of 1 µs (the median of the ranks' medians; spread 100%); " +
			"write-bw RC 65536 B bandwidth: bad below 0.0625× the fleet median of 4.000 Gbit/s (the median of the ranks' medians; spread 100%)",
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
	if err := WriteSources(&two, FormatCSV, []report.Source{{Name: "a.json", Doc: back}, {Name: "b.json", Doc: back}}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(two.String(), "\nb.json,"); n != 3*6 {
		t.Errorf("%d rows of b.json", n)
	}
	if err := WriteSources(&bytes.Buffer{}, FormatCSV, []report.Source{{Name: "a.json", Doc: back}, {Name: "p.json", Doc: report.NewDocument()}}); err == nil {
		t.Error("a mesh and a pair document in one CSV")
	}
}

// oneHostMesh is MeshFixture's mesh with every rank on host vm (rank 0's
// host the document's, no remote end): a mesh of processes on one host,
// judged by blame.
func oneHostMesh(t *testing.T) *report.Document {
	doc := reporttest.MeshFixture(t)
	doc.Hosts = report.Hosts{Local: report.Host{Hostname: "vm"}}
	for i := range doc.Mesh.Ranks {
		doc.Mesh.Ranks[i].Host.Hostname = "vm"
	}
	doc.Mesh.Blame = &report.MeshBlame{Multiplier: 5, MinSpread: 0.02, Figures: []report.BlameFigure{
		{Test: "write-lat", Connection: "RC", Size: 2, Figure: report.FigP50, Links: 5, FleetMedian: 1100, Spread: 0.07, Limit: 1.41}}}
	return doc
}

// TestMeshOneHostHeader: a mesh's header says what it is, its ranks and
// hosts ("3 ranks on 1 host"), never loopback (no remote end is no
// loopback in a mesh); and its two medians say which is which: a
// matrix's is the median of its links, blame's the fleet median, the
// median of the ranks' medians.
func TestMeshOneHostHeader(t *testing.T) {
	doc := oneHostMesh(t)
	for _, f := range []string{FormatTable, FormatMarkdown} {
		var b bytes.Buffer
		if err := Write(&b, f, doc); err != nil {
			t.Fatal(err)
		}
		out := strings.ReplaceAll(b.String(), "\n         ", " ") // unwrapped
		for _, want := range []string{
			"3 ranks on 1 host (slurm), coordinator node1:19514",
			"p50 latency (µs), from the row's rank to the column's; median of the 5 links 1 µs",
			"bandwidth (Gbit/s), from the row's rank to the column's; median of the 5 links 4.00 Gbit/s",
			"write-lat RC 2 B p50: bad above 1.41× the fleet median of 1.1 µs (the median of the ranks' medians; spread 7%)",
		} {
			if f == FormatMarkdown {
				want = mdEscape(want)
			}
			if !strings.Contains(out, want) {
				t.Errorf("%s lacks %q:\n%s", f, want, out)
			}
		}
		if strings.Contains(out, "loopback") {
			t.Errorf("%s: a mesh said loopback:\n%s", f, out)
		}
	}
}
