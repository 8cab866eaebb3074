//go:build linux && cgo

package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// unreliableDrain is how long a receiver of UC or UD SENDs waits, after the
// sender is done, for what is still in flight.
const unreliableDrain = 200 * time.Millisecond

func init() { runners[runnerRDMA] = newRDMA }

func newRDMA(spec *Spec, role role, o endOptions) runner {
	return &rdmaRunner{spec: spec, role: role, o: o}
}

func (e *rdmaRunner) now() uint64 { return verbs.Now() }

func (e *rdmaRunner) clock() clockInfo {
	c := verbs.Clock()
	return clockInfo{c.Name, report.Clock{Source: c.Source, ResolutionNs: c.ResolutionNs,
		ReportedResolutionNs: c.ReportedResolutionNs, ReadCostNs: c.ReadCostNs, CalibrationPPM: c.CalibrationPPM}}
}

// open opens the device and builds the PD, CQs, MR and QPs.
func (e *rdmaRunner) open(context.Context) (any, *report.Device, error) {
	s := e.spec
	need, err := e.fitsMemory()
	if err != nil {
		return nil, nil, err
	}
	port, err := e.openPort()
	if err != nil {
		return nil, nil, err
	}
	if e.pd, err = e.dev.AllocPD(); err != nil {
		return nil, nil, err
	}
	if err := e.checkRateLimiter(); err != nil {
		return nil, nil, err
	}
	// Receives are posted by SEND tests only; the others keep one slot.
	recvWR := max(s.RxDepth, 1)
	if err := e.createCQs(recvWR); err != nil {
		return nil, nil, err
	}
	if e.buf, err = newTestBuffer(s, e.dev, e.pd, need); err != nil {
		return nil, nil, err
	}
	e.mr = e.buf.mr
	if err := e.createQPs(recvWR); err != nil {
		return nil, nil, err
	}
	device := e.describe(port)
	local := rdmaSetup{LinkGbps: port.LinkGbps, Memory: e.memory()}
	e.linkGbps = port.LinkGbps
	if s.RDMACM {
		if local.CM, err = e.cmOpen(device.Netdev); err != nil {
			return nil, nil, err
		}
	}
	for _, q := range e.qps {
		local.QPs = append(local.QPs, qpSetup{Endpoint: q.Endpoint(),
			Buffer: verbs.RemoteBuffer{Addr: e.mr.Addr() + e.half, Len: e.half, RKey: e.mr.RKey()}})
	}
	return local, device, nil
}

// fitsMemory sizes this end's buffer for the largest message and returns
// the registered memory the test needs, or an error when it is over this
// end's --max-mem.
func (e *rdmaRunner) fitsMemory() (uint64, error) {
	s := e.spec
	for _, z := range s.Sizes {
		e.maxSize = max(e.maxSize, z)
	}
	e.half = s.BufferHalf()
	need := s.RegisteredBytes()
	if e.o.maxMem > 0 && need > e.o.maxMem {
		return 0, fmt.Errorf("%w: the test needs %d bytes of registered memory (2 x %d B buffers for %d B messages); this end allows %d (--max-mem)",
			ErrOverLimit, need, e.half, e.maxSize, e.o.maxMem)
	}
	return need, nil
}

// openPort opens this end's device and checks, before anything is
// allocated, that the test's port is active and that the device can run
// the test.
func (e *rdmaRunner) openPort() (verbs.PortInfo, error) {
	s := e.spec
	name := e.o.device
	if name == "" && e.role == clientEnd {
		name = s.Device
	}
	dev, err := verbs.Open(name)
	if err != nil {
		return verbs.PortInfo{}, err
	}
	e.dev = dev
	port, err := dev.QueryPort(s.Port)
	if err != nil {
		return port, err
	}
	if port.State != verbs.PortActive {
		return port, fmt.Errorf("port %d of %s is %s, not ACTIVE (check the link and `rdma link`)", s.Port, dev.Name(), port.State)
	}
	if err := s.pathOnPort(dev.Name(), s.Port, port.LinkLayer == verbs.LinkEthernet); err != nil {
		return port, err
	}
	return port, fitsDevice(s, dev.Info())
}

