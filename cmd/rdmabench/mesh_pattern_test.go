package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// --pattern and its gates are refused, by name, where they cannot apply.
func TestMeshPatternFlags(t *testing.T) {
	base := []string{"mesh", "--rank", "0", "--ranks", "4", "--coordinator", "127.0.0.1:1"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--pattern", "ring", "tcp-bw"}, "--pattern ring: unknown pattern (want incast:K, all-to-all, all-to-all:G, bisection)"},
		{[]string{"--pattern", "incast:4", "tcp-bw"}, "--pattern incast:4: K is 1 to 3 with 4 ranks"},
		{[]string{"--pattern", "incast:0", "tcp-bw"}, "K is a number of ranks, at least 1"},
		{[]string{"--pattern", "all-to-all:3", "tcp-bw"}, "G is even below the mesh's 4 ranks"},
		{[]string{"--pattern", "bisection", "tcp-lat"}, "--pattern bisection runs one bandwidth test in its flows (write-bw, send-bw, read-bw, tcp-bw), not tcp-lat"},
		{[]string{"--pattern", "bisection", "tcp-bw", "write-bw"}, "runs one bandwidth test in its flows"},
		{[]string{"--pattern", "bisection", "--duplex", "tcp-bw"}, "--pattern bisection and --duplex are exclusive"},
		{[]string{"--pattern", "bisection", "--rails", "tcp-bw"}, "--pattern bisection and --rails are exclusive"},
		{[]string{"--pattern", "bisection", "--sample", "2", "tcp-bw"}, "--sample picks incast's receivers"},
		{[]string{"--pattern", "incast:2", "-n", "100", "tcp-bw"}, "--pattern incast:2 and --iters are exclusive"},
		{[]string{"--pattern", "incast:2", "-s", "64,4K", "tcp-bw"}, "--pattern incast:2 runs its flows at one message size for -D; -s gives 2"},
		{[]string{"--pattern", "incast:2", "-a", "tcp-bw"}, "at one message size"},
		{[]string{"--pattern", "incast:2", "--host-level", "-d", "a,b", "write-bw"}, "--pattern incast:2 and --host-level are exclusive"},
		{[]string{"--limit-fairness", "0.9", "tcp-bw"}, "they need --pattern"},
		{[]string{"--limit-load-p99", "1ms", "tcp-lat"}, "they need --pattern"},
		{[]string{"--pattern", "incast:2", "--limit-share", "2x", "tcp-bw"}, `invalid argument "2x" for "--limit-share"`},
	} {
		args := append(append([]string{}, base...), c.args...)
		_, stderr, code := cli(t, args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %q; want exit %d and %q", c.args, code, stderr, exitUsage, c.want)
		}
	}
}

// patternCLI runs every rank of an n-rank mesh through the command line,
// in this process, and returns rank 0's output and every rank's exit
// status.
func patternCLI(t *testing.T, n int, args ...string) (string, string, []int) {
	t.Helper()
	coord := "127.0.0.1:" + strconv.Itoa(testutil.FixedPort(t))
	codes := make([]int, n)
	var stdout, stderr string
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			a := append([]string{"mesh", "--rank", fmt.Sprint(r), "--ranks", fmt.Sprint(n), "--coordinator", coord,
				"--listen", "127.0.0.1:0", "--register-timeout", "20s", "tcp-bw", "-D", "200ms"}, args...)
			out, errs, code := cli(t, a...)
			codes[r] = code
			if r == 0 {
				stdout, stderr = out, errs
			}
		})
	}
	wg.Wait()
	return stdout, stderr, codes
}

// An incast of 3 into each of 5 ranks: the table's block per step; with
// gates no flow can meet, exit 3 naming the step and receiver; the
// summary and its link stream report the same steps.
func TestMeshPatternCLI(t *testing.T) {
	out := filepath.Join(t.TempDir(), "incast.json")
	stdout, stderr, codes := patternCLI(t, 5, "--pattern", "incast:3", "--seed", "9", "--sample", "2",
		"--limit-fairness", "1.01", "--limit-load-p99", "1ns", "--out", out)
	if fmt.Sprint(codes) != "[3 0 0 0 0]" {
		t.Fatalf("exit %v: %s", codes, stderr)
	}
	for _, want := range []string{"pattern  incast:3, tcp-bw flows for 200ms each step (2 steps), tcp-lat beside them, 2 receivers, seed 9",
		"receiver  flows", "under load: p50 "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the table has no %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "fairness gate failed: step 1, rank ") || !strings.Contains(stderr, "load-p99 gate failed: step 2, probe ") {
		t.Errorf("stderr %q", stderr)
	}
	for _, file := range []string{out, linksPath(out)} {
		rep, _, code := cli(t, "report", "-o", "json", file)
		var doc report.Document
		if err := json.Unmarshal([]byte(rep), &doc); err != nil || code != 0 {
			t.Fatalf("report %s: exit %d, %v", file, code, err)
		}
		m := doc.Mesh
		if len(m.Steps) != 2 || len(m.StepFailures) != 4 || m.Pattern.Seed != 9 {
			t.Errorf("%s: %d steps, %d step failures, pattern %+v", file, len(m.Steps), len(m.StepFailures), m.Pattern)
		}
		for _, st := range m.Steps {
			if len(st.Flows) != 3 || len(st.Receivers) != 1 || st.Receivers[0].AggregateGbps <= 0 || st.Probe == nil || st.Probe.Latency == nil {
				t.Errorf("%s: step %+v", file, st)
			}
		}
		// plot draws the steps, a dot per step and receiver; the CSV has
		// a row per flow and receiver figure.
		page, _, code := cli(t, "plot", file, "-o", "-")
		rows, _, code2 := cli(t, "report", "-o", "csv", file)
		if code != 0 || code2 != 0 {
			t.Fatalf("plot %s: exit %d; report -o csv: exit %d", file, code, code2)
		}
		for _, st := range m.Steps {
			if len(st.Receivers) == 0 {
				continue
			}
			rc := st.Receivers[0]
			for _, want := range []string{`data-kind="step-bandwidth"`, `data-kind="step-fairness"`, `data-kind="step-latency"`,
				fmt.Sprintf(`data-key="%d/rank %d"`, st.Step, *rc.Rank)} {
				if !strings.Contains(page, want) {
					t.Errorf("plot %s: no %s", file, want)
				}
			}
			want := fmt.Sprintf("%d,receiver,tcp-bw,,,%d,", st.Step, *rc.Rank)
			if n := strings.Count(rows, "\n"+want); n != 6 { // flows, measured, aggregate, Jain, min and max over the median
				t.Errorf("report -o csv %s: %d rows %q, want 6:\n%s", file, n, want, rows)
			}
		}
		if strings.Contains(page, "no matrix to draw") || strings.Count(rows, ",flow,tcp-bw,") != 6 {
			t.Errorf("%s: the plot says it has no matrix, or the CSV has not 6 flows:\n%s", file, rows)
		}
	}
}
