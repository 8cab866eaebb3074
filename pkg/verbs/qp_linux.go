//go:build linux && cgo

package verbs

/*
#include <stdlib.h>
#include "rb.h"
*/
import "C"

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"unsafe"

	"github.com/rdmabench/rdmabench/pkg/settings"
)

// QP is a queue pair. It is created unconnected (in INIT, so receives may
// be posted), gives its Endpoint for the out-of-band exchange, and can send
// only after Connect. Equivalent to what `rdma resource show qp` lists.
type QP struct {
	qp        *C.struct_ibv_qp
	pd        *PD
	cfg       QPConfig
	local     Endpoint
	remote    Endpoint
	ah        *C.struct_ibv_ah
	ahID      int
	av        AddressVector
	connected bool
	caps      QPCaps
	rdAtomic  int
	port      PortInfo
	gid       GIDChoice
	id        int
	// wr holds the C arrays of PostSend and PostRecv, made on first use.
	wr *wrArrays
}

// CreateQP creates a queue pair from cfg and moves it to INIT. The local
// endpoint (QPN, PSN, LID, GID, MTU) is fixed here.
func (pd *PD) CreateQP(cfg QPConfig) (*QP, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pd.pd == nil {
		return nil, ErrClosed
	}
	ctx := pd.ctx
	port, err := ctx.QueryPort(cfg.port())
	if err != nil {
		return nil, err
	}
	table, err := ctx.GIDTable(cfg.port())
	if err != nil {
		return nil, err
	}
	gid, err := SelectGID(table, port.LinkLayer, cfg.GIDIndex)
	if err != nil {
		if port.LinkLayer == LinkEthernet || cfg.GIDIndex >= 0 {
			return nil, fmt.Errorf("create qp on %s port %d: %w", ctx.Name(), cfg.port(), err)
		}
		gid = GIDChoice{Index: 0}
	}

	var ia C.struct_ibv_qp_init_attr
	ia.send_cq = cfg.SendCQ.cq
	ia.recv_cq = cfg.RecvCQ.cq
	ia.cap.max_send_wr = C.uint32_t(cfg.MaxSendWR)
	ia.cap.max_recv_wr = C.uint32_t(cfg.MaxRecvWR)
	ia.cap.max_send_sge = C.uint32_t(orDefault(cfg.MaxSendSGE, 1))
	ia.cap.max_recv_sge = C.uint32_t(orDefault(cfg.MaxRecvSGE, 1))
	ia.cap.max_inline_data = C.uint32_t(cfg.MaxInlineData)
	switch cfg.Type {
	case RC:
		ia.qp_type = C.IBV_QPT_RC
	case UC:
		ia.qp_type = C.IBV_QPT_UC
	case UD:
		ia.qp_type = C.IBV_QPT_UD
	}
	qp, err := C.ibv_create_qp(pd.pd, &ia)
	if qp == nil {
		return nil, fmt.Errorf("%w (type %s, send %d, recv %d, inline %d)", newError("create qp", errnoOf(err)),
			cfg.Type, cfg.MaxSendWR, cfg.MaxRecvWR, cfg.MaxInlineData)
	}
	q := &QP{qp: qp, pd: pd, cfg: cfg, port: port, gid: gid, caps: QPCaps{MaxSendWR: int(ia.cap.max_send_wr),
		MaxRecvWR: int(ia.cap.max_recv_wr), MaxInlineData: int(ia.cap.max_inline_data)}}
	q.id = track("qp " + cfg.Type.String())

	psn := cfg.PSN
	if psn == 0 {
		psn = rand.Uint32() & 0xffffff
	}
	maxRd := cfg.MaxRdAtomic
	if maxRd == 0 {
		maxRd = ctx.info.MaxQPRdAtom // the device maximum, as perftest uses
	}
	maxRd = max(1, min(maxRd, 255)) // the attribute is 8 bits
	q.local = Endpoint{
		QPN:         uint32(qp.qp_num),
		PSN:         psn,
		LID:         port.LID,
		GID:         gid.GID,
		GIDIndex:    gid.Index,
		MTU:         MinMTU(cfg.MTU, port.ActiveMTU),
		MaxRdAtomic: maxRd,
	}
	if cfg.Type == UD {
		q.local.QKey = cfg.QKey
		if q.local.QKey == 0 {
			q.local.QKey = DefaultQKey
		}
	}
	if err := q.toInit(); err != nil {
		q.Close()
		return nil, err
	}
	return q, nil
}

func (q *QP) toInit() error {
	var a C.struct_ibv_qp_attr
	a.qp_state = C.IBV_QPS_INIT
	a.pkey_index = 0
	a.port_num = C.uint8_t(q.cfg.port())
	mask := C.IBV_QP_STATE | C.IBV_QP_PKEY_INDEX | C.IBV_QP_PORT
	switch q.cfg.Type {
	case RC:
		a.qp_access_flags = C.uint(AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic)
		mask |= C.IBV_QP_ACCESS_FLAGS
	case UC:
		a.qp_access_flags = C.uint(AccessLocalWrite | AccessRemoteWrite)
		mask |= C.IBV_QP_ACCESS_FLAGS
	case UD:
		a.qkey = C.uint32_t(q.local.QKey)
		mask |= C.IBV_QP_QKEY
	}
	if rc := C.ibv_modify_qp(q.qp, &a, C.int(mask)); rc != 0 {
		return newError("modify qp to INIT", syscall.Errno(rc))
	}
	return nil
}

