// Package verbs is a thin, explicit layer over libibverbs: devices, ports,
// GID tables, protection domains, memory regions, completion queues, queue
// pairs, and the timed loops that benchmarks run in C.
//
// The types in this file are plain data and build everywhere. The live
// objects (Context, PD, MR, CQ, QP) exist only in Linux builds with cgo; other
// builds return an error wrapping ErrNotSupported.
package verbs

import (
	"fmt"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/settings"
)

// DeviceInfo describes one RDMA device. Equivalent to `ibv_devinfo -d DEV`.
type DeviceInfo struct {
	Name         string     `json:"name"`
	NodeGUID     string     `json:"node_guid"`
	FirmwareVer  string     `json:"firmware"`
	Transport    string     `json:"transport"`
	VendorID     uint32     `json:"vendor_id"`
	VendorPartID uint32     `json:"vendor_part_id"`
	PhysPorts    int        `json:"phys_ports"`
	MaxQP        int        `json:"max_qp"`
	MaxQPWR      int        `json:"max_qp_wr"`
	MaxCQE       int        `json:"max_cqe"`
	MaxMRSize    uint64     `json:"max_mr_size"`
	MaxQPRdAtom  int        `json:"max_qp_rd_atom"`
	MaxSGE       int        `json:"max_sge"`
	AtomicCap    string     `json:"atomic_cap"`
	Ports        []PortInfo `json:"ports,omitempty"`
}

// PortInfo describes one port of a device. Equivalent to
// `ibv_devinfo -v -d DEV -i PORT`.
type PortInfo struct {
	Port         int        `json:"port"`
	State        PortState  `json:"state"`
	MaxMTU       MTU        `json:"max_mtu"`
	ActiveMTU    MTU        `json:"active_mtu"`
	LinkLayer    LinkLayer  `json:"link_layer"`
	LID          uint16     `json:"lid"`
	ActiveSpeed  string     `json:"active_speed"`
	ActiveWidth  string     `json:"active_width"`
	GIDTableLen  int        `json:"gid_table_len"`
	GIDs         []GIDEntry `json:"gids,omitempty"`
	GIDSelection *GIDChoice `json:"gid_selection,omitempty"`

	// LinkGbps is the port's nominal rate: lane rate times lanes, Gbit/s
	// (0: unknown). See [LinkGbps].
	LinkGbps float64 `json:"link_gbps"`
}

// PortState is the logical state of a port.
type PortState int

// Port states, numbered as in enum ibv_port_state.
const (
	PortNop         PortState = 0
	PortDown        PortState = 1
	PortInit        PortState = 2
	PortArmed       PortState = 3
	PortActive      PortState = 4
	PortActiveDefer PortState = 5
)

func (s PortState) String() string {
	switch s {
	case PortNop:
		return "NOP"
	case PortDown:
		return "DOWN"
	case PortInit:
		return "INIT"
	case PortArmed:
		return "ARMED"
	case PortActive:
		return "ACTIVE"
	case PortActiveDefer:
		return "ACTIVE_DEFER"
	}
	return fmt.Sprintf("STATE_%d", int(s))
}