// createCQs makes each loop thread's send and receive CQs, deep enough for
// its QPs; recvWR is each QP's receive depth.
func (e *rdmaRunner) createCQs(recvWR int) error {
	s := e.spec
	threads := s.threads()
	for t := range threads {
		lo, hi := threadQPs(s.QPs, threads, t)
		scq, err := e.dev.CreateCQ(verbs.CQConfig{Depth: s.TxDepth * (hi - lo), Events: s.Events})
		if err != nil {
			return err
		}
		e.scqs = append(e.scqs, scq)
		rcq, err := e.dev.CreateCQ(verbs.CQConfig{Depth: recvWR * (hi - lo), Events: s.Events})
		if err != nil {
			return err
		}
		e.rcqs = append(e.rcqs, rcq)
	}
	e.recvsPosted = make([]bool, threads)
	return nil
}

// createQPs makes the test's QPs, each on its loop thread's CQs. An inline
// size the device refuses is dropped, with a warning, when it was not
// asked for (-I).
func (e *rdmaRunner) createQPs(recvWR int) error {
	s := e.spec
	typ, err := verbs.ParseQPType(s.Connection)
	if err != nil {
		return err
	}
	inline, auto := s.InlineFor()
	cfg := verbs.QPConfig{Type: typ, Port: s.Port, MaxSendWR: s.TxDepth, QKey: cmQKey(s),
		MaxRecvWR: recvWR, MaxInlineData: inline, GIDIndex: orAuto(s.GIDIndex), MTU: verbs.MTU(s.MTU),
		PathValues: s.Path.Values(), QPTimeout: s.QPTimeout}
	for i := 0; i < s.QPs; i++ {
		t := e.threadOf(i)
		cfg.SendCQ, cfg.RecvCQ = e.scqs[t], e.rcqs[t]
		q, err := e.pd.CreateQP(cfg)
		if err != nil && i == 0 && inline > 0 && errors.Is(err, syscall.EINVAL) {
			if !auto {
				return fmt.Errorf("inline size %d was refused by %s (%v); lower -I", inline, e.dev.Name(), err)
			}
			e.warning = fmt.Sprintf("%s refused inline data of %d bytes; running without inline", e.dev.Name(), inline)
			cfg.MaxInlineData = 0
			q, err = e.pd.CreateQP(cfg)
		}
		if err != nil {
			return err
		}
		e.qps = append(e.qps, q)
	}
	if cfg.MaxInlineData > 0 {
		e.inline = e.qps[0].MaxInline()
	}
	return nil
}

// describe is this end's device for the results: the device, its port,
// and the GID the QPs use, with the network device that holds it.
func (e *rdmaRunner) describe(port verbs.PortInfo) *report.Device {
	s := e.spec
	gid := e.qps[0].GIDChoice()
	netdev := ""
	if table, err := e.dev.GIDTable(s.Port); err == nil {
		for _, g := range table {
			if g.Index == gid.Index {
				netdev = g.Netdev
			}
		}
	}
	info := e.dev.Info()
	return &report.Device{Name: info.Name, Firmware: info.FirmwareVer, NodeGUID: info.NodeGUID,
		Transport: info.Transport, Port: s.Port, PortState: port.State.String(), LinkLayer: string(port.LinkLayer),
		ActiveMTU: int(port.ActiveMTU), GID: gid.GID.String(), GIDIndex: gid.Index, GIDType: gid.Type,
		GIDReason: gid.Reason, Netdev: netdev, ActiveSpeed: port.ActiveSpeed, ActiveWidth: port.ActiveWidth, LinkGbps: port.LinkGbps}
}

// connect moves every QP to RTS toward the peer's.
func (e *rdmaRunner) connect(ctx context.Context, body json.RawMessage) (func() error, error) {
	var peer rdmaSetup
	if err := json.Unmarshal(body, &peer); err != nil {
		return nil, fmt.Errorf("the peer's setup: %w", err)
	}
	if len(peer.QPs) != len(e.qps) {
		return nil, fmt.Errorf("the peer has %d QPs, this end %d", len(peer.QPs), len(e.qps))
	}
	e.peer = peer.QPs
	e.peerMem = peer.Memory
	if peer.LinkGbps == 0 || e.linkGbps == 0 {
		e.linkGbps = 0
	} else {
		e.linkGbps = min(e.linkGbps, peer.LinkGbps)
	}
	if e.spec.RDMACM {
		if err := e.cmConnect(ctx, peer); err != nil {
			return nil, err
		}
	}
	for i, q := range e.qps {
		if e.spec.RDMACM {
			break
		}
		if err := q.Connect(peer.QPs[i].Endpoint); err != nil {
			return nil, fmt.Errorf("connect qp %d: %w", i, err)
		}
	}
	e.avWarnings = e.spec.avWarnings(e.dev.Name(), e.av())
	return nil, nil
}

