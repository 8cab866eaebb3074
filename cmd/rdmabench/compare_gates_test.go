package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// The documents of the gate cases, built from runsDoc: write-lat RC 2 B
// and write-bw RC 65536 B, 5 runs unless said.

// withP50 sets the p50 of each run of write-lat, µs.
func withP50(doc *report.Document, p50 ...float64) *report.Document {
	i := 0
	for j := range doc.Results {
		if r := &doc.Results[j]; r.Test == "write-lat" {
			r.Latency.P50Ns = p50[i] * 1e3
			i++
		}
	}
	return doc
}

// failing makes every run of test fail with err, as a run that went on
// records it (the run's own error is its first failed test's).
func failing(doc *report.Document, test, err string) *report.Document {
	for j := range doc.Results {
		if r := &doc.Results[j]; r.Test == test {
			*r = report.Result{Test: r.Test, Connection: r.Connection, Size: r.Size, Run: r.Run, Error: err}
		}
	}
	if doc.Error == "" {
		doc.Error = err
	}
	doc.Summaries = nil
	return doc
}

// without drops test from doc.
func without(doc *report.Document, test string) *report.Document {
	doc.Results = slices.DeleteFunc(doc.Results, func(r report.Result) bool { return r.Test == test })
	doc.Summaries = nil
	return doc
}

// plus adds a read-lat result to each run of doc.
func plus(doc *report.Document) *report.Document {
	n := len(doc.Results)
	for j := range n {
		if r := doc.Results[j]; r.Test == "write-lat" {
			r.Test = "read-lat"
			doc.Results = append(doc.Results, r)
		}
	}
	return doc
}

// gateCase is a row of the table of docs/ci-gates.md: what NEW is
// against BASE, the command's arguments after the two files, its exit
// status and what its output says.
type gateCase struct {
	name      string
	base, new func() *report.Document
	args      []string
	code      int
	stdout    []string // each in stdout
	notStdout []string // none in stdout
}

var (
	fiveBase = func() *report.Document { return runsDoc("mlx5_0", baseP99, baseGbps) }
	oneBase  = func() *report.Document { return withP50(runsDoc("mlx5_0", baseP99[:1], baseGbps[:1]), 16.28) }
	oneNew   = func() *report.Document { return withP50(runsDoc("mlx5_0", baseP99[:1], baseGbps[:1]), 79.68) }
	meshBase = func() *report.Document { return meshDoc(4, nil, nil) }
)

