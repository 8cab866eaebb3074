//go:build linux && cgo

package verbs

/*
#include <stdlib.h>
#include <poll.h>
#include "rb.h"
*/
import "C"

import (
	"syscall"
	"time"
	"unsafe"
)

// maxPoll is how many completions one Poll call reaps at most.
const maxPoll = 32

// CQ is a completion queue, with an optional completion channel.
// Equivalent to what `rdma resource show cq` lists.
type CQ struct {
	cq      *C.struct_ibv_cq
	ch      *C.struct_ibv_comp_channel
	scratch *C.struct_ibv_wc // maxPoll entries, C memory
	out     *C.struct_rb_wc  // maxPoll entries, C memory
	depth   int
	id      int
}

// CreateCQ creates a completion queue of at least cfg.Depth entries.
func (c *Context) CreateCQ(cfg CQConfig) (*CQ, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if c.ctx == nil {
		return nil, ErrClosed
	}
	q := &CQ{depth: cfg.Depth}
	if cfg.Events {
		ch, err := C.ibv_create_comp_channel(c.ctx)
		if ch == nil {
			return nil, newError("create completion channel", errnoOf(err))
		}
		q.ch = ch
	}
	cq, err := C.ibv_create_cq(c.ctx, C.int(cfg.Depth), nil, q.ch, 0)
	if cq == nil {
		if q.ch != nil {
			C.ibv_destroy_comp_channel(q.ch)
		}
		return nil, newError("create cq", errnoOf(err))
	}
	q.cq = cq
	q.scratch = (*C.struct_ibv_wc)(C.calloc(maxPoll, C.size_t(unsafe.Sizeof(C.struct_ibv_wc{}))))
	q.out = (*C.struct_rb_wc)(C.calloc(maxPoll, C.size_t(unsafe.Sizeof(C.struct_rb_wc{}))))
	q.id = track("cq")
	return q, nil
}

// Depth is the depth the CQ was asked for.
func (q *CQ) Depth() int { return q.depth }

// HasEvents reports whether the CQ has a completion channel.
func (q *CQ) HasEvents() bool { return q.ch != nil }

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
	got := C.rb_poll_cq(q.cq, C.int(n), q.scratch, q.out)
	if got < 0 {
		return 0, newError("poll cq", syscall.Errno(-got))
	}
	out := unsafe.Slice(q.out, int(got))
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

// Close destroys the CQ and its completion channel. QPs using it must be
// closed first.
func (q *CQ) Close() error {
	if q == nil || q.cq == nil {
		return nil
	}
	rc := C.ibv_destroy_cq(q.cq)
	q.cq = nil
	if q.ch != nil {
		C.ibv_destroy_comp_channel(q.ch)
		q.ch = nil
	}
	C.free(unsafe.Pointer(q.scratch))
	C.free(unsafe.Pointer(q.out))
	untrack(q.id)
	if rc != 0 {
		return newError("destroy cq", syscall.Errno(rc))
	}
	return nil
}
