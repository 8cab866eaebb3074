package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report/schema"
)

// The crafted documents of the compare tests: 5 runs each unless said.
var (
	baseP99    = []float64{1.31, 1.30, 1.33, 1.32, 1.31}
	baseGbps   = []float64{98.5, 98.4, 98.6, 98.5, 98.3}
	regressP99 = []float64{1.97, 1.95, 1.99, 1.96, 1.98} // +50%
	noiseP99   = []float64{1.32, 1.31, 1.30, 1.33, 1.31}
	noiseGbps  = []float64{98.4, 98.6, 98.5, 98.3, 98.5}
)

func compareFiles(t *testing.T) (dir string, file func(name string, dev string, p99, gbps []float64) string) {
	dir = t.TempDir()
	return dir, func(name, dev string, p99, gbps []float64) string {
		return writeDoc(t, dir, name, runsDoc(dev, p99, gbps))
	}
}

// TestCompareRegression: a clear regression fails a 5% gate with exit
// status 3 and the failing rows; without a gate, or with one it stays
// within, the exit status is 0.
func TestCompareRegression(t *testing.T) {
	_, file := compareFiles(t)
	base := file("base.json", "mlx5_0", baseP99, baseGbps)
	bad := file("new.json", "mlx5_0", regressP99, baseGbps)

	out, stderr, code := cli(t, "compare", base, bad, "--max-regression", "5%")
	if code != exitGate {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitGate, out, stderr)
	}
	for _, w := range []string{"p99 µs", "+50.38%", "p=0.008 n=5", "gates: --max-regression 5%: 1 failed",
		"gate failed: write-lat RC 2 B: p99 +50.38% > 5% (--max-regression 5%)"} {
		if !strings.Contains(out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, out)
		}
	}
	if want := "rdmabench: compare: 1 gate check(s) failed\ngate failed: write-lat RC 2 B: p99 +50.38% > 5% (--max-regression 5%)\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}

	for _, tc := range []struct {
		args []string
		code int
	}{
		{nil, 0},
		{[]string{"--max-p99-regression", "60%"}, 0},
		{[]string{"--max-p50-regression", "1%", "--max-bw-regression", "1%", "--min-bw-ratio", "0.95"}, 0},
		{[]string{"--max-p99-regression", "10%"}, exitGate},
		{[]string{"--max-regression", "5%", "-o", "markdown"}, exitGate},
		{[]string{"--max-regression", "5%", "-o", "json"}, exitGate},
	} {
		out, stderr, code := cli(t, append([]string{"compare", base, bad}, tc.args...)...)
		if code != tc.code {
			t.Errorf("compare %v: exit %d, want %d\n%s", tc.args, code, tc.code, stderr)
		}
		if strings.Contains(strings.Join(tc.args, " "), "json") {
			var v struct {
				Gates struct {
					Failures []struct {
						Message string `json:"message"`
					} `json:"failures"`
				} `json:"gates"`
			}
			if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Gates.Failures) != 1 {
				t.Errorf("compare -o json: %v %+v", err, v)
			}
			if err := schema.ValidateCompare([]byte(out)); err != nil {
				t.Errorf("compare -o json: %v", err)
			}
		}
	}

	// Bandwidth down 10%: the bandwidth gates.
	slow := file("slow.json", "mlx5_0", baseP99, []float64{88.6, 88.7, 88.5, 88.6, 88.4})
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--min-bw-ratio", "0.95"}, exitGate, "gate failed: write-bw RC 65536 B: bw ratio 0.899 < 0.95 (--min-bw-ratio 0.95)"},
		{[]string{"--min-bw-ratio", "85%"}, 0, "gates: --min-bw-ratio 0.85: passed"},
		{[]string{"--max-bw-regression", "5%"}, exitGate, "gate failed: write-bw RC 65536 B: bw -10.05% < -5% (--max-bw-regression 5%)"},
		{[]string{"--max-p99-regression", "5%"}, 0, "gates: --max-p99-regression 5%: passed"},
	} {
		out, _, code := cli(t, append([]string{"compare", base, slow}, tc.args...)...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("compare %v: exit %d (want %d), lacks %q:\n%s", tc.args, code, tc.code, tc.want, out)
		}
	}
}

