package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/latency"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/compare"
	"github.com/rdmabench/rdmabench/pkg/report/schema"
)

// meshDoc is a mesh summary of n ranks (rank r on node<r>, mlx5_0), every
// link measured with write-lat (p50 1 µs, times slow(from, to)) and
// write-bw (96 Gbit/s), except the links failed says failed.
func meshDoc(n int, slow func(from, to int) float64, failed func(from, to int) bool) *report.Document {
	doc := report.NewDocument()
	doc.Tool = report.Tool{Name: "rdmabench", Version: "0.2.0"}
	doc.Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := &report.Mesh{Size: n, Coordinator: "node0:19514", Tests: []string{"write-lat", "write-bw"}, Rounds: n - 1, Schedule: "round-robin"}
	for r := range n {
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, State: report.RankOK,
			Host: &report.Host{Hostname: fmt.Sprintf("node%d", r), Device: &report.Device{Name: "mlx5_0", Port: 1}}})
	}
	b := report.NewMeshBuilder(m.Tests, report.Limits{}, 0)
	lats := map[float64]*report.Latency{} // a histogram per value: shared by the links of that value
	for from := range n {
		for to := range n {
			if from == to {
				continue
			}
			l := report.MeshLink{From: from, To: to, Round: 1}
			if failed != nil && failed(from, to) {
				l.Error = fmt.Sprintf("rank %d (node%d) was lost", to, to)
			} else {
				ns := 1000.0
				if slow != nil {
					ns *= slow(from, to)
				}
				if lats[ns] == nil {
					rec := latency.NewRecorder(report.BasisRTTHalf)
					for range 10 {
						rec.Record(uint64(2 * ns))
					}
					lats[ns] = rec.Snapshot()
				}
				l.Results = []report.Result{
					{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 10, Latency: lats[ns]},
					{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 1000,
						Bandwidth: report.NewBandwidth(1000*65536, 1000, time.Duration(1000*65536*8/96))},
				}
			}
			b.Add(&l)
		}
	}
	b.Fill(m)
	doc.Mesh = m
	return doc
}

