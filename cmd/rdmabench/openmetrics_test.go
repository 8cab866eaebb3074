package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/testutil"
)

// TestOpenMetricsOfARealRun: the OpenMetrics of a run on the device
// (latency with its histogram, bandwidth) passes `promtool check metrics`
// with nothing to say. promtool comes from scripts/deps.sh (Debian package
// prometheus); without it the test skips, unless CI is set.
func TestOpenMetricsOfARealRun(t *testing.T) {
	testutil.Device(t)
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		msg := "promtool not installed (Debian package prometheus, which scripts/deps.sh installs)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + "; CI is set, so the test fails rather than skipping")
		}
		t.Skip(msg)
	}
	for _, args := range [][]string{
		{"write-lat", "-s", "2,64", "-n", "200"},
		{"write-bw", "-n", "200"},
	} {
		out, stderr, code := cli(t, append(args, "-o", "openmetrics")...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", args[0], code, stderr)
		}
		if args[0] == "write-lat" && !strings.Contains(out, "rdmabench_latency_seconds_bucket{") {
			t.Errorf("%s: no latency histogram:\n%s", args[0], out)
		}
		if args[0] == "write-bw" && !strings.Contains(out, "rdmabench_bandwidth_bytes_per_second{") {
			t.Errorf("%s: no bandwidth:\n%s", args[0], out)
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(out)
		msg, err := cmd.CombinedOutput()
		if err != nil || len(bytes.TrimSpace(msg)) > 0 {
			t.Errorf("%s: promtool check metrics: %v\n%s\n%s", args[0], err, msg, out)
		}
	}
}
