package main

import (
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// commandsRunningTests are the commands that run tests from the test
// flags, each with the arguments it needs to get as far as its flags:
// every test command, suite and mesh (as rank 0 of two, which refuses its
// flags before it listens).
func commandsRunningTests() [][]string {
	var cmds [][]string
	for _, t := range workloads.Tests {
		cmds = append(cmds, []string{t.Name})
	}
	return append(cmds, []string{"suite"}, []string{"mesh", "--rank", "0", "--ranks", "2"})
}

// Flags that say when each size ends, given together, are refused before
// anything runs: one of them would be ignored (-D 1 -n 100 ran 1 s and
// never said that -n was not used).
func TestSizeEndsOnce(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		says  string
	}{
		{[]string{"-D", "1", "-n", "100"}, "-n and -D both given: -D runs for a duration, -n a count; choose one"},
		{[]string{"-n", "100", "--precision", "2%"}, "-n and --precision both given: --precision runs until a figure is that precise, -n a count; choose one"},
		{[]string{"-D", "2", "--precision", "2%"}, "-D and --precision both given: -D runs for a duration, --precision until a figure is that precise; choose one"},
		{[]string{"--interval", "500ms"}, "--interval applies to -D (duration mode), which is not given"},
		{[]string{"-n", "10", "--interval", "500ms"}, "--interval applies to -D (duration mode), which is not given"},
	} {
		for _, cmd := range commandsRunningTests() {
			args := append(append([]string{}, cmd...), tc.flags...)
			stdout, stderr, code := cli(t, args...)
			if code != exitUsage || stderr != "rdmabench: "+tc.says+"\n" || stdout != "" {
				t.Errorf("%v: exit %d, stderr %q\nwant exit 2 and %q", args, code, stderr, tc.says)
			}
		}
	}
	// --precision-cap applies to --precision: the suite's and the mesh's
	// default, unless -n or -D turns it off.
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"write-lat", "--precision-cap", "2s"}, "--precision-cap applies to --precision, which is not given"},
		{[]string{"tcp-bw", "-D", "2", "--precision-cap", "2s"}, "--precision-cap applies to --precision, which is not given"},
		{[]string{"suite", "-n", "10", "--precision-cap", "2s"}, "--precision-cap applies to --precision, the default that -n turns off"},
		{[]string{"mesh", "--rank", "0", "--ranks", "2", "-D", "1", "--precision-cap", "2s"}, "--precision-cap applies to --precision, the default that -D turns off"},
	} {
		if _, stderr, code := cli(t, tc.args...); code != exitUsage || stderr != "rdmabench: "+tc.says+"\n" {
			t.Errorf("%v: exit %d, stderr %q\nwant exit 2 and %q", tc.args, code, stderr, tc.says)
		}
	}
	// The agent's probe is -n iterations: it has no -D.
	if _, stderr, code := cli(t, "agent", "--peers", "peers.txt", "-D", "1", "-n", "100"); code != exitUsage || !strings.Contains(stderr, "-D") {
		t.Errorf("agent -D: exit %d, %q", code, stderr)
	}
}

// A size range runs powers of two: one whose ends are not is refused,
// with what to write instead, by every command that takes sizes.
func TestSizeRangeEnds(t *testing.T) {
	want := "rdmabench: -s 3..100: a range runs powers of two, and 3 and 100 are not; write -s 4..64, or list sizes: -s 3,100\n"
	for _, cmd := range append(commandsRunningTests(), []string{"agent", "--peers", "peers.txt"}) {
		args := append(append([]string{}, cmd...), "-s", "3..100")
		if stdout, stderr, code := cli(t, args...); code != exitUsage || stderr != want || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q\nwant exit 2 and %q", args, code, stderr, want)
		}
	}
	if _, stderr, code := cli(t, "write-lat", "--load", "write-bw", "--load-size", "3..9"); code != exitUsage ||
		stderr != "rdmabench: --load-size 3..9: a range runs powers of two, and 3 and 9 are not; write --load-size 4..8, or list sizes: --load-size 3,9\n" {
		t.Errorf("--load-size 3..9: exit %d, %q", code, stderr)
	}
}

