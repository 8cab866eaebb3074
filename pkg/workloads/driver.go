package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// The driver runs one end of one test, whatever its transport: it connects
// the two ends, then for each size readies the loops, runs the warm-up and
// the measured iterations (or the duration, in intervals), and exchanges
// the outcome with the other end. The runners implement only what
// driver_runner.go asks of them; the driver names none (a test's row does,
// and each runner's file adds itself to the runners' table).
//
// The two ends exchange, over the Link:
//
//	setup        each end's host, and what its runner needs to connect
//	connected    barrier: both are connected (or one tells why not)
//	per size i:
//	ready/i      barrier: both have readied size i (or one tells why not)
//	finished/i   each end's own sending is over: how many messages it sent,
//	             and whether it failed
//	result/i     each end's outcome: its bandwidth, what it received, its
//	             error
//
// Errors of the loops travel in result/i, so that each end learns the
// other's reason; only a failure to set up or ready a size is told at once
// (Fail), at the phase the peer is waiting in.

// setupMsg is what each end tells the other at "setup".
type setupMsg struct {
	Host report.Host     `json:"host"`
	Body json.RawMessage `json:"body,omitempty"`
}

// finishedMsg is what each end tells the other at "finished/i".
type finishedMsg struct {
	// Sent counts the messages this end sent at this size, warm-up
	// included.
	Sent   uint64 `json:"sent,omitempty"`
	Failed bool   `json:"failed,omitempty"`
	// ThreadSent counts them per loop thread (--threads).
	ThreadSent []uint64 `json:"thread_sent,omitempty"`
}

// sizeOutcome is what each end reports at "result/i".
type sizeOutcome struct {
	// Bandwidth is this end's sending, in a bandwidth test.
	Bandwidth *report.Bandwidth `json:"bandwidth,omitempty"`
	// Received counts the messages this end received, warm-up included,
	// where it counts them (SENDs, TCP).
	Received *uint64 `json:"received,omitempty"`
	// Counters are how this end's port counters changed at this size.
	Counters *report.CounterDeltas `json:"counters,omitempty"`
	// CPU is this end's CPU time at this size (--cpu-util).
	CPU *report.CPUSide `json:"cpu,omitempty"`
	// Threads are this end's sending threads (--threads); Placement is
	// where its loop threads ran.
	Threads   []report.Thread      `json:"threads,omitempty"`
	Placement *report.EndPlacement `json:"placement,omitempty"`
	Err       string               `json:"error,omitempty"`
	// With --reverse the server measures the only direction: its
	// iterations, intervals and precision go to the client's result.
	Iterations int               `json:"iterations,omitempty"`
	Intervals  []report.Interval `json:"intervals,omitempty"`
	Precision  *report.Precision `json:"precision,omitempty"`
}

// runEnd runs the normalized spec on this end, talking to the other end
// through link. On a failure, the results of the sizes before it are
// returned with the error, and the failing size's result records it.
func runEnd(ctx context.Context, spec *Spec, role role, link Link, o endOptions) (*endResult, error) {
	newRunner, ok := runners[spec.Info().Runner]
	if !ok {
		return nil, fmt.Errorf("%s: this build has no %q runner", spec.Test, spec.Info().Runner)
	}
	r := newRunner(spec, role, o)
	defer r.close()
	d := &driver{spec: spec, role: role, link: link, o: o, r: r}
	return d.run(ctx)
}

