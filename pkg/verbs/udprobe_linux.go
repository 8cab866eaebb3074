//go:build linux && cgo

package verbs

/*
#include <stdlib.h>
#include "udprobe.h"
#include "rb.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// UDProbe is a UD QP of the UD probe: its CQs, a completion channel, a
// buffer of receives and sends and its MR, all made by OpenUDProbe and
// freed by Close. A responder's Serve runs on one thread; a prober's Ping
// is called by one goroutine at a time.
type UDProbe struct {
	u     *C.struct_rb_udp
	pd    *PD
	local Endpoint
	gid   GIDChoice
	id    int
}

// OpenUDProbe creates a UD probe QP on pd and moves it to RTS, with its
// receives posted. Equivalent to a UD QP of `ibv_ud_pingpong`.
func (pd *PD) OpenUDProbe(cfg UDProbeConfig) (*UDProbe, error) {
	if pd.pd == nil {
		return nil, ErrClosed
	}
	port := max(cfg.Port, 1)
	pi, err := pd.ctx.QueryPort(port)
	if err != nil {
		return nil, err
	}
	table, err := pd.ctx.GIDTable(port)
	if err != nil {
		return nil, err
	}
	gid, err := SelectGID(table, pi.LinkLayer, cfg.GIDIndex)
	if err != nil {
		return nil, fmt.Errorf("ud probe on %s port %d: %w", pd.ctx.Name(), port, err)
	}
	size := cfg.Size
	if size == 0 {
		size = int(pi.ActiveMTU)
	}
	if size < UDProbeMinSize || size > int(pi.ActiveMTU) {
		return nil, fmt.Errorf("ud probe: a message of %d bytes: want %d to %d (the active MTU of %s port %d)",
			size, UDProbeMinSize, int(pi.ActiveMTU), pd.ctx.Name(), port)
	}
	qkey := cfg.QKey
	if qkey == 0 {
		qkey = DefaultQKey
	}
	// A device that cannot say stamps none.
	mask, khz, _ := pd.ctx.completionClock()
	hostStamps := 0
	if cfg.hostStamps {
		hostStamps = 1
	}
	var u *C.struct_rb_udp
	var where *C.char
	if rc := C.rb_udp_open(pd.pd, C.uint8_t(port), C.uint8_t(gid.Index), C.uint32_t(size), C.uint32_t(orDefault(cfg.Recv, 16)),
		C.uint32_t(orDefault(cfg.Send, 16)), C.uint32_t(qkey), C.uint64_t(mask), C.uint64_t(khz), C.int(hostStamps),
		&u, &where); rc != 0 {
		return nil, newError("ud probe: "+C.GoString(where), syscall.Errno(rc))
	}
	p := &UDProbe{u: u, pd: pd, gid: gid, id: track("ud probe qp")}
	p.local = Endpoint{QPN: uint32(C.rb_udp_qpn(u)), LID: pi.LID, GID: gid.GID, GIDIndex: gid.Index,
		MTU: pi.ActiveMTU, QKey: qkey}
	return p, nil
}

// Endpoint is what a peer needs to probe this QP: its QPN, Q_Key, GID and
// LID.
func (p *UDProbe) Endpoint() Endpoint { return p.local }

// Stamps tells which clock stamps the QP's work completions: StampsNone,
// or the NIC's (StampsNICNs, StampsNICCycles). A stamped responder sends
// its delay after each answer to a stamped prober, and a stamped prober's
// Ping measures the network's round trips.
func (p *UDProbe) Stamps() Stamps { return stampsByMode[p.u.stamps] }

// stampsByMode is the Stamps of each of udprobe.h's RB_UDP_TS_*.
var stampsByMode = [...]Stamps{C.RB_UDP_TS_NONE: StampsNone, C.RB_UDP_TS_WALLCLOCK: StampsNICNs,
	C.RB_UDP_TS_CYCLES: StampsNICCycles, C.RB_UDP_TS_HOST: stampsHost}

// stampsNs is the ns from stamp a to stamp b of a QP stamping as s, with
// its clock's mask and rate (kHz): rb_udp_ts_ns.
func stampsNs(s Stamps, mask, khz, a, b uint64) uint64 {
	u := C.struct_rb_udp{stamps: C.int(slices.Index(stampsByMode[:], s)), ts_mask: C.uint64_t(mask), ts_khz: C.uint64_t(khz)}
	return uint64(C.rb_udp_ts_ns(&u, C.uint64_t(a), C.uint64_t(b)))
}

// GIDChoice tells which GID the QP sends from and why.
func (p *UDProbe) GIDChoice() GIDChoice { return p.gid }

// Serve answers every probe that arrives until Stop (nil) or an error. It
// sleeps on the completion channel while nothing arrives; run it on a
// goroutine of its own (it holds its OS thread).
func (p *UDProbe) Serve() error {
	if rc := C.rb_udp_serve(p.u); rc != 0 {
		return p.err(C.int64_t(rc))
	}
	return nil
}

// Stop makes Serve return; safe from any goroutine.
func (p *UDProbe) Stop() { C.rb_udp_stop(p.u) }

// Counters reads the QP's counters. A prober's are read between its
// Pings; a responder's Served at any time.
func (p *UDProbe) Counters() UDProbeCounters {
	return UDProbeCounters{
		Served:         atomic.LoadUint64((*uint64)(unsafe.Pointer(&p.u.served))),
		Bad:            atomic.LoadUint64((*uint64)(unsafe.Pointer(&p.u.bad))),
		Late:           uint64(p.u.late),
		AddressHandles: uint64(p.u.ah_made),
		Delays:         uint64(p.u.delays),
		Stamped:        uint64(p.u.stamped),
	}
}

// Address makes an address handle toward remote's GID with the path's
// traffic class, hop limit (64 when 0) and service level. Equivalent to
// ibv_create_ah.
func (p *UDProbe) Address(remote Endpoint, tclass, hopLimit, sl int) (*UDAddress, error) {
	if remote.GID.IsZero() {
		return nil, errors.New("ud probe: the peer's endpoint has no GID")
	}
	var ah *C.struct_ibv_ah
	if rc := C.rb_udp_ah(p.u, (*C.uint8_t)(unsafe.Pointer(&remote.GID[0])), C.uint8_t(tclass), C.uint8_t(hopLimit),
		C.uint8_t(sl), &ah); rc != 0 {
		return nil, fmt.Errorf("%w (remote gid %s)", newError("create ah", syscall.Errno(rc)), remote.GID)
	}
	return &UDAddress{ah: ah, id: track("ah")}, nil
}

// UDAddress is an address handle toward a peer's GID, from a UD probe QP.
type UDAddress struct {
	ah *C.struct_ibv_ah
	id int
}

// Close destroys the address handle.
func (a *UDAddress) Close() error {
	if a == nil || a.ah == nil {
		return nil
	}
	rc := C.ibv_destroy_ah(a.ah)
	a.ah = nil
	untrack(a.id)
	if rc != 0 {
		return newError("destroy ah", syscall.Errno(rc))
	}
	return nil
}

// Ping runs len(samples) ping-pongs with the responder remote (its QPN
// and Q_Key) behind a, each sample the round trip in ns (CLOCK_MONOTONIC),
// from the post of the probe to the poll that found its answer. It spins
// on its completion queue for spin, then sleeps on the completion channel
// until the answer or the deadline. With net (as long as samples) on a
// stamped QP (Stamps), each ping-pong asks for the responder's delay, and
// net[i] is the network's round trip in ns: from the probe's send
// completion to its answer's receive completion (this NIC's stamps) less
// the responder's delay (from the probe's receive completion to the
// answer's send completion, its NIC's), as R-Pingmesh measures it; 0
// where a stamp or the delay is missing (a responder that does not
// stamp). It returns the ping-pongs done: all, or fewer with an error
// (ErrTimeout: the deadline passed). One cgo call; nothing allocated.
func (p *UDProbe) Ping(a *UDAddress, remote Endpoint, samples, net []uint64, spin time.Duration, deadline time.Time) (int, error) {
	if len(samples) == 0 {
		return 0, nil
	}
	var netp *C.uint64_t
	if net != nil {
		if len(net) != len(samples) {
			return 0, fmt.Errorf("ud probe: %d network samples for %d ping-pongs", len(net), len(samples))
		}
		netp = (*C.uint64_t)(unsafe.Pointer(&net[0]))
	}
	qkey := remote.QKey
	if qkey == 0 {
		qkey = DefaultQKey
	}
	now := uint64(C.rb_mono_ns())
	dl := now
	if d := time.Until(deadline); d > 0 {
		dl += uint64(d)
	}
	rc := C.rb_udp_ping(p.u, a.ah, C.uint32_t(remote.QPN), C.uint32_t(qkey), C.uint64_t(len(samples)),
		(*C.uint64_t)(unsafe.Pointer(&samples[0])), netp, C.uint64_t(spin), C.uint64_t(dl))
	done := int(p.u.done)
	if rc < 0 {
		return done, p.err(rc)
	}
	return done, nil
}

func (p *UDProbe) err(code C.int64_t) error {
	switch code {
	case C.RB_EWC:
		return &WCError{Status: WCStatus(p.u.wc_status), QPN: p.local.QPN}
	case C.RB_ETIMEDOUT:
		return fmt.Errorf("%w: no answer by the deadline", ErrTimeout)
	case C.RB_EPOST:
		return newError("post", syscall.Errno(p.u.err))
	case C.RB_EPOLL:
		return newError("poll cq", syscall.Errno(p.u.err))
	}
	return fmt.Errorf("ud probe: unexpected result %d", int64(code))
}

// Close destroys the QP, its address handles, CQs, channel, MR and
// buffer. Serve must have returned.
func (p *UDProbe) Close() error {
	if p == nil || p.u == nil {
		return nil
	}
	C.rb_udp_close(p.u)
	p.u = nil
	untrack(p.id)
	return nil
}