// av is the address vector of the QPs (the first one's: all are made
// alike), as the device took it.
func (e *rdmaRunner) av() report.AddressVector {
	return e.spec.tookAV(e.qps[0].AddressVector().AddressVector, e.qps[0].LinkLayer() == verbs.LinkEthernet)
}

func (e *rdmaRunner) close() {
	e.cmClose()
	for _, q := range e.qps {
		q.Close()
	}
	// Each Close is nil-safe; the order is the reverse of creation.
	e.buf.close()
	for i := range e.scqs {
		e.rcqs[i].Close()
		e.scqs[i].Close()
	}
	e.pd.Close()
	e.dev.Close()
}

// usesInline tells whether size-byte messages of op go inline: up to the
// inline size the QP was granted, and never for READ and atomics (their
// local buffer is written, not read).
func (e *rdmaRunner) usesInline(size int, op verbs.Opcode) bool {
	return e.inline > 0 && size <= e.inline && sendsFromBuffer(op)
}

// threadOf is the loop thread that drives QP i.
func (e *rdmaRunner) threadOf(i int) int {
	n := e.spec.threads()
	for t := range n {
		if _, hi := threadQPs(e.spec.QPs, n, t); i < hi {
			return t
		}
	}
	return n - 1
}

// newLoop makes a loop over the QPs of loop thread t.
func (e *rdmaRunner) newLoop(cfg verbs.LoopConfig, t int) (*verbs.Loop, error) {
	if cfg.Kind == verbs.BWRecv {
		cfg.Opcode = verbs.OpSend
	} else {
		cfg.Opcode = e.spec.opcode()
	}
	cfg.IdleTimeout = e.spec.IdleTimeout
	cfg.RxDepth = e.spec.RxDepth
	cfg.RecvSize = uint32(e.maxSize)
	cfg.Inline = e.usesInline(int(cfg.Size), cfg.Opcode)
	cfg.SwapAdd = loopSwapAdd(cfg.Opcode)
	lo, hi := threadQPs(len(e.qps), e.spec.threads(), t)
	var qps []verbs.LoopQP
	for i := lo; i < hi; i++ {
		qps = append(qps, verbs.LoopQP{QP: e.qps[i], Remote: e.peer[i].Buffer})
	}
	l, err := verbs.NewLoop(cfg, verbs.Buf{MR: e.mr}, verbs.Buf{MR: e.mr, Offset: e.half}, qps)
	if err == nil && (cfg.Kind == verbs.LatSend || cfg.Kind == verbs.BWRecv) && !e.recvsPosted[t] {
		// Receives are posted once per test, the first time a loop needs
		// them.
		e.recvsPosted[t] = true
		if err = l.PostRecvs(e.spec.RxDepth); err != nil {
			l.Close()
		}
	}
	return l, err
}

// prepare readies the loops of one size.
func (e *rdmaRunner) prepare(size int) (*stage, error) {
	s := e.spec
	if err := e.fitsPath(size); err != nil {
		return nil, err
	}
	if err := e.freshBuffers(size); err != nil {
		return nil, err
	}
	st := &stage{effective: e.effective(size), counters: e.portCounters()}
	if e.warning != "" {
		st.warnings, e.warning = []string{e.warning}, ""
	}
	st.warnings, e.avWarnings = append(st.warnings, e.avWarnings...), nil
	ls := &stageLoops{e: e}
	st.abort, st.release = ls.stop, ls.close
	var err error
	if s.Info().Metric == Latency {
		err = e.prepareLatency(st, ls, size)
	} else {
		err = e.prepareBandwidth(st, ls, size)
	}
	if err != nil {
		return nil, err
	}
	if s.CheckData {
		st.check = &rdmaCheck{e: e, size: size, recv: ls.recv}
	}
	return st, nil
}

// fitsPath checks that size-byte messages fit the path: UD sends no more
// than the path MTU.
func (e *rdmaRunner) fitsPath(size int) error {
	if e.spec.Connection == "UD" {
		if mtu := int(e.qps[0].PathMTU()); size > mtu {
			return fmt.Errorf("UD send is limited to the path MTU (%d bytes); size %d is larger", mtu, size)
		}
	}
	return nil
}