var gateCases = []gateCase{
	{name: "regression", base: fiveBase, new: func() *report.Document { return runsDoc("mlx5_0", regressP99, baseGbps) },
		args: []string{"--max-regression", "5%"}, code: exitGate,
		stdout: []string{"gates: --max-regression 5%: 1 failed", "gate failed: write-lat RC 2 B: p99 +50.38% > 5% (--max-regression 5%)\n"}},
	{name: "within", base: fiveBase, new: func() *report.Document { return runsDoc("mlx5_0", regressP99, baseGbps) },
		args: []string{"--max-p99-regression", "60%"}, code: 0, stdout: []string{"gates: --max-p99-regression 60%: passed"}},
	{name: "noise", base: func() *report.Document { return runsDoc("mlx5_0", []float64{1.0, 2.0, 1.0, 2.0, 1.5}, baseGbps) },
		new:  func() *report.Document { return runsDoc("mlx5_0", []float64{1.1, 2.1, 0.9, 2.0, 1.7}, noiseGbps) },
		args: []string{"--max-p99-regression", "5%"}, code: 0,
		stdout: []string{"gates: --max-p99-regression 5%: passed",
			"gate not failed: write-lat RC 2 B: p99 +13.33% > 5% (--max-p99-regression 5%): not significant (p=0.817 n=5 > alpha 0.05)"}},
	{name: "too-few-runs", base: oneBase, new: oneNew, args: []string{"--max-regression", "5%"}, code: exitGate,
		stdout: []string{"p50 µs", "+389.43% ~  n=1 untested",
			"gate failed: write-lat RC 2 B: p50 +389.43% > 5% (--max-regression 5%): too few runs to test its significance (n=1; need at least 4 on each side): judged on the change alone"}},
	{name: "too-few-runs-required", base: oneBase, new: oneNew, args: []string{"--max-regression", "5%", "--require-significance"}, code: 0,
		stdout: []string{"gates: --max-regression 5%: passed",
			"gate not failed: write-lat RC 2 B: p50 +389.43% > 5% (--max-regression 5%): not significant, too few runs (n=1; need at least 4 on each side)"}},
	{name: "failed-test", base: fiveBase,
		new: func() *report.Document {
			return failing(runsDoc("mlx5_0", baseP99[:1], baseGbps[:1]), "write-lat", "write-lat: no RDMA device found")
		},
		args: []string{"--max-regression", "5%"}, code: exitGate,
		stdout: []string{"warning: new: 1 of 2 tests failed: write-lat RC 2 B\n",
			"gate failed: write-lat RC 2 B: the test failed in new: write-lat: no RDMA device found\n"},
		notStdout: []string{"stopped early"}},
	{name: "missing-test", base: fiveBase, new: func() *report.Document { return without(runsDoc("mlx5_0", noiseP99, noiseGbps), "write-bw") },
		args: []string{"--max-regression", "5%"}, code: exitGate,
		stdout: []string{"only in base: write-bw RC 65536 B", "gate failed: write-bw RC 65536 B: in base, missing in new\n"}},
	{name: "stopped", base: fiveBase,
		new: func() *report.Document {
			d := runsDoc("mlx5_0", noiseP99, noiseGbps)
			d.Error = "interrupted (SIGINT)"
			return d
		},
		args: []string{"--max-regression", "5%"}, code: exitGate,
		stdout: []string{"warning: the new run stopped early: interrupted (SIGINT)", "gate failed: the new run stopped early: interrupted (SIGINT)\n"}},
	{name: "nothing-in-common", base: func() *report.Document { return without(fiveBase(), "write-bw") },
		new:  func() *report.Document { return without(runsDoc("mlx5_0", noiseP99, noiseGbps), "write-lat") },
		args: []string{"--max-regression", "5%"}, code: exitGate,
		stdout: []string{"no test and size in common", "gates: --max-regression 5%: 2 failed",
			"gate failed: write-lat RC 2 B: in base, missing in new\n", "gate failed: nothing compared: no test and size in common\n"}},
	{name: "nothing-for-gate", base: func() *report.Document { return without(fiveBase(), "write-bw") },
		new:  func() *report.Document { return without(runsDoc("mlx5_0", noiseP99, noiseGbps), "write-bw") },
		args: []string{"--max-bw-regression", "5%"}, code: exitGate,
		stdout: []string{"gate failed: --max-bw-regression 5%: nothing compared: no bw measured on both sides\n"}},
	{name: "failed-in-base", base: func() *report.Document { return failing(fiveBase(), "write-bw", "IBV_WC_RETRY_EXC_ERR") },
		new: func() *report.Document { return runsDoc("mlx5_0", noiseP99, noiseGbps) }, args: []string{"--max-regression", "5%"}, code: 0,
		stdout: []string{"warning: base: 1 of 2 tests failed: write-bw RC 65536 B (5 of 5 runs)", "gates: --max-regression 5%: passed"}},
	{name: "new-test", base: fiveBase, new: func() *report.Document { return plus(runsDoc("mlx5_0", noiseP99, noiseGbps)) },
		args: []string{"--max-regression", "5%"}, code: 0, stdout: []string{"only in new: read-lat RC 2 B", "gates: --max-regression 5%: passed"}},
	{name: "limit", base: fiveBase, new: func() *report.Document { return runsDoc("mlx5_0", noiseP99, noiseGbps) },
		args: []string{"--limit-bw", "99Gbps"}, code: exitGate, stdout: []string{"limit failed (new): write-bw RC 65536 B: bandwidth 98.50 Gbit/s (median of 5 runs) < limit 99 Gbit/s"}},
	{name: "no-gates", base: fiveBase,
		new: func() *report.Document {
			return failing(runsDoc("mlx5_0", regressP99[:1], baseGbps[:1]), "write-lat", "write-lat: no RDMA device found")
		},
		code: 0, stdout: []string{"warning: new: 1 of 2 tests failed: write-lat RC 2 B"}, notStdout: []string{"gates:"}},
	{name: "mesh-regression", base: meshBase,
		new: func() *report.Document {
			return meshDoc(4, func(from, to int) float64 {
				if from == 1 && to == 2 {
					return 2
				}
				return 1
			}, nil)
		},
		args: []string{"--max-p50-regression", "10%"}, code: exitGate,
		stdout: []string{"gate failed: 1 -> 2 (node1 mlx5_0 -> node2 mlx5_0) write-lat RC 2 B: p50 +100.00% > 10% (--max-p50-regression 10%)"}},
	{name: "mesh-missing-matrix", base: meshBase,
		new: func() *report.Document {
			d := meshDoc(4, nil, nil)
			d.Mesh.Matrices = slices.DeleteFunc(d.Mesh.Matrices, func(m report.Matrix) bool { return m.Test == "write-bw" })
			return d
		},
		args: []string{"--max-regression", "10%"}, code: exitGate, stdout: []string{"gate failed: write-bw RC 65536 B bw: in base, missing in new\n"}},
	{name: "mesh-nothing-in-common", base: meshBase,
		new: func() *report.Document {
			d := meshDoc(4, nil, nil)
			for i := range d.Mesh.Matrices {
				d.Mesh.Matrices[i].Size *= 2
			}
			return d
		},
		args: []string{"--max-regression", "10%"}, code: exitGate,
		stdout: []string{"gate failed: nothing compared: no matrix (test, size and figure) in common\n"}},
	{name: "mesh-link-failed", base: meshBase, new: func() *report.Document {
		return meshDoc(4, nil, func(from, to int) bool { return from == 2 && to == 0 })
	},
		args: []string{"--max-regression", "10%"}, code: exitError, stdout: []string{"link failed (new): 2 -> 0"}},
}

