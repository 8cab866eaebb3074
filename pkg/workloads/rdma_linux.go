//go:build linux && cgo

package workloads

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// rdmaSetup is what each end tells the other before an RDMA test: its host
// and, per QP, its endpoint and the buffer the peer may target.
type rdmaSetup struct {
	Host report.Host `json:"host"`
	QPs  []qpSetup   `json:"qps"`
}

type qpSetup struct {
	Endpoint verbs.Endpoint     `json:"endpoint"`
	Buffer   verbs.RemoteBuffer `json:"buffer"`
}

// latBatch is how many latency samples one cgo call returns.
const latBatch = 4096

// rdmaEnd holds one end's verbs objects for one test (every size).
type rdmaEnd struct {
	spec *Spec
	role Role
	link Link
	opt  Options

	dev     *verbs.Context
	pd      *verbs.PD
	scq     *verbs.CQ
	rcq     *verbs.CQ
	mr      *verbs.MR
	qps     []*verbs.QP
	half    uint64 // the MR's second half is the receive/target area
	maxSize int
	inline  int
	// recvsPosted: receives are posted once per test; every loop reposts
	// what it consumes, so the count stays at rx-depth.
	recvsPosted bool

	host     report.Host
	peer     rdmaSetup
	warnings []string
	samples  []uint64
}

func runRDMA(ctx context.Context, spec Spec, role Role, link Link, opt Options) (*EndResult, error) {
	e := &rdmaEnd{spec: &spec, role: role, link: link, opt: opt, host: LocalHost()}
	defer e.close()
	if err := e.setup(); err != nil {
		_ = link.Exchange(ctx, "setup", Fail(err), nil)
		return nil, err
	}
	local := rdmaSetup{Host: e.host}
	for _, q := range e.qps {
		local.QPs = append(local.QPs, qpSetup{Endpoint: q.Endpoint(),
			Buffer: verbs.RemoteBuffer{Addr: e.mr.Addr() + e.half, Len: e.half, RKey: e.mr.RKey()}})
	}
	if err := link.Exchange(ctx, "setup", local, &e.peer); err != nil {
		return nil, err
	}
	if len(e.peer.QPs) != len(e.qps) {
		err := fmt.Errorf("the peer has %d QPs, this end %d", len(e.peer.QPs), len(e.qps))
		_ = link.Exchange(ctx, "connected", Fail(err), nil)
		return nil, err
	}
	for i, q := range e.qps {
		if err := q.Connect(e.peer.QPs[i].Endpoint); err != nil {
			err = fmt.Errorf("connect qp %d: %w", i, err)
			_ = link.Exchange(ctx, "connected", Fail(err), nil)
			return nil, err
		}
	}
	if err := link.Exchange(ctx, "connected", nil, nil); err != nil {
		return nil, err
	}
	res := &EndResult{Host: e.host, Peer: &e.peer.Host}
	for i, size := range spec.Sizes {
		r, err := e.runSize(ctx, i, size)
		r.Warnings = append(r.Warnings, e.warnings...)
		e.warnings = nil
		if err != nil {
			r = failResult(&spec, size, err)
			res.Results = append(res.Results, r)
			return res, err
		}
		if role == Client {
			res.Results = append(res.Results, r)
		}
		if opt.Progress != nil {
			opt.Progress(Progress{Test: spec.Test, Size: size, SizeIdx: i, Sizes: len(spec.Sizes), Done: true})
		}
	}
	return res, nil
}

