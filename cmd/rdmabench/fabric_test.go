package main

import (
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// TestFabricFlagsRefused: the path's flags refuse what has no meaning, by
// name, with exit status 2, before anything runs.
func TestFabricFlagsRefused(t *testing.T) {
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
