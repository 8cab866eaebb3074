package main

import (
	"strings"
	"testing"
)

// TestFabricFlagsRefused: the fabric flags refuse, by name and before
// anything runs (exit 2), what has no meaning.
func TestFabricFlagsRefused(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"write-lat", "--threads", "2"}, "--threads does not apply to write-lat"},
		{[]string{"tcp-bw", "--threads", "2"}, "--threads does not apply to tcp-bw"},
		{[]string{"write-bw", "--threads", "3", "-q", "2"}, "threads 3 must be within 1..the QP count 2"},
		{[]string{"write-bw", "--threads", "0"}, "--threads"},
		{[]string{"write-lat", "--rate-limit", "5Gbps"}, "--rate-limit does not apply to write-lat"},
		{[]string{"write-bw", "--rate-limit", "fast"}, "--rate-limit"},
		{[]string{"write-bw", "--rate-limiter", "hw"}, "needs a rate limit"},
		{[]string{"write-bw", "--rate-limit", "1G", "--rate-limiter", "fpga"}, "--rate-limiter"},
		{[]string{"write-bw", "--load", "write-bw"}, "--load does not apply to write-bw"},
		{[]string{"write-lat", "--load", "write-lat"}, "--load"},
		{[]string{"write-lat", "--load-qps", "2"}, "need --load"},
		{[]string{"write-lat", "--load", "write-bw", "--load-size", "2..64"}, "--load-size"},
		{[]string{"tcp-lat", "--load", "write-bw"}, "--load does not apply to tcp-lat"},
		{[]string{"write-lat", "--cpu", "5-3"}, "--cpu"},
		{[]string{"write-lat", "--cpu", "1023"}, "--cpu 1023: core 1023 is not one this process may use"},
		{[]string{"write-bw", "-d", "a,a"}, "listed twice"},
		{[]string{"write-bw", "-d", "a,b", "--server-dev", "c"}, "one by one"},
	}
	for _, c := range cases {
		_, stderr, code := cli(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %q; want exit %d naming %q", c.args, code, stderr, exitUsage, c.want)
		}
	}
}

// TestFabricFlagsRecorded: the fabric flags as asked are in the document's
// params (a TCP test takes --cpu).
func TestFabricFlagsRecorded(t *testing.T) {
	out, stderr, code := cli(t, "tcp-lat", "-n", "20", "--cpu", "0", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{`"cpus": [`, `"policy": "cpu-list"`, `"used_cpus": [`} {
		if !strings.Contains(out, want) {
			t.Errorf("the document lacks %s:\n%s", want, out)
		}
	}
}
