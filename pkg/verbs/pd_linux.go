//go:build linux && cgo

package verbs

/*
#include "rb.h"
*/
import "C"

import "syscall"

// PD is a protection domain. Equivalent to what `rdma resource show pd` lists.
type PD struct {
	pd  *C.struct_ibv_pd
	ctx *Context
	id  int
}

// AllocPD allocates a protection domain.
func (c *Context) AllocPD() (*PD, error) {
	if c.ctx == nil {
		return nil, ErrClosed
	}
	pd, err := C.ibv_alloc_pd(c.ctx)
	if pd == nil {
		return nil, newError("alloc pd", errnoOf(err))
	}
	return &PD{pd: pd, ctx: c, id: track("pd")}, nil
}

// Context returns the device the PD belongs to.
func (pd *PD) Context() *Context { return pd.ctx }

// Close frees the PD. Its MRs, QPs and AHs must be closed first.
func (pd *PD) Close() error {
	if pd == nil || pd.pd == nil {
		return nil
	}
	rc := C.ibv_dealloc_pd(pd.pd)
	pd.pd = nil
	untrack(pd.id)
	if rc != 0 {
		return newError("dealloc pd", syscall.Errno(rc))
	}
	return nil
}