// TestCompareNoise: overlapping distributions: "~" everywhere, exit 0
// with a 5% gate.
func TestCompareNoise(t *testing.T) {
	_, file := compareFiles(t)
	out, stderr, code := cli(t, "compare", file("base.json", "mlx5_0", baseP99, baseGbps), file("new.json", "mlx5_0", noiseP99, noiseGbps),
		"--max-regression", "5%")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	lines := 0
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 4 && (f[0] == "write-lat" || f[0] == "write-bw" || f[0] == "p99" || f[0] == "msg") {
			lines++
			if !strings.Contains(l, " ~ ") {
				t.Errorf("row without ~: %q", l)
			}
		}
	}
	if lines != 4 || !strings.Contains(out, "gates: --max-regression 5%: passed") {
		t.Errorf("%d rows:\n%s", lines, out)
	}
}

// TestCompareTooFewRuns: one run each: the +50% p99 is not tested, a
// footnote says why, and the gate judges the change alone: it fails,
// saying so; with --require-significance it does not (the output says
// so).
func TestCompareTooFewRuns(t *testing.T) {
	_, file := compareFiles(t)
	base, new := file("base.json", "mlx5_0", baseP99[:1], baseGbps[:1]), file("new.json", "mlx5_0", regressP99[:1], baseGbps[:1])
	out, stderr, code := cli(t, "compare", base, new, "--max-regression", "5%")
	if code != exitGate {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	for _, w := range []string{"need at least 4 runs on each side for a significance test", "+50.38% ~  n=1 untested",
		"gate failed: write-lat RC 2 B: p99 +50.38% > 5% (--max-regression 5%): too few runs to test its significance (n=1; need at least 4 on each side): judged on the change alone"} {
		if !strings.Contains(out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, out)
		}
	}
	out, stderr, code = cli(t, "compare", base, new, "--max-regression", "5%", "--require-significance")
	if code != 0 {
		t.Fatalf("--require-significance: exit %d: %s\n%s", code, stderr, out)
	}
	if w := "gate not failed: write-lat RC 2 B: p99 +50.38% > 5% (--max-regression 5%): not significant, too few runs (n=1; need at least 4 on each side)"; !strings.Contains(out, w) {
		t.Errorf("stdout lacks %q:\n%s", w, out)
	}
}

// TestCompareMismatchedDevices: differences of the environment are
// footnoted warnings, not failures.
func TestCompareMismatchedDevices(t *testing.T) {
	_, file := compareFiles(t)
	out, _, code := cli(t, "compare", file("base.json", "mlx5_0", baseP99, baseGbps), file("new.json", "rxe0", noiseP99, noiseGbps),
		"--max-regression", "5%", "-o", "markdown")
	if code != 0 || !strings.Contains(out, "- warning: device differs: base mlx5\\_0, new rxe0") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestCompareErrors(t *testing.T) {
	dir, file := compareFiles(t)
	base := file("base.json", "mlx5_0", baseP99, baseGbps)
	for _, args := range [][]string{
		{"compare", base},
		{"compare", base, base, base},
		{"compare", base, base, "--max-regression", "lots"},
		{"compare", base, base, "--max-regression", "-5%"},
		{"compare", base, base, "--min-bw-ratio", "0"},
		{"compare", base, base, "-o", "csv"},
		{"compare", base, base, "--alpha", "2"},
	} {
		if _, stderr, code := cli(t, args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d (%q)", args, code, exitUsage, stderr)
		}
	}
	missing := filepath.Join(dir, "missing.json")
	if _, stderr, code := cli(t, "compare", base, missing); code != exitError || !strings.Contains(stderr, missing) {
		t.Errorf("missing file: exit %d, %q", code, stderr)
	}
}
