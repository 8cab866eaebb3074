// Package testutil selects the RDMA device tests run on, skips only when
// there is none to be had, and proves that tests leave no verbs objects open.
package testutil

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// EnvDevice names the device tests must use. When it is set and the device
// is missing, tests fail instead of skipping.
const EnvDevice = "RDMABENCH_TEST_DEVICE"

// Device returns the RDMA device to test on. With RDMABENCH_TEST_DEVICE set,
// that device must exist or the test fails. Without it, the first device is
// used, and the test is skipped only when the build has no verbs or the host
// has no device.
func Device(t testing.TB) string {
	t.Helper()
	want := os.Getenv(EnvDevice)
	names, err := verbs.DeviceNames()
	if want != "" {
		if err != nil {
			t.Fatalf("%s=%s but devices cannot be listed: %v", EnvDevice, want, err)
		}
		if !slices.Contains(names, want) {
			t.Fatalf("%s=%s but this host has %q", EnvDevice, want, names)
		}
		return want
	}
	if err != nil {
		if errors.Is(err, verbs.ErrNotSupported) || errors.Is(err, verbs.ErrNoDevice) {
			t.Skipf("%v (set %s, or run under scripts/vm.sh)", err, EnvDevice)
		}
		t.Fatalf("list devices: %v", err)
	}
	if len(names) == 0 {
		t.Skipf("no RDMA device on this host (set %s, or run under scripts/vm.sh)", EnvDevice)
	}
	return names[0]
}

// NoLeaks fails t, at its end, if any verbs object is still open, naming
// where each was created. Call it first in a test, so that its check runs
// after every other cleanup.
func NoLeaks(t testing.TB) {
	t.Helper()
	t.Cleanup(func() {
		if open := verbs.OpenObjects(); len(open) > 0 {
			t.Errorf("%d verbs objects left open:\n%s", len(open), strings.Join(open, "\n"))
		}
	})
}

// KernelObjects lists the RDMA resources (pd, mr, cq, qp) the kernel holds
// for this process, as `rdma resource show` prints them. ok is false when
// the rdma tool is missing.
func KernelObjects() (lines []string, ok bool) {
	if _, err := exec.LookPath("rdma"); err != nil {
		return nil, false
	}
	pid := "pid " + strconv.Itoa(os.Getpid()) + " "
	for _, kind := range []string{"pd", "mr", "cq", "qp"} {
		out, err := exec.Command("rdma", "resource", "show", kind).CombinedOutput()
		if err != nil {
			return nil, false
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l+" ", pid) {
				lines = append(lines, kind+": "+strings.TrimSpace(l))
			}
		}
	}
	return lines, true
}

// EnvDevices lists the devices tests of several devices at once use
// (scripts/vm.sh --devices 2 sets it). When it is set and names fewer than
// a test needs, or a device that is missing, the test fails.
const EnvDevices = "RDMABENCH_TEST_DEVICES"

// Devices returns n RDMA devices to test on at once: those of
// RDMABENCH_TEST_DEVICES, else the host's first n. The test is skipped
// when the host has fewer and the variable is not set.
func Devices(t testing.TB, n int) []string {
	t.Helper()
	names, err := verbs.DeviceNames()
	want := os.Getenv(EnvDevices)
	if want == "" {
		if err != nil || len(names) < n {
			t.Skipf("needs %d RDMA devices, this host has %d (set %s, or run under scripts/vm.sh --devices %d)", n, len(names), EnvDevices, n)
		}
		return names[:n]
	}
	list := strings.Split(want, ",")
	if len(list) < n {
		t.Fatalf("%s=%s names fewer than the %d devices this test needs", EnvDevices, want, n)
	}
	for _, d := range list[:n] {
		if !slices.Contains(names, d) {
			t.Fatalf("%s=%s but this host has %q", EnvDevices, want, names)
		}
	}
	return list[:n]
}
