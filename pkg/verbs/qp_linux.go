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
)

// maxPostList bounds how many WRs one PostSend or PostRecv call takes.
const maxPostList = 64

// maxSGEPerWR bounds the SGEs of one WR in PostSend and PostRecv.
const maxSGEPerWR = 4

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
	connected bool
	maxInline int
	port      PortInfo
	gid       GIDChoice
	id        int

	// C arrays reused by PostSend / PostRecv.
	descs  *C.struct_rb_wr_desc
	sges   *C.struct_ibv_sge
	wrs    *C.struct_ibv_send_wr
	rwrs   *C.struct_ibv_recv_wr
	rids   *C.uint64_t
	rnsges *C.int
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
	q := &QP{qp: qp, pd: pd, cfg: cfg, port: port, gid: gid, maxInline: int(ia.cap.max_inline_data)}
	q.id = track("qp " + cfg.Type.String())
	q.allocArrays()

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

func (q *QP) allocArrays() {
	q.descs = (*C.struct_rb_wr_desc)(C.calloc(maxPostList, C.size_t(unsafe.Sizeof(C.struct_rb_wr_desc{}))))
	q.sges = (*C.struct_ibv_sge)(C.calloc(maxPostList*maxSGEPerWR, C.size_t(unsafe.Sizeof(C.struct_ibv_sge{}))))
	q.wrs = (*C.struct_ibv_send_wr)(C.calloc(maxPostList, C.size_t(unsafe.Sizeof(C.struct_ibv_send_wr{}))))
	q.rwrs = (*C.struct_ibv_recv_wr)(C.calloc(maxPostList, C.size_t(unsafe.Sizeof(C.struct_ibv_recv_wr{}))))
	q.rids = (*C.uint64_t)(C.calloc(maxPostList, 8))
	q.rnsges = (*C.int)(C.calloc(maxPostList, C.size_t(unsafe.Sizeof(C.int(0)))))
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

// Endpoint returns what the peer needs to connect to this QP.
func (q *QP) Endpoint() Endpoint { return q.local }

// GIDChoice tells which GID the QP uses and why.
func (q *QP) GIDChoice() GIDChoice { return q.gid }

// Type is the QP's transport service.
func (q *QP) Type() QPType { return q.cfg.Type }

// MaxInline is the inline size the device granted.
func (q *QP) MaxInline() int { return q.maxInline }

// Connected reports whether Connect succeeded.
func (q *QP) Connected() bool { return q.connected }

// PathMTU is the MTU agreed with the remote endpoint (after Connect).
func (q *QP) PathMTU() MTU { return MinMTU(q.local.MTU, q.remote.MTU) }

func (q *QP) fillAH(ah *C.struct_ibv_ah_attr, remote Endpoint) {
	ah.dlid = C.uint16_t(remote.LID)
	ah.sl = 0
	ah.src_path_bits = 0
	ah.port_num = C.uint8_t(q.cfg.port())
	if q.port.LinkLayer == LinkEthernet || !remote.GID.IsZero() {
		ah.is_global = 1
		*(*[16]byte)(unsafe.Pointer(&ah.grh.dgid)) = remote.GID
		ah.grh.sgid_index = C.uint8_t(q.local.GIDIndex)
		ah.grh.hop_limit = 64
		ah.grh.traffic_class = 0
		ah.grh.flow_label = 0
	}
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
		a.timeout = C.uint8_t(orDefault(q.cfg.Timeout, 14))
		// 6, not 7: Soft-RoCE treats 7 as "retry forever", and a peer
		// that died must end in IBV_WC_RETRY_EXC_ERR, not a hang.
		a.retry_cnt = C.uint8_t(orDefault(q.cfg.RetryCnt, 6))
		a.rnr_retry = C.uint8_t(orDefault(q.cfg.RNRRetry, 7))
		a.max_rd_atomic = C.uint8_t(min(q.local.MaxRdAtomic, max(remote.MaxRdAtomic, 1)))
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
		if remote.QKey == 0 {
			remote.QKey = DefaultQKey
		}
	}
	q.remote = remote
	q.connected = true
	return nil
}

