//go:build linux && cgo

package verbs_test

import (
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/settings"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// The address vector a QP is given must be what goes on the wire. Soft-RoCE
// hands a packet to its own receive path, never to the network interface,
// when the destination MAC is the interface's own (two QPs of one device,
// or any address of a dummy interface, which has no ARP), so these tests
// connect a QP to an address on the interface's subnet that nobody has,
// given a neighbour entry with another MAC: its packets leave through the
// interface (the Soft-RoCE VM's dummy0 drops them), where tcpdump sees
// them. They run only on a dummy interface. Between two hosts the same is
// checked end to end by the two-host tests (cmd/rdmabench TestWire*).

var wireAV = verbs.QPConfig{PathValues: settings.PathValues{TClass: 0x6a, SL: 3, FlowLabel: 0x12345}} // DSCP 26 (AF31), ECN ECT(0)

// fakePeer returns an address on gid's subnet that is not gid's: the
// last byte flipped.
func fakePeer(gid verbs.GID) (verbs.GID, netip.Addr) {
	g := gid
	g[15] ^= 0x80
	a := netip.AddrFrom16(g).Unmap()
	return g, a
}

// isDummy reports whether the network interface netdev is a dummy one.
func isDummy(netdev string) bool {
	out, err := exec.Command("ip", "-d", "link", "show", "dev", netdev).Output()
	return err == nil && strings.Contains(string(out), "\n    dummy ")
}

// neighbour gives addr a permanent neighbour entry on netdev, with a MAC
// that is not the interface's, until the test ends.
func neighbour(t *testing.T, netdev string, addr netip.Addr) {
	t.Helper()
	if out, err := exec.Command("ip", "neigh", "replace", addr.String(), "lladdr", "02:00:00:00:00:99", "dev", netdev, "nud", "permanent").CombinedOutput(); err != nil {
		t.Fatalf("ip neigh replace %s: %v: %s", addr, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "neigh", "del", addr.String(), "dev", netdev).Run() })
}

func TestAddressVectorOnTheWire(t *testing.T) {
	dev := testutil.Device(t)
	testutil.NoLeaks(t)
	ctx, err := verbs.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, ctx) })
	port, err := ctx.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	if port.LinkLayer != verbs.LinkEthernet {
		t.Skipf("%s is not RoCE: no IP header to look at", dev)
	}
	table, err := ctx.GIDTable(1)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, pd) })
	mr, err := pd.RegMR(verbs.MRConfig{Length: 4096, Access: verbs.AccessAll})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, mr) })
	for _, family := range []string{"IPv4", "IPv6"} {
		var gid *verbs.GIDEntry
		for i, e := range table {
			if e.Type == verbs.GIDTypeRoCEv2 && e.Netdev != "" && e.GID.IsIPv4Mapped() == (family == "IPv4") {
				gid = &table[i]
				break
			}
		}
		for _, typ := range []verbs.QPType{verbs.UD, verbs.RC} {
			t.Run(family+"-"+typ.String(), func(t *testing.T) {
				if gid == nil {
					if family == "IPv4" {
						t.Fatalf("%s has no RoCE v2 IPv4 GID: %+v", dev, table)
					}
					t.Skipf("%s has no RoCE v2 IPv6 GID", dev)
				}
				if !isDummy(gid.Netdev) {
					t.Skipf("%s is not a dummy interface: this test sends to an address nobody has only there", gid.Netdev)
				}
				peer, addr := fakePeer(gid.GID)
				neighbour(t, gid.Netdev, addr)
				capture := testutil.StartCapture(t, gid.Netdev, testutil.RoCEv2+" and dst host "+addr.String())
				scq, rcq := mustCQ(t, ctx, 16, false), mustCQ(t, ctx, 16, false)
				cfg := wireAV
				cfg.Type, cfg.SendCQ, cfg.RecvCQ, cfg.MaxSendWR, cfg.MaxRecvWR, cfg.GIDIndex = typ, scq, rcq, 16, 16, gid.Index
				qp, err := pd.CreateQP(cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer closeOK(t, qp)
				remote := verbs.Endpoint{QPN: 0x4242, PSN: 1, GID: peer, MTU: 1024, QKey: verbs.DefaultQKey, MaxRdAtomic: 1}
				if err := qp.Connect(remote); err != nil {
					t.Fatal(err)
				}
				// Soft-RoCE keeps no service level (it reads back 0), and
				// on RoCE the kernel sets the hop limit from the IP route.
				av := qp.AddressVector()
				if av.TClass != 0x6a || av.FlowLabel != 0x12345 || !av.GRH || av.SGIDIndex != gid.Index || av.HopLimit == 0 {
					t.Fatalf("the device took address vector %+v, want traffic class 0x6a, flow label 0x12345, source GID %d", av, gid.Index)
				}
				t.Logf("address vector as the device took it: %+v", av)
				if err := qp.PostSend([]verbs.SendWR{{Opcode: verbs.OpSend, Signaled: true, SGEs: []verbs.SGE{{MR: mr, Length: 64}}}}); err != nil {
					t.Fatal(err)
				}
				if typ == verbs.UD {
					wait(t, scq, 1)
				}
				pkts := waitPackets(capture, 1)
				if len(pkts) == 0 {
					t.Fatalf("no RoCE v2 packet to %s seen on %s:\n%s", addr, gid.Netdev, capture.Output())
				}
				for _, p := range pkts {
					if p.TOS != 0x6a || p.TTL != av.HopLimit || p.DstPort != 4791 {
						t.Fatalf("on the wire: %s; want traffic class 0x6a and hop limit %d to port 4791", p, av.HopLimit)
					}
					// The 6.1 kernel's Soft-RoCE writes 0 in the IPv6 flow
					// label whatever the QP says; a driver that sets it
					// must set the one asked for.
					if p.IPv6 && p.FlowLabel != 0 && p.FlowLabel != 0x12345 {
						t.Fatalf("on the wire: %s; want flow label 0x12345 (or none)", p)
					}
				}
				t.Logf("%d packet(s), first: %s", len(pkts), pkts[0])
			})
		}
	}
}

// waitPackets stops the capture once it has seen n packets, or after a few
// seconds (an RC QP retransmits toward its absent peer meanwhile).
func waitPackets(c *testutil.Capture, n int) []testutil.Packet {
	for i := 0; i < 50 && len(testutil.ParsePackets(c.Output())) < n; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	return c.Stop()
}
