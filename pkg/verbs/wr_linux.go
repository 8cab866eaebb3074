//go:build linux && cgo

package verbs

// The per-work-request API: PostSend, PostRecv, Poll and WaitN cross cgo
// once per call, for data checks, tests and tools. The timed loops
// (loop_linux.go) never use it; its C arrays are made on a QP's or CQ's
// first call, so it costs nothing when unused.

/*
#include <stdlib.h>
#include <poll.h>
#include "rb.h"
*/
import "C"

import (
	"fmt"
	"syscall"
	"time"
	"unsafe"
)

// maxPostList bounds how many WRs one PostSend or PostRecv call takes.
const maxPostList = 64

// maxSGEPerWR bounds the SGEs of one WR in PostSend and PostRecv.
const maxSGEPerWR = 4

// maxPoll is how many completions one Poll call reaps at most.
const maxPoll = 32

// wrArrays are the C arrays a QP's PostSend and PostRecv fill.
type wrArrays struct {
	descs  *C.struct_rb_wr_desc
	sges   *C.struct_ibv_sge
	wrs    *C.struct_ibv_send_wr
	rwrs   *C.struct_ibv_recv_wr
	rids   *C.uint64_t
	rnsges *C.int
}

// arrays returns the QP's work-request arrays, making them on first use.
func (q *QP) arrays() *wrArrays {
	if q.wr == nil {
		q.wr = &wrArrays{
			descs:  (*C.struct_rb_wr_desc)(C.calloc(maxPostList, C.size_t(unsafe.Sizeof(C.struct_rb_wr_desc{})))),
			sges:   (*C.struct_ibv_sge)(C.calloc(maxPostList*maxSGEPerWR, C.size_t(unsafe.Sizeof(C.struct_ibv_sge{})))),
			wrs:    (*C.struct_ibv_send_wr)(C.calloc(maxPostList, C.size_t(unsafe.Sizeof(C.struct_ibv_send_wr{})))),
			rwrs:   (*C.struct_ibv_recv_wr)(C.calloc(maxPostList, C.size_t(unsafe.Sizeof(C.struct_ibv_recv_wr{})))),
			rids:   (*C.uint64_t)(C.calloc(maxPostList, 8)),
			rnsges: (*C.int)(C.calloc(maxPostList, C.size_t(unsafe.Sizeof(C.int(0))))),
		}
	}
	return q.wr
}

func (a *wrArrays) free() {
	if a == nil {
		return
	}
	for _, p := range []unsafe.Pointer{unsafe.Pointer(a.descs), unsafe.Pointer(a.sges), unsafe.Pointer(a.wrs),
		unsafe.Pointer(a.rwrs), unsafe.Pointer(a.rids), unsafe.Pointer(a.rnsges)} {
		C.free(p)
	}
}

// pollArrays are the C arrays a CQ's Poll fills.
type pollArrays struct {
	scratch *C.struct_ibv_wc // maxPoll entries
	out     *C.struct_rb_wc  // maxPoll entries
}

func (a *pollArrays) free() {
	if a == nil {
		return
	}
	C.free(unsafe.Pointer(a.scratch))
	C.free(unsafe.Pointer(a.out))
}

// SGE is one local scatter/gather element: a byte range of a registered MR.
type SGE struct {
	MR     *MR
	Offset uint64
	Length uint32
}

// SendWR is one send work request for PostSend.
type SendWR struct {
	ID       uint64
	Opcode   Opcode
	SGEs     []SGE
	Signaled bool
	Inline   bool
	Imm      uint32       // immediate data, for OpSendImm and OpWriteImm
	Remote   RemoteBuffer // target of WRITE, READ and atomics (Addr is absolute)
	Compare  uint64       // OpCompSwap: expected value
	SwapAdd  uint64       // OpCompSwap: new value; OpFetchAdd: addend
}