// PostSend posts wrs with one ibv_post_send. Sends are refused with
// ErrNotConnected until Connect succeeded.
func (q *QP) PostSend(wrs []SendWR) error {
	if q.qp == nil {
		return ErrClosed
	}
	if !q.connected {
		return fmt.Errorf("post send on qp 0x%x: %w", q.local.QPN, ErrNotConnected)
	}
	if len(wrs) == 0 {
		return nil
	}
	if len(wrs) > maxPostList {
		return fmt.Errorf("post send: %d work requests exceed the post list limit %d", len(wrs), maxPostList)
	}
	descs := unsafe.Slice(q.descs, maxPostList)
	sges := unsafe.Slice(q.sges, maxPostList*maxSGEPerWR)
	off := 0
	for i, w := range wrs {
		if len(w.SGEs) > maxSGEPerWR {
			return fmt.Errorf("post send: %d SGEs exceed %d", len(w.SGEs), maxSGEPerWR)
		}
		op, err := wrOpcode(w.Opcode)
		if err != nil {
			return err
		}
		if q.cfg.Type == UD && op != C.IBV_WR_SEND && op != C.IBV_WR_SEND_WITH_IMM {
			return fmt.Errorf("post send: %s is not allowed on a UD QP (only SEND)", w.Opcode)
		}
		if q.cfg.Type == UC && (w.Opcode == OpRead || w.Opcode.IsAtomic()) {
			return fmt.Errorf("post send: %s is not allowed on a UC QP", w.Opcode)
		}
		var flags C.uint
		if w.Signaled {
			flags |= C.IBV_SEND_SIGNALED
		}
		if w.Inline {
			flags |= C.IBV_SEND_INLINE
		}
		descs[i] = C.struct_rb_wr_desc{
			id: C.uint64_t(w.ID), opcode: C.int(op), flags: C.uint(flags), imm: C.uint32_t(w.Imm),
			raddr: C.uint64_t(w.Remote.Addr), rkey: C.uint32_t(w.Remote.RKey),
			compare: C.uint64_t(w.Compare), swap_add: C.uint64_t(w.SwapAdd),
			nsge: C.int(len(w.SGEs)), sge_off: C.int(off),
		}
		for _, s := range w.SGEs {
			if err := s.check(); err != nil {
				return fmt.Errorf("post send: %w", err)
			}
			sges[off] = C.struct_ibv_sge{addr: C.uint64_t(s.MR.Addr() + s.Offset), length: C.uint32_t(s.Length), lkey: C.uint32_t(s.MR.LKey())}
			off++
		}
	}
	var bad C.int
	var ah *C.struct_ibv_ah
	if q.cfg.Type == UD {
		ah = q.ah
	}
	rc := C.rb_post_send(q.qp, q.descs, C.int(len(wrs)), q.sges, q.wrs, ah,
		C.uint32_t(q.remote.QPN), C.uint32_t(q.remote.QKey), &bad)
	if rc != 0 {
		return fmt.Errorf("%w (work request %d of %d)", newError("post send", syscall.Errno(rc)), int(bad)+1, len(wrs))
	}
	return nil
}

// PostRecv posts receive work requests. It is allowed before Connect.
func (q *QP) PostRecv(wrs []RecvWR) error {
	if q.qp == nil {
		return ErrClosed
	}
	if len(wrs) > maxPostList {
		return fmt.Errorf("post recv: %d work requests exceed the post list limit %d", len(wrs), maxPostList)
	}
	ids := unsafe.Slice(q.rids, maxPostList)
	ns := unsafe.Slice(q.rnsges, maxPostList)
	sges := unsafe.Slice(q.sges, maxPostList*maxSGEPerWR)
	off := 0
	for i, w := range wrs {
		if len(w.SGEs) > maxSGEPerWR {
			return fmt.Errorf("post recv: %d SGEs exceed %d", len(w.SGEs), maxSGEPerWR)
		}
		ids[i] = C.uint64_t(w.ID)
		ns[i] = C.int(len(w.SGEs))
		for _, s := range w.SGEs {
			if err := s.check(); err != nil {
				return fmt.Errorf("post recv: %w", err)
			}
			sges[off] = C.struct_ibv_sge{addr: C.uint64_t(s.MR.Addr() + s.Offset), length: C.uint32_t(s.Length), lkey: C.uint32_t(s.MR.LKey())}
			off++
		}
	}
	var bad C.int
	if rc := C.rb_post_recv(q.qp, q.rids, q.rnsges, q.sges, C.int(len(wrs)), q.rwrs, &bad); rc != 0 {
		return fmt.Errorf("%w (work request %d of %d)", newError("post recv", syscall.Errno(rc)), int(bad)+1, len(wrs))
	}
	return nil
}

func (s SGE) check() error {
	if s.MR == nil || s.MR.mr == nil {
		return fmt.Errorf("SGE without a live MR")
	}
	if s.Offset+uint64(s.Length) > s.MR.len {
		return fmt.Errorf("SGE [%d, %d) is outside its MR of %d bytes", s.Offset, s.Offset+uint64(s.Length), s.MR.len)
	}
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
	for _, p := range []unsafe.Pointer{unsafe.Pointer(q.descs), unsafe.Pointer(q.sges), unsafe.Pointer(q.wrs),
		unsafe.Pointer(q.rwrs), unsafe.Pointer(q.rids), unsafe.Pointer(q.rnsges)} {
		C.free(p)
	}
	untrack(q.id)
	q.connected = false
	return first
}