// LinkLayer is the link layer of the QP's port.
func (q *QP) LinkLayer() LinkLayer { return q.port.LinkLayer }

// Endpoint returns what the peer needs to connect to this QP.
func (q *QP) Endpoint() Endpoint { return q.local }

// GIDChoice tells which GID the QP uses and why.
func (q *QP) GIDChoice() GIDChoice { return q.gid }

// Type is the QP's transport service.
func (q *QP) Type() QPType { return q.cfg.Type }

// MaxInline is the inline size the device granted.
func (q *QP) MaxInline() int { return q.caps.MaxInlineData }

// Caps are the queue sizes the device granted at creation (at least those
// asked for).
func (q *QP) Caps() QPCaps { return q.caps }

// QueryCaps asks the device for the QP's queue sizes now. Equivalent to
// ibv_query_qp with IBV_QP_CAP.
func (q *QP) QueryCaps() (QPCaps, error) {
	if q.qp == nil {
		return QPCaps{}, ErrClosed
	}
	var a C.struct_ibv_qp_attr
	var ia C.struct_ibv_qp_init_attr
	if rc := C.ibv_query_qp(q.qp, &a, C.IBV_QP_CAP, &ia); rc != 0 {
		return QPCaps{}, newError("query qp", syscall.Errno(rc))
	}
	return QPCaps{MaxSendWR: int(a.cap.max_send_wr), MaxRecvWR: int(a.cap.max_recv_wr), MaxInlineData: int(a.cap.max_inline_data)}, nil
}

// MaxRdAtomic is how many RDMA READs and atomics the QP may have
// outstanding toward its peer (after Connect; RC only): the smaller of
// what this end and the peer accept.
func (q *QP) MaxRdAtomic() int { return q.rdAtomic }

// Connected reports whether Connect succeeded.
func (q *QP) Connected() bool { return q.connected }

// PathMTU is the MTU agreed with the remote endpoint (after Connect).
func (q *QP) PathMTU() MTU { return MinMTU(q.local.MTU, q.remote.MTU) }

func (q *QP) fillAH(ah *C.struct_ibv_ah_attr, remote Endpoint) {
	ah.dlid = C.uint16_t(remote.LID)
	ah.sl = C.uint8_t(q.cfg.SL)
	ah.src_path_bits = 0
	ah.port_num = C.uint8_t(q.cfg.port())
	if q.port.LinkLayer == LinkEthernet || !remote.GID.IsZero() {
		ah.is_global = 1
		*(*[16]byte)(unsafe.Pointer(&ah.grh.dgid)) = remote.GID
		ah.grh.sgid_index = C.uint8_t(q.local.GIDIndex)
		ah.grh.hop_limit = C.uint8_t(orDefault(q.cfg.HopLimit, settings.DefaultHopLimit))
		ah.grh.traffic_class = C.uint8_t(q.cfg.TClass)
		ah.grh.flow_label = C.uint32_t(q.cfg.FlowLabel)
	}
}

// avOf reads the part of an address vector a benchmark chooses.
func avOf(ah *C.struct_ibv_ah_attr) AddressVector {
	var av AddressVector
	av.SL, av.GRH = int(ah.sl), ah.is_global != 0
	if av.GRH {
		av.TClass = int(ah.grh.traffic_class)
		av.FlowLabel = int(ah.grh.flow_label)
		av.HopLimit = int(ah.grh.hop_limit)
		av.SGIDIndex = int(ah.grh.sgid_index)
	}
	return av
}

// AddressVector is the QP's address vector toward its peer as the device
// took it (after Connect): for RC and UC as ibv_query_qp reads it back, for
// UD as its address handle was created.
func (q *QP) AddressVector() AddressVector { return q.av }

// readAV asks the device for a connected QP's address vector.
// Equivalent to ibv_query_qp with IBV_QP_AV.
func (q *QP) readAV() (AddressVector, error) {
	var a C.struct_ibv_qp_attr
	var ia C.struct_ibv_qp_init_attr
	if rc := C.ibv_query_qp(q.qp, &a, C.IBV_QP_AV, &ia); rc != 0 {
		return AddressVector{}, newError("query qp address vector", syscall.Errno(rc))
	}
	return avOf(&a.ah_attr), nil
}