// setup opens the device and builds the PD, CQs, MR and QPs.
func (e *rdmaEnd) setup() error {
	s := e.spec
	name := e.opt.Device
	if name == "" && e.role == Client {
		name = s.Device
	}
	dev, err := verbs.Open(name)
	if err != nil {
		return err
	}
	e.dev = dev
	port, err := dev.QueryPort(s.Port)
	if err != nil {
		return err
	}
	if port.State != verbs.PortActive {
		return fmt.Errorf("port %d of %s is %s, not ACTIVE (check the link and `rdma link`)", s.Port, dev.Name(), port.State)
	}
	for _, z := range s.Sizes {
		e.maxSize = max(e.maxSize, z)
	}
	e.half = s.BufferHalf()
	need := s.RegisteredBytes()
	if e.opt.MaxMem > 0 && need > e.opt.MaxMem {
		return fmt.Errorf("the test needs %d bytes of registered memory (2 x %d B buffers for %d B messages); this end allows %d (--max-mem)",
			need, e.half, e.maxSize, e.opt.MaxMem)
	}
	if e.pd, err = dev.AllocPD(); err != nil {
		return err
	}
	t := s.Info()
	sendWR := s.TxDepth
	if t.Metric == Latency {
		sendWR = 2 * s.CQMod
	}
	if e.scq, err = dev.CreateCQ(verbs.CQConfig{Depth: sendWR*s.QPs + 16, Events: s.Events}); err != nil {
		return err
	}
	if e.rcq, err = dev.CreateCQ(verbs.CQConfig{Depth: s.RxDepth*s.QPs + 16, Events: s.Events}); err != nil {
		return err
	}
	if e.mr, err = e.pd.RegMR(verbs.MRConfig{Length: need, Access: verbs.AccessAll}); err != nil {
		return err
	}
	typ, err := verbs.ParseQPType(s.Connection)
	if err != nil {
		return err
	}
	inline, auto := s.InlineFor()
	cfg := verbs.QPConfig{Type: typ, Port: s.Port, SendCQ: e.scq, RecvCQ: e.rcq, MaxSendWR: sendWR,
		MaxRecvWR: s.RxDepth, MaxInlineData: inline, GIDIndex: s.GIDIndex, MTU: verbs.MTU(s.MTU)}
	for i := 0; i < s.QPs; i++ {
		q, err := e.pd.CreateQP(cfg)
		if err != nil && i == 0 && inline > 0 && errors.Is(err, syscall.EINVAL) {
			if !auto {
				return fmt.Errorf("inline size %d was refused by %s (%v); lower -I", inline, dev.Name(), err)
			}
			e.warnings = append(e.warnings, fmt.Sprintf("%s refused inline data of %d bytes; running without inline", dev.Name(), inline))
			cfg.MaxInlineData = 0
			q, err = e.pd.CreateQP(cfg)
		}
		if err != nil {
			return err
		}
		e.qps = append(e.qps, q)
	}
	e.inline = 0
	if cfg.MaxInlineData > 0 {
		e.inline = e.qps[0].MaxInline()
	}
	gid := e.qps[0].GIDChoice()
	netdev := ""
	if table, err := dev.GIDTable(s.Port); err == nil {
		for _, g := range table {
			if g.Index == gid.Index {
				netdev = g.Netdev
			}
		}
	}
	info := dev.Info()
	e.host.Device = &report.Device{Name: info.Name, Firmware: info.FirmwareVer, NodeGUID: info.NodeGUID,
		Transport: info.Transport, Port: s.Port, PortState: port.State.String(), LinkLayer: string(port.LinkLayer),
		ActiveMTU: int(port.ActiveMTU), GID: gid.GID.String(), GIDIndex: gid.Index, GIDType: gid.Type,
		GIDReason: gid.Reason, Netdev: netdev}
	if e.role == Client {
		e.samples = make([]uint64, latBatch)
	}
	return nil
}

func (e *rdmaEnd) close() {
	for _, q := range e.qps {
		q.Close()
	}
	// Each Close is nil-safe; the order is the reverse of creation.
	e.mr.Close()
	e.rcq.Close()
	e.scq.Close()
	e.pd.Close()
	e.dev.Close()
}

// loopQPs pairs each QP with the peer's target buffer.
func (e *rdmaEnd) loopQPs() []verbs.LoopQP {
	out := make([]verbs.LoopQP, len(e.qps))
	for i, q := range e.qps {
		out[i] = verbs.LoopQP{QP: q, Remote: e.peer.QPs[i].Buffer}
	}
	return out
}

func (e *rdmaEnd) opcode() verbs.Opcode {
	switch e.spec.Info().Op {
	case OpWrite:
		return verbs.OpWrite
	case OpRead:
		return verbs.OpRead
	case OpSend:
		return verbs.OpSend
	}
	if e.spec.AtomicType == CmpSwap {
		return verbs.OpCompSwap
	}
	return verbs.OpFetchAdd
}

func (e *rdmaEnd) newLoop(cfg verbs.LoopConfig) (*verbs.Loop, error) {
	cfg.Opcode = e.opcodeFor(cfg.Kind)
	cfg.IdleTimeout = e.spec.IdleTimeout
	cfg.RxDepth = e.spec.RxDepth
	cfg.RecvSize = uint32(e.maxSize)
	cfg.Inline = e.usesInline(int(cfg.Size), cfg.Opcode)
	if cfg.Opcode == verbs.OpFetchAdd {
		cfg.SwapAdd = 1
	}
	return verbs.NewLoop(cfg, verbs.Buf{MR: e.mr}, verbs.Buf{MR: e.mr, Offset: e.half}, e.loopQPs())
}

