//go:build linux && cgo

package workloads

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// rdmaCheck is an RDMA end's part in a size's validation pass (see
// driver_check.go). It posts and polls through pkg/verbs' per-work-request
// API, after the timed loops have ended: nothing of it runs in one.
//
// Layout: message j of a round's group (QP qps[j]) takes slot j of each
// buffer half, checkSlot(size) bytes from the half's start. The send half
// (the MR's first) holds what a WRITE or SEND sends and what a READ or an
// atomic brings back; the target half (the second, the one the peer's
// operations address) holds what a WRITE writes, what a READ reads and an
// atomic's target word. A SEND lands where the receiver's next receive
// points, which its completion names.
type rdmaCheck struct {
	e    *rdmaRunner
	size int
	// recv is this end's receiving loop (SEND tests): it posted the
	// receives, and reposts those the pass consumes.
	recv *verbs.Loop
	// used is how many bytes of each half the pass wrote.
	used uint64
	wcs  []verbs.WC
	// copyErr is a failed copy to GPU memory, told by the next check.
	copyErr error
}

// checkWRTag marks the work requests of the pass: a completion left by a
// timed loop carries another wr_id.
const checkWRTag = uint64(0xc4ec) << 48

// udGRH is the Global Routing Header that precedes a UD receive's data.
const udGRH = 40

// checkRecvWait is how long a receiver waits for a SEND of the pass to
// arrive once its sender saw it complete (UC and UD do not retransmit: a
// lost message is a difference).
const checkRecvWait = time.Second

func (c *rdmaCheck) slot(j int) uint64 { return uint64(j) * checkSlot(c.size) }

// send and target are message j's bytes in the send and target halves.
func (c *rdmaCheck) send(j, n int) []byte {
	c.used = max(c.used, c.slot(j)+uint64(n))
	return c.e.buf.host[c.slot(j) : c.slot(j)+uint64(n)]
}

func (c *rdmaCheck) target(j, n int) []byte {
	c.used = max(c.used, c.slot(j)+uint64(n))
	h := c.e.half + c.slot(j)
	return c.e.buf.host[h : h+uint64(n)]
}

func (c *rdmaCheck) fetchAdd() bool { return c.e.spec.AtomicType == FetchAdd }

// imm tags QP qp's SEND of round k, so that the receiver knows it from a
// late message of the measured loop (which has no immediate data).
func checkImm(k checkKey, qp int) uint32 { return uint32(patternBase(k.seed, k.di, qp, k.round) >> 32) }

func (c *rdmaCheck) fill(k checkKey, qps []int) {
	me, op := c.e.role, c.e.spec.Info().Op
	for j, q := range qps {
		switch {
		case op == OpAtomic:
			if k.dir.to == me && k.round == 0 {
				binary.NativeEndian.PutUint64(c.target(j, 8), atomicValue(k, q, 0, c.fetchAdd()))
			}
		case k.dir.from != me:
		case op == OpRead:
			fillPattern(c.target(j, c.size), patternBase(k.seed, k.di, q, k.round))
		default:
			fillPattern(c.send(j, c.size), patternBase(k.seed, k.di, q, k.round))
		}
	}
	c.upload()
}

// upload and download copy the buffer between GPU memory and its host
// mirror (nothing for host memory); a failure fails the pass's checks.
func (c *rdmaCheck) upload() {
	if err := c.e.buf.upload(); err != nil && c.copyErr == nil {
		c.copyErr = err
	}
}

func (c *rdmaCheck) download() error {
	if c.copyErr != nil {
		return c.copyErr
	}
	return c.e.buf.download()
}

func (c *rdmaCheck) move(ctx context.Context, k checkKey, qps []int) error {
	if k.dir.initiator != c.e.role {
		return nil
	}
	op := c.e.spec.opcode()
	for j, q := range qps {
		remote := c.e.peer[q].Buffer
		remote.Addr += c.slot(j)
		remote.Len = checkSlot(c.size)
		wr := verbs.SendWR{ID: checkWRTag | uint64(q), Signaled: true, Remote: remote, Opcode: op,
			SGEs: []verbs.SGE{{MR: c.e.mr, Offset: c.slot(j), Length: uint32(c.size)}}}
		switch {
		case op == verbs.OpSend:
			wr.Opcode, wr.Imm = verbs.OpSendImm, checkImm(k, q)
		case op.IsAtomic():
			wr.Compare, wr.SwapAdd = atomicOperands(k, q, c.fetchAdd())
			c.send(j, 8)
		}
		if err := c.e.qps[q].PostSend([]verbs.SendWR{wr}); err != nil {
			return fmt.Errorf("qp %d: %w", q, err)
		}
	}
	return c.waitSends(ctx, qps)
}

