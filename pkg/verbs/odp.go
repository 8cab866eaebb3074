package verbs

import (
	"fmt"
	"strings"
)

// ODP operations, as the bits of enum ibv_odp_transport_cap_bits.
const (
	ODPSend    uint32 = 1 << 0 // IBV_ODP_SUPPORT_SEND
	ODPRecv    uint32 = 1 << 1 // IBV_ODP_SUPPORT_RECV
	ODPWrite   uint32 = 1 << 2 // IBV_ODP_SUPPORT_WRITE
	ODPRead    uint32 = 1 << 3 // IBV_ODP_SUPPORT_READ
	ODPAtomic  uint32 = 1 << 4 // IBV_ODP_SUPPORT_ATOMIC
	ODPSRQRecv uint32 = 1 << 5 // IBV_ODP_SUPPORT_SRQ_RECV
)

// ODPCaps is what on-demand paging a device supports: the odp_caps of
// ibv_query_device_ex. Equivalent to the "odp" lines of `ibv_devinfo -v`.
type ODPCaps struct {
	// Supported is IBV_ODP_SUPPORT; Implicit IBV_ODP_SUPPORT_IMPLICIT.
	Supported bool
	Implicit  bool
	// RC, UC and UD are each transport's ODPSend, ODPWrite, ... bits.
	RC, UC, UD uint32
}

var odpOpNames = []struct {
	bit  uint32
	name string
}{{ODPSend, "SEND"}, {ODPRecv, "RECV"}, {ODPWrite, "WRITE"}, {ODPRead, "READ"}, {ODPAtomic, "ATOMIC"}, {ODPSRQRecv, "SRQ_RECV"}}

// Missing lists, by name ("IBV_ODP_SUPPORT_WRITE"), what of ops (ODP* bits)
// the device lacks on transport t; all of them, and IBV_ODP_SUPPORT, when it
// has no ODP at all.
func (c ODPCaps) Missing(t QPType, ops uint32) []string {
	var have uint32
	switch t {
	case RC:
		have = c.RC
	case UC:
		have = c.UC
	case UD:
		have = c.UD
	}
	var out []string
	if !c.Supported {
		out = append(out, "IBV_ODP_SUPPORT")
	}
	for _, o := range odpOpNames {
		if ops&o.bit != 0 && have&o.bit == 0 {
			out = append(out, "IBV_ODP_SUPPORT_"+o.name)
		}
	}
	return out
}

// Check returns nil when device dev can register ODP memory for ops on
// transport t, else an error naming what it lacks.
func (c ODPCaps) Check(dev string, t QPType, ops uint32) error {
	miss := c.Missing(t, ops)
	if len(miss) == 0 {
		return nil
	}
	what := "no on-demand paging"
	if c.Supported {
		what = "no on-demand paging for these operations over " + t.String()
	}
	return fmt.Errorf("%w: --odp: %s has %s (ibv_query_device_ex odp_caps lacks %s)", ErrNotSupported, dev, what, strings.Join(miss, ", "))
}