// TestCompareGateCases: each row of the table of docs/ci-gates.md, run as
// the command: its exit status and what it says, on stdout and, for a
// gate that failed, on stderr too (stdout and stderr apart, as a CI log
// that keeps stderr alone has it).
func TestCompareGateCases(t *testing.T) {
	for _, tc := range gateCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			base, new := writeDoc(t, dir, "base.json", tc.base()), writeDoc(t, dir, "new.json", tc.new())
			out, stderr, code := cli(t, append([]string{"compare", base, new}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out, stderr)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.notStdout {
				if strings.Contains(out, w) {
					t.Errorf("stdout has %q:\n%s", w, out)
				}
			}
			if code == 0 {
				if stderr != "" {
					t.Errorf("stderr %q", stderr)
				}
				return
			}
			// stderr counts the failed checks and lists each one the
			// output lists.
			if !strings.HasPrefix(stderr, "rdmabench: compare: ") {
				t.Errorf("stderr %q", stderr)
			}
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "gate failed: ") || strings.HasPrefix(l, "limit failed (new): ") || strings.HasPrefix(l, "link failed (new): ") {
					if !strings.Contains(stderr, "\n"+l+"\n") {
						t.Errorf("stderr lacks %q:\n%s", l, stderr)
					}
				}
			}
		})
	}
}