// RecvWR is one receive work request for PostRecv.
type RecvWR struct {
	ID   uint64
	SGEs []SGE
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
	a := q.arrays()
	descs := unsafe.Slice(a.descs, maxPostList)
	sges := unsafe.Slice(a.sges, maxPostList*maxSGEPerWR)
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
	rc := C.rb_post_send(q.qp, a.descs, C.int(len(wrs)), a.sges, a.wrs, ah,
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
	a := q.arrays()
	ids := unsafe.Slice(a.rids, maxPostList)
	ns := unsafe.Slice(a.rnsges, maxPostList)
	sges := unsafe.Slice(a.sges, maxPostList*maxSGEPerWR)
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
	if rc := C.rb_post_recv(q.qp, a.rids, a.rnsges, a.sges, C.int(len(wrs)), a.rwrs, &bad); rc != 0 {
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

// Poll reaps up to len(wcs) completions without blocking.
func (q *CQ) Poll(wcs []WC) (int, error) {
	if q.cq == nil {
		return 0, ErrClosed
	}
	n := len(wcs)
	if n > maxPoll {
		n = maxPoll
	}
	if n == 0 {
		return 0, nil
	}
	if q.poll == nil {
		q.poll = &pollArrays{
			scratch: (*C.struct_ibv_wc)(C.calloc(maxPoll, C.size_t(unsafe.Sizeof(C.struct_ibv_wc{})))),
			out:     (*C.struct_rb_wc)(C.calloc(maxPoll, C.size_t(unsafe.Sizeof(C.struct_rb_wc{})))),
		}
	}
	got := C.rb_poll_cq(q.cq, C.int(n), q.poll.scratch, q.poll.out)
	if got < 0 {
		return 0, newError("poll cq", syscall.Errno(-got))
	}
	out := unsafe.Slice(q.poll.out, int(got))
	for i, w := range out {
		wcs[i] = WC{
			ID:        uint64(w.id),
			Status:    WCStatus(w.status),
			Opcode:    WCOpcode(w.opcode),
			VendorErr: uint32(w.vendor_err),
			ByteLen:   uint32(w.byte_len),
			Imm:       uint32(w.imm),
			HasImm:    w.has_imm != 0,
			QPN:       uint32(w.qp_num),
			SrcQP:     uint32(w.src_qp),
		}
	}
	return int(got), nil
}

// WaitN polls until n completions arrived or timeout passed, blocking on
// the completion channel when the CQ has one. It returns the completions
// reaped so far; a failed completion is returned as its *WCError.
func (q *CQ) WaitN(n int, timeout time.Duration) ([]WC, error) {
	deadline := time.Now().Add(timeout)
	var out []WC
	buf := make([]WC, maxPoll)
	for len(out) < n {
		want := n - len(out)
		if want > maxPoll {
			want = maxPoll
		}
		got, err := q.Poll(buf[:want])
		if err != nil {
			return out, err
		}
		for _, wc := range buf[:got] {
			out = append(out, wc)
			if err := wc.Err(); err != nil {
				return out, err
			}
		}
		if got > 0 {
			continue
		}
		if time.Now().After(deadline) {
			return out, ErrTimeout
		}
		if q.ch != nil {
			if err := q.waitEvent(10 * time.Millisecond); err != nil {
				return out, err
			}
		} else {
			time.Sleep(10 * time.Microsecond)
		}
	}
	return out, nil
}

// waitEvent arms the CQ and waits up to d for its completion event.
func (q *CQ) waitEvent(d time.Duration) error {
	if rc := C.ibv_req_notify_cq(q.cq, 0); rc != 0 {
		return newError("req notify cq", syscall.Errno(rc))
	}
	pfd := C.struct_pollfd{fd: q.ch.fd, events: C.POLLIN}
	r, err := C.poll(&pfd, 1, C.int(d/time.Millisecond))
	if r < 0 {
		if errnoOf(err) == syscall.EINTR {
			return nil
		}
		return newError("poll completion channel", errnoOf(err))
	}
	if r == 0 {
		return nil
	}
	var evcq *C.struct_ibv_cq
	var evctx unsafe.Pointer
	if rc, err := C.ibv_get_cq_event(q.ch, &evcq, &evctx); rc != 0 {
		return newError("get cq event", errnoOf(err))
	}
	C.ibv_ack_cq_events(evcq, 1)
	return nil
}