// freshBuffers clears what a size reads in both halves of the buffer: the
// write ping-pong spins on the last byte; a data check counts
// FETCH_AND_ADDs in the whole target half.
func (e *rdmaRunner) freshBuffers(size int) error {
	buf := e.buf.host
	if e.spec.CheckData {
		clear(buf)
	} else {
		clear(buf[:size])
		clear(buf[e.half : e.half+uint64(size)])
	}
	return e.buf.upload()
}

// stageLoops are the loops one size made: stop stops them all (the
// stage's abort), close frees them (its release).
type stageLoops struct {
	e     *rdmaRunner
	loops []*verbs.Loop
	recv  *verbs.Loop // the loop that posted this end's receives (SEND)
}

func (ls *stageLoops) stop() {
	for _, l := range ls.loops {
		l.Stop()
	}
}

func (ls *stageLoops) close() {
	for _, l := range ls.loops {
		l.Close()
	}
}

// add makes a loop over the QPs of loop thread t; on a failure it frees
// every loop made so far.
func (ls *stageLoops) add(cfg verbs.LoopConfig, t int) (*verbs.Loop, error) {
	l, err := ls.e.newLoop(cfg, t)
	if err != nil {
		ls.close()
		return nil, err
	}
	ls.loops = append(ls.loops, l)
	if cfg.Kind == verbs.LatSend || cfg.Kind == verbs.BWRecv {
		ls.recv = l
	}
	return l, nil
}

// prepareLatency makes this end's loop of a latency size: the client's
// ping, or the server's responder (READ and atomics have none).
func (e *rdmaRunner) prepareLatency(st *stage, ls *stageLoops, size int) error {
	s := e.spec
	t := s.Info()
	total := uint64(s.WarmupFor(size) + s.ItersFor(size))
	if s.openEnded() {
		total = 1 << 62
	}
	cfg := verbs.LoopConfig{Kind: t.Loop, Size: uint32(size), CQMod: 1, Total: total}
	switch {
	case e.role == clientEnd:
		l, err := ls.add(cfg, 0)
		if err != nil {
			return err
		}
		st.ping = rdmaPing{l}
	case t.Responder != 0: // READ and atomics have no responder
		cfg.Kind, cfg.Role = t.Responder, verbs.Responder
		l, err := ls.add(cfg, 0)
		if err != nil {
			return err
		}
		e.responder(st, l)
	}
	return nil
}

// prepareBandwidth makes this end's loops of a bandwidth size, on each
// loop thread: a stream where this end sends, a receiver where it
// receives SENDs.
func (e *rdmaRunner) prepareBandwidth(st *stage, ls *stageLoops, size int) error {
	s := e.spec
	sending := s.initiates(e.role) || s.Bidirectional
	if sending && s.RateLimiter == LimiterHW {
		if err := e.setRateLimit(size); err != nil {
			ls.close()
			return err
		}
	}
	t := s.Info()
	var streams []streamLoop
	var receivers []*verbs.Loop
	for th := range s.threads() {
		lo, hi := threadQPs(s.QPs, s.threads(), th)
		if sending {
			l, err := ls.add(e.streamConfig(size), th)
			if err != nil {
				return err
			}
			streams = append(streams, &rdmaStream{l: l, qps: uint64(hi - lo)})
		}
		if t.Responder != 0 && (!s.initiates(e.role) || s.Bidirectional) { // SENDs' receivers
			var total uint64
			if s.Connection == "RC" && !s.openEnded() {
				total = uint64(s.WarmupFor(size)+s.ItersFor(size)) * uint64(hi-lo)
			}
			l, err := ls.add(verbs.LoopConfig{Kind: t.Responder, Size: uint32(size), Total: total}, th)
			if err != nil {
				return err
			}
			receivers = append(receivers, l)
		}
	}
	switch len(streams) {
	case 0:
	case 1:
		st.stream = streams[0]
	default:
		st.streams = streams
	}
	if len(receivers) > 0 {
		e.receiver(st, receivers)
	}
	return nil
}

// streamConfig is the loop of a stream of size-byte messages, paced by
// software when the rate limiter is (--rate-limiter sw).
func (e *rdmaRunner) streamConfig(size int) verbs.LoopConfig {
	s := e.spec
	cfg := verbs.LoopConfig{Kind: s.Info().Loop, Size: uint32(size), TxDepth: s.TxDepth, CQMod: s.CQModFor(size), PostList: s.PostList}
	if _, pace := s.paceFor(size); pace > 0 && s.RateLimiter == LimiterSW {
		cfg.PaceNs, cfg.PaceBurst = pace, paceBurst(pace, s.PostList)
	}
	return cfg
}