// TestCompareGateCasesDocumented: the table of docs/ci-gates.md has a row
// per gate case, each with the exit status its test expects, and no other.
func TestCompareGateCasesDocumented(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "docs", "ci-gates.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `([a-z-]+)` \\|.*\\| ([0-9]) \\|")
	documented := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := row.FindStringSubmatch(sc.Text()); m != nil {
			documented[m[1]], _ = strconv.Atoi(m[2])
		}
	}
	for _, tc := range gateCases {
		code, ok := documented[tc.name]
		switch {
		case !ok:
			t.Errorf("case %s: no row in docs/ci-gates.md", tc.name)
		case code != tc.code:
			t.Errorf("case %s: docs/ci-gates.md says exit %d, its test %d", tc.name, code, tc.code)
		}
		delete(documented, tc.name)
	}
	for name := range documented {
		t.Errorf("docs/ci-gates.md: row %s has no test in gateCases", name)
	}
}

// TestCompareGateStderr: where stdout and stderr are one place (a
// terminal, a pipe, a file), the failed checks are listed once, with the
// output; stderr counts them and says so.
func TestCompareGateStderr(t *testing.T) {
	dir := t.TempDir()
	base := writeDoc(t, dir, "base.json", fiveBase())
	bad := writeDoc(t, dir, "new.json", runsDoc("mlx5_0", regressP99, baseGbps))
	f, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = run(context.Background(), []string{"compare", base, bad, "--max-regression", "5%"}, f, f)
	if code := exitCode(err); code != exitGate {
		t.Fatalf("exit %d: %v", code, err)
	}
	if want := "compare: 1 gate check(s) failed (listed above)"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	log, _ := os.ReadFile(f.Name())
	if n := strings.Count(string(log), "gate failed: write-lat RC 2 B: p99 +50.38%"); n != 1 {
		t.Errorf("the failure is listed %d times:\n%s", n, log)
	}
}

// TestCompareRequireSignificanceRefused: --require-significance without a
// gate on changes, or on two meshes (no significance test), is refused.
func TestCompareRequireSignificanceRefused(t *testing.T) {
	dir := t.TempDir()
	base := writeDoc(t, dir, "base.json", fiveBase())
	mesh := writeDoc(t, dir, "mesh.json", meshBase())
	for _, args := range [][]string{
		{"compare", base, base, "--require-significance"},
		{"compare", base, base, "--limit-bw", "1Gbps", "--require-significance"},
		{"compare", mesh, mesh, "--max-regression", "5%", "--require-significance"},
	} {
		if _, stderr, code := cli(t, args...); code != exitUsage || !strings.Contains(stderr, "--require-significance") {
			t.Errorf("%q: exit %d, %q", args, code, stderr)
		}
	}
}

// TestCompareNamesDifferences: what differs in what ran is named, the
// cores the server was pinned to (--server-cpu) among them, with the
// effective pinning of each row, and a failed test is not a run that
// stopped.
func TestCompareNamesDifferences(t *testing.T) {
	dir := t.TempDir()
	pinned := func(core int, host string) *report.Document {
		d := runsDoc("mlx5_0", noiseP99, noiseGbps)
		d.Hosts.Local.Hostname = host
		d.Params.ServerCPUs = []int{core}
		for i := range d.Results {
			d.Results[i].Clock = "tsc"
			d.Results[i].Placement = &report.Placement{Server: &report.EndPlacement{Policy: report.PlaceCPUList, CPUs: []int{core}, Used: []int{core}}}
		}
		return d
	}
	b, n := pinned(1, "node1"), pinned(0, "node2")
	n.Tool.GoVersion = "go1.26.9"
	n.Params.Mem = "hugepages"
	for i := range n.Results {
		n.Results[i].Clock = "monotonic"
	}
	out, stderr, code := cli(t, "compare", writeDoc(t, dir, "base.json", b), writeDoc(t, dir, "new.json", n))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{
		"warning: Go version differs: base (none), new go1.26.9\n" +
			"warning: host name differs: base node1, new node2\n" +
			"warning: parameter server-cpu differs: base 1, new 0\n" +
			"warning: parameter mem differs: base default, new hugepages\n",
		"write-lat RC 2 B: ran with different settings: clock base tsc, new monotonic; server pinning base cores 1, new cores 0",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, out)
		}
	}
}