// waitSends waits until the pass's operation on each of qps completed.
func (c *rdmaCheck) waitSends(ctx context.Context, qps []int) error {
	want := make(map[uint64]bool, len(qps))
	for _, q := range qps {
		want[checkWRTag|uint64(q)] = true
	}
	// One loop thread: Validate refuses --validate with --threads > 1.
	return c.poll(ctx, c.e.scqs[0], c.e.spec.IdleTimeout, func(wc verbs.WC) (bool, error) {
		delete(want, wc.ID) // a timed loop's late completion is passed over
		return len(want) == 0, nil
	})
}

// poll reaps cq's completions and hands each to take until take says
// done, or wait passed without one (ok false). A failed completion is an
// error.
func (c *rdmaCheck) poll(ctx context.Context, cq *verbs.CQ, wait time.Duration, take func(verbs.WC) (bool, error)) error {
	if c.wcs == nil {
		c.wcs = make([]verbs.WC, 16)
	}
	deadline := time.Now().Add(wait)
	for {
		n, err := cq.Poll(c.wcs)
		if err != nil {
			return err
		}
		done := false
		for i := range c.wcs[:n] {
			if err := c.wcs[i].Err(); err != nil {
				return err
			}
			d, err := take(c.wcs[i])
			if err != nil {
				return err
			}
			done = done || d
		}
		switch {
		case done:
			return nil
		case n > 0:
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		case time.Now().After(deadline):
			return fmt.Errorf("%w: no completion for %s", errPeerSilent, wait)
		}
		time.Sleep(20 * time.Microsecond)
	}
}

func (c *rdmaCheck) check(ctx context.Context, k checkKey, qps []int) (checkTally, *report.Mismatch, error) {
	me, op := c.e.role, c.e.spec.Info().Op
	var t checkTally
	var first *report.Mismatch
	if err := c.download(); err != nil {
		return t, nil, err
	}
	keep := func(m *report.Mismatch) {
		if m != nil && first == nil {
			first = m
		}
	}
	for j, q := range qps {
		point := checkPoint{role: me, check: "pass", key: k, qp: q}
		switch {
		case op == OpAtomic:
			fa := c.fetchAdd()
			if k.dir.to == me {
				word := c.target(j, 8)
				point.check = "target"
				runCheckHook(point, word)
				keep(atomicMismatch(k, q, k.round+1, fa, "target", me, binary.NativeEndian.Uint64(word), atomicValue(k, q, k.round+1, fa)))
				t.messages++
				t.bytes += 8
			}
			if k.dir.initiator == me {
				word := c.send(j, 8)
				point.check = "fetched"
				runCheckHook(point, word)
				keep(atomicMismatch(k, q, k.round, fa, "fetched", me, binary.NativeEndian.Uint64(word), atomicValue(k, q, k.round, fa)))
			}
		case k.dir.to != me:
		case op == OpSend:
			m, err := c.checkReceive(ctx, k, q, point)
			if err != nil {
				return t, nil, err
			}
			keep(m)
			t.messages++
			t.bytes += uint64(c.size)
		default:
			buf := c.target(j, c.size) // WRITE
			if op == OpRead {
				buf = c.send(j, c.size)
			}
			runCheckHook(point, buf)
			m := c.e.spec.patternMismatch(k, q, buf, me)
			// UC: a WRITE completes at its sender when sent, not when
			// placed; give it a moment to arrive.
			for deadline := time.Now().Add(checkRecvWait); m != nil && c.e.spec.Connection != "RC" && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
				if err := c.download(); err != nil {
					return t, nil, err
				}
				m = c.e.spec.patternMismatch(k, q, buf, me)
			}
			keep(m)
			t.messages++
			t.bytes += uint64(c.size)
		}
	}
	return t, first, nil
}

