package settings

import (
	"errors"
	"fmt"
	"strconv"
)

// The path a test's packets take through the fabric: the traffic class
// (the IP header's DS field on RoCE v2, DSCP << 2 | ECN, and IP_TOS on
// TCP), service level, flow label and hop limit of the QPs' address
// vector. Both ends apply the same spec, so both directions carry them.
// This file is the only one that names them one by one: the spec, the
// document, the settings line, the comparison, the warnings and pkg/verbs
// go through [PathSettings].

// Path is the path as asked: a nil field leaves the default (0; hop limit
// 64). A workloads.Spec and a document's Params embed it, so its fields
// keep their names on the wire and in documents.
type Path struct {
	TClass    *int `json:"tclass,omitempty"`
	SL        *int `json:"sl,omitempty"`
	FlowLabel *int `json:"flow_label,omitempty"`
	HopLimit  *int `json:"hop_limit,omitempty"`
}

// PathValues are the path as values: what a QP is asked for (pkg/verbs'
// QPConfig embeds them; 0 leaves the device its default) or what its
// address vector says (in [AddressVector]).
type PathValues struct {
	TClass    int `json:"traffic_class"`
	SL        int `json:"sl"`
	FlowLabel int `json:"flow_label"`
	// HopLimit is absent where the kernel sets it from the IP route and
	// cannot be asked (UD on RoCE).
	HopLimit int `json:"hop_limit,omitempty"`
}

// AddressVector is what a QP's address vector (ibv_ah_attr) says beyond the
// peer's address: for RC and UC as the device reads it back, for UD as its
// address handle was made (a result's effective.av). On RoCE v2 the
// first of the path's values is the IP header's DS field and the last its
// TTL.
type AddressVector struct {
	// GRH: the packets carry a global route header (RoCE always; on
	// InfiniBand, across subnets). Without one, only the service level
	// applies.
	GRH bool `json:"grh"`
	PathValues
}

// DefaultHopLimit is the GRH hop limit a QP uses unless asked otherwise.
const DefaultHopLimit = 64

// The path's settings.
var (
	TClass = &Setting{Key: "tclass", Short: "T", What: "traffic class", Range: &Range{0, 255}, Shared: true, Compared: true,
		Help: "traffic class of both ends' packets: the IP header's DS field on RoCE v2 (DSCP << 2 | ECN) and IP_TOS on TCP, e.g. 0x68 (default 0)"}
	SL = &Setting{Key: "sl", Short: "S", What: "service level", Range: &Range{0, 15}, Applies: RDMA, Shared: true, Compared: true,
		Help: "service level of both ends' QPs (default 0)"}
	FlowLabel = &Setting{Key: "flow-label", What: "flow label", Range: &Range{0, 0xfffff}, Applies: RDMA, Shared: true, Compared: true,
		Help: "GRH flow label of both ends' QPs, 20 bits (default 0)"}
	HopLimit = &Setting{Key: "hop-limit", Short: "L", What: "hop limit", Range: &Range{1, 255}, Applies: RDMA, Shared: true, Compared: true,
		Help: "GRH hop limit of both ends' QPs, on InfiniBand (on RoCE the kernel takes the IP TTL from the route) (default 64)"}
	// DSCP is another way to say the traffic class: its upper 6 bits, ECN
	// 0 (see [MergeDSCP]).
	DSCP = &Setting{Key: "dscp", What: "DSCP", Range: &Range{0, 63}, Of: TClass,
		Help: "DSCP of both ends' packets: sets the traffic class's upper 6 bits, e.g. 26 for AF31"}
)

// PathSetting is one of the path's settings with its fields.
type PathSetting struct {
	*Setting
	// Asked points at the setting in a Path, Value in PathValues.
	Asked func(*Path) **int
	Value func(*PathValues) *int
	// Default is the value a QP takes when it is not asked for one.
	Default int
	// Show writes a value for people (a settings line).
	Show func(int) string
	// unknown0: a 0 read back says nothing (the kernel set it from the
	// route and did not tell).
	unknown0 bool
	// NotOnRoCE says, when set, why the setting does not apply on a RoCE
	// port.
	NotOnRoCE string
}