// responder makes l, the answering side of a ping-pong, the stage's
// passive part: it runs the iterations the client runs, or until the
// client is done (duration mode).
func (e *rdmaRunner) responder(st *stage, l *verbs.Loop) {
	var stopped sync.Once
	st.passive = func() error {
		_, _, err := l.RunLatency(nil)
		if errors.Is(err, verbs.ErrAborted) {
			err = nil // settled or aborted: the driver knows which
		}
		return silentPeer(err)
	}
	st.settle = func(peerOK bool, _ uint64, _ []uint64) {
		if !peerOK || e.spec.openEnded() {
			stopped.Do(l.Stop)
		}
	}
}

// receiver makes loops, the receiving side of SEND bandwidth (one per
// loop thread), the stage's passive part: each counts until every message
// the peer sent on its QPs arrived (RC), or a moment after the peer is done
// (UC and UD lose messages).
func (e *rdmaRunner) receiver(st *stage, loops []*verbs.Loop) {
	for _, l := range loops {
		st.passives = append(st.passives, func() error {
			_, err := l.RunReceiver(0)
			return silentPeer(err)
		})
	}
	st.settle = func(peerOK bool, peerSent uint64, perThread []uint64) {
		switch {
		case !peerOK:
			for _, l := range loops {
				l.Stop()
			}
		case e.spec.Connection == "RC" && len(loops) == 1:
			loops[0].Expect(peerSent)
		case e.spec.Connection == "RC" && len(perThread) == len(loops):
			for i, l := range loops {
				l.Expect(perThread[i])
			}
		case e.spec.Connection == "RC":
			// The peer's sending is over but it did not say how much went
			// through each thread: the receivers stop at their idle
			// timeout, which is its fault.
		default:
			time.Sleep(unreliableDrain)
			for _, l := range loops {
				l.Stop()
			}
		}
	}
	st.received = func() uint64 {
		var n uint64
		for _, l := range loops {
			n += l.Stats().Completed
		}
		return n
	}
}

// silentPeer marks a loop's idle timeout as the peer's silence.
func silentPeer(err error) error {
	if errors.Is(err, verbs.ErrTimeout) {
		return fmt.Errorf("%w: %w", errPeerSilent, err)
	}
	return err
}

// effective are the values a size runs with, as the QPs were made.
func (e *rdmaRunner) effective(size int) report.Effective {
	s := e.spec
	t := s.Info()
	eff := report.Effective{TxDepth: s.TxDepth, RxDepth: s.RxDepth, CQMod: s.CQModFor(size), InlineMax: e.inline,
		Inline: e.usesInline(size, e.spec.opcode()), PathMTU: int(e.qps[0].PathMTU()), Events: s.Events,
		QPTimeout: s.QPTimeout}
	if eff.QPTimeout == 0 {
		eff.QPTimeout = verbs.DefaultQPTimeout
	}
	if t.Metric == Bandwidth {
		eff.PostList = s.PostList
		eff.Reverse = s.Reverse
		eff.LinkGbps = e.linkGbps
		if s.Threads > 1 {
			eff.Threads = s.Threads
		}
		if gbps, _ := s.paceFor(size); gbps > 0 {
			eff.RateLimitGbps, eff.RateLimiter = gbps, s.RateLimiter
		}
	}
	if op := s.opcode(); op == verbs.OpRead || op.IsAtomic() {
		eff.MaxRdAtomic = e.qps[0].MaxRdAtomic()
	}
	if s.opcode().IsAtomic() {
		eff.AtomicType = s.AtomicType
	}
	eff.CheckData = s.CheckData
	av := e.av()
	eff.AV = &av
	eff.RDMACM = e.cmReport()
	eff.Memory, eff.ServerMemory = e.memory(), e.peerMem
	if e.role == serverEnd {
		eff.ServerMemory = nil
	}
	return eff
}

// memory is where this end's buffer lives, for the results (a copy).
func (e *rdmaRunner) memory() *report.Memory {
	if e.buf == nil {
		return nil
	}
	m := e.buf.info
	if m.GPU != nil {
		g := *m.GPU
		m.GPU = &g
	}
	return &m
}

