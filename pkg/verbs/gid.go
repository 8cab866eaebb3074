package verbs

import (
	"encoding/hex"
	"fmt"
	"net"
	"strings"
)

// GID is a 128-bit global identifier, the RoCE equivalent of an IPv6 address.
type GID [16]byte

// IsZero reports whether every byte of g is zero (an unused table slot).
func (g GID) IsZero() bool { return g == GID{} }

// IsIPv4Mapped reports whether g is an IPv4-mapped address (::ffff:a.b.c.d),
// the GID RoCE derives from an IPv4 address.
func (g GID) IsIPv4Mapped() bool {
	for _, b := range g[:10] {
		if b != 0 {
			return false
		}
	}
	return g[10] == 0xff && g[11] == 0xff
}

// IsLinkLocal reports whether g is in fe80::/10.
func (g GID) IsLinkLocal() bool { return g[0] == 0xfe && g[1]&0xc0 == 0x80 }

// String renders g as an IPv6 address (IPv4-mapped ones as ::ffff:a.b.c.d),
// as `rdma`, `ibv_devinfo` and `show_gids` do.
func (g GID) String() string {
	if g.IsIPv4Mapped() {
		return "::ffff:" + net.IP(g[12:16]).String()
	}
	return net.IP(g[:]).String()
}

// Raw renders g in the colon-separated 16-bit groups of ibv_devinfo
// ("fe80:0000:0000:0000:...").
func (g GID) Raw() string {
	h := hex.EncodeToString(g[:])
	var b strings.Builder
	for i := 0; i < 32; i += 4 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+4])
	}
	return b.String()
}

// ParseGID parses an IPv6 or IPv4 address (an IPv4 one becomes IPv4-mapped).
func ParseGID(s string) (GID, error) {
	var g GID
	ip := net.ParseIP(s)
	if ip == nil {
		return g, fmt.Errorf("invalid GID %q: not an IPv6 or IPv4 address", s)
	}
	copy(g[:], ip.To16())
	return g, nil
}

// MarshalText renders the GID as an address.
func (g GID) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText parses an address.
func (g *GID) UnmarshalText(b []byte) error {
	v, err := ParseGID(string(b))
	if err != nil {
		return err
	}
	*g = v
	return nil
}

// GIDType is the kind of a GID table entry.
type GIDType int

// GID types, numbered as in enum ibv_gid_type.
const (
	GIDTypeIB     GIDType = 0
	GIDTypeRoCEv1 GIDType = 1
	GIDTypeRoCEv2 GIDType = 2
)

func (t GIDType) String() string {
	switch t {
	case GIDTypeIB:
		return "IB"
	case GIDTypeRoCEv1:
		return "RoCE v1"
	case GIDTypeRoCEv2:
		return "RoCE v2"
	}
	return fmt.Sprintf("GIDType(%d)", int(t))
}

// MarshalText renders the type by name.
func (t GIDType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText parses a type's name.
func (t *GIDType) UnmarshalText(b []byte) error {
	for v := GIDTypeIB; v <= GIDTypeRoCEv2; v++ {
		if v.String() == string(b) {
			*t = v
			return nil
		}
	}
	return fmt.Errorf("unknown GID type %q", b)
}

// GIDEntry is one valid entry of a port's GID table. Equivalent to a line of
// `rdma link show` / `ibv_devinfo -v` GID output (or `show_gids`).
type GIDEntry struct {
	Index   int     `json:"index"`
	GID     GID     `json:"gid"`
	Type    GIDType `json:"type"`
	Netdev  string  `json:"netdev,omitempty"`
	IfIndex int     `json:"ifindex,omitempty"`
}

// GIDChoice is the outcome of GID index selection, with the reason for it.
type GIDChoice struct {
	Index  int    `json:"index"`
	GID    GID    `json:"gid"`
	Type   string `json:"type"`
	Auto   bool   `json:"auto"`
	Reason string `json:"reason"`
}

// ErrNoGID means no GID index could be chosen: the table is empty or the
// requested index is not in it.
var ErrNoGID = fmt.Errorf("no usable GID")

// SelectGID chooses the GID index a RoCE connection should use.
//
// With explicit >= 0, that index is used if it is in the table, and an error
// listing the valid indexes is returned otherwise. With explicit < 0 the
// choice is automatic: on InfiniBand, index 0 (the port GID); on Ethernet
// (RoCE), an IPv4-mapped GID is preferred, then one that is not link-local,
// then RoCE v2 over v1; ties go to the lowest index. This is the order
// perftest users arrive at by hand with `show_gids` and `-x`.
func SelectGID(table []GIDEntry, link LinkLayer, explicit int) (GIDChoice, error) {
	if explicit >= 0 {
		for _, e := range table {
			if e.Index == explicit {
				return GIDChoice{Index: e.Index, GID: e.GID, Type: e.Type.String(),
					Reason: fmt.Sprintf("index %d requested explicitly (%s, %s)", e.Index, e.Type, e.GID)}, nil
			}
		}
		return GIDChoice{}, fmt.Errorf("%w: GID index %d does not exist (valid indexes: %s)", ErrNoGID, explicit, indexList(table))
	}
	if len(table) == 0 {
		return GIDChoice{}, fmt.Errorf("%w: the GID table is empty (is the port's network interface up and addressed?)", ErrNoGID)
	}
	if link != LinkEthernet {
		for _, e := range table {
			if e.Index == 0 {
				return GIDChoice{Index: 0, GID: e.GID, Type: e.Type.String(), Auto: true,
					Reason: "InfiniBand link layer: the port GID at index 0"}, nil
			}
		}
	}
	best := -1
	bestScore := -1
	for i, e := range table {
		s := gidScore(e)
		if s > bestScore || (s == bestScore && e.Index < table[best].Index) {
			best, bestScore = i, s
		}
	}
	e := table[best]
	var why []string
	if e.GID.IsIPv4Mapped() {
		why = append(why, "IPv4-mapped")
	} else if !e.GID.IsLinkLocal() {
		why = append(why, "not link-local (no IPv4-mapped GID)")
	} else {
		why = append(why, "link-local (the only kind present)")
	}
	why = append(why, e.Type.String())
	return GIDChoice{Index: e.Index, GID: e.GID, Type: e.Type.String(), Auto: true,
		Reason: "auto: " + strings.Join(why, ", ") + ", lowest such index"}, nil
}

// gidScore orders the automatic choice: IPv4-mapped beats non-link-local,
// which beats link-local; within each, RoCE v2 beats v1.
func gidScore(e GIDEntry) int {
	s := 0
	if e.GID.IsIPv4Mapped() {
		s += 4
	}
	if !e.GID.IsLinkLocal() {
		s += 2
	}
	if e.Type == GIDTypeRoCEv2 {
		s++
	}
	return s
}

func indexList(table []GIDEntry) string {
	if len(table) == 0 {
		return "none, the table is empty"
	}
	parts := make([]string, len(table))
	for i, e := range table {
		parts[i] = fmt.Sprint(e.Index)
	}
	return strings.Join(parts, ", ")
}
