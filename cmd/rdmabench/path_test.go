package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// TestFabricFlagsRefused: the path's flags refuse what has no meaning, by
// name, with exit status 2, before anything runs.
func TestPathFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"write-lat", "--tclass", "256"}, `invalid argument "256" for "-T, --tclass" flag: must be within 0..255`},
		{[]string{"write-lat", "--dscp", "64"}, `invalid argument "64" for "--dscp" flag: must be within 0..63`},
		{[]string{"write-lat", "--tclass", "0x68", "--dscp", "10"}, "--dscp 10 and --tclass 0x68 disagree: traffic class 0x68 has DSCP 26"},
		{[]string{"write-lat", "--sl", "16"}, "must be within 0..15"},
		{[]string{"write-lat", "--flow-label", "0x100000"}, "must be within 0..1048575"},
		{[]string{"write-lat", "--hop-limit", "0"}, "must be within 1..255"},
		{[]string{"write-lat", "--tclass", "x"}, "want a whole number"},
		{[]string{"tcp-lat", "--sl", "3"}, "--sl does not apply to tcp-lat: it is for write-lat"},
		{[]string{"tcp-bw", "--flow-label", "3"}, "--flow-label does not apply to tcp-bw"},
		{[]string{"tcp-bw", "-L", "3"}, "--hop-limit does not apply to tcp-bw"},
	} {
		_, stderr, code := cli(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %q; want exit %d and %q", c.args, code, stderr, exitUsage, c.want)
		}
	}
}