// portCounters reads the port's error and retransmission counters now,
// and returns what tells how they changed since (nil when this end does
// not read them, or the device exposes none it can read).
func (e *rdmaRunner) portCounters() func() *report.CounterDeltas {
	if e.o.noCounters {
		return nil
	}
	dev, port := e.dev.Name(), e.spec.Port
	before, err := verbs.PortCounters(dev, port)
	if err != nil {
		return nil
	}
	return func() *report.CounterDeltas {
		d := &report.CounterDeltas{Watched: len(before)}
		after, err := verbs.PortCounters(dev, port)
		if err != nil {
			return d
		}
		for name, v := range after {
			if was, ok := before[name]; ok && v > was {
				if d.Deltas == nil {
					d.Deltas = map[string]uint64{}
				}
				d.Deltas[name] = v - was
			}
		}
		return d
	}
}

// rdmaPing is the initiator of an RDMA latency loop.
type rdmaPing struct{ l *verbs.Loop }

func (p rdmaPing) ping(samples []uint64, until uint64) (int, int, error) {
	n, valid, err := p.l.RunLatencyUntil(samples, until)
	return n, valid, silentPeer(err)
}

func (rdmaPing) done() error { return nil }

// unbounded is a stream's target when the clock or a count of completions,
// not the number of messages, ends it.
const unbounded = 1 << 46

// rdmaStream is the sender of RDMA bandwidth.
type rdmaStream struct {
	l        *verbs.Loop
	qps      uint64
	warm     uint64 // per QP
	warmSent uint64 // the warm-up's completions, all QPs
	target   uint64 // measured, per QP
	// atStop is what was measured when finish stopped the posting. What
	// it then reaps is sent, not measured: on Soft-RoCE a post does its
	// transmission inside the system call, so the completions of the last
	// queue's worth wait, already done, and come as one burst, which would
	// add that many messages in no time (and the warm-up's, reaped in the
	// first round, stand for them).
	atStop *verbs.LoopStats
	// cpsAtStop are the loop's checkpoints when finish stopped the
	// posting.
	cpsAtStop []verbs.Checkpoint
}

// peak is the fastest stretch between the checkpoints the loop took of
// the measured messages (see peakRate).
func (b *rdmaStream) peak() (float64, bool) {
	cs := b.l.Checkpoints()
	if b.atStop != nil {
		cs = b.cpsAtStop
	}
	if len(cs) < 2 {
		return 0, false
	}
	cps := make([]checkpoint, len(cs))
	for i, c := range cs {
		cps[i] = checkpoint{at: c.AtNs, posted: c.Posted, completed: c.Completed}
	}
	return peakRate(cps), true
}

// runTo posts until every QP reached target (cumulative, warm-up included)
// or until passed (0: no deadline).
func (b *rdmaStream) runTo(target, until uint64) (bool, error) {
	b.l.SetTarget(target)
	done, err := b.l.RunBandwidth(until)
	return done, silentPeer(err)
}

// complete posts until every QP reached target; a Stop ends it.
func (b *rdmaStream) complete(target uint64) error {
	for {
		done, err := b.runTo(target, 0)
		if err != nil || done {
			return err
		}
	}
}

func (b *rdmaStream) warmup(n int, flowing bool) error {
	b.warm = uint64(n)
	var err error
	if flowing {
		b.l.SetTarget(unbounded)
		err = silentPeer(b.l.RunBandwidthCompleted(b.warm * b.qps))
	} else {
		err = b.complete(b.warm)
	}
	b.warmSent = b.l.Stats().Completed
	b.l.ResetCounters()
	return err
}

func (b *rdmaStream) round(n uint64) error {
	b.target += n
	return b.complete(b.warm + b.target)
}

func (b *rdmaStream) send(until uint64) error {
	_, err := b.runTo(unbounded, until)
	return err
}

func (b *rdmaStream) finish() error {
	st := b.l.Stats()
	b.atStop = &st
	b.cpsAtStop = b.l.Checkpoints() // what finish reaps is not measured
	b.l.FinishBandwidth()
	for {
		done, err := b.l.RunBandwidth(0)
		if err != nil || done {
			return silentPeer(err)
		}
	}
}

// end has nothing to tell: the receiver counts what it was told to expect.
func (b *rdmaStream) end() error { return nil }

func (b *rdmaStream) measured() (uint64, uint64, uint64) {
	st := b.l.Stats()
	if b.atStop != nil {
		st = *b.atStop
	}
	return st.Completed, st.FirstNs, st.LastNs
}

func (b *rdmaStream) sent() uint64 { return b.l.Stats().Completed + b.warmSent }

// progress reads the completions so far while the stream runs in another
// thread (the load of a latency test).
func (b *rdmaStream) progress() (uint64, uint64) { return b.l.Progress() }