// TestCompareMeshes: a link twice as slow is named and fails a 10% p50
// gate with exit status 3, though each side has one value for it; the
// same mesh twice passes; a link failed in NEW is an error (exit 1).
func TestCompareMeshes(t *testing.T) {
	dir := t.TempDir()
	base := writeDoc(t, dir, "base-mesh.json", meshDoc(4, nil, nil))
	again := writeDoc(t, dir, "again-mesh.json", meshDoc(4, nil, nil))
	slow := writeDoc(t, dir, "slow-mesh.json", meshDoc(4, func(from, to int) float64 {
		if from == 1 && to == 2 {
			return 2
		}
		return 1
	}, nil))
	failed := writeDoc(t, dir, "failed-mesh.json", meshDoc(4, nil, func(from, to int) bool { return from == 2 && to == 0 }))

	out, stderr, code := cli(t, "compare", base, slow, "--max-p50-regression", "10%")
	if code != exitGate {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitGate, out, stderr)
	}
	fail := "gate failed: 1 -> 2 (node1 mlx5_0 -> node2 mlx5_0) write-lat RC 2 B: p50 +100.00% > 10% (--max-p50-regression 10%)"
	for _, w := range []string{"matched by rank", "no significance test", "most changed links", fail,
		"gates: --max-p50-regression 10%: 1 failed"} {
		if !strings.Contains(out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, out)
		}
	}
	if want := "rdmabench: compare: 1 gate check(s) failed\n" + fail + "\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}

	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{base, again, "--max-regression", "1%", "--min-bw-ratio", "0.99"}, 0},
		{[]string{base, slow}, 0},
		{[]string{base, slow, "--max-p99-regression", "150%", "--max-bw-regression", "1%"}, 0},
		{[]string{base, slow, "--max-regression", "10%", "-o", "json"}, exitGate},
		{[]string{base, slow, "--max-regression", "10%", "-o", "markdown", "--top", "0"}, exitGate},
		{[]string{base, slow, "--limit-bw", "100Gbps"}, exitGate},
		{[]string{slow, base, "--max-p50-regression", "10%"}, 0}, // faster
		{[]string{base, failed}, exitError},
		{[]string{base, failed, "--max-p50-regression", "10%"}, exitError},
		{[]string{failed, base, "--max-p50-regression", "10%"}, 0}, // mended
	} {
		out, stderr, code := cli(t, append([]string{"compare"}, tc.args...)...)
		if code != tc.code {
			t.Errorf("compare %v: exit %d, want %d\n%s\n%s", tc.args, code, tc.code, out, stderr)
		}
		if tc.args[1] == failed && !strings.Contains(stderr, "link failed (new): 2 -> 0: rank 0 (node0) was lost") {
			t.Errorf("compare %v: stderr %q", tc.args, stderr)
		}
		if tc.args[0] == failed && !strings.Contains(out, "link failed (base): 2 -> 0") {
			t.Errorf("compare %v: stdout:\n%s", tc.args, out)
		}
	}

	out, _, code = cli(t, "compare", base, slow, "--max-regression", "10%", "-o", "json")
	var v struct {
		Schema string `json:"schema"`
		Gates  struct {
			Failures []struct {
				From, To int
			} `json:"failures"`
		} `json:"gates"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Schema != compare.MeshSchema || len(v.Gates.Failures) != 2 ||
		v.Gates.Failures[0].From != 1 || v.Gates.Failures[0].To != 2 {
		t.Errorf("-o json (exit %d): %v %+v", code, err, v)
	}
	if err := schema.ValidateCompareMesh([]byte(out)); err != nil {
		t.Errorf("-o json: %v", err)
	}
	out, _, code = cli(t, "compare", base, slow, "-o", "csv")
	if lines := strings.Count(out, "\n"); code != 0 || lines != 1+3*12 ||
		!strings.Contains(out, "write-lat,RC,2,p50,ns,1,node1 mlx5_0,2,node2 mlx5_0,1000,2000,1,compared\n") {
		t.Errorf("-o csv (exit %d, %d lines):\n%s", code, lines, out)
	}
}

// TestCompareMeshAgainstRun: a mesh document against a single run's, and
// the flags that apply to one kind only, are usage errors naming what is
// wrong.
func TestCompareMeshAgainstRun(t *testing.T) {
	dir := t.TempDir()
	mesh := writeDoc(t, dir, "mesh.json", meshDoc(3, nil, nil))
	run := writeDoc(t, dir, "run.json", runsDoc("mlx5_0", baseP99, baseGbps))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{mesh, run}, "BASE " + mesh + " is a mesh document (rdmabench mesh) but NEW " + run + " is a single run's document"},
		{[]string{run, mesh}, "BASE " + run + " is a single run's document but NEW " + mesh + " is a mesh document"},
		{[]string{mesh, mesh, "--alpha", "0.01"}, "--alpha does not apply to two mesh documents"},
		{[]string{run, run, "--top", "3"}, "--top applies to two mesh documents"},
		{[]string{run, run, "-o", "csv"}, "-o csv applies to two mesh documents"},
		{[]string{mesh, mesh, "--top", "-1"}, "--top -1"},
		{[]string{mesh, mesh, "-o", "gobench"}, "unknown output format"},
	} {
		_, stderr, code := cli(t, append([]string{"compare"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("compare %v: exit %d, stderr %q, want %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestCompareMesh256: two summaries of 256 ranks compare (the time is not
// asserted).
func TestCompareMesh256(t *testing.T) {
	dir := t.TempDir()
	base := writeDoc(t, dir, "base.json", meshDoc(256, nil, nil))
	slow := writeDoc(t, dir, "new.json", meshDoc(256, func(from, to int) float64 {
		if to == 17 {
			return 1.5
		}
		return 1
	}, nil))
	out, stderr, code := cli(t, "compare", base, slow, "--max-p50-regression", "10%")
	if code != exitGate || !strings.Contains(out, "65280") || strings.Count(stderr, "gate failed: ") != 100 ||
		!strings.Contains(stderr, "... and 155 more (-o json lists them all)") {
		t.Errorf("exit %d\n%s\n%s", code, out, stderr)
	}
}