// usesInline tells whether size-byte messages of op go inline: up to the
// inline size the QP was granted, and never for READ and atomics (their
// local buffer is written, not read).
func (e *rdmaEnd) usesInline(size int, op verbs.Opcode) bool {
	return e.inline > 0 && size <= e.inline && op != verbs.OpRead && !op.IsAtomic()
}

func (e *rdmaEnd) opcodeFor(k verbs.LoopKind) verbs.Opcode {
	if k == verbs.BWRecv {
		return verbs.OpSend
	}
	return e.opcode()
}

// postRecvsOnce posts rx-depth receives on every QP the first time a loop
// needs them.
func (e *rdmaEnd) postRecvsOnce(l *verbs.Loop) error {
	if e.recvsPosted {
		return nil
	}
	e.recvsPosted = true
	return l.PostRecvs(e.spec.RxDepth)
}

func (e *rdmaEnd) runSize(ctx context.Context, i, size int) (report.Result, error) {
	r := baseResult(e.spec, size)
	if e.spec.Connection == "UD" {
		if mtu := int(e.qps[0].PathMTU()); size > mtu {
			err := fmt.Errorf("UD send is limited to the path MTU (%d bytes); size %d is larger", mtu, size)
			_ = e.link.Exchange(ctx, phase("ready", i), Fail(err), nil)
			return r, err
		}
	}
	// Fresh buffers: the write ping-pong spins on the last byte.
	buf := e.mr.Buf()
	clear(buf[:size])
	clear(buf[e.half : e.half+uint64(size)])
	var err error
	r.Effective = &report.Effective{Inline: e.usesInline(size, e.opcode())}
	if e.spec.Info().Metric == Latency {
		err = e.latency(ctx, i, size, &r)
	} else {
		err = e.bandwidth(ctx, i, size, &r)
	}
	return r, err
}

// exchangeResult swaps the ends' outcomes for size i.
func (e *rdmaEnd) exchangeResult(ctx context.Context, i int, mine sizeOutcome) (sizeOutcome, error) {
	var peer sizeOutcome
	if err := e.link.Exchange(ctx, phase("result", i), mine, &peer); err != nil {
		return peer, err
	}
	if peer.Err != "" {
		return peer, &PeerError{Phase: phase("result", i), Msg: peer.Err}
	}
	return peer, nil
}

// finish tells the peer this end is done with size i (or failed), and
// waits for the peer to be done too.
func (e *rdmaEnd) finish(ctx context.Context, i int, runErr error) error {
	if runErr != nil {
		_ = e.link.Exchange(ctx, phase("finished", i), Fail(runErr), nil)
		return runErr
	}
	return e.link.Exchange(ctx, phase("finished", i), nil, nil)
}

func (e *rdmaEnd) latency(ctx context.Context, i, size int, r *report.Result) error {
	s := e.spec
	t := s.Info()
	kind := verbs.LatPost
	switch t.Op {
	case OpWrite:
		kind = verbs.LatWrite
	case OpSend:
		kind = verbs.LatSend
	}
	warm, iters := s.WarmupFor(size), s.ItersFor(size)
	total := uint64(warm + iters)
	if s.Duration > 0 {
		total = 1 << 62
	}
	var loop *verbs.Loop
	var err error
	if e.role == Client || kind != verbs.LatPost {
		role := verbs.Initiator
		if e.role == Server {
			role = verbs.Responder
		}
		loop, err = e.newLoop(verbs.LoopConfig{Kind: kind, Role: role, Size: uint32(size), CQMod: s.CQMod, Total: total})
		if err == nil && kind == verbs.LatSend {
			err = e.postRecvsOnce(loop)
		}
		if err != nil {
			_ = e.link.Exchange(ctx, phase("ready", i), Fail(err), nil)
			return err
		}
		defer loop.Close()
		defer context.AfterFunc(ctx, loop.Stop)()
	}
	if err := e.link.Exchange(ctx, phase("ready", i), nil, nil); err != nil {
		return err
	}

	if e.role == Server {
		var wg sync.WaitGroup
		var lerr error
		if loop != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, lerr = loop.RunLatency(nil)
			}()
		}
		ferr := e.finish(ctx, i, nil)
		if loop != nil && (ferr != nil || s.Duration > 0) {
			loop.Stop()
		}
		wg.Wait()
		if ferr != nil {
			return ferr
		}
		if errors.Is(lerr, verbs.ErrAborted) && s.Duration > 0 {
			lerr = nil
		}
		mine := sizeOutcome{}
		if lerr != nil {
			mine.Err = lerr.Error()
		}
		_, err := e.exchangeResult(ctx, i, mine)
		if lerr != nil {
			return lerr
		}
		return err
	}

	rec := report.NewLatencyRecorder(t.Basis)
	runErr := e.runLatencyClient(ctx, loop, warm, iters, rec, r)
	if err := e.finish(ctx, i, runErr); err != nil {
		return err
	}
	if _, err := e.exchangeResult(ctx, i, sizeOutcome{}); err != nil {
		return err
	}
	r.Latency = rec.Snapshot()
	r.Iterations = int(rec.Count())
	e.clockWarning(r)
	return nil
}