// MarshalText renders the state by name in JSON.
func (s PortState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a state's name.
func (s *PortState) UnmarshalText(b []byte) error {
	for v := PortNop; v <= PortActiveDefer; v++ {
		if v.String() == string(b) {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("unknown port state %q", b)
}

// LinkLayer is the port's link layer.
type LinkLayer string

// Link layers reported by ibv_query_port.
const (
	LinkInfiniBand  LinkLayer = "InfiniBand"
	LinkEthernet    LinkLayer = "Ethernet"
	LinkUnspecified LinkLayer = "Unspecified"
)

// MTU is an InfiniBand path MTU in bytes (256, 512, 1024, 2048 or 4096); 0
// means "not set".
type MTU int

// Valid reports whether m is one of the five IB MTUs.
func (m MTU) Valid() bool {
	switch m {
	case 256, 512, 1024, 2048, 4096:
		return true
	}
	return false
}

// MinMTU returns the smallest non-zero MTU of its arguments.
func MinMTU(ms ...MTU) MTU {
	var r MTU
	for _, m := range ms {
		if m > 0 && (r == 0 || m < r) {
			r = m
		}
	}
	return r
}

// QPType is the transport service of a queue pair.
type QPType int

// Transport services.
const (
	RC QPType = iota + 1 // reliable connected
	UC                   // unreliable connected
	UD                   // unreliable datagram
)

func (t QPType) String() string {
	switch t {
	case RC:
		return "RC"
	case UC:
		return "UC"
	case UD:
		return "UD"
	}
	return fmt.Sprintf("QPType(%d)", int(t))
}

// ParseQPType parses "RC", "UC" or "UD" (any case).
func ParseQPType(s string) (QPType, error) {
	switch strings.ToUpper(s) {
	case "RC":
		return RC, nil
	case "UC":
		return UC, nil
	case "UD":
		return UD, nil
	}
	return 0, fmt.Errorf("unknown connection type %q (want RC, UC or UD)", s)
}

// MarshalText renders the type by name in JSON.
func (t QPType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText parses the type's name.
func (t *QPType) UnmarshalText(b []byte) error {
	v, err := ParseQPType(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Access flags for memory regions, as in enum ibv_access_flags.
type Access uint32

// Access flags.
const (
	AccessLocalWrite   Access = 1 << 0
	AccessRemoteWrite  Access = 1 << 1
	AccessRemoteRead   Access = 1 << 2
	AccessRemoteAtomic Access = 1 << 3
	// AccessOnDemand registers for on-demand paging (IBV_ACCESS_ON_DEMAND):
	// the device faults pages in as it touches them, nothing is pinned.
	AccessOnDemand Access = 1 << 6
)

// AccessAll grants every access a benchmark needs.
const AccessAll = AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic

// Opcode is a send work request opcode.
type Opcode int

// Send opcodes.
const (
	OpWrite Opcode = iota + 1
	OpWriteImm
	OpSend
	OpSendImm
	OpRead
	OpCompSwap
	OpFetchAdd
)

func (o Opcode) String() string {
	switch o {
	case OpWrite:
		return "RDMA_WRITE"
	case OpWriteImm:
		return "RDMA_WRITE_WITH_IMM"
	case OpSend:
		return "SEND"
	case OpSendImm:
		return "SEND_WITH_IMM"
	case OpRead:
		return "RDMA_READ"
	case OpCompSwap:
		return "ATOMIC_CMP_AND_SWP"
	case OpFetchAdd:
		return "ATOMIC_FETCH_AND_ADD"
	}
	return fmt.Sprintf("Opcode(%d)", int(o))
}

// IsAtomic reports whether o is an 8-byte atomic.
func (o Opcode) IsAtomic() bool { return o == OpCompSwap || o == OpFetchAdd }

// Endpoint is what one side of a connection must tell the other: the
// out-of-band exchange of a QP's address, as perftest and rust-ibverbs do.
type Endpoint struct {
	QPN         uint32 `json:"qpn"`
	PSN         uint32 `json:"psn"`
	LID         uint16 `json:"lid"`
	GID         GID    `json:"gid"`
	GIDIndex    int    `json:"gid_index"`
	MTU         MTU    `json:"mtu"`
	QKey        uint32 `json:"qkey,omitempty"`
	MaxRdAtomic int    `json:"max_rd_atomic"`
}

// AddressVector is what a QP's address vector (ibv_ah_attr) toward its
// peer says beyond the address itself, as the device took it: the service
// level, and on a global route (RoCE, or InfiniBand with a GRH: GRH set)
// the rest of the path's values (see pkg/settings) and the source GID
// index.
type AddressVector struct {
	settings.AddressVector
	SGIDIndex int `json:"sgid_index"`
}

// RemoteBuffer names registered memory on the peer that RDMA READ, WRITE
// and atomics may target.
type RemoteBuffer struct {
	Addr uint64 `json:"addr"`
	Len  uint64 `json:"len"`
	RKey uint32 `json:"rkey"`
}

// WCOpcode is the opcode of a work completion.
type WCOpcode int

// Work completion opcodes, as in enum ibv_wc_opcode.
const (
	WCSend        WCOpcode = 0
	WCRDMAWrite   WCOpcode = 1
	WCRDMARead    WCOpcode = 2
	WCCompSwap    WCOpcode = 3
	WCFetchAdd    WCOpcode = 4
	WCRecv        WCOpcode = 128
	WCRecvRDMAImm WCOpcode = 129
)

func (o WCOpcode) String() string {
	switch o {
	case WCSend:
		return "SEND"
	case WCRDMAWrite:
		return "RDMA_WRITE"
	case WCRDMARead:
		return "RDMA_READ"
	case WCCompSwap:
		return "COMP_SWAP"
	case WCFetchAdd:
		return "FETCH_ADD"
	case WCRecv:
		return "RECV"
	case WCRecvRDMAImm:
		return "RECV_RDMA_WITH_IMM"
	}
	return fmt.Sprintf("WCOpcode(%d)", int(o))
}

// WC is one work completion.
type WC struct {
	ID        uint64
	Status    WCStatus
	Opcode    WCOpcode
	VendorErr uint32
	ByteLen   uint32
	Imm       uint32
	HasImm    bool
	QPN       uint32
	SrcQP     uint32
}

// Err returns nil for a successful completion and a *WCError otherwise.
func (wc *WC) Err() error {
	if wc.Status == WCSuccess {
		return nil
	}
	return &WCError{Status: wc.Status, Opcode: wc.Opcode, VendorErr: wc.VendorErr, QPN: wc.QPN}
}