// TestDSCPOnTCP: --dscp is the traffic class's upper 6 bits, as the
// document records it, and the TCP sockets of both ends take it.
func TestDSCPOnTCP(t *testing.T) {
	for _, args := range [][]string{{"--dscp", "46"}, {"--dscp", "46", "--tclass", "0xb8"}, {"-T", "184"}} {
		out, stderr, code := cli(t, append([]string{"tcp-lat", "-n", "20", "-o", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		doc, err := report.ReadJSON(strings.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		e := doc.Results[0].Effective
		if doc.Params.TClass == nil || *doc.Params.TClass != 0xb8 || e.IPTOS == nil || *e.IPTOS != 0xb8 {
			t.Fatalf("%q: params %v, effective %+v; want traffic class 0xb8 asked and taken", args, doc.Params.TClass, e)
		}
	}
}

// TestServeReverse: --reverse against a server: the server initiates each
// bandwidth test and measures it, and the client's document says so.
func TestServeReverse(t *testing.T) {
	dev := testutil.Device(t)
	testutil.NoLeaks(t)
	port, _ := startServer(t, "-d", dev)
	for _, test := range []string{"write-bw", "send-bw", "read-bw", "tcp-bw"} {
		args := []string{test, "127.0.0.1", "-p", port, "--reverse", "-s", "4K", "-n", "50", "-o", "json"}
		if test != "tcp-bw" {
			args = append(args, "-d", dev)
		}
		out, stderr, code := cli(t, args...)
		if code != 0 {
			t.Fatalf("%s --reverse: exit %d: %s", test, code, stderr)
		}
		doc, err := report.ReadJSON(strings.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		r := doc.Results[0]
		want := "server_to_client"
		if test == "read-bw" {
			want = "client_to_server"
		}
		if !doc.Params.Reverse || !r.Reversed() || r.Direction != want || r.Bandwidth == nil || r.Bandwidth.Messages != 50 {
			t.Fatalf("%s --reverse: params %+v, result %+v", test, doc.Params, r)
		}
	}
}

// TestCompareLimitLink: compare --limit-bw 90%link measures NEW's
// bandwidth (the median of its runs) against the link rate its results
// record; a miss exits 3.
func TestCompareLimitLink(t *testing.T) {
	dir := t.TempDir()
	withLink := func(doc *report.Document) *report.Document {
		for i := range doc.Results {
			doc.Results[i].Effective = &report.Effective{LinkGbps: 100}
		}
		return doc
	}
	base := writeDoc(t, dir, "base.json", withLink(runsDoc("mlx5_0", baseP99, baseGbps)))
	slow := writeDoc(t, dir, "new.json", withLink(runsDoc("mlx5_0", baseP99, []float64{88.6, 88.7, 88.5, 88.6, 88.4})))
	out, stderr, code := cli(t, "compare", base, slow, "--limit-bw", "90%link")
	want := "limit failed (new): write-bw RC 65536 B: bandwidth 88.60 Gbit/s (median of 5 runs) < limit 90% of the link (90 of 100 Gbit/s)"
	if code != exitGate || !strings.Contains(out, "gates: --limit-bw 90%link: 1 failed") || !strings.Contains(out, want) || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if _, stderr, code := cli(t, "compare", base, slow, "--limit-bw", "85%link"); code != 0 {
		t.Fatalf("85%%link: exit %d: %s", code, stderr)
	}
	if out, _, code := cli(t, "compare", base, slow, "--limit-bw", "90%link", "-o", "json"); code != exitGate || !strings.Contains(out, `"limits": [`) {
		t.Fatalf("-o json: exit %d\n%s", code, out)
	}
	if _, stderr, code := cli(t, "compare", base, slow, "--limit-bw", "190%link"); code != exitUsage || !strings.Contains(stderr, "at most 100%") {
		t.Fatalf("190%%link: exit %d: %s", code, stderr)
	}
}

// TestLimitLinkOnDevice: --limit-bw N%link evaluates against the link rate
// the device reports (Soft-RoCE: from its network interface), recorded in
// the document: the exit status follows the figures the document holds.
func TestLimitLinkOnDevice(t *testing.T) {
	dev := testutil.Device(t)
	testutil.NoLeaks(t)
	for _, pct := range []float64{0.001, 100} {
		arg := strconv.FormatFloat(pct, 'f', -1, 64) + "%link"
		out, stderr, code := cli(t, "write-bw", "-d", dev, "-s", "64K", "-n", "100", "--limit-bw", arg, "-o", "json")
		doc, err := report.ReadJSON(strings.NewReader(out))
		if err != nil {
			t.Fatalf("%s: exit %d: %v: %s", arg, code, err, stderr)
		}
		r := doc.Results[0]
		d := doc.Hosts.Local.Device
		if r.Effective == nil || r.Effective.LinkGbps <= 0 || d == nil || d.LinkGbps != r.Effective.LinkGbps || d.ActiveSpeed == "" || d.ActiveWidth == "" {
			t.Fatalf("the link rate is not recorded: device %+v, effective %+v", d, r.Effective)
		}
		limit := pct / 100 * r.Effective.LinkGbps
		if miss := r.Bandwidth.Gbps < limit; miss != (code == exitGate) || (!miss && code != 0) {
			t.Fatalf("%s: %.3f Gbit/s against %.3f of a %g Gbit/s link: exit %d: %s", arg, r.Bandwidth.Gbps, limit, r.Effective.LinkGbps, code, stderr)
		} else if miss && !strings.Contains(stderr, "% of the link (") {
			t.Fatalf("%s: stderr %q", arg, stderr)
		}
		t.Logf("%s: %.3f Gbit/s on a %g Gbit/s link (%s, %s): exit %d", arg, r.Bandwidth.Gbps, r.Effective.LinkGbps, d.ActiveSpeed, d.ActiveWidth, code)
	}
}

// TestServeRDMACM: -R against a server: the server listens for rdma_cm
// where its QPs are and accepts the client's connections; the control
// connection carries the rest.
func TestServeRDMACM(t *testing.T) {
	dev := testutil.Device(t)
	testutil.NoLeaks(t)
	port, _ := startServer(t, "-d", dev)
	for _, args := range [][]string{{"write-lat"}, {"read-bw", "-q", "2"}, {"send-bw", "-c", "UD", "-s", "1K"}, {"write-bw", "--reverse", "--tclass", "0x68"}} {
		out, stderr, code := cli(t, append(args, "127.0.0.1", "-p", port, "-d", dev, "-R", "-n", "50", "-o", "json")...)
		if code != 0 {
			t.Fatalf("%q -R: exit %d: %s", args, code, stderr)
		}
		doc, err := report.ReadJSON(strings.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		r := doc.Results[0]
		if !doc.Params.RDMACM || r.Error != "" || r.Effective == nil || r.Effective.RDMACM == nil || doc.Hosts.Remote == nil {
			t.Fatalf("%q -R: params %+v, result %+v", args, doc.Params, r)
		}
	}
}