// --limit-bw N%link is a share of an RDMA link's nominal rate: a TCP
// test has none, so a command of TCP tests alone refuses it before it
// runs (it ran, then failed the limit with exit 3). The suite and
// --baseline tcp take it for their RDMA bandwidth tests.
func TestLinkLimitNeedsRDMA(t *testing.T) {
	says := "--limit-bw 90%link is a share of an RDMA link's nominal rate, and a TCP test has none: give a bandwidth instead, e.g. --limit-bw 20Gbps\n"
	for _, args := range [][]string{
		{"tcp-bw", "--limit-bw", "90%link"},
		{"tcp-bw", "127.0.0.1", "-p", "1", "--limit-bw", "90%link"},
		{"mesh", "tcp-bw", "--rank", "0", "--ranks", "2", "--limit-bw", "90%link"},
	} {
		stdout, stderr, code := cli(t, args...)
		if want := "rdmabench: " + args[0] + ": " + says; code != exitUsage || stderr != want || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q\nwant exit 2 and %q", args, code, stderr, stdout, want)
		}
	}
	if _, stderr, code := cli(t, "tcp-bw", "--limit-bw", "1kbps", "-n", "10"); code != exitOK {
		t.Errorf("tcp-bw --limit-bw 1kbps: exit %d: %s", code, stderr)
	}
	for _, args := range [][]string{
		{"suite", "-n", "10", "--limit-bw", "90%link"},
		{"write-bw", "--baseline", "tcp", "-n", "10", "--limit-bw", "90%link"},
	} {
		if _, stderr, code := cli(t, args...); code == exitUsage {
			t.Errorf("%v: refused: %s", args, stderr)
		}
	}
}

// A format the documents have no rendering in, like any other mistake in
// what was asked, is a usage error (exit 2), and prints nothing: report
// -o openmetrics of a mesh document exited 1, as a broken file does.
func TestReportFormatIsUsage(t *testing.T) {
	dir := t.TempDir()
	mesh := writeDoc(t, dir, "mesh.json", meshDoc(3, nil, nil))
	run := writeDoc(t, dir, "run.json", runsDoc("mlx5_0", []float64{1.31}, []float64{98.5}))
	for _, args := range [][]string{
		{"report", mesh, "-o", "openmetrics"},
		{"report", mesh, "-o", "gobench"},
		{"report", mesh, "-o", "github-action-benchmark-latency"},
		{"report", run, mesh, "-o", "openmetrics"},
		{"report", run, mesh, "-o", "csv"},
		{"report", run, "-o", "xml"},
		{"report"},
		{"plot", run, "-o", ""},
		{"plot"},
		{"compare", run},
		{"compare", run, mesh},
		{"compare", run, run, "-o", "yaml"},
		{"compare", run, run, "--top", "3"},
	} {
		stdout, stderr, code := cli(t, args...)
		if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, "rdmabench: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and the mistake named", args, code, stdout, stderr)
		}
	}
	if _, stderr, _ := cli(t, "report", mesh, "-o", "openmetrics"); stderr != "rdmabench: "+mesh+": report: a mesh document renders as table, markdown, csv, json, not openmetrics\n" {
		t.Errorf("report -o openmetrics of a mesh: %q", stderr)
	}
}

// The TCP tests' help speaks of TCP: no device, no NUMA node (their loop
// threads are not pinned unless --cpu says where), no link rate.
func TestTCPHelpSaysTCP(t *testing.T) {
	for _, name := range []string{"tcp-lat", "tcp-bw"} {
		out, _, code := cli(t, name, "--help")
		if code != exitOK {
			t.Fatalf("%s --help: exit %d", name, code)
		}
		for _, word := range []string{"device", "NUMA", "Soft-RoCE", "%link for"} {
			if strings.Contains(out, word) {
				t.Errorf("%s --help speaks of %q:\n%s", name, word, out)
			}
		}
		for _, says := range []string{"(default: not pinned, on any core this process may use)", "over this\nhost's loopback interface (127.0.0.1)"} {
			if !strings.Contains(out, says) {
				t.Errorf("%s --help does not say %q", name, says)
			}
		}
	}
}
