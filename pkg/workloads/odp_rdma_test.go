//go:build linux && cgo

package workloads

// On-demand paging on a device that has it: rxe from Linux 7.x (the
// Soft-RoCE VM's `scripts/vm.sh --suite unstable`) reports ODP for RC
// send, recv, write, read, atomic and SRQ, UD send, recv and SRQ, and none
// for UC. Every RDMA test runs with --odp on each connection type the
// device's odp_caps allow for its operation, its data checked, both ends
// recording the ODP registration; the others are refused by name. On a
// device without ODP (rxe in Debian 12's 6.1) this skips and
// TestODPRefused tests the refusal.
//
// rxe in Linux 7.2 (7.2.13) misplaces what it copies into ODP memory at an
// address inside a page (not on its start): a write or read response
// packet after the first (an MTU of 1024 B into a page), a UD receive (its
// payload after the 40-byte GRH), send-bw's ring of receive buffers. The
// data check catches it ("validation failed"); pinned memory is right. So
// the messages here are one packet (512 B), and on rxe the receives that
// start inside a page (odpMisplacedOnRxe) must fail the check rather than
// pass, where any other device must pass it.

import (
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/verbs"
	"golang.org/x/sys/unix"
)

// deviceODP is the test device's on-demand paging capabilities.
func deviceODP(t *testing.T) verbs.ODPCaps {
	caps, _ := deviceODPInfo(t)
	return caps
}

// deviceODPInfo is deviceODP and whether the device is Soft-RoCE (rxe).
func deviceODPInfo(t *testing.T) (verbs.ODPCaps, bool) {
	t.Helper()
	ctx, err := verbs.Open(testutil.Device(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	caps, err := ctx.ODPCaps()
	if err != nil {
		t.Fatal(err)
	}
	return caps, ctx.Info().VendorID == rxeVendorID
}

// rxeVendorID is the vendor ID Soft-RoCE reports (RXE_VENDOR_ID).
const rxeVendorID = 0xffffff

// odpMisplacedOnRxe: the test's receives start inside a page, where rxe in
// Linux 7.2 misplaces ODP copies: every UD receive (after the GRH) and
// send-bw's ring of 512 B receive buffers.
func odpMisplacedOnRxe(name, conn string) bool {
	return conn == "UD" || name == "send-bw"
}

func TestODP(t *testing.T) {
	dev := testutil.Device(t)
	caps, rxe := deviceODPInfo(t)
	if !caps.Supported {
		t.Skipf("%s has no on-demand paging (rxe before Linux 7.x): TestODPRefused tests the refusal", dev)
	}
	t.Logf("%s odp caps %+v", dev, caps)
	ran := 0
	for _, name := range []string{"write-lat", "write-bw", "read-lat", "read-bw", "send-lat", "send-bw", "atomic-lat", "atomic-bw"} {
		info, ok := LookupTest(name)
		if !ok {
			t.Fatalf("no test %s", name)
		}
		for _, conn := range info.Connections {
			typ, err := verbs.ParseQPType(conn)
			if err != nil {
				t.Fatal(err)
			}
			miss := caps.Missing(typ, odpOps(info.Op))
			// Through a server end once: the same buffers, another process's path.
			remote := name == "write-bw" && conn == "RC"
			t.Run(name+"/"+conn, func(t *testing.T) {
				doc, err := runDoc(t, remote, []string{name}, askedSpec(func(s *Spec) {
					s.ODP, s.Connection, s.CheckData, s.Iterations = true, conn, true, 20
					if info.Op != OpAtomic {
						s.Sizes = []int{512}
					}
				}))
				if len(miss) > 0 {
					want := "--odp: " + dev + " has no on-demand paging for these operations over " + conn
					if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), miss[len(miss)-1]) {
						t.Fatalf("want a refusal naming %v (%q), got %v", miss, want, err)
					}
					return
				}
				if rxe && odpMisplacedOnRxe(name, conn) {
					if err == nil || !strings.Contains(err.Error(), "validation failed") {
						t.Fatalf("rxe misplaces ODP receives inside a page (Linux 7.2): want the data check to fail, got %v", err)
					}
					t.Logf("rxe (Linux %s), as known: %v", kernelRelease(), err)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(doc.Results) == 0 {
					t.Fatal("no result")
				}
				for _, r := range doc.Results {
					if r.Error != "" || r.Validation == nil || !r.Validation.OK {
						t.Fatalf("%s %s %d B: error %q, validation %+v", r.Test, conn, r.Size, r.Error, r.Validation)
					}
					e := r.Effective
					if e == nil || e.Memory == nil || !e.Memory.ODP || e.ServerMemory == nil || !e.ServerMemory.ODP {
						t.Fatalf("%s %s: effective memory %+v, server's %+v: want ODP at both ends", r.Test, conn, e.Memory, e.ServerMemory)
					}
				}
				if !doc.Params.ODP {
					t.Fatalf("params: odp %v", doc.Params.ODP)
				}
				if remote {
					if h := doc.Hosts.Remote; h == nil || h.Memory == nil || !h.Memory.ODP {
						t.Fatalf("remote host %+v", h)
					}
				}
			})
			if len(miss) == 0 {
				ran++
			}
		}
	}
	if ran == 0 {
		t.Fatalf("%s has ODP but for none of the tests", dev)
	}
}

// kernelRelease is uname -r.
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}
