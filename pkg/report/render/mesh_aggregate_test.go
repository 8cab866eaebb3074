package render

import (
	"bytes"
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"slices"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/schema"
)

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
	doc := reporttest.RailMesh(t, hosts, rails, lat, [2]int{-1, -1})
	m := doc.Mesh
	if len(m.Matrices) != 3 || m.Aggregate == nil || len(m.Links) != hosts*(hosts-1)*rails || m.LinkCount != 0 {
		t.Fatalf("72 ranks: %d matrices, aggregate %v, %d links (count %d)", len(m.Matrices), m.Aggregate != nil, len(m.Links), m.LinkCount)
	}
	a := m.Aggregate
	if len(a.Hosts) != hosts || a.Hosts[3] != "node3" || a.Rails != rails || len(a.Figures) != 3 {
		t.Fatalf("aggregate: hosts %v, rails %d, %d figures", a.Hosts, a.Rails, len(a.Figures))
	}
	p50 := &a.Figures[0]
	if p50.Figure != report.FigP50 || p50.Links != hosts*(hosts-1)*rails {
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
	if err := report.WriteJSON(&js, doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(js.Bytes()); err != nil {
		t.Error(err)
	}
}

// TestMeshAggregateCSV: the CSV of a summary past the rank matrices has a
// row per host pair and figure, and the failed link.
func TestMeshAggregateCSV(t *testing.T) {
	doc := reporttest.RailMesh(t, 65, 8, func(from, to int) float64 { return 2000 }, [2]int{8, 16})
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

// TestMeshAggregateOneHost: 72 ranks on one host (a mesh of processes):
// the table lists the worst ranks (and the plot draws the rank matrices
// alone, no host matrix of one cell: TestPlotMeshAggregateOneHost).
func TestMeshAggregateOneHost(t *testing.T) {
	doc := reporttest.OneHostMesh(t)
	var txt bytes.Buffer
	if err := writeMesh(&txt, FormatTable, doc); err != nil {
		t.Fatal(err)
	}
	if out := txt.String(); !strings.Contains(out, "the 10 ranks of the worst median") || !strings.Contains(out, "\n5 (vm rail 0)") {
		t.Errorf("table:\n%s", out)
	}
}

// TestMeshAggregateOnly: past 512 ranks the summary has no rank matrices
// and lists only the failed link; its JSON reads back (compact, valid), its
// table has a row per host and no matrix (its plot draws the aggregate:
// TestPlotMeshAggregateOnly).
func TestMeshAggregateOnly(t *testing.T) {
	const hosts, rails = 65, 8 // 520 ranks, 33,280 links
	doc := reporttest.AggregateOnlyMesh(t)
	m := doc.Mesh
	if len(m.Matrices) != 0 || m.Aggregate == nil || len(m.Links) != 1 || m.LinkTotal() != hosts*(hosts-1)*rails {
		t.Fatalf("520 ranks: %d matrices, aggregate %v, %d links listed of %d", len(m.Matrices), m.Aggregate != nil, len(m.Links), m.LinkTotal())
	}
	if f := m.FailedLinks(); len(f) != 1 || f[0].From != 8 || f[0].To != 16 {
		t.Errorf("failed links %+v", f)
	}
	var js bytes.Buffer
	if err := report.WriteJSON(&js, doc); err != nil {
		t.Fatal(err)
	}
	if bytes.Count(js.Bytes(), []byte("\n")) != 1 {
		t.Errorf("the summary of 520 ranks is not written on one line")
	}
	if err := schema.Validate(js.Bytes()); err != nil {
		t.Error(err)
	}
	back, err := report.ReadJSON(bytes.NewReader(js.Bytes()))
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
		strings.Contains(out, "from\\to") || !strings.Contains(out, "33280 links,") || !strings.Contains(out, "33279 measured") ||
		!strings.Contains(out, "link 8 -> 16 failed: rank lost") {
		t.Errorf("table of 520 ranks:\n%s", out)
	}
}
