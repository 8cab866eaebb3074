package main

import (
	"os"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// The TestWire tests run between two hosts, where packets cross a real
// network interface (Soft-RoCE hands them straight to itself within one
// host): the two-host tests (scripts/two-host-test.sh) run them on host B
// against host A's server (RDMABENCH_PEER_IP, port 19515), capturing with
// tcpdump what goes both ways. Elsewhere they are skipped.

// peerServer is the address of the server on the other host.
func peerServer(t *testing.T) string {
	t.Helper()
	peer := os.Getenv("RDMABENCH_PEER_IP")
	if peer == "" {
		t.Skip("needs a server on another host (RDMABENCH_PEER_IP): run by scripts/two-host-test.sh")
	}
	return peer
}

// runWire runs rdmabench against the peer's server while capturing the
// RoCE v2 packets of its QPs between the two hosts (not rdma_cm's MADs),
// and returns its document and the packets.
func runWire(t *testing.T, peer string, args ...string) (*report.Document, []testutil.Packet) {
	t.Helper()
	capture := testutil.StartCapture(t, "any", testutil.RoCEv2QPs+" and host "+peer)
	args = append(append([]string{}, args...), peer, "-d", testutil.Device(t), "-o", "json")
	out, stderr, code := cli(t, args...)
	pkts := capture.Stop()
	if code != 0 {
		t.Fatalf("rdmabench %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	doc, err := report.ReadJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	return doc, pkts
}

// directions splits pkts into those from and to peer, counting bytes.
func directions(pkts []testutil.Packet, peer string) (from, to []testutil.Packet, fromBytes, toBytes int) {
	for _, p := range pkts {
		switch {
		case p.Src == peer:
			from, fromBytes = append(from, p), fromBytes+p.Length
		case p.Dst == peer:
			to, toBytes = append(to, p), toBytes+p.Length
		}
	}
	return from, to, fromBytes, toBytes
}

// TestWireTrafficClass: the traffic class asked is in the IP header of
// the RoCE v2 packets both ends send: the client's and the server's,
// which applies the spec it was sent; over RC and UD, and with -R.
func TestWireTrafficClass(t *testing.T) {
	peer := peerServer(t)
	for _, c := range []struct {
		name string
		tos  int
		args []string
	}{
		{"write-lat-RC", 0x6a, []string{"write-lat", "--tclass", "0x6a"}},
		{"send-lat-UD", 0xb8, []string{"send-lat", "-c", "UD", "--dscp", "46"}},
		{"write-bw-rdma-cm", 0x28, []string{"write-bw", "-R", "--tclass", "0x28", "-s", "4K"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc, pkts := runWire(t, peer, append(c.args, "-n", "50", "-p", "19515")...)
			if av := doc.Results[0].Effective.AV; av == nil || av.TClass != c.tos {
				t.Fatalf("effective address vector %+v, want traffic class 0x%02x", av, c.tos)
			}
			from, to, _, _ := directions(pkts, peer)
			if len(from) == 0 || len(to) == 0 {
				t.Fatalf("%d packets from the server, %d to it: want both ways", len(from), len(to))
			}
			for _, p := range pkts {
				if p.TOS != c.tos {
					t.Fatalf("on the wire: %s; want traffic class 0x%02x both ways", p, c.tos)
				}
			}
			t.Logf("%d packets from the server, %d to it, all with traffic class 0x%02x (DSCP %d)", len(from), len(to), c.tos, c.tos>>2)
		})
	}
}

// TestWireReverse: with --reverse the payload crosses from the server to
// the client (the server writes into the client's memory); without it,
// the other way. The capture may miss packets on a slow host, so the test
// compares the two directions: the payload's carries several times the
// bytes of the acknowledgements'.
func TestWireReverse(t *testing.T) {
	peer := peerServer(t)
	for _, reverse := range []bool{false, true} {
		args := []string{"write-bw", "-s", "16K", "-n", "40", "-p", "19515"}
		if reverse {
			args = append(args, "--reverse")
		}
		doc, pkts := runWire(t, peer, args...)
		_, _, fromBytes, toBytes := directions(pkts, peer)
		r := doc.Results[0]
		switch {
		case reverse && (r.Direction != "server_to_client" || fromBytes < 64<<10 || fromBytes < 5*toBytes):
			t.Fatalf("--reverse: direction %q, %d bytes from the server, %d to it", r.Direction, fromBytes, toBytes)
		case !reverse && (r.Direction != "client_to_server" || toBytes < 64<<10 || toBytes < 5*fromBytes):
			t.Fatalf("direction %q, %d bytes from the server, %d to it", r.Direction, fromBytes, toBytes)
		}
		t.Logf("reverse %v: %d bytes from the server, %d to it", reverse, fromBytes, toBytes)
	}
}

// TestWireRDMACM: rdma_cm connects the QPs between the two hosts (RC and
// UD), from this host's address to the server's.
func TestWireRDMACM(t *testing.T) {
	peer := peerServer(t)
	self := os.Getenv("RDMABENCH_VM_IP")
	for _, args := range [][]string{{"read-lat"}, {"send-bw", "-c", "UD", "-s", "1K", "-q", "2"}, {"atomic-bw"}} {
		doc, _ := runWire(t, peer, append(args, "-R", "-n", "50", "-p", "19515")...)
		cm := doc.Results[0].Effective.RDMACM
		if cm == nil || !strings.HasPrefix(cm.ServerAddr, peer+":") || (self != "" && !strings.HasPrefix(cm.ClientAddr, self+":")) {
			t.Fatalf("%q -R: rdma_cm chose %+v", args, cm)
		}
		t.Logf("%q -R: %+v", args, *cm)
	}
}
