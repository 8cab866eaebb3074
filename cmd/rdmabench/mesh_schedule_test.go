package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/schema"
)

// The schedule flags are refused by name where they conflict, before any
// rank starts.
func TestMeshScheduleFlags(t *testing.T) {
	pairs := filepath.Join(t.TempDir(), "pairs.txt")
	if err := os.WriteFile(pairs, []byte("0 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"mesh", "--rank", "0", "--ranks", "4", "--coordinator", "127.0.0.1:1", "tcp-lat"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--pairs", pairs, "--sample", "2"}, "--pairs and --sample are exclusive: the file gives the links"},
		{[]string{"--pairs", pairs, "--rails"}, "--pairs and --rails are exclusive"},
		{[]string{"--pairs", pairs, "--seed", "3"}, "--pairs and --seed are exclusive"},
		{[]string{"--seed", "3"}, "--seed applies to --sample only"},
		{[]string{"--rails", "--seed", "3"}, "--seed applies to --sample only"},
		{[]string{"--sample", "0"}, "--sample 0: K is a number of rounds, at least 1"},
		{[]string{"--sample", "-2"}, "--sample -2: K is a number of rounds"},
		{[]string{"--sample", "4"}, "--sample 4: 4 ranks have at most 3 peers each; without --sample every pair is measured"},
		{[]string{"--rails", "--sample", "9"}, "--sample 9: 4 ranks have at most 3 peers each"},
		{[]string{"--sample", "x"}, `invalid argument "x" for "--sample"`},
		{[]string{"--sample", "2", "--seed", "-1"}, `invalid argument "-1" for "--seed"`},
		{[]string{"--duplex", "read-lat"}, "--duplex: read-lat times one rank's operations to their completion, not a ping-pong"},
		{[]string{"--duplex", "atomic-lat"}, "--duplex: atomic-lat times one rank's operations"},
		{[]string{"--duplex", "--reverse", "tcp-bw"}, "mesh: --duplex and --reverse are exclusive"},
		{[]string{"--host-level", "--rails"}, "mesh: --host-level and --rails are exclusive"},
		{[]string{"--host-level"}, "mesh: --host-level measures every device of a host at once: list them with -d"},
		{[]string{"--blame-max-spread", "1%"}, "mesh: --blame-max-spread 1%: want at least the least spread, 2%"},
		{[]string{"--blame-min-spread", "50%", "--blame-max-spread", "20%"}, "--blame-max-spread 20%: want at least the least spread, 50%"},
		{[]string{"--blame=false", "--blame-max-spread", "100%"}, "mesh: --blame-max-spread applies to --blame, which --blame=false turns off"},
		{[]string{"--blame-multiplier", "0"}, "mesh: --blame-multiplier 0: want a number above 0"},
	} {
		args := append(append([]string{}, base...), c.args...)
		_, stderr, code := cli(t, args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %q; want exit %d and %q", c.args, code, stderr, exitUsage, c.want)
		}
	}
	// Rank 1 refuses the same.
	_, stderr, code := cli(t, "mesh", "--rank", "1", "--ranks", "4", "--coordinator", "127.0.0.1:1", "--seed", "1")
	if code != exitUsage || !strings.Contains(stderr, "--seed applies to --sample only") {
		t.Errorf("rank 1: exit %d, %q", code, stderr)
	}
}

// meshCLI runs every rank of an n-rank mesh through the command line, in
// this process, and returns rank 0's output and every rank's exit status.
//
// Blame is off: these meshes test schedules, and on a busy host a slow
// moment would be judged (exit 3).
func meshCLI(t *testing.T, n int, args ...string) (string, string, []int) {
	t.Helper()
	coord := "127.0.0.1:" + strconv.Itoa(testutil.FixedPort(t))
	codes := make([]int, n)
	var stdout, stderr string
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := append([]string{"mesh", "--rank", fmt.Sprint(r), "--ranks", fmt.Sprint(n), "--coordinator", coord,
				"--listen", "127.0.0.1:0", "--register-timeout", "20s", "--blame=false", "tcp-lat", "-n", "20"}, args...)
			out, errs, code := cli(t, a...)
			codes[r] = code
			if r == 0 {
				stdout, stderr = out, errs
			}
		}()
	}
	wg.Wait()
	return stdout, stderr, codes
}

