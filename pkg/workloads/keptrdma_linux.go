//go:build linux && cgo

package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// keptRDMA is one end of a kept RDMA session: an RC QP toward the other
// end, its CQs, one registered buffer (the half this end sends from, and
// the half the other end writes into, reads or operates on) and the
// test's timed loop, set up once and run burst after burst. The loop's
// state (its iteration, so the byte a write ping-pong's ends wait for)
// carries over from one burst to the next. The server's end of read-lat
// and atomic-lat has no loop: only the client's CPU takes part.
type keptRDMA struct {
	dev      *verbs.Context
	pd       *verbs.PD
	scq, rcq *verbs.CQ
	mr       *verbs.MR
	qp       *verbs.QP
	loop     *verbs.Loop // nil: nothing runs on this end
	size     uint64
}

// keptLoopTotal is a kept session's loop's planned iterations: more than
// any session runs.
const keptLoopTotal = 1 << 62

// A kept session's loop spins for an answer as the test's does, and one
// that takes longer than keptNapAfter (tens of a healthy fabric's round
// trips) sleeps keptNap between looks: an agent probes all day, and a
// slow peer, or an emulated device whose every round trip takes a
// millisecond, would otherwise cost both ends a core for the whole wait.
// A sample past keptNapAfter may be up to about keptNap late.
const (
	keptNapAfter = 100 * time.Microsecond
	keptNap      = 20 * time.Microsecond
)

// openKeptRDMA sets up this end of a kept RDMA session of spec on device,
// up to its endpoint: connect joins it to the other end's.
func openKeptRDMA(spec *Spec, device string) (*keptRDMA, error) {
	k := &keptRDMA{size: uint64(spec.Sizes[0])}
	fail := func(err error) (*keptRDMA, error) {
		k.close()
		return nil, err
	}
	var err error
	if k.dev, err = verbs.Open(device); err != nil {
		return nil, err
	}
	port, err := k.dev.QueryPort(max(spec.Port, 1))
	if err != nil {
		return fail(err)
	}
	if port.State != verbs.PortActive {
		return fail(fmt.Errorf("port %d of %s is %s, not ACTIVE (check the link and `rdma link`)", max(spec.Port, 1), k.dev.Name(), port.State))
	}
	if k.pd, err = k.dev.AllocPD(); err != nil {
		return fail(err)
	}
	if k.scq, err = k.dev.CreateCQ(verbs.CQConfig{Depth: 16}); err != nil {
		return fail(err)
	}
	if k.rcq, err = k.dev.CreateCQ(verbs.CQConfig{Depth: 16}); err != nil {
		return fail(err)
	}
	if k.mr, err = k.pd.RegMR(verbs.MRConfig{Length: 2 * k.size, Access: verbs.AccessAll}); err != nil {
		return fail(err)
	}
	inline, auto := spec.InlineFor()
	if !sendsFromBuffer(spec.opcode()) {
		inline, auto = 0, false
	}
	cfg := verbs.QPConfig{Type: verbs.RC, Port: spec.Port, SendCQ: k.scq, RecvCQ: k.rcq, MaxSendWR: 16, MaxRecvWR: 1,
		MaxInlineData: inline, GIDIndex: orAuto(spec.GIDIndex), MTU: verbs.MTU(spec.MTU), PathValues: spec.Path.Values(),
		QPTimeout: spec.QPTimeout}
	k.qp, err = k.pd.CreateQP(cfg)
	if err != nil && auto && inline > 0 && errors.Is(err, syscall.EINVAL) {
		cfg.MaxInlineData = 0 // a device with less inline: from the registered buffer
		k.qp, err = k.pd.CreateQP(cfg)
	}
	if err != nil {
		return fail(err)
	}
	return k, nil
}

// endpoint is what the other end needs of this one.
func (k *keptRDMA) endpoint() keptRDMAEndpoint {
	rb := k.mr.Remote()
	rb.Addr += k.size
	rb.Len = k.size
	return keptRDMAEndpoint{QP: k.qp.Endpoint(), Buf: rb}
}

// connect joins this end to the other's and makes the loop of role (none
// for the responder of a test without one: read-lat, atomic-lat).
func (k *keptRDMA) connect(spec *Spec, other keptRDMAEndpoint, role verbs.Role) error {
	if other.Buf.Len < k.size {
		return fmt.Errorf("the other end's buffer holds %d bytes, not a %d-byte message", other.Buf.Len, k.size)
	}
	if err := k.qp.Connect(other.QP); err != nil {
		return err
	}
	info := spec.Info()
	kind := info.Loop
	if role == verbs.Responder {
		kind = info.Responder
	}
	if kind == 0 {
		return nil
	}
	op := spec.opcode()
	cfg := verbs.LoopConfig{Kind: kind, Role: role, Opcode: op, Size: uint32(k.size), RxDepth: 1,
		Inline: int(k.size) <= k.qp.MaxInline() && sendsFromBuffer(op), CQMod: 1,
		IdleTimeout: spec.IdleTimeout, Total: keptLoopTotal, NapAfter: keptNapAfter, Nap: keptNap, SwapAdd: loopSwapAdd(op)}
	l, err := verbs.NewLoop(cfg, verbs.Buf{MR: k.mr}, verbs.Buf{MR: k.mr, Offset: k.size},
		[]verbs.LoopQP{{QP: k.qp, Remote: other.Buf}})
	if err != nil {
		return err
	}
	if kind == verbs.LatSend {
		// The one receive the ping-pong keeps posted, there before the
		// other end's first send.
		if err := l.PostRecvs(1); err != nil {
			_ = l.Close()
			return err
		}
	}
	k.loop = l
	return nil
}