// PathSettings are the path's settings, in table order.
var PathSettings = []PathSetting{
	{Setting: TClass, Asked: func(p *Path) **int { return &p.TClass }, Value: func(v *PathValues) *int { return &v.TClass }, Show: DSName},
	{Setting: SL, Asked: func(p *Path) **int { return &p.SL }, Value: func(v *PathValues) *int { return &v.SL }, Show: strconv.Itoa},
	{Setting: FlowLabel, Asked: func(p *Path) **int { return &p.FlowLabel }, Value: func(v *PathValues) *int { return &v.FlowLabel },
		Show: func(v int) string { return fmt.Sprintf("0x%05x", v) }},
	{Setting: HopLimit, Asked: func(p *Path) **int { return &p.HopLimit }, Value: func(v *PathValues) *int { return &v.HopLimit },
		Default: DefaultHopLimit, Show: strconv.Itoa, unknown0: true,
		NotOnRoCE: "the kernel sets the IP TTL of RoCE packets from the route to the peer (`ip route ... hoplimit N`), whatever the QP asks; " +
			"it applies to InfiniBand's global routes"},
}

// pathTable is the path's settings, as rows of the table.
func pathTable() []*Setting {
	rows := make([]*Setting, len(PathSettings))
	for i, s := range PathSettings {
		rows[i] = s.Setting
	}
	return rows
}

// OnRoCE is the error of a setting of p that does not apply on a RoCE
// port (device's port, Ethernet), or nil.
func (p Path) OnRoCE(device string, port int) error {
	for _, s := range PathSettings {
		if s.NotOnRoCE != "" && *s.Asked(&p) != nil {
			return fmt.Errorf("--%s does not apply on RoCE (%s port %d is Ethernet): %s", s.Key, device, port, s.NotOnRoCE)
		}
	}
	return nil
}

// Values are the values p asks a QP for: 0 where p leaves the default.
func (p Path) Values() PathValues {
	var v PathValues
	for _, s := range PathSettings {
		if a := *s.Asked(&p); a != nil {
			*s.Value(&v) = *a
		}
	}
	return v
}

// Check is the error of each value of p outside its setting's range.
func (p Path) Check() []error {
	var errs []error
	for _, s := range PathSettings {
		if a := *s.Asked(&p); a != nil {
			if err := s.OutOfRange(*a); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// Check is the error of v's values outside their settings' ranges (0
// leaves the default).
func (v PathValues) Check() error {
	var errs []error
	for _, s := range PathSettings {
		if x := *s.Value(&v); x != 0 {
			errs = append(errs, s.OutOfRange(x))
		}
	}
	return errors.Join(errs...)
}

// A Kept is a value of the path the device kept other than asked.
type Kept struct {
	*Setting
	Asked, Got int
}

// Kept lists the values of av that differ from those p asked for.
func (p Path) Kept(av PathValues) []Kept {
	var out []Kept
	for _, s := range PathSettings {
		a, got := *s.Asked(&p), *s.Value(&av)
		if a != nil && *a != got && (got != 0 || !s.unknown0) {
			out = append(out, Kept{s.Setting, *a, got})
		}
	}
	return out
}

// FromRoute leaves out of v what the kernel takes from the IP route on
// RoCE for UD and tells no one: the hop limit.
func (v *PathValues) FromRoute() {
	for _, s := range PathSettings {
		if s.unknown0 {
			*s.Value(v) = 0
		}
	}
}

// Shown are the values of v for people, as name and value, leaving out
// the defaults.
func (v PathValues) Shown() [][2]string {
	var out [][2]string
	for _, s := range PathSettings {
		if x := *s.Value(&v); x != 0 && x != s.Default {
			out = append(out, [2]string{s.Label(), s.Show(x)})
		}
	}
	return out
}

// DSName writes an IP header's DS field (a QP's traffic class, a socket's
// IP_TOS) for people: "0x6a (DSCP 26, ECT(0))".
func DSName(tc int) string {
	s := fmt.Sprintf("0x%02x (DSCP %d", tc, tc>>2)
	if ecn := tc & 3; ecn != 0 {
		s += ", " + [...]string{"", "ECT(1)", "ECT(0)", "CE"}[ecn]
	}
	return s + ")"
}

// MergeDSCP sets p's traffic class from a DSCP (its upper 6 bits; ECN 0),
// unless p asks for one: then the two must agree.
func MergeDSCP(p *Path, dscp *int) error {
	switch {
	case dscp == nil:
	case p.TClass == nil:
		tc := *dscp << 2
		p.TClass = &tc
	case *p.TClass>>2 != *dscp:
		return fmt.Errorf("--%s %d and --%s 0x%02x disagree: %s 0x%02x has DSCP %d (DSCP is its upper 6 bits)",
			DSCP.Key, *dscp, TClass.Key, *p.TClass, TClass.What, *p.TClass, *p.TClass>>2)
	}
	return nil
}
