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
)

// CQ is a completion queue, with an optional completion channel.
// Equivalent to what `rdma resource show cq` lists.
type CQ struct {
	cq    *C.struct_ibv_cq
	ch    *C.struct_ibv_comp_channel
	depth int
	id    int
	// poll holds the C arrays of Poll, made on first use.
	poll *pollArrays
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
	q.id = track("cq")
	return q, nil
}

// Depth is the depth the CQ was asked for.
func (q *CQ) Depth() int { return q.depth }

// HasEvents reports whether the CQ has a completion channel.
func (q *CQ) HasEvents() bool { return q.ch != nil }

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
	q.poll.free()
	q.poll = nil
	untrack(q.id)
	if rc != 0 {
		return newError("destroy cq", syscall.Errno(rc))
	}
	return nil
}
