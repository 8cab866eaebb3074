package plot

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// checkGolden compares got with testdata/name, rewriting it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run `go test ./pkg/report/plot -update` to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("output differs from %s (rerun with -update if intended)\n--- got:\n%s\n--- want:\n%s", golden, got, want)
	}
}

// fixture reads a fixture document of pkg/report/testdata (or any path)
// as `rdmabench plot` would. Those documents are made by generators in
// pkg/report's tests: sweep.json and sweep-mtu1024.json a suite at five
// sizes with latency histograms, mesh.json a mesh of four ranks with one
// link lost and one four times slower than the others.
func fixture(t *testing.T, path string) report.Source {
	t.Helper()
	if filepath.Dir(path) == "." {
		path = filepath.Join("..", "testdata", path)
	}
	doc, err := report.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return report.Source{Name: filepath.Base(path), Doc: doc}
}

// bigMeshDoc is the matrices of a mesh of n ranks without the links'
// results (too large to keep as a file): bandwidth around 95 Gbit/s, the
// links of rank 7 as a client at half of it, and every link to rank 3
// failed.
func bigMeshDoc(n int) *report.Document {
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
