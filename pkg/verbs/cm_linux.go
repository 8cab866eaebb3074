//go:build linux && cgo

package verbs

/*
#cgo LDFLAGS: -lrdmacm
#include <errno.h>
#include <stdlib.h>
#include "cm.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"time"
	"unsafe"
)

// rdma_cm (librdmacm) sets up the connection of QPs made here: the QPs are
// not associated with their rdma_cm ids, and this package moves them
// through their states with the attributes rdma_cm gives
// (rdma_init_qp_attr), as librdmacm does for the QPs it makes itself. So
// the same QPs, buffers and loops serve whether the connection was set up
// by exchanging endpoints or by rdma_cm, and the address vector this
// package is asked for (traffic class, service level, flow label) is
// applied over rdma_cm's route. Equivalent to what `rping` and perftest's
// -R do.

// cmResolveTimeout bounds address and route resolution, as perftest's.
const cmResolveTimeout = 2000 * time.Millisecond

// cmWaitSlice is how often a wait for an event looks at its context.
const cmWaitSlice = 100 * time.Millisecond

// cmChannel is an rdma_cm event channel.
type cmChannel struct {
	ch *C.struct_rdma_event_channel
	id int
}

func newCMChannel() (*cmChannel, error) {
	ch, err := C.rdma_create_event_channel()
	if ch == nil {
		return nil, cmErr("rdma_create_event_channel", err)
	}
	return &cmChannel{ch: ch, id: track("rdma_cm event channel")}, nil
}

func (c *cmChannel) close() {
	if c == nil || c.ch == nil {
		return
	}
	C.rdma_destroy_event_channel(c.ch)
	c.ch = nil
	untrack(c.id)
}

// cmEvent is one event, read and acknowledged: its fields copied out.
type cmEvent struct {
	kind   C.enum_rdma_cm_event_type
	status int
	id     *C.struct_rdma_cm_id
	listen *C.struct_rdma_cm_id
	priv   []byte
	// connected port spaces
	respRes, initDepth int
	// RDMA_PS_UDP
	udQPN, udQKey uint32
	udAH          C.struct_ibv_ah_attr
}

func (e *cmEvent) name() string { return C.GoString(C.rdma_event_str(e.kind)) }

// err describes an event that was not the one awaited.
func (e *cmEvent) err(waiting string) error {
	msg := fmt.Sprintf("rdma_cm: %s while waiting for %s", e.name(), waiting)
	if e.status != 0 {
		msg += fmt.Sprintf(" (status %d", e.status)
		if e.status < 0 {
			msg += ": " + syscall.Errno(-e.status).Error()
		}
		msg += ")"
	}
	switch e.kind {
	case C.RDMA_CM_EVENT_ADDR_ERROR, C.RDMA_CM_EVENT_ROUTE_ERROR:
		msg += ": check that the address is on an RDMA device's port and that it routes to the peer"
	case C.RDMA_CM_EVENT_UNREACHABLE, C.RDMA_CM_EVENT_REJECTED:
		msg += ": is the peer listening, and on the port given?"
	}
	return errors.New(msg)
}

// wait returns the channel's next event, acknowledged, or an error when
// ctx ends or deadline passes first.
func (c *cmChannel) wait(ctx context.Context, deadline time.Time, waiting string) (cmEvent, error) {
	for {
		if err := ctx.Err(); err != nil {
			return cmEvent{}, fmt.Errorf("rdma_cm: waiting for %s: %w", waiting, err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return cmEvent{}, fmt.Errorf("rdma_cm: no %s within the idle timeout: %w", waiting, ErrTimeout)
		}
		var ev *C.struct_rdma_cm_event
		rc := C.rb_cm_wait(c.ch, C.int(min(left, cmWaitSlice).Milliseconds()+1), &ev)
		if rc == -C.ETIMEDOUT || rc == -C.EINTR {
			continue
		}
		if rc != 0 {
			return cmEvent{}, cmErr("rdma_get_cm_event", syscall.Errno(-rc))
		}
		var f C.struct_rb_cm_event
		C.rb_cm_event_fields(ev, &f)
		e := cmEvent{kind: C.enum_rdma_cm_event_type(f.event), status: int(f.status), id: f.id, listen: f.listen_id,
			respRes: int(f.responder_resources), initDepth: int(f.initiator_depth),
			udQPN: uint32(f.ud_qpn), udQKey: uint32(f.ud_qkey), udAH: f.ud_ah}
		if f.priv != nil && f.priv_len > 0 {
			e.priv = C.GoBytes(f.priv, C.int(f.priv_len))
		}
		C.rdma_ack_cm_event(ev)
		return e, nil
	}
}

func cmErr(op string, err error) error {
	if errno, ok := err.(syscall.Errno); ok && errno != 0 {
		return newError(op, errno)
	}
	return fmt.Errorf("%s failed", op)
}

func cmAddr(a netip.AddrPort) C.struct_rb_cm_addr {
	var c C.struct_rb_cm_addr
	ip := a.Addr().Unmap()
	if ip.Is4() {
		c.family = C.AF_INET
		b := ip.As4()
		C.memcpy(unsafe.Pointer(&c.addr[0]), unsafe.Pointer(&b[0]), 4)
	} else {
		c.family = C.AF_INET6
		b := ip.As16()
		C.memcpy(unsafe.Pointer(&c.addr[0]), unsafe.Pointer(&b[0]), 16)
	}
	c.port = C.uint16_t(a.Port())
	return c
}

func goAddr(c *C.struct_rb_cm_addr) netip.AddrPort {
	b := C.GoBytes(unsafe.Pointer(&c.addr[0]), 16)
	switch c.family {
	case C.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[:4])), uint16(c.port))
	case C.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b)), uint16(c.port))
	}
	return netip.AddrPort{}
}

// cmRoute is an id's addresses and the source GID of its route.
func cmRoute(id *C.struct_rdma_cm_id) (local, remote netip.AddrPort, sgid GID) {
	var s, d C.struct_rb_cm_addr
	var g [16]C.uint8_t
	C.rb_cm_addrs(id, &s, &d, &g[0])
	copy(sgid[:], C.GoBytes(unsafe.Pointer(&g[0]), 16))
	return goAddr(&s), goAddr(&d), sgid
}

// errCMiWARP: on iWARP the connection manager moves the QPs to RTS itself,
// which this package leaves to no one else.
var errCMiWARP = fmt.Errorf("%w: rdma_cm on iWARP moves the QPs through their states itself; rdmabench's -R does so for RoCE and InfiniBand only", ErrNotSupported)

// checkCMDevice checks that rdma_cm bound id to q's device and port.
func (q *QP) checkCMDevice(id *C.struct_rdma_cm_id) error {
	if q.pd.ctx.info.Transport == "iWARP" {
		return errCMiWARP
	}
	name := C.rb_cm_device(id)
	if name == nil {
		return errors.New("rdma_cm bound the connection to no device")
	}
	if dev := C.GoString(name); dev != q.pd.ctx.Name() || int(id.port_num) != q.cfg.port() {
		return fmt.Errorf("rdma_cm resolved the address to %s port %d, but the QP is on %s port %d: give the address of the QP's port",
			dev, int(id.port_num), q.pd.ctx.Name(), q.cfg.port())
	}
	return nil
}

// applyAV sets on ah what the QP was asked for (QPConfig's address vector)
// over what rdma_cm gave.
func (q *QP) applyAV(ah *C.struct_ibv_ah_attr) {
	ah.sl = C.uint8_t(q.cfg.SL)
	if ah.is_global != 0 {
		ah.grh.traffic_class = C.uint8_t(q.cfg.TClass)
		ah.grh.flow_label = C.uint32_t(q.cfg.FlowLabel)
		if q.cfg.HopLimit != 0 {
			ah.grh.hop_limit = C.uint8_t(q.cfg.HopLimit)
		}
	}
}

// gidAt is the GID at index of the QP's port.
func (q *QP) gidAt(index int) (GID, error) {
	table, err := q.pd.ctx.GIDTable(q.cfg.port())
	if err != nil {
		return GID{}, err
	}
	for _, e := range table {
		if e.Index == index {
			return e.GID, nil
		}
	}
	return GID{}, fmt.Errorf("%w: rdma_cm chose GID index %d, which the port's table lacks", ErrNoGID, index)
}

// gidIndexOf is the index of the RoCE v2 entry (else any entry) of the
// QP's port whose GID is g: the one rdma_cm uses by default.
func (q *QP) gidIndexOf(g GID) (int, error) {
	table, err := q.pd.ctx.GIDTable(q.cfg.port())
	if err != nil {
		return 0, err
	}
	found := -1
	for _, e := range table {
		if e.GID == g && (found < 0 || e.Type == GIDTypeRoCEv2) {
			found = e.Index
		}
	}
	if found < 0 {
		return 0, fmt.Errorf("%w: rdma_cm's source GID %s is not in the port's table", ErrNoGID, g)
	}
	return found, nil
}

// connectCM moves an RC QP through RTR to RTS toward the QP at the other
// end of id, with the attributes rdma_cm gives for it: the peer's QP
// number and PSN, the route's address vector (with QPConfig's over it),
// its path MTU capped by both endpoints' (remote is the peer's endpoint,
// exchanged out of band), and the outstanding READs both accept.
func (q *QP) connectCM(id *C.struct_rdma_cm_id, remote Endpoint) (CMInfo, error) {
	var a C.struct_ibv_qp_attr
	var mask C.int
	a.qp_state = C.IBV_QPS_RTR
	if rc, err := C.rdma_init_qp_attr(id, &a, &mask); rc != 0 {
		return CMInfo{}, cmErr("rdma_init_qp_attr (RTR)", err)
	}
	mtu := MinMTU(mtuFromEnum(int(a.path_mtu)), q.local.MTU, remote.MTU)
	a.path_mtu = C.enum_ibv_mtu(mtuToEnum(mtu))
	q.applyAV(&a.ah_attr)
	a.max_dest_rd_atomic = C.uint8_t(q.local.MaxRdAtomic)
	mask |= C.IBV_QP_MAX_DEST_RD_ATOMIC
	sgidIndex := int(a.ah_attr.grh.sgid_index)
	var dgid GID
	copy(dgid[:], C.GoBytes(unsafe.Pointer(&a.ah_attr.grh.dgid), 16))
	peer := Endpoint{QPN: uint32(a.dest_qp_num), PSN: uint32(a.rq_psn), LID: uint16(a.ah_attr.dlid), GID: dgid,
		MTU: mtu, MaxRdAtomic: remote.MaxRdAtomic}
	if rc := C.ibv_modify_qp(q.qp, &a, mask); rc != 0 {
		return CMInfo{}, fmt.Errorf("%w (rdma_cm's route: gid index %d, path mtu %d, remote qpn 0x%x, remote gid %s)",
			newError("modify qp to RTR", syscall.Errno(rc)), sgidIndex, mtu, peer.QPN, dgid)
	}
	a = C.struct_ibv_qp_attr{}
	a.qp_state = C.IBV_QPS_RTS
	if rc, err := C.rdma_init_qp_attr(id, &a, &mask); rc != 0 {
		return CMInfo{}, cmErr("rdma_init_qp_attr (RTS)", err)
	}
	// The QPs' own timeouts, so that a dead peer ends alike either way.
	a.timeout = C.uint8_t(orDefault(q.cfg.QPTimeout, DefaultQPTimeout))
	a.retry_cnt = C.uint8_t(orDefault(q.cfg.RetryCnt, 6))
	a.rnr_retry = C.uint8_t(orDefault(q.cfg.RNRRetry, 7))
	q.rdAtomic = min(q.local.MaxRdAtomic, max(remote.MaxRdAtomic, 1))
	a.max_rd_atomic = C.uint8_t(q.rdAtomic)
	mask |= C.IBV_QP_TIMEOUT | C.IBV_QP_RETRY_CNT | C.IBV_QP_RNR_RETRY | C.IBV_QP_MAX_QP_RD_ATOMIC
	psn := uint32(a.sq_psn)
	if rc := C.ibv_modify_qp(q.qp, &a, mask); rc != 0 {
		return CMInfo{}, newError("modify qp to RTS", syscall.Errno(rc))
	}
	gid, err := q.gidAt(sgidIndex)
	if err != nil {
		return CMInfo{}, err
	}
	q.local.GID, q.local.GIDIndex, q.local.PSN = gid, sgidIndex, psn
	return q.cmConnected(peer, id, PortSpaceTCP)
}

// connectUDCM moves a UD QP to RTS and makes the address handle of its
// peer from ah (rdma_cm's, or made from the peer's GID), with QPConfig's
// address vector over it.
func (q *QP) connectUDCM(ah *C.struct_ibv_ah_attr, id *C.struct_rdma_cm_id, remote Endpoint) (CMInfo, error) {
	var a C.struct_ibv_qp_attr
	a.qp_state = C.IBV_QPS_RTR
	if rc := C.ibv_modify_qp(q.qp, &a, C.IBV_QP_STATE); rc != 0 {
		return CMInfo{}, newError("modify qp to RTR", syscall.Errno(rc))
	}
	a = C.struct_ibv_qp_attr{}
	a.qp_state = C.IBV_QPS_RTS
	a.sq_psn = C.uint32_t(q.local.PSN)
	if rc := C.ibv_modify_qp(q.qp, &a, C.IBV_QP_STATE|C.IBV_QP_SQ_PSN); rc != 0 {
		return CMInfo{}, newError("modify qp to RTS", syscall.Errno(rc))
	}
	q.applyAV(ah)
	h, err := C.ibv_create_ah(q.pd.pd, ah)
	if h == nil {
		return CMInfo{}, newError("create ah", errnoOf(err))
	}
	q.ah = h
	q.ahID = track("ah")
	q.av = avOf(ah)
	gid, err2 := q.gidAt(int(ah.grh.sgid_index))
	if err2 != nil {
		return CMInfo{}, err2
	}
	q.local.GID, q.local.GIDIndex = gid, int(ah.grh.sgid_index)
	return q.cmConnected(remote, id, PortSpaceUDP)
}

// cmConnected records a connection rdma_cm set up.
func (q *QP) cmConnected(remote Endpoint, id *C.struct_rdma_cm_id, ps PortSpace) (CMInfo, error) {
	if q.cfg.Type != UD {
		av, err := q.readAV()
		if err != nil {
			return CMInfo{}, err
		}
		q.av = av
	}
	q.remote = remote
	q.connected = true
	local, peer, _ := cmRoute(id)
	return CMInfo{PortSpace: ps, Local: local, Remote: peer, GID: q.local.GID, GIDIndex: q.local.GIDIndex, PathMTU: q.PathMTU()}, nil
}

// CMListener is the passive side of rdma_cm connections: an id bound to
// one address, listening. Equivalent to `rping -s -a ADDR`.
type CMListener struct {
	ch    *cmChannel
	id    *C.struct_rdma_cm_id
	idID  int
	ps    PortSpace
	addr  netip.AddrPort
	conns []*C.struct_rdma_cm_id
}

// ListenCM listens for connection requests of port space ps on ip, at a
// port the kernel picks (Addr tells which).
func ListenCM(ip netip.Addr, ps PortSpace) (*CMListener, error) {
	ch, err := newCMChannel()
	if err != nil {
		return nil, err
	}
	l := &CMListener{ch: ch, ps: ps}
	var id *C.struct_rdma_cm_id
	if rc, err := C.rdma_create_id(ch.ch, &id, nil, C.enum_rdma_port_space(ps)); rc != 0 {
		l.Close()
		return nil, cmErr("rdma_create_id", err)
	}
	l.id, l.idID = id, track("rdma_cm id (listening)")
	a := cmAddr(netip.AddrPortFrom(ip, 0))
	if rc, err := C.rb_cm_bind(id, &a); rc != 0 {
		l.Close()
		return nil, fmt.Errorf("%w: is %s an address of this host's RDMA device?", cmErr("rdma_bind_addr "+ip.String(), err), ip)
	}
	if rc, err := C.rdma_listen(id, 64); rc != 0 {
		l.Close()
		return nil, cmErr("rdma_listen", err)
	}
	port := C.rdma_get_src_port(id)
	l.addr = netip.AddrPortFrom(ip, uint16(C.ntohs(port)))
	return l, nil
}

// Addr is the address the listener listens on.
func (l *CMListener) Addr() netip.AddrPort { return l.addr }

// Accept connects each of qps to the active side's QP whose request names
// its index (see DialCM), one request per QP, within timeout of silence,
// and returns what rdma_cm chose for each. remote are the active side's
// endpoints, exchanged out of band: their MTU and outstanding READs bound
// the connection's. A request that is not rdmabench's, or names no QP
// waiting, is rejected.
func (l *CMListener) Accept(ctx context.Context, qps []*QP, remote []Endpoint, timeout time.Duration) ([]CMInfo, error) {
	if len(remote) != len(qps) {
		return nil, fmt.Errorf("rdma_cm: %d QPs but %d peer endpoints", len(qps), len(remote))
	}
	infos := make([]CMInfo, len(qps))
	l.conns = make([]*C.struct_rdma_cm_id, len(qps))
	done := make([]bool, len(qps))
	left := len(qps)
	for left > 0 {
		e, err := l.ch.wait(ctx, time.Now().Add(timeout), "a connection request")
		if err != nil {
			return nil, err
		}
		switch e.kind {
		case C.RDMA_CM_EVENT_CONNECT_REQUEST:
			p, err := parseCMPrivate(e.priv)
			if err == nil && (int(p.Index) >= len(qps) || l.conns[p.Index] != nil) {
				err = fmt.Errorf("connection request for QP %d, which is not waiting", p.Index)
			}
			if err != nil {
				C.rdma_reject(e.id, nil, 0)
				C.rdma_destroy_id(e.id)
				continue
			}
			i := int(p.Index)
			l.conns[i] = e.id
			q := qps[i]
			if err := q.checkCMDevice(e.id); err != nil {
				C.rdma_reject(e.id, nil, 0)
				return nil, err
			}
			if l.ps == PortSpaceUDP {
				infos[i], err = l.acceptUD(q, e.id, p)
				if err == nil {
					done[i] = true
					left--
				}
			} else {
				infos[i], err = q.connectCM(e.id, remote[i])
				if err == nil {
					if rc, cerr := C.rb_cm_accept(e.id, C.uint32_t(q.local.QPN), C.uint8_t(q.local.MaxRdAtomic), C.uint8_t(q.rdAtomic)); rc != 0 {
						err = cmErr("rdma_accept", cerr)
					}
				}
			}
			if err != nil {
				C.rdma_reject(e.id, nil, 0)
				return nil, fmt.Errorf("rdma_cm: connect qp %d: %w", i, err)
			}
		case C.RDMA_CM_EVENT_ESTABLISHED:
			i := l.index(e.id)
			if i < 0 || done[i] {
				continue
			}
			done[i] = true
			left--
		default:
			return nil, e.err("connection requests")
		}
	}
	return infos, nil
}

// acceptUD answers a UD request: the address handle toward the active
// side's QP is made from the GID its request names, from the source GID
// of rdma_cm's route.
func (l *CMListener) acceptUD(q *QP, id *C.struct_rdma_cm_id, p cmPrivate) (CMInfo, error) {
	_, _, sgid := cmRoute(id)
	index, err := q.gidIndexOf(sgid)
	if err != nil {
		return CMInfo{}, err
	}
	q.local.GIDIndex = index
	var ah C.struct_ibv_ah_attr
	q.fillAH(&ah, Endpoint{GID: p.GID})
	remote := Endpoint{QPN: p.QPN, GID: p.GID, MTU: q.local.MTU, QKey: CMUDPQKey}
	info, err := q.connectUDCM(&ah, id, remote)
	if err != nil {
		return CMInfo{}, err
	}
	if rc, err := C.rb_cm_accept(id, C.uint32_t(q.local.QPN), 0, 0); rc != 0 {
		return CMInfo{}, cmErr("rdma_accept", err)
	}
	return info, nil
}

func (l *CMListener) index(id *C.struct_rdma_cm_id) int {
	for i, c := range l.conns {
		if c == id {
			return i
		}
	}
	return -1
}

// Close destroys the connections' ids (which disconnects them), the
// listening id and the channel. The QPs are the caller's.
func (l *CMListener) Close() error {
	if l == nil {
		return nil
	}
	for i, c := range l.conns {
		if c != nil {
			C.rdma_destroy_id(c)
			l.conns[i] = nil
		}
	}
	if l.id != nil {
		C.rdma_destroy_id(l.id)
		l.id = nil
		untrack(l.idID)
	}
	l.ch.close()
	return nil
}

// CMConn is the active side of one QP's rdma_cm connection.
type CMConn struct {
	ch   *cmChannel
	id   *C.struct_rdma_cm_id
	idID int
	info CMInfo
}

// DialCM connects q, from the address src of its port, to the QP the
// listener at dst keeps at index (see CMListener.Accept): rdma_cm resolves
// the address and the route, asks for the connection, and q moves to RTS
// with what it answers. remote is the peer QP's endpoint exchanged out of
// band (RC: its MTU and outstanding READs bound the connection's).
// Equivalent to `rping -c -a DST`.
func DialCM(ctx context.Context, q *QP, index int, src netip.Addr, dst netip.AddrPort, remote Endpoint, timeout time.Duration) (*CMConn, error) {
	if q.qp == nil {
		return nil, ErrClosed
	}
	ps, ok := PortSpaceFor(q.cfg.Type)
	if !ok {
		return nil, fmt.Errorf("rdma_cm cannot connect %s QPs (librdmacm has no port space for them)", q.cfg.Type)
	}
	ch, err := newCMChannel()
	if err != nil {
		return nil, err
	}
	c := &CMConn{ch: ch}
	if err := c.dial(ctx, q, ps, index, src, dst, remote, timeout); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *CMConn) dial(ctx context.Context, q *QP, ps PortSpace, index int, src netip.Addr, dst netip.AddrPort, remote Endpoint, timeout time.Duration) error {
	var id *C.struct_rdma_cm_id
	if rc, err := C.rdma_create_id(c.ch.ch, &id, nil, C.enum_rdma_port_space(ps)); rc != 0 {
		return cmErr("rdma_create_id", err)
	}
	c.id, c.idID = id, track("rdma_cm id")
	if q.cfg.TClass != 0 {
		// rdma_cm's own packets and the route's traffic class too.
		if rc, err := C.rb_cm_set_tos(id, C.uint8_t(q.cfg.TClass)); rc != 0 {
			return cmErr("rdma_set_option TOS", err)
		}
	}
	s, d := cmAddr(netip.AddrPortFrom(src, 0)), cmAddr(dst)
	if rc, err := C.rb_cm_resolve_addr(id, &s, &d, C.int(cmResolveTimeout.Milliseconds())); rc != 0 {
		return fmt.Errorf("%w (from %s to %s)", cmErr("rdma_resolve_addr", err), src, dst)
	}
	wait := func(want C.enum_rdma_cm_event_type, what string) (cmEvent, error) {
		e, err := c.ch.wait(ctx, time.Now().Add(max(timeout, cmResolveTimeout)), what)
		if err == nil && e.kind != want {
			err = e.err(what)
		}
		return e, err
	}
	if _, err := wait(C.RDMA_CM_EVENT_ADDR_RESOLVED, "the address of "+dst.Addr().String()); err != nil {
		return err
	}
	if err := q.checkCMDevice(id); err != nil {
		return err
	}
	if rc, err := C.rdma_resolve_route(id, C.int(cmResolveTimeout.Milliseconds())); rc != 0 {
		return cmErr("rdma_resolve_route", err)
	}
	if _, err := wait(C.RDMA_CM_EVENT_ROUTE_RESOLVED, "the route to "+dst.Addr().String()); err != nil {
		return err
	}
	_, _, sgid := cmRoute(id)
	priv := cmPrivate{Index: uint32(index), QPN: q.local.QPN, GID: sgid}.marshal()
	cpriv := C.CBytes(priv)
	defer C.free(cpriv)
	var resp, init int
	if ps == PortSpaceTCP {
		resp, init = q.local.MaxRdAtomic, min(q.local.MaxRdAtomic, max(remote.MaxRdAtomic, 1))
	}
	if rc, err := C.rb_cm_connect(id, C.uint32_t(q.local.QPN), cpriv, C.uint8_t(len(priv)), C.uint8_t(resp), C.uint8_t(init)); rc != 0 {
		return cmErr("rdma_connect", err)
	}
	if ps == PortSpaceUDP {
		e, err := wait(C.RDMA_CM_EVENT_ESTABLISHED, "the answer of "+dst.String())
		if err != nil {
			return err
		}
		peer := Endpoint{QPN: e.udQPN, QKey: e.udQKey, MTU: q.local.MTU}
		copy(peer.GID[:], C.GoBytes(unsafe.Pointer(&e.udAH.grh.dgid), 16))
		c.info, err = q.connectUDCM(&e.udAH, id, peer)
		return err
	}
	if _, err := wait(C.RDMA_CM_EVENT_CONNECT_RESPONSE, "the answer of "+dst.String()); err != nil {
		return err
	}
	info, err := q.connectCM(id, remote)
	if err != nil {
		C.rdma_reject(id, nil, 0)
		return err
	}
	if rc, err := C.rdma_establish(id); rc != 0 {
		return cmErr("rdma_establish", err)
	}
	c.info = info
	return nil
}

// Info is what rdma_cm chose for the connection.
func (c *CMConn) Info() CMInfo { return c.info }

// Close destroys the connection's id (which disconnects it) and channel.
// The QP is the caller's.
func (c *CMConn) Close() error {
	if c == nil {
		return nil
	}
	if c.id != nil {
		C.rdma_destroy_id(c.id)
		c.id = nil
		untrack(c.idID)
	}
	c.ch.close()
	return nil
}