// runLatencyClient runs the warm-up (discarded), then the measured
// iterations or duration, in batches: each cgo call returns up to latBatch
// samples, so memory does not grow with the count, and a sample never spans
// two calls.
func (e *rdmaEnd) runLatencyClient(ctx context.Context, loop *verbs.Loop, warm, iters int, rec *report.LatencyRecorder, r *report.Result) error {
	batch := e.samples
	for done := 0; done < warm; {
		n, err := loop.RunLatency(batch[:min(len(batch), warm-done)])
		if err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		done += n
	}
	s := e.spec
	if s.Duration == 0 {
		for done := 0; done < iters; {
			n, err := loop.RunLatency(batch[:min(len(batch), iters-done)])
			if err != nil {
				return err
			}
			rec.RecordBatch(batch[:n])
			done += n
		}
		return nil
	}
	// Duration mode: each call returns at the first sample that ends past
	// the interval's end, so intervals are as long as asked whatever the
	// latency.
	iv := report.NewLatencyRecorder(rec.Basis())
	start := verbs.Now()
	end := start + uint64(s.Duration)
	ivStart := start
	for {
		ivEnd := min(ivStart+uint64(s.Interval), end)
		n, err := loop.RunLatencyUntil(batch, ivEnd)
		if err != nil {
			return err
		}
		rec.RecordBatch(batch[:n])
		iv.RecordBatch(batch[:n])
		now := verbs.Now()
		if now < ivEnd {
			continue // the batch filled up first
		}
		interval := report.Interval{StartS: float64(ivStart-start) / 1e9, DurationS: float64(now-ivStart) / 1e9, Latency: iv.Snapshot()}
		r.Intervals = append(r.Intervals, interval)
		if e.opt.Progress != nil {
			e.opt.Progress(Progress{Test: s.Test, Size: r.Size, Interval: &interval})
		}
		iv.Reset()
		ivStart = now
		if now >= end {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// clockWarning flags latencies too close to the clock's resolution.
func (e *rdmaEnd) clockWarning(r *report.Result) {
	c := verbs.Clock()
	if r.Latency != nil && r.Latency.Count > 0 && r.Latency.MinNs < 20*c.ResolutionNs {
		r.Warnings = append(r.Warnings, fmt.Sprintf("the minimum latency %.0f ns is within 20x the clock resolution %.0f ns",
			r.Latency.MinNs, c.ResolutionNs))
	}
}

func (e *rdmaEnd) bandwidth(ctx context.Context, i, size int, r *report.Result) error {
	s := e.spec
	t := s.Info()
	sending := e.role == Client || s.Bidirectional
	receiving := t.Op == OpSend && (e.role == Server || s.Bidirectional)
	warm, iters := s.WarmupFor(size), s.ItersFor(size)
	reliable := s.Connection == "RC"

	var snd, rcv *verbs.Loop
	setupErr := func() error {
		var err error
		if sending {
			snd, err = e.newLoop(verbs.LoopConfig{Kind: verbs.BWSend, Size: uint32(size), TxDepth: s.TxDepth,
				CQMod: s.CQMod, PostList: s.PostList})
			if err != nil {
				return err
			}
		}
		if receiving {
			var total uint64
			if reliable && s.Duration == 0 {
				total = uint64(warm+iters) * uint64(s.QPs)
			}
			rcv, err = e.newLoop(verbs.LoopConfig{Kind: verbs.BWRecv, Size: uint32(size), Total: total})
			if err != nil {
				return err
			}
			return e.postRecvsOnce(rcv)
		}
		return nil
	}()
	for _, l := range []*verbs.Loop{snd, rcv} {
		if l != nil {
			defer l.Close()
			defer context.AfterFunc(ctx, l.Stop)()
		}
	}
	if setupErr != nil {
		_ = e.link.Exchange(ctx, phase("ready", i), Fail(setupErr), nil)
		return setupErr
	}
	if err := e.link.Exchange(ctx, phase("ready", i), nil, nil); err != nil {
		return err
	}

	var wg sync.WaitGroup
	var rerr error
	if rcv != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, rerr = rcv.RunReceiver(0)
		}()
	}
	var mine sizeOutcome
	var sent uint64
	var runErr error
	if snd != nil {
		mine.Bandwidth, sent, runErr = e.runSender(ctx, snd, size, warm, iters, r)
	}
	ferr := e.finish(ctx, i, runErr)
	if rcv != nil {
		if ferr != nil || !reliable || s.Duration > 0 {
			if ferr == nil {
				time.Sleep(200 * time.Millisecond) // let what is in flight land
			}
			rcv.Stop()
		}
		wg.Wait()
		mine.Received = rcv.Stats().Completed
		if rerr != nil {
			mine.Err = rerr.Error()
		}
	}
	if ferr != nil {
		return ferr
	}
	peer, err := e.exchangeResult(ctx, i, mine)
	if rerr != nil {
		return rerr
	}
	if err != nil {
		return err
	}
	if e.role == Server {
		return nil
	}
	r.Bandwidth = mine.Bandwidth
	if s.Duration == 0 {
		r.Iterations = iters
	} else if mine.Bandwidth != nil {
		r.Iterations = int(mine.Bandwidth.Messages)
	}
	if s.Bidirectional {
		r.Reverse = peer.Bandwidth
		r.Total = report.Sum(r.Bandwidth, r.Reverse)
	}
	if t.Op == OpSend && peer.Received < sent {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d of %d messages arrived (%s does not retransmit; %.2f%% lost)",
			peer.Received, sent, s.Connection, 100*float64(sent-peer.Received)/float64(sent)))
	}
	return nil
}

