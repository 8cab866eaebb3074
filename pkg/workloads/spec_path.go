package workloads

import (
	"fmt"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/settings"
)

// The path a test's packets take through the fabric: the settings of the
// QPs' address vector (pkg/settings' PathSettings, the spec's Path). Both
// ends apply the same spec, so both directions carry them.

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
	for _, k := range s.Path.Kept(av.PathValues) {
		w = append(w, fmt.Sprintf("%s kept %s %d, not %d as asked (--%s)", device, k.What, k.Got, k.Asked, k.Key))
	}
	return w
}

// tookAV is the address vector as the device took it, for the document:
// on RoCE, a UD QP's says nothing of what the kernel takes from the route
// (and tells no one).
func (s *Spec) tookAV(av settings.AddressVector, roce bool) report.AddressVector {
	if s.Connection == "UD" && roce {
		av.FromRoute()
	}
	return av
}

// pathOnPort refuses a path the port cannot take (on RoCE, Ethernet, what
// the kernel takes from the IP route).
func (s *Spec) pathOnPort(device string, port int, ethernet bool) error {
	if !ethernet {
		return nil
	}
	return s.Path.OnRoCE(device, port)
}