// checkReceive waits for QP qp's SEND of round k, checks it where it
// landed and reposts its receive. Receives a timed loop left behind (late
// UC or UD messages) are reposted and passed over.
func (c *rdmaCheck) checkReceive(ctx context.Context, k checkKey, qp int, point checkPoint) (*report.Mismatch, error) {
	if c.recv == nil {
		return nil, fmt.Errorf("no receive loop on the %s", c.e.role)
	}
	grh := uint64(0)
	if c.e.spec.Connection == "UD" {
		grh = udGRH
	}
	tag := checkImm(k, qp)
	var got *verbs.WC
	err := c.poll(ctx, c.e.rcqs[0], checkRecvWait, func(wc verbs.WC) (bool, error) {
		if wc.HasImm && wc.Imm == tag && got == nil {
			got = &wc
			return true, nil
		}
		return false, c.recv.Repost(wc.ID)
	})
	if got == nil {
		if err != nil && ctx.Err() == nil && errors.Is(err, errPeerSilent) {
			return &report.Mismatch{Check: "pass", Direction: k.dir.String(), Checker: c.e.role.String(), QP: qp, Round: k.round,
				Note: fmt.Sprintf("it did not arrive within %s of its sender's completion", checkRecvWait)}, nil
		}
		return nil, err
	}
	q, off, err := c.recv.RecvLanding(got.ID)
	if err != nil {
		return nil, err
	}
	if q != qp {
		return nil, fmt.Errorf("QP %d's SEND completed on QP %d", qp, q)
	}
	if err := c.download(); err != nil {
		return nil, err
	}
	start := c.e.half + off + grh
	buf := c.e.buf.host[start : start+uint64(c.size)]
	c.used = max(c.used, off+grh+uint64(c.size))
	runCheckHook(point, buf)
	m := c.e.spec.patternMismatch(k, qp, buf, c.e.role)
	if m == nil && uint64(got.ByteLen) != grh+uint64(c.size) {
		m = &report.Mismatch{Check: "pass", Direction: k.dir.String(), Checker: c.e.role.String(), QP: qp, Round: k.round,
			Offset: uint64(c.size), Note: fmt.Sprintf("%d bytes arrived, %d were sent", uint64(got.ByteLen)-grh, c.size)}
	}
	return m, c.recv.Repost(got.ID)
}

// counters checks the FETCH_AND_ADD targets the measured run left on this
// end, if the peer's adds targeted it: each 64-bit word of the target
// area holds the adds that reached it. Bandwidth loops move through the
// area a cache line at a time (verbs.CycleOf), each QP from the start;
// a latency loop adds to the first word. Where the count per QP is not
// planned (duration and precision modes), the words' sum is checked.
func (c *rdmaCheck) counters(peerSent uint64) (int, *report.Mismatch) {
	s := c.e.spec
	if s.Info().Op != OpAtomic || s.AtomicType != FetchAdd || (s.initiates(c.e.role) && !s.Bidirectional) {
		return 0, nil
	}
	if err := c.download(); err != nil {
		return 0, &report.Mismatch{Check: "counters", Checker: c.e.role.String(), Note: "the buffer could not be read: " + err.Error()}
	}
	area := c.e.buf.host[c.e.half : 2*c.e.half]
	dir := checkDir{clientEnd, serverEnd, clientEnd}
	if c.e.role == clientEnd {
		dir = checkDir{serverEnd, clientEnd, serverEnd}
	}
	runCheckHook(checkPoint{role: c.e.role, check: "counters", key: checkKey{dir: dir}}, area)
	mismatch := func(off uint64, got, want uint64, note string) *report.Mismatch {
		return &report.Mismatch{Check: "counters", Direction: dir.String(), Checker: c.e.role.String(), Offset: off,
			Expected: fmt.Sprint(want), Got: fmt.Sprint(got), Note: note}
	}
	words := len(area) / 8
	word := func(w int) uint64 { return binary.NativeEndian.Uint64(area[8*w:]) }
	if s.openEnded() {
		var sum uint64
		for w := 0; w < words; w++ {
			sum += word(w)
		}
		if sum != peerSent {
			return words, mismatch(0, sum, peerSent, "the sum of the target words")
		}
		return words, nil
	}
	want := make([]uint64, words)
	perQP := uint64(s.WarmupFor(c.size) + s.ItersFor(c.size))
	stride, slots := verbs.CycleOf(8, c.e.half)
	if s.Info().Metric == Latency || slots == 0 {
		want[0] = perQP * uint64(s.QPs)
	} else {
		for sl := uint64(0); sl < uint64(slots); sl++ {
			n := perQP / uint64(slots)
			if sl < perQP%uint64(slots) {
				n++
			}
			want[sl*uint64(stride)/8] = n * uint64(s.QPs)
		}
	}
	for w := range want {
		if got := word(w); got != want[w] {
			return words, mismatch(uint64(8*w), got, want[w], "")
		}
	}
	return words, nil
}

func (c *rdmaCheck) reset() {
	buf := c.e.buf.host
	clear(buf[:c.used])
	clear(buf[c.e.half : c.e.half+c.used])
	c.used = 0
	c.upload()
}