// keptAnnounced tells whether the bursts of a kept session of spec are
// announced to the server: a ping-pong's are, for the server's end to run
// its half.
func keptAnnounced(spec *Spec) bool { return spec.Info().Responder != 0 }

// pingPongs runs len(samples) iterations of the loop (ping-pongs, or the
// initiator's operations alone; the responder's samples are scratch),
// each sample its round trip in ns.
func (k *keptRDMA) pingPongs(samples []uint64) error {
	ran, valid, err := k.loop.RunLatency(samples)
	switch {
	case err != nil:
		return err
	case ran < len(samples):
		return fmt.Errorf("the loop ran %d of %d ping-pongs", ran, len(samples))
	case valid < ran:
		return fmt.Errorf("the clock ran backwards in %d of %d ping-pongs", ran-valid, ran)
	}
	return nil
}

// close frees every verbs object of this end.
func (k *keptRDMA) close() {
	if k.loop != nil {
		_ = k.loop.Close()
	}
	_ = k.qp.Close()
	_ = k.mr.Close()
	_ = k.scq.Close()
	_ = k.rcq.Close()
	if k.pd != nil {
		_ = k.pd.Close()
	}
	if k.dev != nil {
		_ = k.dev.Close()
	}
}

// runKeptRDMA is the server end of a kept RDMA session: it sets its end
// up, takes the client's endpoint and sends its own, then answers each
// burst the client announces (keptBurst: its ping-pongs, and one more
// first, which waits for this end to read the announcement and is not
// counted) until the client ends the session (a burst of 0) or its
// control connection is lost. Between bursts it waits in Go, not on the
// device. A test without a responder's loop (read-lat, atomic-lat)
// announces no burst: this end only waits for the session's end.
func (t *ServerTest) runKeptRDMA(ctx context.Context, tr Transport) error {
	dev := t.srv.Device
	if t.spec.ServerDevice != "" {
		dev = t.spec.ServerDevice
	}
	k, err := openKeptRDMA(&t.spec, dev)
	if err != nil {
		return err
	}
	defer k.close()
	var client keptRDMAEndpoint
	if err := recvJSON(ctx, tr, &client); err != nil {
		return fmt.Errorf("the client's kept session endpoint: %w", err)
	}
	if err := k.connect(&t.spec, client, verbs.Responder); err != nil {
		return err
	}
	if err := sendJSON(ctx, tr, k.endpoint()); err != nil {
		return err
	}
	var scratch []uint64
	for {
		var b keptBurst
		if err := recvJSON(ctx, tr, &b); err != nil {
			if ctx.Err() != nil {
				return nil // the control connection is lost, or the server stops
			}
			return fmt.Errorf("kept session: %w", err)
		}
		if b.N <= 0 {
			return nil // the session ended
		}
		if k.loop == nil {
			return fmt.Errorf("kept session: a burst announced for %s, whose server runs no loop", t.spec.Test)
		}
		if b.N+1 > len(scratch) {
			scratch = make([]uint64, b.N+1)
		}
		if err := k.pingPongs(scratch[:b.N+1]); err != nil {
			return fmt.Errorf("kept session: %w", err)
		}
	}
}

// keptRDMAClient is the client end of a kept RDMA session.
type keptRDMAClient struct {
	k         *keptRDMA
	rt        RemoteTest
	announced bool     // bursts are announced (keptAnnounced)
	samples   []uint64 // an announced burst's, with its first ping-pong's
	body      []byte   // the announcement of a burst of len(samples)-1
}

// openKeptRDMAClient sets the client end of a kept RDMA session up on rt
// (started): endpoints exchanged, and a first burst of warm samples, not
// counted.
func openKeptRDMAClient(ctx context.Context, rt RemoteTest, spec *Spec, warm int) (*keptRDMAClient, error) {
	k, err := openKeptRDMA(spec, spec.Device)
	if err != nil {
		return nil, err
	}
	c := &keptRDMAClient{k: k, rt: rt, announced: keptAnnounced(spec)}
	if err := sendJSON(ctx, rt, k.endpoint()); err != nil {
		k.close()
		return nil, err
	}
	var srv keptRDMAEndpoint
	if err := recvJSON(ctx, rt, &srv); err != nil {
		k.close()
		return nil, fmt.Errorf("the server's kept session endpoint: %w", err)
	}
	if err := k.connect(spec, srv, verbs.Initiator); err != nil {
		k.close()
		return nil, err
	}
	if warm > 0 {
		if err := c.burst(ctx, make([]uint64, warm)); err != nil {
			k.close()
			return nil, fmt.Errorf("kept session warm-up: %w", err)
		}
	}
	return c, nil
}

// burst runs len(samples) of the test's operations, each sample its round
// trip in ns; a ping-pong's burst is announced first and runs one more
// ping-pong first, not counted. The timed loop is the test's own, one cgo
// call.
func (c *keptRDMAClient) burst(ctx context.Context, samples []uint64) error {
	if !c.announced {
		return c.k.pingPongs(samples)
	}
	if len(c.samples) != len(samples)+1 {
		c.samples = make([]uint64, len(samples)+1)
		c.body, _ = json.Marshal(keptBurst{N: len(samples)})
	}
	if err := c.rt.Send(ctx, c.body); err != nil {
		return err
	}
	if err := c.k.pingPongs(c.samples); err != nil {
		return err
	}
	copy(samples, c.samples[1:])
	return nil
}

// end tells the server the session ends and frees this end.
func (c *keptRDMAClient) end(ctx context.Context) {
	body, _ := json.Marshal(keptBurst{})
	_ = c.rt.Send(ctx, body)
	c.k.close()
}
