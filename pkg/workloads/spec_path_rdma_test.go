//go:build linux && cgo

package workloads

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// TestPathSettingsReachTheQPs: the traffic class, service level and flow
// label asked reach both ends' QPs; each result records the address
// vector as the device took it, and says where the device kept another
// value (Soft-RoCE keeps no service level). What goes on the wire is
// checked by pkg/verbs' TestAddressVectorOnTheWire and, between two
// hosts, by cmd/rdmabench's TestWireTrafficClass.
func TestPathSettingsReachTheQPs(t *testing.T) {
	for _, c := range []struct{ test, conn string }{{"write-lat", "RC"}, {"send-bw", "UD"}, {"read-bw", "RC"}} {
		t.Run(c.test+"-"+c.conn, func(t *testing.T) {
			s := rdmaSpec(c.test, func(s *Spec) {
				s.Connection, s.Sizes = c.conn, []int{64}
				s.TClass, s.SL, s.FlowLabel = ptr(0x6a), ptr(3), ptr(0x12345)
			})
			res, err := loopback(t, s)
			if err != nil {
				t.Fatal(err)
			}
			r := res.Results[0]
			av := r.Effective.AV
			if av == nil || !av.GRH || av.TClass != 0x6a || av.FlowLabel != 0x12345 {
				t.Fatalf("effective address vector %+v", av)
			}
			if av.SL != 3 && !hasWarning(r, "kept service level 0, not 3 as asked (--sl)") {
				t.Fatalf("service level %d without a warning: %q", av.SL, r.Warnings)
			}
			if c.conn == "UD" && av.HopLimit != 0 || c.conn == "RC" && av.HopLimit == 0 {
				t.Fatalf("hop limit %d: want it read back over RC, absent over UD (the kernel takes it from the route)", av.HopLimit)
			}
		})
	}
}

func TestPathDefaults(t *testing.T) {
	res, err := loopback(t, rdmaSpec("write-bw", nil))
	if err != nil {
		t.Fatal(err)
	}
	if av := res.Results[0].Effective.AV; av == nil || av.TClass != 0 || av.FlowLabel != 0 || av.SL != 0 {
		t.Fatalf("default address vector %+v", av)
	}
}

// TestHopLimitRefusedOnRoCE: on RoCE the kernel takes the IP TTL from the
// route whatever the QP asks, so --hop-limit is refused there, by name.
func TestHopLimitRefusedOnRoCE(t *testing.T) {
	_, err := loopback(t, rdmaSpec("write-lat", func(s *Spec) { s.HopLimit = ptr(17) }))
	if err == nil || !strings.Contains(err.Error(), "--hop-limit does not apply on RoCE") {
		t.Fatalf("--hop-limit 17 on RoCE: %v", err)
	}
}

func hasWarning(r report.Result, part string) bool {
	for _, w := range r.Warnings {
		if strings.Contains(w, part) {
			return true
		}
	}
	return false
}

// TestReverse: with --reverse the server initiates every RDMA bandwidth
// test, on the same QPs: its measurement is the result, which says which
// way the data went. SENDs are counted by the client, which receives them.
func TestReverse(t *testing.T) {
	for _, c := range []struct {
		test, conn, dir string
		size            int
	}{
		{"write-bw", "RC", "server_to_client", 65536},
		{"write-bw", "UC", "server_to_client", 4096},
		{"send-bw", "RC", "server_to_client", 4096},
		{"send-bw", "UD", "server_to_client", 1024},
		{"read-bw", "RC", "client_to_server", 65536},
		{"atomic-bw", "RC", "server_to_client", 8},
	} {
		t.Run(c.test+"-"+c.conn, func(t *testing.T) {
			s := rdmaSpec(c.test, func(s *Spec) { s.Connection, s.Sizes, s.Reverse, s.CPUUtil = c.conn, []int{c.size}, true, true })
			res, err := loopback(t, s)
			if err != nil {
				t.Fatal(err)
			}
			r := res.Results[0]
			if r.Direction != c.dir || !r.Reversed() || r.Reverse != nil {
				t.Fatalf("direction %q, effective %+v; want %s, reversed", r.Direction, r.Effective, c.dir)
			}
			if c.conn == "RC" {
				checkRDMABandwidth(t, r, r.Bandwidth, 50)
			} else if r.Bandwidth == nil || r.Bandwidth.Messages != 50 {
				t.Fatalf("sender figures %+v", r.Bandwidth)
			}
			// The server's loop did the sending: it polled, the client's
			// side only received (SEND) or did nothing at all.
			if r.CPU == nil || r.CPU.Server == nil || r.CPU.Client == nil || r.CPU.Server.WallS <= 0 {
				t.Fatalf("cpu %+v", r.CPU)
			}
		})
	}
}

