package verbs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// PortSpace is an rdma_cm port space: which transport a connection sets up.
type PortSpace int

// Port spaces, as in enum rdma_port_space.
const (
	// PortSpaceTCP connects RC QPs (RDMA_PS_TCP).
	PortSpaceTCP PortSpace = 0x0106
	// PortSpaceUDP pairs UD QPs (RDMA_PS_UDP): the passive side answers a
	// request with its QP number and Q_Key, no connection is kept.
	PortSpaceUDP PortSpace = 0x0111
)

func (p PortSpace) String() string {
	switch p {
	case PortSpaceTCP:
		return "RDMA_PS_TCP"
	case PortSpaceUDP:
		return "RDMA_PS_UDP"
	}
	return fmt.Sprintf("PortSpace(0x%x)", int(p))
}

// MarshalText renders the port space by name.
func (p PortSpace) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// PortSpaceFor is the port space that connects QPs of type t, and false
// for a type rdma_cm cannot connect (UC: librdmacm has no port space for
// it).
func PortSpaceFor(t QPType) (PortSpace, bool) {
	switch t {
	case RC:
		return PortSpaceTCP, true
	case UD:
		return PortSpaceUDP, true
	}
	return 0, false
}

// CMUDPQKey is the Q_Key rdma_cm gives UD QPs of RDMA_PS_UDP
// (RDMA_UDP_QKEY): a UD QP connected with rdma_cm must be made with it.
const CMUDPQKey = 0x01234567

// CMInfo is what rdma_cm chose for one QP's connection: the port space,
// both addresses (on the active side, its own and the listener's), and
// the source GID and path MTU of the route it resolved.
type CMInfo struct {
	PortSpace PortSpace      `json:"port_space"`
	Local     netip.AddrPort `json:"local"`
	Remote    netip.AddrPort `json:"remote"`
	GID       GID            `json:"gid"`
	GIDIndex  int            `json:"gid_index"`
	PathMTU   MTU            `json:"path_mtu"`
}

// cmPrivate is what an rdmabench connection request carries in its private
// data: which of the passive side's QPs it is for and, for UD, where the
// active side's QP is (the passive side learns nothing else of it).
type cmPrivate struct {
	Index uint32
	QPN   uint32
	GID   GID
}

// cmMagic starts the private data of rdmabench's requests.
const cmMagic = "rbcm"

// cmPrivateLen is the length of cmPrivate's encoding: within the 56 bytes
// an IB CM REQ leaves to rdma_cm's user over IP.
const cmPrivateLen = len(cmMagic) + 4 + 4 + 16

func (p cmPrivate) marshal() []byte {
	b := make([]byte, 0, cmPrivateLen)
	b = append(b, cmMagic...)
	b = binary.BigEndian.AppendUint32(b, p.Index)
	b = binary.BigEndian.AppendUint32(b, p.QPN)
	return append(b, p.GID[:]...)
}

// errCMPrivate marks a connection request that is not rdmabench's.
var errCMPrivate = errors.New("connection request of another program (its private data is not rdmabench's)")

// parseCMPrivate decodes a request's private data (the transport may pad
// it with zeros).
func parseCMPrivate(b []byte) (cmPrivate, error) {
	if len(b) < cmPrivateLen || string(b[:len(cmMagic)]) != cmMagic {
		return cmPrivate{}, errCMPrivate
	}
	b = b[len(cmMagic):]
	p := cmPrivate{Index: binary.BigEndian.Uint32(b), QPN: binary.BigEndian.Uint32(b[4:])}
	copy(p.GID[:], b[8:24])
	if p.QPN > 0xffffff {
		return cmPrivate{}, fmt.Errorf("connection request names QP number 0x%x, beyond 24 bits", p.QPN)
	}
	return p, nil
}

// IPOf is the IP address a GID stands for on RoCE v2 (an IPv4-mapped GID,
// or an IPv6 one that is not link-local), and false otherwise.
func IPOf(g GID) (netip.Addr, bool) {
	a := netip.AddrFrom16(g)
	if g.IsZero() || g.IsLinkLocal() {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}
