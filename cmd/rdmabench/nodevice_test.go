package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/render"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// TestNoDeviceHint: with no RDMA device at all, the error says how to
// make one with the binary and the distribution's tools (the scripts only
// as an alternative); a device named but missing gets no such hint.
func TestNoDeviceHint(t *testing.T) {
	msg := errorText(fmt.Errorf("write-lat: %w", verbs.ErrNoDevices))
	if !strings.HasPrefix(msg, "rdmabench: write-lat: no RDMA device found\n") {
		t.Errorf("%q", msg)
	}
	if verbs.Supported {
		for _, s := range []string{"modprobe rdma_rxe", "rdma link add rxe0 type rxe netdev eth0", "iproute2"} {
			if !strings.Contains(msg, s) {
				t.Errorf("no %q in %q", s, msg)
			}
		}
		if i, j := strings.Index(msg, "modprobe"), strings.Index(msg, "scripts/"); j >= 0 && j < i {
			t.Errorf("the scripts come before the commands: %q", msg)
		}
	}
	named := errorText(fmt.Errorf("%w named %q; this host has rxe0", verbs.ErrNoDevice, "mlx5_0"))
	if strings.Contains(named, "hint") {
		t.Errorf("a missing named device got the hint: %q", named)
	}
}

// TestNoDeviceSaidOnce: a test run on a host without a device prints its
// error once, on stderr, and no table; -o json still prints the document
// with the error.
func TestNoDeviceSaidOnce(t *testing.T) {
	if names, err := verbs.DeviceNames(); err == nil && len(names) > 0 {
		t.Skip("this host has RDMA devices")
	}
	stdout, stderr, code := cli(t, "write-lat")
	if code != exitError || stdout != "" {
		t.Errorf("exit %d, stdout %q", code, stdout)
	}
	if n := strings.Count(stderr, "write-lat: "); n != 1 || (verbs.Supported && !strings.Contains(stderr, "no RDMA device")) {
		t.Errorf("the error said %d times:\n%s", n, stderr)
	}
	if n := strings.Count(stderr, "hint: "); verbs.Supported && n != 1 {
		t.Errorf("the hint said %d times:\n%s", n, stderr)
	}
	stdout, stderr, code = cli(t, "write-lat", "-o", "json")
	var doc report.Document
	if code != exitError || json.Unmarshal([]byte(stdout), &doc) != nil || len(doc.Results) != 1 || doc.Results[0].Error == "" {
		t.Errorf("-o json: exit %d, %q", code, stdout)
	}
	if n := strings.Count(stderr, "rdmabench: "); n != 1 {
		t.Errorf("-o json: stderr said it %d times:\n%s", n, stderr)
	}
}

// TestNoDeviceSuite: the suite on a host without a device runs its TCP
// tests, and says the cause of its eight failed RDMA tests once in the
// table (a footnote their rows refer to) and once on stderr, with the
// hint; nothing says the run stopped, since it did not. Its document has
// no run-level error.
func TestNoDeviceSuite(t *testing.T) {
	if names, err := verbs.DeviceNames(); err == nil && len(names) > 0 {
		t.Skip("this host has RDMA devices")
	}
	out := t.TempDir() + "/suite.json"
	stdout, stderr, code := cli(t, "suite", "-n", "20", "--out", out)
	if code != exitError {
		t.Errorf("exit %d, want 1", code)
	}
	cause := "no RDMA device found"
	if !verbs.Supported {
		cause = "built without libibverbs"
	}
	if n := strings.Count(stdout, cause); n != 1 || strings.Count(stdout, "failed [1]") != 8 || !strings.Contains(stdout, "tcp-bw      TCP") {
		t.Errorf("the table says the cause %d times (want once, in a footnote the 8 rows refer to):\n%s", n, stdout)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "rdmabench: write-lat, read-lat, send-lat, atomic-lat, write-bw, read-bw, send-bw, atomic-bw: ") ||
		strings.Count(stderr, "rdmabench: ") != 1 || strings.Count(stderr, cause) != 1 {
		t.Errorf("stderr, want one line for the cause (and the hint):\n%s", stderr)
	}
	if strings.Contains(stdout+stderr, "stopped") {
		t.Errorf("says the run stopped:\n%s\n%s", stdout, stderr)
	}
	doc, err := report.ReadFile(out)
	if err != nil || doc.Error != "" || len(render.Failures(doc)) != 1 {
		t.Errorf("document: %v, error %q, failures %+v", err, doc.Error, render.Failures(doc))
	}
}
