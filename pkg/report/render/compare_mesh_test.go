package render

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/compare"
)

// TestCompareMesh256: two summaries of 256 ranks (65,280 links) compare,
// and a rank whose every link got half as fast is named on each of them.
func TestCompareMesh256(t *testing.T) {
	const n = 256
	base, new := reporttest.BigMeshDoc(n), reporttest.BigMeshDoc(n)
	for j, v := range new.Mesh.Matrices[0].Values[9] {
		if v != nil {
			x := *v / 2
			new.Mesh.Matrices[0].Values[9][j] = &x
		}
	}
	c := mustCompareMesh(t, base, new, 0)
	mc := c.Matrices[0]
	if mc.Links != n*(n-1)-(n-1) || mc.OnlyBase != 0 || mc.OnlyNew != 0 || len(mc.Top) != compare.DefaultMeshTop || mc.Top[0].From != 9 {
		t.Fatalf("%+v", mc)
	}
	g := c.CheckGates(compare.Gates{compare.MinRatioGate("--min-bw-ratio 0.9", 0.9, report.FigGbps)})
	if len(g.Failures) != n-2 {
		t.Fatalf("%d failures", len(g.Failures))
	}
	for _, f := range g.Failures {
		if f.From != 9 {
			t.Fatalf("%+v", f)
		}
	}
	var out bytes.Buffer
	if err := WriteMeshComparison(&out, FormatCSV, c, g); err != nil {
		t.Fatal(err)
	}
	if lines := bytes.Count(out.Bytes(), []byte("\n")); lines != 1+mc.Links {
		t.Errorf("%d csv lines", lines)
	}
}

// TestCompareMeshFailedLink: a link failed in new is listed with its
// error, and its figures count as measured in base only.
func TestCompareMeshFailedLink(t *testing.T) {
	c := mustCompareMesh(t, reporttest.CmpMesh{N: 4}.Doc(), reporttest.CmpMesh{N: 4, Failed: func(from, to int) bool { return from == 2 && to == 0 }}.Doc(), 0)
	if len(c.FailedNew) != 1 || c.FailedNew[0].From != 2 || c.FailedNew[0].To != 0 || c.FailedNew[0].Error != "rank 0 was lost" ||
		len(c.FailedBase) != 0 || c.New.Failed != 1 {
		t.Fatalf("failed: base %+v new %+v", c.FailedBase, c.FailedNew)
	}
	for _, mc := range c.Matrices {
		if mc.Links != 11 || mc.OnlyBase != 1 || mc.OnlyNew != 0 {
			t.Errorf("%s: %+v", mc.MatrixID, mc)
		}
	}
	var out bytes.Buffer
	if err := WriteMeshComparison(&out, FormatCSV, c, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "write-lat,RC,2,p50,ns,2,node2 mlx5_0,0,node0 mlx5_0,1030,,,only_base\n") {
		t.Errorf("csv lacks the link failed in new:\n%s", out.String())
	}
}