func (d *driver) run(ctx context.Context) (*endResult, error) {
	host := LocalHost()
	local, dev, err := d.r.open(ctx)
	if err != nil {
		return nil, d.told(ctx, "setup", err)
	}
	host.Device = dev
	if m, ok := d.r.(interface{ memory() *report.Memory }); ok {
		host.Memory = m.memory()
	}
	if err := d.placeLoops(dev); err != nil {
		return nil, d.told(ctx, "setup", err)
	}
	body, err := json.Marshal(local)
	if err != nil {
		return nil, d.told(ctx, "setup", err)
	}
	var peer setupMsg
	if err := d.link.Exchange(ctx, "setup", setupMsg{Host: host, Body: body}, &peer); err != nil {
		return nil, d.cause(ctx, err)
	}
	res := &endResult{Host: host, Peer: &peer.Host}
	wait, err := d.r.connect(ctx, peer.Body)
	if err != nil {
		return res, d.told(ctx, "connected", err)
	}
	if err := d.link.Exchange(ctx, "connected", nil, nil); err != nil {
		return res, d.cause(ctx, err)
	}
	if wait != nil {
		if err := wait(); err != nil {
			return res, d.told(ctx, phase("ready", 0), err)
		}
	}
	if d.o.onHosts != nil {
		d.o.onHosts(host, res.Peer)
	}
	for i, size := range d.spec.Sizes {
		r, err := d.size(ctx, i, size)
		if d.role == clientEnd {
			r.Run = d.o.run
			res.Results = append(res.Results, r)
			if d.o.onResult != nil {
				d.o.onResult(r, d.r.clock())
			}
			if d.o.progress != nil {
				d.o.progress(Progress{Run: d.o.run, Test: d.spec.Test, Size: size, Done: err == nil, Result: &r})
			}
		}
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

func (d *driver) baseResult(size int) report.Result {
	s := d.spec
	r := report.Result{Test: s.Test, Connection: s.Connection, Size: size, Iterations: s.ItersFor(size),
		Warmup: s.WarmupFor(size), Clock: d.r.clock().name, Direction: s.direction()}
	if s.Info().IsRDMA() {
		r.QPs = s.QPs
	}
	if s.Duration > 0 {
		r.DurationS = s.Duration.Seconds()
	}
	if s.openEnded() {
		r.Iterations = 0 // known when the size ends
	}
	return r
}

// size runs size i on this end and returns its result (the client's): it
// readies the size, runs this end's loops, exchanges "finished/i", then
// "result/i", and composes the result.
func (d *driver) size(ctx context.Context, i, size int) (res report.Result, err error) {
	res = d.baseResult(size)
	var st *stage
	defer func() {
		if err != nil {
			err = d.failed(ctx, &res, st, err)
		}
	}()
	st, err = d.prepareSize(ctx, i, size)
	if err != nil {
		return res, err
	}
	defer st.release()
	eff := st.effective
	res.Effective = &eff
	res.Warnings = append(res.Warnings, st.warnings...)
	defer context.AfterFunc(ctx, st.abort)()
	if err := d.link.Exchange(ctx, phase("ready", i), nil, nil); err != nil {
		return res, err
	}

	passiveDone := d.startPassives(st)
	var mine sizeOutcome
	fin := finishedMsg{}
	activeCPU, runErr := d.runActive(ctx, st, size, &res, &mine, &fin)
	if d.spec.Reverse {
		mine.Iterations, mine.Intervals, mine.Precision = res.Iterations, res.Intervals, res.Precision
	}
	sent := fin.Sent
	// A loop that failed before anything stopped this end failed by
	// itself: its error (a work completion's status) tells more than the
	// lost link that may follow.
	ownFailure := runErr != nil && ctx.Err() == nil
	if runErr != nil {
		st.abort()
	}

	fin.Failed = runErr != nil
	peerFin, ferr := d.exchangeFinished(ctx, i, st, fin)
	peerOK := ferr == nil && !peerFin.Failed
	passive := <-passiveDone
	passiveErr := passive.err
	if !peerOK {
		passiveErr = nil // stopped because the peer failed: its error tells
	}
	d.recordUse(&res, &mine, activeCPU.add(passive.cpu))
	if ferr != nil {
		// This end's own failure, if any, says more than the lost link.
		return res, sizeLinkErr(ownFailure, runErr, runErr, ferr)
	}
	myErr := d.outcome(st, &mine, firstErr(runErr, passiveErr))
	var peer sizeOutcome
	if err := d.link.Exchange(ctx, phase("result", i), mine, &peer); err != nil {
		return res, sizeLinkErr(ownFailure, runErr, myErr, err)
	}
	if err := pickError(myErr, peer.Err, phase("result", i)); err != nil {
		return res, err
	}
	err = d.conclude(ctx, i, size, st, &res, mine, peer, sent, peerFin.Sent)
	return res, err
}

// conclude completes the result of size i once both ends' loops ended
// well: the port counters of both ends, the client's result with the
// server's outcome, and the data check (--validate). sent and peerSent are
// the messages each end sent.
func (d *driver) conclude(ctx context.Context, i, size int, st *stage, res *report.Result, mine, peer sizeOutcome, sent, peerSent uint64) error {
	var err error
	if mine.Counters != nil || peer.Counters != nil {
		res.PortCounters = &report.PortCounters{Client: mine.Counters, Server: peer.Counters}
	}
	if d.role == clientEnd {
		err = d.compose(res, mine, peer, sent, peerSent)
	}
	if d.spec.CheckData && st.check != nil {
		// Both loops ended well on both ends (each knows the other's
		// outcome now), so both run the pass.
		v, verr := d.validate(ctx, i, size, st.check, peerSent)
		res.Validation = v
		err = firstErr(err, verr)
	}
	return err
}

// failed records in res the error err that ended a size, and returns it
// (or why this end was stopped). st is the size's stage, nil when it
// failed before it had one.
func (d *driver) failed(ctx context.Context, res *report.Result, st *stage, err error) error {
	err = d.cause(ctx, err)
	res.Error = err.Error()
	// What the port counted up to the failure is kept.
	if res.PortCounters == nil && st != nil && st.counters != nil && d.role == clientEnd {
		if c := st.counters(); c != nil {
			res.PortCounters = &report.PortCounters{Client: c}
		}
	}
	return err
}

// prepareSize runs the lane's hook before size i, then has the runner
// ready it; a failure of either is told to the peer at "ready/i".
func (d *driver) prepareSize(ctx context.Context, i, size int) (*stage, error) {
	if d.o.beforeSize != nil {
		if err := d.o.beforeSize(ctx, i); err != nil {
			return nil, d.told(ctx, phase("ready", i), err)
		}
	}
	st, err := d.r.prepare(size)
	if err != nil {
		return st, d.told(ctx, phase("ready", i), err)
	}
	return st, nil
}

// passiveEnd is how the stage's passive part ended, and the CPU time its
// loop threads used.
type passiveEnd struct {
	err error
	cpu cpuSpan
}

// startPassives starts the stage's passive parts, side by side, each on a
// loop thread of its own; the channel hears once they all ended (at once
// when there are none). A failing one stops the stage's other loops: the
// other direction stops too.
func (d *driver) startPassives(st *stage) <-chan passiveEnd {
	passiveDone := make(chan passiveEnd, 1)
	passives := st.passives
	if st.passive != nil {
		passives = append(passives, st.passive)
	}
	if len(passives) > 0 {
		go func() {
			cpu, err := runPassives(passives, st.abort, &d.place)
			if err != nil {
				st.abort() // the other direction stops too
			}
			passiveDone <- passiveEnd{err, cpu}
		}()
	} else {
		passiveDone <- passiveEnd{}
	}
	return passiveDone
}

// runActive runs the stage's timed loop, if it has one: the client's
// ping-pong, or this end's stream, whole or in loop threads (--threads).
// Every loop runs on an OS thread of its own (see onLoopThread), whose CPU
// time is this end's. It fills in res (the latency, intervals, precision),
// mine (the bandwidth, the threads) and fin (what this end sent), and
// returns the CPU the loops used and how they failed.
func (d *driver) runActive(ctx context.Context, st *stage, size int, res *report.Result, mine *sizeOutcome, fin *finishedMsg) (cpuSpan, error) {
	var runErr error
	var activeCPU cpuSpan
	switch {
	case st.ping != nil:
		activeCPU = onLoopThread(&d.place, func() { res.Latency, fin.Sent, runErr = d.measurePing(st.ping, size, res) })
	case len(st.streams) > 0:
		ps := newParallelStream(st.streams, st.abort, &d.place, d.role.String(), d.spec.QPs)
		activeCPU = onLoopThread(nil, func() { mine.Bandwidth, runErr = d.measureStream(ctx, ps, size, res) })
		ps.close()
		activeCPU = activeCPU.add(ps.cpu)
		fin.Sent, fin.ThreadSent = ps.sent(), ps.sentPerThread()
		mine.Threads = ps.threads(size)
	case st.stream != nil:
		activeCPU = onLoopThread(&d.place, func() { mine.Bandwidth, runErr = d.measureStream(ctx, st.stream, size, res) })
		fin.Sent = st.stream.sent()
	}
	return activeCPU, runErr
}

// exchangeFinished tells the peer at "finished/i" that this end's sending
// is over (fin), and hears of the peer's; then it settles the stage's
// passive part with what the peer sent, and stops the stage's loops when
// the peer failed or could not be heard.
func (d *driver) exchangeFinished(ctx context.Context, i int, st *stage, fin finishedMsg) (finishedMsg, error) {
	var peerFin finishedMsg
	ferr := d.link.Exchange(ctx, phase("finished", i), fin, &peerFin)
	peerOK := ferr == nil && !peerFin.Failed
	if st.settle != nil {
		st.settle(peerOK, peerFin.Sent, peerFin.ThreadSent)
	}
	if !peerOK {
		st.abort()
	}
	return peerFin, ferr
}

// recordUse records where this end's loop threads ran and the CPU time
// they used (--cpu-util), and warns when they could not be pinned.
func (d *driver) recordUse(res *report.Result, mine *sizeOutcome, used cpuSpan) {
	if d.spec.CPUUtil {
		mine.CPU = used.report()
	}
	if d.placed {
		mine.Placement = d.place.report(used.cores)
	}
	if used.pinErr != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the %s's loop threads could not be pinned to cores %s: %v", d.role, FormatCPUList(d.place.cpus), used.pinErr))
	}
}

// outcome completes mine, this end's outcome for "result/i", with what the
// stage received and counted, and myErr, this end's error; it returns
// myErr.
func (d *driver) outcome(st *stage, mine *sizeOutcome, myErr error) error {
	if st.received != nil {
		n := st.received()
		mine.Received = &n
	}
	if st.counters != nil {
		mine.Counters = st.counters()
	}
	if myErr != nil {
		mine.Err = myErr.Error()
	}
	return myErr
}

// sizeLinkErr is the error of a size whose link failed (linkErr) while this
// end had err to report: a loop's own failure (ownFailure: runErr, met
// before anything stopped this end) says more than the lost link.
func sizeLinkErr(ownFailure bool, runErr, err, linkErr error) error {
	if ownFailure {
		return &ownError{err: runErr}
	}
	return firstErr(err, linkErr)
}

// firstErr returns the first of errs that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// pickError chooses what to report when this end (mine) or the peer
// (peerErr) failed: this end's error, unless it is only the consequence
// of the peer's (the peer closed the connection or went silent).
func pickError(mine error, peerErr, ph string) error {
	switch {
	case peerErr == "":
		return mine
	case mine == nil, errors.Is(mine, errPeerClosed), errors.Is(mine, errPeerSilent):
		return &PeerError{Phase: ph, Msg: peerErr}
	}
	return mine
}

// compose completes the client's result with the server's outcome, and
// checks that each direction delivered what it sent.
func (d *driver) compose(r *report.Result, mine, peer sizeOutcome, sent, peerSent uint64) error {
	s := d.spec
	r.Bandwidth = mine.Bandwidth
	if s.Reverse {
		if peer.Bandwidth == nil {
			return errors.New("the server reported no bandwidth for its direction")
		}
		r.Bandwidth, r.Intervals, r.Precision = peer.Bandwidth, peer.Intervals, peer.Precision
		if s.openEnded() {
			r.Iterations = peer.Iterations
		}
	}
	if s.CPUUtil {
		r.CPU = &report.CPUUse{Client: mine.CPU, Server: peer.CPU}
	}
	r.Threads = append(mine.Threads, peer.Threads...)
	if mine.Placement != nil || peer.Placement != nil {
		r.Placement = &report.Placement{Client: mine.Placement, Server: peer.Placement}
	}
	if s.Bidirectional {
		if peer.Bandwidth == nil {
			return errors.New("the server reported no bandwidth for its direction")
		}
		r.Reverse = peer.Bandwidth
		r.Total = report.Sum(r.Bandwidth, r.Reverse)
	}
	reliable := s.Connection == "RC" || s.Connection == "TCP"
	for _, dir := range []struct {
		got        *uint64
		sent       uint64
		from, to   string
		sentByThis bool
	}{{peer.Received, sent, "client", "server", true}, {mine.Received, peerSent, "server", "client", false}} {
		if dir.got == nil || *dir.got == dir.sent {
			continue
		}
		if reliable {
			return fmt.Errorf("the %s received %d messages, the %s sent %d", dir.to, *dir.got, dir.from, dir.sent)
		}
		if *dir.got < dir.sent {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%d of %d messages from the %s arrived (%s does not retransmit; %.2f%% lost)",
				*dir.got, dir.sent, dir.from, s.Connection, 100*float64(dir.sent-*dir.got)/float64(dir.sent)))
		}
	}
	return nil
}

// placeLoops decides where this end's loop threads run: the cores its
// role was asked for, else its device's NUMA node's.
func (d *driver) placeLoops(dev *report.Device) error {
	flag, asked := "--cpu", d.spec.CPUs
	if d.role == serverEnd && len(d.spec.ServerCPUs) > 0 {
		flag, asked = "--server-cpu", d.spec.ServerCPUs
	}
	name := ""
	if dev != nil {
		name = dev.Name
	}
	p, err := placeLoops(flag, asked, name, allowedCPUs())
	if err != nil {
		return fmt.Errorf("%w (on the %s)", err, d.role)
	}
	d.place, d.placed = p, dev != nil || len(asked) > 0
	return nil
}
