package main

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/schema"
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
		{[]string{"write-bw", "--threads", "3", "-q", "2"}, "--threads 3 must be within 1..the QP count 2"},
		{[]string{"write-bw", "--threads", "0"}, "--threads"},
		{[]string{"write-lat", "--rate-limit", "5Gbps"}, "--rate-limit does not apply to write-lat"},
		{[]string{"write-bw", "--rate-limit", "fast"}, "--rate-limit"},
		{[]string{"write-bw", "--rate-limiter", "hw"}, "--rate-limiter hw needs --rate-limit"},
		{[]string{"write-bw", "--rate-limit", "1G", "--rate-limiter", "fpga"}, "--rate-limiter"},
		{[]string{"write-bw", "--load", "write-bw"}, "--load does not apply to write-bw"},
		{[]string{"write-lat", "--load", "write-lat"}, "--load"},
		{[]string{"write-lat", "--load-qps", "2"}, "need --load"},
		{[]string{"write-lat", "--load", "write-bw", "--load-size", "2..64"}, "--load-size"},
		{[]string{"tcp-lat", "--load", "write-bw"}, "--load does not apply to tcp-lat"},
		{[]string{"write-lat", "--cpu", "5-3"}, "--cpu"},
		{[]string{"write-lat", "--cpu", "1023"}, "--cpu 1023: core 1023 is not one this process may use"},
		{[]string{"write-bw", "-d", "a,a"}, "names a twice"},
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

// TestServeFabric: threads, cores, a load and several devices against a
// server in this process, over the control protocol as between two hosts:
// the server applies what the client asks, and the lanes of a load or of
// several devices share the test's one connection.
func TestServeFabric(t *testing.T) {
	dev := testutil.Device(t)
	testutil.NoLeaks(t)
	port, _ := startServer(t, "-d", dev)
	doc := func(args ...string) *report.Document {
		t.Helper()
		out, stderr, code := cli(t, append(append([]string{args[0], "127.0.0.1", "-p", port}, args[1:]...), "-o", "json")...)
		if code != 0 {
			t.Fatalf("%q against the server: exit %d: %s", args, code, stderr)
		}
		d, err := report.ReadJSON(strings.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate([]byte(out)); err != nil {
			t.Fatalf("the document does not follow the schema: %v", err)
		}
		return d
	}
	start := time.Now()
	d := doc("send-bw", "-q", "2", "--threads", "2", "-s", "4K", "-n", "20", "--server-cpu", "0")
	r := d.Results[0]
	if s := r.Placement.Server; len(r.Threads) != 2 || s == nil || s.Policy != report.PlaceCPUList || len(s.CPUs) != 1 || s.CPUs[0] != 0 ||
		len(s.Used) != 1 || s.Used[0] != 0 {
		t.Fatalf("threads %+v, placement %+v", r.Threads, r.Placement)
	}
	t.Logf("send-bw on two threads: %s", time.Since(start))
	start = time.Now()
	d = doc("write-lat", "-n", "50", "--load", "write-bw", "--load-size", "4K")
	t.Logf("write-lat under load: %s", time.Since(start))
	if l := d.Results[0].Load; l == nil || l.Test != "write-bw" || l.Size != 4096 || l.Bandwidth == nil {
		t.Fatalf("load %+v", d.Results[0].Load)
	}
}

// TestServeTwoDevices: -d A,B against a server that pairs them with its
// own -d A,B (and with -d all on both sides).
func TestServeTwoDevices(t *testing.T) {
	devs := testutil.Devices(t, 2)
	testutil.NoLeaks(t)
	port, _ := startServer(t, "-d", strings.Join(devs, ","))
	for _, d := range []string{strings.Join(devs, ","), "all"} {
		out, stderr, code := cli(t, "write-bw", "127.0.0.1", "-p", port, "-d", d, "-s", "4K", "-n", "20", "-o", "json")
		if code != 0 {
			t.Fatalf("-d %s against the server: exit %d: %s", d, code, stderr)
		}
		doc, err := report.ReadJSON(strings.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		r := doc.Results[0]
		if len(r.Devices) < 2 || r.Devices[0].ServerDevice != devs[0] || r.Devices[1].ServerDevice != devs[1] ||
			r.Bandwidth.Messages != uint64(20*len(r.Devices)) || len(doc.Hosts.Remote.Devices) != len(r.Devices) {
			t.Fatalf("-d %s: devices %+v, total %+v, remote %+v", d, r.Devices, r.Bandwidth, doc.Hosts.Remote)
		}
	}
}