// Connect moves the QP through RTR to RTS toward remote. The path MTU is
// the smaller of the two endpoints'. For UD it creates the address handle
// used for every send.
func (q *QP) Connect(remote Endpoint) error {
	if q.qp == nil {
		return ErrClosed
	}
	if q.connected {
		return fmt.Errorf("connect: qp 0x%x is already connected", q.local.QPN)
	}
	if q.port.LinkLayer == LinkEthernet && remote.GID.IsZero() {
		return fmt.Errorf("connect: the remote endpoint has no GID, and RoCE needs one")
	}
	mtu := MinMTU(q.local.MTU, remote.MTU)
	if !mtu.Valid() {
		return fmt.Errorf("connect: no valid path MTU (local %d, remote %d)", q.local.MTU, remote.MTU)
	}
	var a C.struct_ibv_qp_attr
	a.qp_state = C.IBV_QPS_RTR
	mask := C.IBV_QP_STATE
	switch q.cfg.Type {
	case RC, UC:
		a.path_mtu = C.enum_ibv_mtu(mtuToEnum(mtu))
		a.dest_qp_num = C.uint32_t(remote.QPN)
		a.rq_psn = C.uint32_t(remote.PSN)
		q.fillAH(&a.ah_attr, remote)
		mask |= C.IBV_QP_AV | C.IBV_QP_PATH_MTU | C.IBV_QP_DEST_QPN | C.IBV_QP_RQ_PSN
		if q.cfg.Type == RC {
			a.max_dest_rd_atomic = C.uint8_t(q.local.MaxRdAtomic)
			a.min_rnr_timer = 12
			mask |= C.IBV_QP_MAX_DEST_RD_ATOMIC | C.IBV_QP_MIN_RNR_TIMER
		}
	}
	if rc := C.ibv_modify_qp(q.qp, &a, C.int(mask)); rc != 0 {
		return fmt.Errorf("%w (gid index %d, path mtu %d, remote qpn 0x%x, remote gid %s)",
			newError("modify qp to RTR", syscall.Errno(rc)), q.local.GIDIndex, mtu, remote.QPN, remote.GID)
	}

	a = C.struct_ibv_qp_attr{}
	a.qp_state = C.IBV_QPS_RTS
	a.sq_psn = C.uint32_t(q.local.PSN)
	mask = C.IBV_QP_STATE | C.IBV_QP_SQ_PSN
	if q.cfg.Type == RC {
		a.timeout = C.uint8_t(orDefault(q.cfg.QPTimeout, DefaultQPTimeout))
		// 6, not 7: Soft-RoCE treats 7 as "retry forever", and a peer
		// that died must end in IBV_WC_RETRY_EXC_ERR, not a hang.
		a.retry_cnt = C.uint8_t(orDefault(q.cfg.RetryCnt, 6))
		a.rnr_retry = C.uint8_t(orDefault(q.cfg.RNRRetry, 7))
		q.rdAtomic = min(q.local.MaxRdAtomic, max(remote.MaxRdAtomic, 1))
		a.max_rd_atomic = C.uint8_t(q.rdAtomic)
		mask |= C.IBV_QP_TIMEOUT | C.IBV_QP_RETRY_CNT | C.IBV_QP_RNR_RETRY | C.IBV_QP_MAX_QP_RD_ATOMIC
	}
	if rc := C.ibv_modify_qp(q.qp, &a, C.int(mask)); rc != 0 {
		return newError("modify qp to RTS", syscall.Errno(rc))
	}
	if q.cfg.Type == UD {
		var ah C.struct_ibv_ah_attr
		q.fillAH(&ah, remote)
		h, err := C.ibv_create_ah(q.pd.pd, &ah)
		if h == nil {
			return newError("create ah", errnoOf(err))
		}
		q.ah = h
		q.ahID = track("ah")
		q.av = avOf(&ah)
		if remote.QKey == 0 {
			remote.QKey = DefaultQKey
		}
	} else {
		av, err := q.readAV()
		if err != nil {
			return err
		}
		q.av = av
	}
	q.remote = remote
	q.connected = true
	return nil
}

func wrOpcode(o Opcode) (C.enum_ibv_wr_opcode, error) {
	switch o {
	case OpWrite:
		return C.IBV_WR_RDMA_WRITE, nil
	case OpWriteImm:
		return C.IBV_WR_RDMA_WRITE_WITH_IMM, nil
	case OpSend:
		return C.IBV_WR_SEND, nil
	case OpSendImm:
		return C.IBV_WR_SEND_WITH_IMM, nil
	case OpRead:
		return C.IBV_WR_RDMA_READ, nil
	case OpCompSwap:
		return C.IBV_WR_ATOMIC_CMP_AND_SWP, nil
	case OpFetchAdd:
		return C.IBV_WR_ATOMIC_FETCH_AND_ADD, nil
	}
	return 0, fmt.Errorf("unknown opcode %d", int(o))
}

// Close destroys the QP (and its address handle). Outstanding work is
// discarded.
func (q *QP) Close() error {
	if q == nil || q.qp == nil {
		return nil
	}
	var first error
	if q.ah != nil {
		if rc := C.ibv_destroy_ah(q.ah); rc != 0 {
			first = newError("destroy ah", syscall.Errno(rc))
		}
		q.ah = nil
		untrack(q.ahID)
	}
	if rc := C.ibv_destroy_qp(q.qp); rc != 0 && first == nil {
		first = newError("destroy qp", syscall.Errno(rc))
	}
	q.qp = nil
	q.wr.free()
	q.wr = nil
	untrack(q.id)
	q.connected = false
	return first
}