// runSender runs the warm-up, then the measured part (iterations or
// duration with intervals), and returns the measured bandwidth and the
// total messages sent including warm-up.
func (e *rdmaEnd) runSender(ctx context.Context, l *verbs.Loop, size, warm, iters int, r *report.Result) (*report.Bandwidth, uint64, error) {
	s := e.spec
	nqp := uint64(len(e.qps))
	untilDone := func() error {
		for {
			done, err := l.RunBandwidth(verbs.Now() + uint64(time.Second))
			if err != nil {
				return err
			}
			if done {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	l.SetTarget(uint64(warm))
	if err := untilDone(); err != nil {
		return nil, 0, fmt.Errorf("warm-up: %w", err)
	}
	l.ResetCounters()
	if s.Duration == 0 {
		l.SetTarget(uint64(warm + iters))
		if err := untilDone(); err != nil {
			return nil, 0, err
		}
		st := l.Stats()
		return report.NewBandwidth(st.Completed*uint64(size), st.Completed, time.Duration(st.LastNs-st.FirstNs)), st.Completed + uint64(warm)*nqp, nil
	}
	l.SetTarget(1 << 46)
	start := verbs.Now()
	end := start + uint64(s.Duration)
	ivStart, prev := start, uint64(0)
	for {
		next := min(ivStart+uint64(s.Interval), end)
		if _, err := l.RunBandwidth(next); err != nil {
			return nil, 0, err
		}
		now := verbs.Now()
		if now >= next {
			c := l.Stats().Completed
			iv := report.Interval{StartS: float64(ivStart-start) / 1e9, DurationS: float64(now-ivStart) / 1e9,
				Bandwidth: report.NewBandwidth((c-prev)*uint64(size), c-prev, time.Duration(now-ivStart))}
			r.Intervals = append(r.Intervals, iv)
			if e.opt.Progress != nil {
				e.opt.Progress(Progress{Test: s.Test, Size: size, Interval: &iv})
			}
			ivStart, prev = now, c
		}
		if now >= end {
			break
		}
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
	}
	l.FinishBandwidth()
	if err := untilDone(); err != nil {
		return nil, 0, err
	}
	st := l.Stats()
	return report.NewBandwidth(st.Completed*uint64(size), st.Completed, time.Duration(st.LastNs-st.FirstNs)), st.Completed + uint64(warm)*nqp, nil
}