func TestReverseDuration(t *testing.T) {
	res, err := loopback(t, rdmaSpec("send-bw", func(s *Spec) {
		s.Iterations, s.Duration, s.Interval, s.Reverse, s.Sizes = 0, 400*time.Millisecond, 100*time.Millisecond, true, []int{4096}
	}))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Results[0]
	var msgs uint64
	for _, iv := range r.Intervals {
		msgs += iv.Bandwidth.Messages
	}
	if len(r.Intervals) == 0 || r.Bandwidth == nil || msgs != r.Bandwidth.Messages || uint64(r.Iterations) != msgs {
		t.Fatalf("%d intervals of %d messages, bandwidth %+v, %d iterations", len(r.Intervals), msgs, r.Bandwidth, r.Iterations)
	}
}

// TestRDMACM: with -R rdma_cm connects the QPs of every test perftest
// connects with it (RC, and UD for SEND), several QPs included; the
// results say what rdma_cm chose, and the path settings still apply.
func TestRDMACM(t *testing.T) {
	for _, c := range []struct {
		test, conn string
		mutate     func(*Spec)
	}{
		{"write-lat", "RC", nil},
		{"read-lat", "RC", nil},
		{"send-lat", "RC", nil},
		{"send-lat", "UD", nil},
		{"atomic-lat", "RC", nil},
		{"write-bw", "RC", func(s *Spec) { s.QPs = 4; s.TClass = ptr(0x68) }},
		{"read-bw", "RC", nil},
		{"send-bw", "RC", func(s *Spec) { s.Reverse = true }},
		{"send-bw", "UD", func(s *Spec) { s.QPs, s.Sizes = 2, []int{1024} }},
		{"atomic-bw", "RC", nil},
	} {
		t.Run(c.test+"-"+c.conn, func(t *testing.T) {
			s := rdmaSpec(c.test, func(s *Spec) {
				s.Connection, s.RDMACM = c.conn, true
				if c.mutate != nil {
					c.mutate(s)
				}
			})
			res, err := loopback(t, s)
			if err != nil {
				t.Fatal(err)
			}
			r := res.Results[0]
			cm := r.Effective.RDMACM
			ps := map[string]string{"RC": "RDMA_PS_TCP", "UD": "RDMA_PS_UDP"}[c.conn]
			if cm == nil || cm.PortSpace != ps || cm.ClientAddr == "" || cm.ServerAddr == "" || cm.GID == "" {
				t.Fatalf("rdma_cm chose %+v", cm)
			}
			if s.Info().Metric == Latency {
				checkRDMALatency(t, r, 50, s.Info().Basis)
			} else if r.Bandwidth == nil || r.Bandwidth.Messages != 50*uint64(s.QPs) {
				t.Fatalf("bandwidth %+v", r.Bandwidth)
			}
			if s.TClass != nil && r.Effective.AV.TClass != *s.TClass {
				t.Fatalf("address vector %+v", r.Effective.AV)
			}
		})
	}
}

func TestRDMACMRefusals(t *testing.T) {
	for _, c := range []struct {
		mutate func(*Spec)
		want   string
	}{
		{func(s *Spec) { s.Connection = "UC" }, "not UC"},
		{func(s *Spec) { s.GIDIndex = ptr(1) }, "-x does not apply"},
	} {
		s := NewSpec("write-bw")
		s.RDMACM = true
		c.mutate(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate = %v, want %q", err, c.want)
		}
	}
}