// --sample K with a seed: K rounds, the document records both.
func TestMeshSampleCLI(t *testing.T) {
	out, stderr, codes := meshCLI(t, 5, "--sample", "2", "--seed", "77", "-o", "json")
	if fmt.Sprint(codes) != "[0 0 0 0 0]" {
		t.Fatalf("exit %v: %s", codes, stderr)
	}
	var doc report.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate([]byte(out)); err != nil {
		t.Errorf("the document does not follow the schema: %v", err)
	}
	m := doc.Mesh
	// Five ranks: two pairs a round, one rank resting; both directions.
	if m.Schedule != "sample" || m.Rounds != 2 || m.Sample == nil || *m.Sample != (report.MeshSample{Rounds: 2, Seed: 77}) ||
		len(m.Links) != 8 {
		t.Errorf("schedule %q, %d rounds, sample %+v, %d links", m.Schedule, m.Rounds, m.Sample, len(m.Links))
	}
}

// --rails needs each rank's local rank: ranks started by hand on one host
// all have local rank 0, and rank 0 says so.
func TestMeshRailsCLI(t *testing.T) {
	_, stderr, codes := meshCLI(t, 2, "--rails")
	if fmt.Sprint(codes) != "[1 0]" || !strings.Contains(stderr, "--rails: ranks 0 and 1 both run on ") ||
		!strings.Contains(stderr, "with local rank 0: rails need one rank per NIC") {
		t.Errorf("exit %v, stderr %q", codes, stderr)
	}
}

// --duplex over the TCP tests: each pair once, half the links of a mesh
// one direction at a time, every cell of every matrix filled (the
// ping-pong's in both cells of its pair, each direction of the
// bidirectional stream in its own); the link stream reads back the same.
func TestMeshDuplexCLI(t *testing.T) {
	out := filepath.Join(t.TempDir(), "fabric.json")
	stdout, stderr, codes := meshCLI(t, 4, "--duplex", "tcp-bw", "-o", "json", "--out", out)
	if fmt.Sprint(codes) != "[0 0 0 0]" {
		t.Fatalf("exit %v: %s", codes, stderr)
	}
	if err := schema.Validate([]byte(stdout)); err != nil {
		t.Errorf("the document does not follow the schema: %v", err)
	}
	back, _, code := cli(t, "report", strings.TrimSuffix(out, ".json")+".links.ndjson", "-o", "json")
	if code != 0 {
		t.Fatalf("report of the link stream: exit %d", code)
	}
	page := filepath.Join(t.TempDir(), "fabric.html")
	if _, errs, code := cli(t, "plot", out, "-o", page); code != 0 {
		t.Fatalf("plot: exit %d: %s", code, errs)
	}
	if html, err := os.ReadFile(page); err != nil || !strings.Contains(string(html), "both directions sending at once") ||
		!strings.Contains(string(html), "each pair&#39;s ping-pong") {
		t.Errorf("the page does not say what the cells hold (%v)", err)
	}
	for name, js := range map[string]string{"rank 0's": stdout, "the stream's": back} {
		var doc report.Document
		if err := json.Unmarshal([]byte(js), &doc); err != nil {
			t.Fatal(err)
		}
		m := doc.Mesh
		if !m.Duplex || m.Rounds != 3 || len(m.Links) != 6 || len(m.Matrices) != 3 {
			t.Fatalf("%s: duplex %v, %d rounds, %d links, %d matrices", name, m.Duplex, m.Rounds, len(m.Links), len(m.Matrices))
		}
		for _, mx := range m.Matrices {
			if (mx.Duplex == report.DuplexPingPong) != mx.Figure.IsLatency() || mx.Duplex == "" {
				t.Errorf("%s: %s %s: duplex %q", name, mx.Key(), mx.Figure, mx.Duplex)
			}
			for i, row := range mx.Values {
				for j, v := range row {
					if (v == nil) != (i == j) {
						t.Errorf("%s: %s %s: cell %d -> %d is %v", name, mx.Key(), mx.Figure, i, j, v)
					}
					if v != nil && mx.Figure.IsLatency() && (mx.Values[j][i] == nil || *mx.Values[j][i] != *v) {
						t.Errorf("%s: %s %s: the ping-pong %d <-> %d differs by direction", name, mx.Key(), mx.Figure, i, j)
					}
				}
			}
		}
	}
}
