package report_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/report"

	"github.com/rdmabench/rdmabench/pkg/latency"
	"github.com/rdmabench/rdmabench/pkg/report/schema"
)

func TestMeshMatrices(t *testing.T) {
	doc := reporttest.MeshFixture(t)
	m := doc.Mesh
	if got := len(m.Matrices); got != 3 {
		t.Fatalf("%d matrices, want 3 (write-lat p50, p99; write-bw bw)", got)
	}
	p50 := m.Matrices[0]
	if p50.Test != "write-lat" || p50.Figure != report.FigP50 || p50.Unit != "ns" {
		t.Errorf("first matrix %+v", p50)
	}
	if p50.Values[0][0] != nil || p50.Values[2][0] != nil {
		t.Error("the diagonal and the failed link 2 -> 0 have values")
	}
	if v := p50.Values[1][2]; v == nil || *v < 3900 || *v > 4100 {
		t.Errorf("1 -> 2 p50 %v, want about 4000", v)
	}
	bw := m.Matrices[2]
	if bw.Figure != report.FigGbps || bw.Median == nil || *bw.Median < 3.9 || *bw.Median > 4.1 {
		t.Errorf("bandwidth matrix %+v", bw)
	}
}

func TestCheckGates(t *testing.T) {
	doc := reporttest.MeshFixture(t)
	fails := doc.Mesh.CheckGates(report.Limits{}, 0.5)
	var msgs []string
	for _, f := range fails {
		msgs = append(msgs, f.Message)
		if f.From != 1 || f.To != 2 || f.Kind != report.FailOutlier {
			t.Errorf("outlier %+v: want only the link 1 -> 2", f)
		}
	}
	if len(fails) != 2 { // p50 and bandwidth of 1 -> 2 (not p99: too noisy)
		t.Errorf("%d outliers, want 2:\n%s", len(fails), strings.Join(msgs, "\n"))
	}
	fails = doc.Mesh.CheckGates(report.Limits{MinGbps: 2, P50: 100 * time.Microsecond}, 0)
	if len(fails) != 1 || fails[0].Kind != report.FailLimit || fails[0].From != 1 || fails[0].To != 2 || fails[0].Figure != report.FigGbps {
		t.Errorf("limit failures %+v, want the bandwidth of 1 -> 2", fails)
	}
	if doc.Mesh.Gates == nil || doc.Mesh.Gates.Limits["bw"] != 2 {
		t.Errorf("gates recorded %+v", doc.Mesh.Gates)
	}
	fails = doc.Mesh.CheckGates(report.Limits{MinMsgRate: 1e3}, 0)
	if len(fails) != 0 {
		t.Errorf("a message rate every link meets failed: %+v", fails)
	}
	// A limit relative to the link is recorded as a share, not as a value.
	doc.Mesh.CheckGates(report.Limits{MinLinkFraction: 0.9, P99: time.Second}, 0)
	if g := doc.Mesh.Gates; g == nil || g.LinkShares["bw"] != 0.9 || len(g.Limits) != 1 || g.Limits["p99"] != 1e9 {
		t.Errorf("gates recorded %+v, want the p99 limit and a 0.9 link share", g)
	}
}

// A link figure that is not a number is refused on reading, as a result's.
func TestMeshHostile(t *testing.T) {
	doc := reporttest.MeshFixture(t)
	var js bytes.Buffer
	if err := report.WriteJSON(&js, doc); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(js.String(), `"from": 1,`, `"from": -7,`, 1)
	if _, err := report.ReadJSON(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "negative from") {
		t.Errorf("a negative rank: %v", err)
	}
}

// Past 64 ranks a duplex mesh's aggregate counts its cells: each
// direction of a bidirectional stream on its own, a ping-pong in both;
// the host matrix tells the slow direction of one host pair.
func TestMeshDuplexAggregate(t *testing.T) {
	const n = 66 // 33 hosts of 2 NICs
	doc := report.NewDocument()
	m := &report.Mesh{Size: n, Coordinator: "node0:19514", Tests: []string{"tcp-lat", "tcp-bw"}, Schedule: "round-robin", Duplex: true}
	for r := range n {
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, State: report.RankOK, LocalRank: r % 2,
			Host: &report.Host{Hostname: fmt.Sprintf("node%02d", r/2)}})
	}
	lat := func(p50 float64) report.Result {
		rec := latency.NewRecorder("rtt")
		rec.RecordBatch([]uint64{uint64(p50), uint64(p50), uint64(p50)})
		return report.Result{Test: "tcp-lat", Connection: "TCP", Size: 2, Iterations: 3, Latency: rec.Snapshot()}
	}
	bw := func(gbps float64) *report.Bandwidth {
		return report.NewBandwidth(65536, 1, time.Duration(float64(65536*8)/gbps))
	}
	b := report.NewMeshBuilder(m.Tests, report.Limits{}, 0)
	b.SetRanks(n)
	for i := range n {
		for j := i + 1; j < n; j++ {
			rev := 10.0
			if i/2 == 0 && j/2 == 1 {
				rev = 1 // node01 -> node00 slow
			}
			r := report.Result{Test: "tcp-bw", Connection: "TCP", Size: 65536, Iterations: 1, Bandwidth: bw(10), Reverse: bw(rev),
				Direction: report.DirectionBoth}
			r.Total = report.Sum(r.Bandwidth, r.Reverse)
			b.Add(&report.MeshLink{From: i, To: j, Round: 1, Duplex: true, Results: []report.Result{lat(1000), r}})
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
		if f.Figure == report.FigGbps {
			slow, fast := f.HostMedian[1][0], f.HostMedian[0][1]
			if slow == nil || fast == nil || *slow > 1.1 || *fast < 9.9 {
				t.Errorf("host pair 1 -> 0 %v, 0 -> 1 %v: want the slow direction alone", slow, fast)
			}
		}
	}
	var js bytes.Buffer
	if err := report.WriteJSON(&js, doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(js.Bytes()); err != nil {
		t.Errorf("the duplex aggregate does not follow the schema: %v", err)
	}
}
