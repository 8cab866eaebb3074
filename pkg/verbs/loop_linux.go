//go:build linux && cgo

package verbs

/*
#include <stdlib.h>
#include "rb.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"syscall"
	"unsafe"
)

// The loop kinds and roles are rb.h's enum rb_kind and enum rb_role, and
// reach C as they are: each index below is 0 only while a Go constant and
// its C twin agree, so that a change on one side alone fails the build.
var (
	_ = [1]struct{}{}[LatWrite-C.RB_LAT_WRITE]
	_ = [1]struct{}{}[LatSend-C.RB_LAT_SEND]
	_ = [1]struct{}{}[LatPost-C.RB_LAT_POST]
	_ = [1]struct{}{}[BWSend-C.RB_BW_SEND]
	_ = [1]struct{}{}[BWRecv-C.RB_BW_RECV]
	_ = [1]struct{}{}[Initiator-C.RB_INITIATOR]
	_ = [1]struct{}{}[Responder-C.RB_RESPONDER]
)

// Loop is a timed loop running in C over one or more connected QPs. Go calls
// it once per batch of iterations (latency) or per interval (bandwidth); no
// cgo call, allocation or lock happens per work request.
type Loop struct {
	l   *C.struct_rb_loop
	cfg LoopConfig
	qps []LoopQP
	id  int
	// mu orders Stop, which may come from any goroutine (a cancelled
	// context), against Close. The timed calls do not take it.
	mu sync.Mutex
	// inFlight is how many WRs the sender's QPs had posted and not seen
	// complete at the last ResetCounters: the first completions counted
	// after it are theirs.
	inFlight uint64
}

// checkpointGapNs is the least time between two checkpoints of a sender
// (see Checkpoints) until they fill up.
const checkpointGapNs = 10_000

// NewLoop prepares a timed loop. Every QP must share the send CQ and the
// receive CQ of the first one, and be connected.
func NewLoop(cfg LoopConfig, tx, rx Buf, qps []LoopQP) (*Loop, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	initClock()
	rxSize, err := checkLoop(cfg, tx, rx, qps)
	if err != nil {
		return nil, err
	}
	op, err := wrOpcode(cfg.Opcode)
	if err != nil {
		return nil, err
	}
	first := qps[0].QP
	if cfg.Inline && int(cfg.Size) > first.caps.MaxInlineData {
		return nil, fmt.Errorf("loop: inline %d-byte messages exceed the QP's inline limit %d", cfg.Size, first.caps.MaxInlineData)
	}
	l := (*C.struct_rb_loop)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_rb_loop{}))))
	l.kind = C.int(cfg.Kind)
	l.role = C.int(cfg.Role)
	l.opcode = C.int(op)
	if cfg.Inline {
		l.use_inline = 1
	}
	setLoopQPs(l, qps)
	setLoopBuffers(l, cfg, tx, rx, rxSize, qps)
	setLoopCounts(l, cfg)
	l.cp_gap = C.uint64_t(clock.cal.ticksOf(checkpointGapNs))
	if rc := C.rb_loop_init(l); rc != 0 {
		C.free(unsafe.Pointer(l.qps))
		C.free(unsafe.Pointer(l))
		return nil, newError("loop init", syscall.Errno(rc))
	}
	return &Loop{l: l, cfg: cfg, qps: qps, id: track("loop")}, nil
}

// checkLoop checks, before anything is allocated, the QPs and buffers of a
// loop of cfg: every QP open, connected and on the first one's CQs, and
// each buffer large enough. It returns the size of a receive slot (a UD
// receive holds the GRH before the message).
func checkLoop(cfg LoopConfig, tx, rx Buf, qps []LoopQP) (rxSize uint32, err error) {
	if len(qps) == 0 {
		return 0, fmt.Errorf("loop: no queue pairs")
	}
	if tx.MR == nil || rx.MR == nil || tx.MR.mr == nil || rx.MR.mr == nil {
		return 0, fmt.Errorf("loop: tx and rx buffers are required")
	}
	first := qps[0].QP
	for i, q := range qps {
		if q.QP == nil || q.QP.qp == nil {
			return 0, fmt.Errorf("loop: qp %d is nil or closed", i)
		}
		if !q.QP.connected {
			return 0, fmt.Errorf("loop: qp %d (0x%x): %w", i, q.QP.local.QPN, ErrNotConnected)
		}
		if q.QP.cfg.SendCQ != first.cfg.SendCQ || q.QP.cfg.RecvCQ != first.cfg.RecvCQ {
			return 0, fmt.Errorf("loop: qp %d does not share the first QP's CQs", i)
		}
	}
	rxSize = max(cfg.Size, cfg.RecvSize)
	if first.cfg.Type == UD {
		rxSize += udGRH
	}
	if uint64(tx.Offset)+uint64(cfg.Size) > tx.MR.len {
		return 0, fmt.Errorf("loop: tx buffer of %d bytes at offset %d is too small for %d-byte messages", tx.MR.len, tx.Offset, cfg.Size)
	}
	if uint64(rx.Offset)+uint64(rxSize) > rx.MR.len {
		return 0, fmt.Errorf("loop: rx buffer of %d bytes at offset %d is too small for %d-byte messages", rx.MR.len, rx.Offset, rxSize)
	}
	return rxSize, nil
}

// setLoopQPs gives l its QPs, each with its peer and the remote buffer it
// targets (in C memory, freed with l), and the first QP's CQs and their
// completion channels.
func setLoopQPs(l *C.struct_rb_loop, qps []LoopQP) {
	cq := (*C.struct_rb_qp)(C.calloc(C.size_t(len(qps)), C.size_t(unsafe.Sizeof(C.struct_rb_qp{}))))
	cqs := unsafe.Slice(cq, len(qps))
	for i, q := range qps {
		cqs[i].qp = q.QP.qp
		cqs[i].ah = q.QP.ah
		cqs[i].remote_qpn = C.uint32_t(q.QP.remote.QPN)
		cqs[i].remote_qkey = C.uint32_t(q.QP.remote.QKey)
		cqs[i].raddr = C.uint64_t(q.Remote.Addr)
		cqs[i].rkey = C.uint32_t(q.Remote.RKey)
	}
	first := qps[0].QP
	if first.cfg.Type == UD {
		l.is_ud = 1
	}
	l.nqp = C.int(len(qps))
	l.qps = cq
	l.scq = first.cfg.SendCQ.cq
	l.rcq = first.cfg.RecvCQ.cq
	l.sch = first.cfg.SendCQ.ch
	l.rch = first.cfg.RecvCQ.ch
}

// setLoopBuffers gives l its local buffers and message sizes, and the
// slots a bandwidth loop cycles through in them (see cycle).
func setLoopBuffers(l *C.struct_rb_loop, cfg LoopConfig, tx, rx Buf, rxSize uint32, qps []LoopQP) {
	// The MRs' addresses, as the device takes them (a GPU's memory has
	// no host mapping; only write-lat's CPU polling reads them).
	l.tx = C.rb_ptr(C.uintptr_t(tx.MR.Addr() + tx.Offset))
	l.tx_lkey = C.uint32_t(tx.MR.LKey())
	l.rx = C.rb_ptr(C.uintptr_t(rx.MR.Addr() + rx.Offset))
	l.rx_lkey = C.uint32_t(rx.MR.LKey())
	l.size = C.uint32_t(cfg.Size)
	l.rx_size = C.uint32_t(rxSize)
	if cfg.Kind == BWSend {
		room := tx.MR.len - tx.Offset
		for _, q := range qps {
			room = min(room, q.Remote.Len)
		}
		if cfg.Opcode == OpSend {
			room = tx.MR.len - tx.Offset
		}
		st, n := cycle(uint64(cfg.Size), room)
		l.cycle_stride, l.cycle_slots = C.uint32_t(st), C.uint32_t(n)
	}
	if cfg.Kind == BWRecv {
		st, n := cycle(uint64(rxSize), rx.MR.len-rx.Offset)
		l.rx_cycle_stride, l.rx_cycle_slots = C.uint32_t(st), C.uint32_t(n)
	}
}

// setLoopCounts gives l its depths, batching, atomic operands, idle
// timeout, total and pacing, the times in clock ticks.
func setLoopCounts(l *C.struct_rb_loop, cfg LoopConfig) {
	l.tx_depth = C.int(cfg.TxDepth)
	l.rx_depth = C.int(cfg.RxDepth)
	l.cq_mod = C.int(cfg.CQMod)
	l.post_list = C.int(cfg.PostList)
	l.cmp = C.uint64_t(cfg.Compare)
	l.swap_add = C.uint64_t(cfg.SwapAdd)
	l.idle_timeout_ticks = C.uint64_t(clock.cal.ticksOf(uint64(cfg.IdleTimeout.Nanoseconds())))
	if cfg.Nap > 0 {
		l.nap_after_ticks = C.uint64_t(clock.cal.ticksOf(uint64(cfg.NapAfter.Nanoseconds())))
		l.nap_ns = C.long(cfg.Nap.Nanoseconds())
	}
	l.total = C.uint64_t(cfg.Total)
	if cfg.PaceNs > 0 {
		l.pace_gap = C.uint64_t(clock.cal.fixedTicks(cfg.PaceNs, C.RB_PACE_SHIFT))
		l.pace_burst = C.uint64_t(max(cfg.PaceBurst, 1))
	}
}

// Buf is a byte range of a registered MR that a loop sends from or
// receives into.
type Buf struct {
	MR     *MR
	Offset uint64
}

// LoopQP is one connected QP of a loop, with the peer's buffer that its
// WRITEs, READs and atomics target.
type LoopQP struct {
	QP     *QP
	Remote RemoteBuffer
}

// udGRH is the 40-byte Global Routing Header that precedes every UD
// receive in the receive buffer.
const udGRH = 40

// PostRecvs posts n receives on every QP of the loop.
func (lp *Loop) PostRecvs(n int) error {
	if rc := C.rb_post_recvs(lp.l, C.int(n)); rc != 0 {
		return lp.err(C.int64_t(rc))
	}
	return nil
}

// RecvLanding tells where the data of a receive completion of this loop's
// QPs landed, from the completion's wr_id: the QP's index in the loop and
// the byte offset in the loop's receive buffer (on UD, where the 40-byte
// GRH starts). For checks after a timed loop, never inside one.
func (lp *Loop) RecvLanding(wrID uint64) (qp int, offset uint64, err error) {
	q, slot := int(uint32(wrID)), uint32(wrID>>32)
	if q >= len(lp.qps) || (slot != 0 && slot >= uint32(lp.l.rx_cycle_slots)) {
		return 0, 0, fmt.Errorf("receive wr_id 0x%x names no receive of this loop", wrID)
	}
	return q, uint64(slot) * uint64(lp.l.rx_cycle_stride), nil
}

// Repost posts again, on the same QP and buffer slot, the receive whose
// completion carried wrID, so the QP keeps as many receives posted.
func (lp *Loop) Repost(wrID uint64) error {
	if rc := C.rb_repost_recv(lp.l, C.uint64_t(wrID)); rc != 0 {
		return lp.err(C.int64_t(rc))
	}
	return nil
}

// RunLatency runs up to len(samples) iterations and stores each one's time
// in ns at the front of samples. It returns how many ran (fewer than
// len(samples) only when the loop reached Total) and how many samples it
// stored: a sample whose clock ran backwards is dropped, not wrapped.
// samples may be nil for the responder.
func (lp *Loop) RunLatency(samples []uint64) (ran, valid int, err error) {
	return lp.RunLatencyUntil(samples, 0)
}

// RunLatencyUntil is RunLatency that also returns after the first sample
// that ends at or after untilNs (on the Now clock), for duration mode. The
// loop stores raw ticks; they are scaled to ns here, after the timed calls.
func (lp *Loop) RunLatencyUntil(samples []uint64, untilNs uint64) (ran, valid int, err error) {
	n := len(samples)
	var p *C.uint64_t
	if n > 0 {
		p = (*C.uint64_t)(unsafe.Pointer(&samples[0]))
	} else {
		n = int(lp.cfg.Total)
	}
	r := C.rb_lat_run(lp.l, C.uint64_t(n), p, C.uint64_t(clock.cal.ticks(untilNs)))
	if r < 0 {
		return 0, 0, lp.err(r)
	}
	ran = int(r)
	if samples != nil {
		valid = clock.cal.scaleSamples(samples[:ran])
	}
	return ran, valid, nil
}

// RunBandwidth posts and polls until every QP reached its target (done) or
// the clock (see Now) passed untilNs; untilNs 0 means no deadline.
func (lp *Loop) RunBandwidth(untilNs uint64) (done bool, err error) {
	r := C.rb_bw_run(lp.l, C.uint64_t(clock.cal.ticks(untilNs)))
	if r < 0 {
		return false, lp.err(C.int64_t(r))
	}
	return r == 1, nil
}

// RunBandwidthCompleted posts and polls until n WRs completed since
// ResetCounters, and leaves what it posted beyond them in flight: a warm-up
// that the measured stream follows without draining the queue. Every QP's
// target must lie beyond what it takes.
func (lp *Loop) RunBandwidthCompleted(n uint64) error {
	if n == 0 {
		return nil
	}
	lp.l.stop_completed = C.uint64_t(n)
	defer func() { lp.l.stop_completed = 0 }()
	_, err := lp.RunBandwidth(0) // with no deadline, it returns at n (or on an error)
	return err
}

// SetTarget sets every QP's total of work requests to post (cumulative).
func (lp *Loop) SetTarget(perQP uint64) {
	qs := unsafe.Slice(lp.l.qps, len(lp.qps))
	for i := range qs {
		qs[i].target = C.uint64_t(perQP)
	}
}

// FinishBandwidth stops a duration-mode run from posting more work: each
// QP's target becomes what it posted, rounded up to a signalled WR; run
// RunBandwidth again to reap the rest.
func (lp *Loop) FinishBandwidth() { C.rb_bw_finish(lp.l) }

// RunReceiver polls, reposts and counts receives until Total arrived (done),
// Stop was called (done), or untilNs passed.
func (lp *Loop) RunReceiver(untilNs uint64) (done bool, err error) {
	r := C.rb_bw_recv_run(lp.l, C.uint64_t(clock.cal.ticks(untilNs)))
	if r < 0 {
		return false, lp.err(C.int64_t(r))
	}
	return r == 1, nil
}

// Expect sets the receives a receiver (BWRecv) waits for before it
// returns done, counted since the loop was made; it may be called while
// RunReceiver runs in another goroutine.
func (lp *Loop) Expect(total uint64) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.l != nil {
		C.rb_loop_expect(lp.l, C.uint64_t(total))
	}
}

// Stop asks the loop, possibly running in another goroutine, to return.
// A latency or bandwidth loop returns ErrAborted; a receiver returns done.
func (lp *Loop) Stop() {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.l != nil {
		C.rb_loop_stop(lp.l)
	}
}

// ResetCounters clears the bandwidth counters and timestamps (after a
// warm-up), keeping the QPs' posted/completed positions, and restarts the
// pacing schedule.
func (lp *Loop) ResetCounters() {
	// The pacing schedule starts again with the measured messages: no
	// credit from the pause before them.
	lp.l.pace_base = 0
	qs := unsafe.Slice(lp.l.qps, len(lp.qps))
	for i := range qs {
		qs[i].pace_next = 0
	}
	lp.inFlight = 0
	for i := range qs {
		lp.inFlight += uint64(qs[i].posted - qs[i].completed)
	}
	lp.l.first_tick = 0
	lp.l.last_tick = 0
	lp.l.total_completed = 0
	lp.l.total_recv_bytes = 0
	lp.l.posted_total = 0
	lp.l.cp_n = 0
	lp.l.cp_last = 0
	lp.l.cp_gap = C.uint64_t(clock.cal.ticksOf(checkpointGapNs))
}

// Progress returns a bandwidth sender's completions since ResetCounters and
// the time of the last one (on the Now clock). Unlike Stats, it may be
// called while RunBandwidth runs in another goroutine.
func (lp *Loop) Progress() (completed, lastNs uint64) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.l == nil {
		return 0, 0
	}
	var c, t C.uint64_t
	C.rb_loop_snapshot(lp.l, &c, &t)
	return uint64(c), clock.cal.ns(uint64(t))
}

// Checkpoints returns where a bandwidth sender stood since ResetCounters:
// at its first post (nothing measured posted yet), at the checkpoints the
// timed loop took after polls that reaped completions (at least 10 µs
// apart; once RB_CP_MAX, 256, were taken, every other one was dropped and
// the least gap doubled, so that they span the whole run), and at its
// last completion so far. A checkpoint's Posted counts the WRs in flight
// at ResetCounters as posted before any measured one (they complete
// first), so that Completed of one minus Posted of an earlier one counts
// the WRs posted after the earlier and complete by the later. The last
// checkpoint's Posted may miss posts made after its poll: it only ever
// ends a stretch. Nil for a loop that is no sender or posted nothing. It
// must not be called while a Run method executes.
func (lp *Loop) Checkpoints() []Checkpoint {
	if lp.l.cps == nil || lp.l.first_tick == 0 {
		return nil
	}
	cs := unsafe.Slice(lp.l.cps, int(lp.l.cp_n))
	out := make([]Checkpoint, 0, len(cs)+2)
	out = append(out, Checkpoint{AtNs: clock.cal.ns(uint64(lp.l.first_tick)), Posted: lp.inFlight})
	for _, c := range cs {
		out = append(out, Checkpoint{AtNs: clock.cal.ns(uint64(c.tick)), Posted: lp.inFlight + uint64(c.posted), Completed: uint64(c.completed)})
	}
	if last := uint64(lp.l.last_tick); last != 0 && (len(cs) == 0 || last != uint64(cs[len(cs)-1].tick)) {
		out = append(out, Checkpoint{AtNs: clock.cal.ns(last), Posted: lp.inFlight + uint64(lp.l.posted_total), Completed: uint64(lp.l.total_completed)})
	}
	return out
}

// Stats returns the loop's counters.
func (lp *Loop) Stats() LoopStats {
	return LoopStats{
		Iterations: uint64(lp.l.iter),
		Completed:  uint64(lp.l.total_completed),
		RecvBytes:  uint64(lp.l.total_recv_bytes),
		FirstNs:    clock.cal.ns(uint64(lp.l.first_tick)),
		LastNs:     clock.cal.ns(uint64(lp.l.last_tick)),
	}
}

func (lp *Loop) err(code C.int64_t) error {
	switch code {
	case C.RB_EWC:
		return &WCError{Status: WCStatus(lp.l.wc_status), Opcode: WCOpcode(lp.l.wc_opcode),
			VendorErr: uint32(lp.l.wc_vendor), QPN: uint32(lp.l.wc_qpn)}
	case C.RB_ETIMEDOUT:
		return fmt.Errorf("%w: no progress for %s", ErrTimeout, lp.cfg.IdleTimeout)
	case C.RB_EABORTED:
		return ErrAborted
	case C.RB_EPOST:
		return newError("post", syscall.Errno(lp.l.err))
	case C.RB_EPOLL:
		return newError("poll cq", syscall.Errno(lp.l.err))
	}
	return fmt.Errorf("timed loop: unexpected result %d", int64(code))
}

// Close frees the loop's C state. The QPs and MRs stay open.
// It must not be called while a Run method is executing; Stop may be.
func (lp *Loop) Close() error {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.l == nil {
		return nil
	}
	C.rb_loop_destroy(lp.l)
	C.free(unsafe.Pointer(lp.l.qps))
	C.free(unsafe.Pointer(lp.l))
	lp.l = nil
	untrack(lp.id)
	return nil
}
