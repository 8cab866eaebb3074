package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/report/schema"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden files of the command line tests")

// TestGolden runs the command on every case in testdata/golden and compares
// its whole output with the case's, as benchstat's command tests do. A case
// is a txtar archive: its comment is the command line (after "rdmabench"),
// its files stdout, stderr and exit what it must print and return. A
// comment line "device" marks a case that needs an RDMA device: it runs
// where testutil.Device finds one (the Soft-RoCE VM), and "-d DEV" is
// added to its command line. Volatile output (times, host names, figures,
// socket buffer sizes) is normalised before comparing; JSON documents are
// compared field by field with the volatile values masked. Rerun with
// -update to rewrite the files after an intended change.
func TestGolden(t *testing.T) {
	t.Setenv("COLUMNS", "") // into a pipe: help and tables at no width
	files, err := filepath.Glob("testdata/golden/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var args []string
			device := false
			for _, line := range strings.Split(strings.TrimSpace(string(ar.Comment)), "\n") {
				switch {
				case line == "device":
					device = true
				case strings.HasPrefix(line, "rdmabench "):
					args = strings.Fields(strings.TrimPrefix(line, "rdmabench "))
				}
			}
			if device {
				args = append(args, "-d", testutil.Device(t))
			}
			stdout, stderr, code := cli(t, args...)
			if strings.HasPrefix(stdout, "{") {
				if err := schema.Validate([]byte(stdout)); err != nil {
					t.Errorf("the document does not follow the schema: %v", err)
				}
			}
			got := map[string]string{
				"stdout": normalise(stdout),
				"stderr": normalise(stderr),
				"exit":   strconv.Itoa(code) + "\n",
			}
			if *update {
				for i := range ar.Files {
					ar.Files[i].Data = []byte(got[ar.Files[i].Name])
				}
				if len(ar.Files) == 0 {
					for _, name := range []string{"stdout", "stderr", "exit"} {
						ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(got[name])})
					}
				}
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, f := range ar.Files {
				if want := string(f.Data); got[f.Name] != want {
					t.Errorf("rdmabench %s: %s differs (rerun with -update if intended)\n--- got:\n%s\n--- want:\n%s",
						strings.Join(args, " "), f.Name, got[f.Name], want)
				}
			}
		})
	}
}

// volatileKeys are the JSON fields whose values differ from run to run.
var volatileKeys = []string{
	"start", "end", "hostname", "kernel", "cpu", "cpus", "os", "go_version", "commit", "node_guid", "firmware",
	"resolution_ns", "reported_resolution_ns", "read_cost_ns", "source", "histogram", "so_sndbuf", "so_rcvbuf",
	"min_ns", "p50_ns", "mean_ns", "stdev_ns", "p90_ns", "p99_ns", "p99_9_ns", "p99_99_ns", "max_ns",
	"bw_gbps", "bw_mibps", "msg_rate_mpps", "bw_peak_gbps", "duration_ns", "command", "verbs", "used_cpus",
}