// TestCompareMeshFormats: JSON has its schema and every part; CSV one row
// per link and figure; a single run's document is refused, naming which
// is which.
func TestCompareMeshFormats(t *testing.T) {
	c := mustCompareMesh(t, reporttest.CmpMesh{N: 3}.Doc(), reporttest.CmpMesh{N: 3, SlowBW: func(from, to int) float64 { return 1.25 }}.Doc(), 0)
	g := c.CheckGates(compare.Gates{compare.MinRatioGate("--min-bw-ratio 0.9", 0.9, report.FigGbps)})
	c.AddLimits(g, "--limit-bw 90Gbps", report.Limits{MinGbps: 90})
	if len(g.Failures) != 6 || len(g.Limits) != 6 {
		t.Fatalf("gates: %+v", g)
	}
	var out bytes.Buffer
	if err := WriteMeshComparison(&out, FormatJSON, c, g); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Schema    string `json:"schema"`
		MatchedBy string `json:"matched_by"`
		Matrices  []struct {
			Figure string `json:"figure"`
			Links  int    `json:"links"`
			Top    []struct {
				From, To int
				Change   float64
			} `json:"top"`
		} `json:"matrices"`
		Gates struct {
			Failures []struct {
				From, To int
				Message  string
			} `json:"failures"`
			Limits []json.RawMessage `json:"limits"`
		} `json:"gates"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.Schema != compare.MeshSchema || v.MatchedBy != "rank" || len(v.Matrices) != 3 || v.Matrices[2].Links != 6 ||
		len(v.Gates.Failures) != 6 || len(v.Gates.Limits) != 6 {
		t.Errorf("%+v\n%s", v, out.String())
	}

	out.Reset()
	if err := WriteMeshComparison(&out, FormatCSV, c, g); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+3*6 || strings.Join(rows[0], ",") != "test,connection,size_bytes,figure,unit,from_rank,from_host,to_rank,to_host,base,new,change,status" {
		t.Fatalf("%d rows: %v", len(rows), rows[:2])
	}
	if got := strings.Join(rows[len(rows)-1], ","); !strings.HasPrefix(got, "write-bw,RC,65536,bw,Gbit/s,2,node2 mlx5_0,1,node1 mlx5_0,96.0") ||
		!strings.HasSuffix(got, ",compared") {
		t.Errorf("last row %s", got)
	}
	for _, f := range []string{FormatMarkdown} {
		out.Reset()
		if err := WriteMeshComparison(&out, f, c, g); err != nil || !strings.Contains(out.String(), "gate failed: 0 -&gt; 1") {
			t.Errorf("%s: %v\n%s", f, err, out.String())
		}
	}
	if err := WriteMeshComparison(&out, FormatGobench, c, g); err == nil {
		t.Error("gobench accepted")
	}

	single := report.NewDocument()
	if _, err := compare.CompareMesh(reporttest.CmpMesh{N: 2}.Doc(), single, compare.MeshOptions{BaseName: "a.json", NewName: "b.json"}); err == nil ||
		!strings.Contains(err.Error(), "BASE a.json is a mesh document (rdmabench mesh) but NEW b.json is a single run's document") {
		t.Errorf("mixed kinds: %v", err)
	}
}

// TestCompareMeshMovedRanks: a re-run that put the ranks on other hosts
// is matched by host and device, and the ranks that moved are listed;
// when host names do not identify every rank, by rank, saying so.
func TestCompareMeshMovedRanks(t *testing.T) {
	// base: rank r on node<r>; new: rank r on node<3-r>, the same links
	// between the same hosts, the link node1 -> node2 twice as slow.
	hostLat := func(fh, th int) float64 { return 1000 + float64(fh*10+th) }
	base := reporttest.CmpMesh{N: 4, Lat: hostLat}.Doc()
	new := reporttest.CmpMesh{N: 4, Host: func(r int) (string, string) { return fmt.Sprintf("node%d", 3-r), "mlx5_0" },
		Lat: func(from, to int) float64 {
			v := hostLat(3-from, 3-to)
			if 3-from == 1 && 3-to == 2 {
				v *= 2
			}
			return v
		}}.Doc()
	c := mustCompareMesh(t, base, new, 1)
	if c.MatchedBy != compare.MatchByHost || len(c.Ranks) != 4 {
		t.Fatalf("matched by %s: %v", c.MatchedBy, c.Ranks)
	}
	if s := c.Ranks[0].String(); s != "rank 0 (node3 mlx5_0) was rank 3 in base" {
		t.Errorf("rank 0: %q", s)
	}
	p50 := matrixOf(t, c, "write-lat", report.FigP50)
	top := p50.Top[0]
	if p50.Links != 12 || top.From != 2 || top.To != 1 || *top.BaseFrom != 1 || *top.BaseTo != 2 || *top.Change < 0.99 {
		t.Errorf("p50 %+v, top %+v", p50, top)
	}
	g := c.CheckGates(compare.Gates{compare.MaxRegressionGate("--max-p50-regression 10%", 0.1, report.FigP50)})
	if len(g.Failures) != 1 || !strings.HasPrefix(g.Failures[0].Message, "2 -> 1 (node1 mlx5_0 -> node2 mlx5_0) write-lat") {
		t.Errorf("gates: %+v", g.Failures)
	}

	// Two ranks per host and no device: host names do not identify a
	// rank; matched by rank, and the output says which hosts differ.
	twoPer := func(shift int) func(int) (string, string) {
		return func(r int) (string, string) { return fmt.Sprintf("node%d", (r/2+shift)%2), "" }
	}
	c = mustCompareMesh(t, reporttest.CmpMesh{N: 4, Host: twoPer(0)}.Doc(), reporttest.CmpMesh{N: 4, Host: twoPer(1)}.Doc(), 0)
	if c.MatchedBy != compare.MatchByRank || len(c.Ranks) != 4 || c.Ranks[0].String() != "rank 0 is on node1, was on node0 in base" {
		t.Errorf("matched by %s: %v", c.MatchedBy, c.Ranks)
	}
	var out bytes.Buffer
	if err := WriteMeshComparison(&out, FormatTable, c, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "matched by rank; the host of 4 ranks differs") {
		t.Errorf("table:\n%s", out.String())
	}
}

// TestCompareMeshSlowLink: one link twice as slow is the most changed link
// of its matrix and, with one value per side, fails a 10% p50 gate on its
// own; the other figures and links pass.
func TestCompareMeshSlowLink(t *testing.T) {
	base := reporttest.CmpMesh{N: 4}.Doc()
	new := reporttest.CmpMesh{N: 4, Lat: func(from, to int) float64 {
		ns := 1000 + float64((from*4+to)%5)*10
		if from == 1 && to == 2 {
			ns *= 2
		}
		return ns
	}}.Doc()
	c := mustCompareMesh(t, base, new, 3)
	if c.MatchedBy != compare.MatchByRank || len(c.Ranks) != 0 || len(c.Matrices) != 3 {
		t.Fatalf("matched by %s, ranks %v, %d matrices", c.MatchedBy, c.Ranks, len(c.Matrices))
	}
	p50 := matrixOf(t, c, "write-lat", report.FigP50)
	if p50.Links != 12 || p50.OnlyBase != 0 || p50.OnlyNew != 0 || len(p50.Top) != 1 {
		t.Fatalf("p50: %+v", p50)
	}
	if top := p50.Top[0]; top.From != 1 || top.To != 2 || top.Change == nil || *top.Change < 0.99 || *top.Change > 1.01 ||
		top.FromHost != "node1 mlx5_0" {
		t.Errorf("most changed: %+v", top)
	}
	if p50.Change == nil || *p50.Change < 0 || *p50.Change > 0.01 {
		t.Errorf("the median moved: %v", p50.Change)
	}

	g := c.CheckGates(compare.Gates{compare.MaxRegressionGate("--max-p50-regression 10%", 0.1, report.FigP50),
		compare.MaxRegressionGate("--max-bw-regression 5%", 0.05, report.FigGbps)})
	if !g.Failed() || len(g.Failures) != 1 {
		t.Fatalf("gates: %+v", g)
	}
	f := g.Failures[0]
	want := "1 -> 2 (node1 mlx5_0 -> node2 mlx5_0) write-lat RC 2 B: p50 +100.00% > 10% (--max-p50-regression 10%)"
	if f.From != 1 || f.To != 2 || f.Message != want {
		t.Errorf("failure %+v, want message %q", f, want)
	}
	if g := c.CheckGates(compare.Gates{compare.MaxRegressionGate("--max-p50-regression 150%", 1.5, report.FigP50)}); g.Failed() {
		t.Errorf("a 150%% gate failed on +100%%: %+v", g)
	}

	var out bytes.Buffer
	if err := WriteMeshComparison(&out, FormatTable, c, g); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"matched by rank\n", "no significance test", "write-lat RC 2 B p50 µs: most changed links, either way (1 of 12)",
		"1 -> 2  node1 mlx5_0 -> node2 mlx5_0", "+100.00%", "gates: --max-p50-regression 10%, --max-bw-regression 5%: 1 failed",
		"gate failed: " + want} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, out.String())
		}
	}
}
