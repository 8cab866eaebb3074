package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
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