var (
	reTime      = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, took [0-9.a-zµ]+`)
	reHost      = regexp.MustCompile(`(?m)^(local|remote) {3,}\S+: .*$`)
	reClock     = regexp.MustCompile(`(?m)^clock {4}(\w+): .*$`)
	reFloat     = regexp.MustCompile(`\b\d+\.\d+\b`)
	reSockBuf   = regexp.MustCompile(`(SO_SNDBUF|SO_RCVBUF) \d+ B`)
	reRanOn     = regexp.MustCompile(`ran on [0-9,-]+`)
	reSpaces    = regexp.MustCompile(` {2,}`)
	reCommand   = regexp.MustCompile(`(?m)^command  .*$`)
	reLoopClock = regexp.MustCompile(`\b(tsc|monotonic)\b`)
	reTool      = regexp.MustCompile(`(?m)^rdmabench \S+ \(.*\)$`)
	reTookDash  = regexp.MustCompile(`-{10,}`)
	reRateUnit  = regexp.MustCompile(`\bN [kMG]?(bit|msg)/s\b`) // a rate said on its own scales its unit to its figure
	// A table's rate column takes its unit from its figures, named in its
	// label.
	reRateLabel = regexp.MustCompile(`(?m)(\b(?:BW|peak) |  )[kMG]?(bit|msg)/s\b`)
	// A latency table's unit follows its p50s (ms from 1 ms): a loaded
	// host's TCP loopback may cross it, so it reads as µs, the figures
	// being masked anyway.
	reLatUnit = regexp.MustCompile(`(?m)^Latency, ms\b`)
)

// normalise masks what differs from run to run: a JSON document field by
// field, text by pattern (which also folds the alignment of tables, whose
// widths follow the figures).
func normalise(out string) string {
	// The RDMA loops' clock is the TSC or CLOCK_MONOTONIC, as the CPU
	// allows.
	out = reLoopClock.ReplaceAllString(out, "LOOPCLOCK")
	if t := strings.TrimSpace(out); strings.HasPrefix(t, "{") {
		var doc any
		if json.Unmarshal([]byte(t), &doc) == nil {
			mask(doc)
			b, _ := json.MarshalIndent(doc, "", "  ")
			return string(b) + "\n"
		}
	}
	out = reTime.ReplaceAllString(out, "TIME")
	out = reHost.ReplaceAllStringFunc(out, func(l string) string {
		if f := strings.Fields(l); len(f) > 1 && f[1] == "none:" {
			return l // loopback says so
		}
		return strings.Fields(l)[0] + " HOST"
	})
	out = maskClocks(out)
	out = reCommand.ReplaceAllString(out, "command COMMAND")
	out = reTool.ReplaceAllString(out, "rdmabench VERSION")
	out = reSockBuf.ReplaceAllString(out, "$1 N B")
	out = reRanOn.ReplaceAllString(out, "ran on N") // the cores the loop threads ran on
	out = reFloat.ReplaceAllString(out, "N")
	out = reRateUnit.ReplaceAllString(out, "N $1/s")
	out = reRateLabel.ReplaceAllString(out, "$1$2/s")
	out = dropCounters(out)
	out = reLatUnit.ReplaceAllString(out, "Latency, µs")
	out = reTookDash.ReplaceAllString(out, "-----")
	return reSpaces.ReplaceAllString(out, " ")
}

// dropCounters leaves out the port counters that moved under a table:
// on Soft-RoCE in loopback a retransmission comes now and then.
func dropCounters(out string) string {
	var keep []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "port counters that moved") {
			in = true
			continue
		}
		if in && strings.HasPrefix(l, "  ") {
			continue
		}
		if in && l == "" && len(keep) > 0 && keep[len(keep)-1] == "" {
			in = false
			continue // the block stood alone between two blank lines
		}
		in = false
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

// maskClocks replaces each clock line of a table's header, with the lines
// it wrapped onto, by the clock's name.
func maskClocks(out string) string {
	lines := strings.Split(out, "\n")
	var keep []string
	inClock := false
	for _, l := range lines {
		if m := reClock.FindStringSubmatch(l); m != nil {
			keep, inClock = append(keep, "clock "+m[1]+": CLOCK"), true
			continue
		}
		if inClock && strings.HasPrefix(l, strings.Repeat(" ", 9)) {
			continue // the clock line, wrapped
		}
		inClock = false
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

// mask replaces the values of volatile fields in a decoded JSON document.
func mask(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if slices.Contains(volatileKeys, k) {
				x[k] = "X"
				continue
			}
			mask(val)
		}
	case []any:
		for _, e := range x {
			mask(e)
		}
	}
}

// TestGoldenNormalise: the normaliser masks only what varies.
func TestGoldenNormalise(t *testing.T) {
	in := "start    2026-11-30T16:05:24Z, took 100ms\nlocal    vm: linux/amd64\nLatency, ms (rtt/2)\ntcp-lat  TCP     2     50  rtt/2  3.290  4.291\n" +
		"test  conn  BW Mbit/s  peak Mbit/s  kmsg/s\n\nport counters that moved (each end's port):\n  write-bw RC 4096 B, both ends: duplicate_request +3\n\nran with\n"
	want := "start TIME\nlocal HOST\nLatency, µs (rtt/2)\ntcp-lat TCP 2 50 rtt/2 N N\ntest conn BW bit/s peak bit/s msg/s\n\nran with\n"
	if got := normalise("  link 2.500 Gbit/s\n  # exit status 3 under 9 Gbit/s\n"); got != " link N bit/s\n # exit status 3 under 9 Gbit/s\n" {
		t.Errorf("normalise gave %q", got)
	}
	if got := normalise(in); got != want {
		t.Fatalf("normalise gave\n%q\nwant\n%q", got, want)
	}
	var buf bytes.Buffer
	fmt.Fprint(&buf, `{"start":"x","results":[{"size":2,"latency":{"p50_ns":1.5,"count":3}}]}`)
	if got := normalise(buf.String()); !strings.Contains(got, `"p50_ns": "X"`) || !strings.Contains(got, `"count": 3`) {
		t.Fatalf("normalise of JSON gave %s", got)
	}
}
