package workloads

import (
	"fmt"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// The path a test's packets take through the fabric: the traffic class
// (the IP header's DS field on RoCE v2 and TCP: DSCP and ECN), service
// level, flow label and hop limit of the QPs' address vector. Both ends
// apply the same spec, so both directions carry them.

// validatePath checks the path's settings of a normalized spec.
func (s *Spec) validatePath(_ TestInfo, bad func(string, ...any)) {
	if s.Reverse && s.Bidirectional {
		bad("reverse and bidirectional (-b) are exclusive: -b already has the server send too")
	}
	if s.RDMACM && s.Connection == "UC" {
		bad("rdma_cm (-R) connects RC and UD QPs, not UC (librdmacm has no port space for UC; perftest refuses it too)")
	}
	if s.RDMACM && s.GIDIndex != nil {
		bad("rdma_cm (-R) chooses the GID from the address it resolves: -x does not apply")
	}
}

// initiates tells whether the end playing r initiates the transfers of a
// bandwidth test: the client, or with Reverse the server (with
// Bidirectional, each end sends its own direction as well).
func (s *Spec) initiates(r role) bool { return (r == clientEnd) != s.Reverse }

// direction is which way a bandwidth test's payload goes: READs carry
// data from the target to the reader.
func (s *Spec) direction() string {
	t := s.Info()
	switch {
	case t.Metric != Bandwidth:
		return ""
	case s.Bidirectional:
		return report.DirectionBoth
	case (t.Op == OpRead) != s.Reverse:
		return report.DirectionServerToClient
	}
	return report.DirectionClientToServer
}

// orZero is *p, or 0 for nil.
func orZero(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// orAuto is *p, or for nil -1: "chosen automatically", as pkg/verbs'
// configs and the document's params say it (a GID index).
func orAuto(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// avWarnings says which values of the address vector the device took
// (av) differ from those asked.
func (s *Spec) avWarnings(device string, av report.AddressVector) []string {
	var w []string
	differs := func(flag string, asked *int, got int, what string) {
		if asked != nil && *asked != got {
			w = append(w, fmt.Sprintf("%s kept %s %d, not %d as asked (--%s)", device, what, got, *asked, flag))
		}
	}
	differs("tclass", s.TClass, av.TrafficClass, "traffic class")
	differs("sl", s.SL, av.SL, "service level")
	differs("flow-label", s.FlowLabel, av.FlowLabel, "flow label")
	if av.HopLimit > 0 {
		differs("hop-limit", s.HopLimit, av.HopLimit, "hop limit")
	}
	return w
}

// hopLimitOnRoCE is the error of --hop-limit on a RoCE port, where the
// kernel sets the IP TTL from the route to the peer whatever the QP asks.
func hopLimitOnRoCE(device string, port int) error {
	return fmt.Errorf("--hop-limit does not apply on RoCE (%s port %d is Ethernet): the kernel sets the IP TTL of RoCE packets "+
		"from the route to the peer (`ip route ... hoplimit N`), whatever the QP asks; it applies to InfiniBand's global routes", device, port)
}
