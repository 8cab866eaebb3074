package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rdmabench/rdmabench/internal/buildinfo"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// Request is what a user asks to run: which tests, with which settings,
// how many times.
type Request struct {
	// Tests run in this order, each at every size.
	Tests []string
	// Spec holds the settings as asked: a zero field (nil for a pointer)
	// leaves each test its default. Its Test is not used.
	Spec Spec
	// Suite runs Tests as a suite: a setting that does not apply to one of
	// them is left out for it rather than refused, and sizes asked for do
	// not apply to the atomic tests (their messages are 8 bytes).
	Suite bool
	// Baseline adds, after each RDMA test, the TCP test of its kind at the
	// same sizes.
	Baseline bool
	// Repeat runs everything this many times (0 or 1: once), in one
	// document.
	Repeat int
	// Command is the command line, recorded in the document.
	Command []string
	// Progress, when set, hears about each step as it happens.
	Progress func(Progress)
	// MaxMem caps the memory this host may give the test's ends (0: only
	// what the host has).
	MaxMem uint64
	// Checkpoint, when set, gets the document after each measurement,
	// marked partial, so that a run killed midway keeps what it measured.
	// Its error stops the run after the test under way: the document's
	// Error says it.
	Checkpoint func(*report.Document) error
}

// Plan is a validated Request, ready to execute: one normalized spec per
// test (and per TCP baseline).
type Plan struct {
	req   Request
	specs []Spec // normalized
}

// NewPlan checks req and plans its tests: every mistake in it (an unknown
// test, a setting that does not apply, an impossible size) is an error here,
// before anything runs.
func NewPlan(req Request) (*Plan, error) {
	if len(req.Tests) == 0 {
		return nil, errors.New("no test to run")
	}
	if req.Repeat < 0 {
		return nil, fmt.Errorf("repeat %d must be at least 1", req.Repeat)
	}
	req.Repeat = max(req.Repeat, 1)
	if err := req.Spec.resolveDevices(); err != nil {
		return nil, err
	}
	r := &Plan{req: req}
	for _, name := range req.Tests {
		s, err := specFor(req.Spec, name, req.Suite)
		if err != nil {
			return nil, err
		}
		if req.Suite && s.Info().Op == OpAtomic {
			s.Sizes = nil // atomics stay at 8 bytes
		}
		if err := s.Normalize(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		r.specs = append(r.specs, s)
		if req.Baseline && s.Info().IsRDMA() {
			b, err := tcpBaseline(req.Spec, s)
			if err != nil {
				return nil, err
			}
			r.specs = append(r.specs, b)
		}
	}
	return r, nil
}

// tcpBaseline is the TCP test that matches the RDMA test s, at its sizes,
// with the settings asked that apply to TCP.
func tcpBaseline(asked, s Spec) (Spec, error) {
	name := s.Info().Baseline().Name
	b, _ := specFor(asked, name, true)
	b.Sizes = s.Sizes
	if err := b.Normalize(); err != nil {
		return b, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

// Specs are the tests the run executes, normalized, in order (once per
// repeat).
func (r *Plan) Specs() []Spec { return r.specs }

// Params is the document's record of what the run asks for: the settings
// as asked, nothing filled in (as every document of the run has them).
func (r *Plan) Params() report.Params {
	p := r.req.Spec.requested()
	if r.req.Repeat > 1 {
		p.Repeat = r.req.Repeat
	}
	return p
}

// Steps is the number of measurements the run makes: every size of every
// test, every repeat.
func (r *Plan) Steps() int {
	n := 0
	for _, s := range r.specs {
		n += len(s.Sizes)
	}
	return n * r.req.Repeat
}

// Target is where the other end of each test runs.
type Target struct {
	// Remote runs it, when set: an `rdmabench serve` reached through the
	// control protocol. Nil runs both ends in this process (loopback).
	Remote Remote
	// Host is the server's address as given: recorded in the document,
	// and dialled by the TCP tests.
	Host string
}

// Remote is a server that runs the other end of tests: pkg/control's
// Client, seen through what a run needs of it.
type Remote interface {
	// Start asks the server to run the server end of the test spec
	// describes (the JSON of a normalized Spec).
	Start(ctx context.Context, test string, spec json.RawMessage) (RemoteTest, error)
	// Version is the server's rdmabench version.
	Version() string
}

// RemoteTest is one test in progress on a Remote.
type RemoteTest interface {
	// Transport carries the test's exchanges.
	Transport
	// Lost is closed when the server is lost mid-test; LostErr says why.
	Lost() <-chan struct{}
	LostErr() error
	// Finish waits for the server's end to return, and returns its error.
	Finish(ctx context.Context) error
}

// Execute runs every test (every repeat) against target and returns one
// complete document. A test that fails records its error in its result
// and the run goes on with the next; the first error is returned with the
// document. A run that stops before its end (an interrupted ctx, or a
// Checkpoint that failed) returns what it measured, with why it stopped in
// the document's Error.
//
// A test whose ends need more memory than allowed (Request.MaxMem) or than
// this host has is refused before anything runs: Execute returns no
// document and an error wrapping ErrOverLimit.
func (r *Plan) Execute(ctx context.Context, target Target) (*report.Document, error) {
	ends := 1
	if target.Remote == nil {
		ends = 2 // both ends in this process
	}
	for i := range r.specs {
		if err := r.specs[i].checkMemory(r.req.MaxMem, ends, false); err != nil {
			return nil, err
		}
		if err := r.specs[i].checkCores(ends == 2); err != nil {
			return nil, err
		}
		if err := r.specs[i].checkGPU(); err != nil {
			return nil, err
		}
	}
	e := &execution{plan: r, target: target, doc: r.newDocument(target)}
	if p := r.req.Progress; p != nil {
		begin := *e.doc
		p(Progress{Begin: &begin})
	}
	var firstErr error
	for rep := 1; rep <= r.req.Repeat && ctx.Err() == nil && e.stop == nil; rep++ {
		e.rep = 0
		if r.req.Repeat > 1 {
			e.rep = rep
		}
		for i := range r.specs {
			if ctx.Err() != nil || e.stop != nil {
				break
			}
			if err := e.runTest(ctx, &r.specs[i]); err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	doc := e.doc
	if doc.Hosts.Local.Hostname == "" {
		doc.Hosts.Local = LocalHost()
	}
	// The document's Error says why the run stopped before its end, and
	// only that: a test that failed has its error in its result, and the
	// run went on.
	switch {
	case ctx.Err() != nil:
		doc.Error = "interrupted"
		if cause := context.Cause(ctx); cause != ctx.Err() {
			doc.Error = cause.Error()
		}
		if firstErr == nil {
			firstErr = ctx.Err()
		}
	case e.stop != nil:
		doc.Error = e.stop.Error()
		if firstErr == nil {
			firstErr = e.stop
		}
	}
	if ppm, name, ok := clockDrift(); ok {
		if c, used := doc.Clocks[name]; used {
			c.DriftPPM = ppm
			doc.Clocks[name] = c
		}
	}
	if r.req.Repeat > 1 {
		doc.Summaries = doc.Summarize()
	}
	doc.End = time.Now().UTC()
	doc.Partial = false
	return doc, firstErr
}

// NewDocument starts a document of the run, partial until it ends: the
// tool that writes it, the command, the start, and what the run asks for
// (Params). Execute starts its document with it, and so does a mesh its
// summary.
func (r *Plan) NewDocument() *report.Document {
	doc := report.NewDocument()
	bi := buildinfo.Get()
	doc.Tool = report.Tool{Name: bi.Name, Version: bi.Version, Commit: bi.Commit, GoVersion: bi.GoVersion, Verbs: bi.Verbs}
	if r.req.Command != nil {
		doc.Command = r.req.Command
	}
	doc.Start = time.Now().UTC()
	doc.Params = r.Params()
	doc.Partial = true
	return doc
}

// newDocument starts the document of a run against target: what ran it,
// what was asked, and the server it runs against.
func (r *Plan) newDocument(target Target) *report.Document {
	doc := r.NewDocument()
	doc.Clocks = map[string]report.Clock{}
	if target.Remote != nil {
		doc.Params.Server = target.Host
		if v := target.Remote.Version(); v != buildinfo.Version {
			doc.Warnings = append(doc.Warnings, fmt.Sprintf("the server runs rdmabench %s, this client %s (same protocol %d)",
				v, buildinfo.Version, buildinfo.ProtocolVersion))
		}
	} else {
		doc.Params.Loopback = true
	}
	return doc
}

// execution is the state of one Execute.
type execution struct {
	plan   *Plan
	target Target
	doc    *report.Document
	rep    int   // the run under way when runs repeat, else 0
	stop   error // why the run stops before its end (a checkpoint failed)
}

// runTest runs one test (every size) and adds its results to the document.
func (e *execution) runTest(ctx context.Context, s *Spec) error {
	progress := e.plan.req.Progress
	if progress != nil {
		progress(Progress{Run: e.rep, Test: s.Test, Size: s.Sizes[0], Start: true})
	}
	done, recorded := 0, false // sizes measured; a failure recorded in a result
	var checkErr error
	o := endOptions{
		progress: progress,
		run:      e.rep,
		onHosts:  e.recordHosts,
		onResult: func(res report.Result, c clockInfo) {
			e.doc.Clocks[c.name] = c.Clock
			e.doc.Results = append(e.doc.Results, res)
			if res.Error == "" {
				done++
			} else {
				recorded = true
			}
			if cp := e.plan.req.Checkpoint; cp != nil && checkErr == nil {
				checkErr = cp(e.doc)
			}
		},
	}
	var err error
	if e.target.Remote == nil {
		o.maxMem = e.plan.req.MaxMem
		_, err = runLoopback(ctx, s, o)
	} else {
		o.peerHost, o.maxMem = e.target.Host, e.plan.req.MaxMem
		_, err = runRemote(ctx, e.target.Remote, s, o)
	}
	if checkErr != nil && e.stop == nil {
		// The run's file can no longer be kept: the run stops (its test
		// measured what it did).
		e.stop = checkErr
	}
	if err == nil {
		return nil
	}
	err = fmt.Errorf("%s: %w", s.Test, err)
	if !recorded {
		// It failed before any size began: its first size says why.
		failed := report.Result{Test: s.Test, Connection: s.Connection, Size: s.Sizes[0], Run: e.rep, Error: err.Error()}
		e.doc.Results = append(e.doc.Results, failed)
		if progress != nil {
			progress(Progress{Run: e.rep, Test: s.Test, Size: failed.Size, Result: &failed})
		}
	}
	if progress != nil {
		progress(Progress{Run: e.rep, Test: s.Test, Skipped: len(s.Sizes) - done})
	}
	return err
}

// recordHosts records both ends as a test found them: the first test that names a
// device fills in the devices.
func (e *execution) recordHosts(local report.Host, peer *report.Host) {
	h := &e.doc.Hosts
	if h.Local.Hostname == "" || (h.Local.Device == nil && local.Device != nil) {
		h.Local = local
	}
	if e.target.Remote != nil && peer != nil && (h.Remote == nil || (h.Remote.Device == nil && peer.Device != nil)) {
		p := *peer
		h.Remote = &p
	}
	// Where the buffers lived: the last RDMA test's (one --mem per run).
	if local.Memory != nil {
		h.Local.Memory = local.Memory
	}
	if h.Remote != nil && peer != nil && peer.Memory != nil {
		h.Remote.Memory = peer.Memory
	}
}

// runRemote runs the client end of s against the server behind remote.
func runRemote(ctx context.Context, remote Remote, s *Spec, o endOptions) (*endResult, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	rt, err := remote.Start(ctx, s.Test, raw)
	if err != nil {
		return nil, err
	}
	// A server that dies mid-test must stop this end's timed loops at once,
	// not at their idle timeout.
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-rt.Lost():
			cancel(fmt.Errorf("lost the server mid-test: %w", rt.LostErr()))
		case <-tctx.Done():
		}
	}()
	res, rerr := runSide(tctx, s, clientEnd, rt, o)
	var own *ownError
	if cause := context.Cause(tctx); rerr != nil && ctx.Err() == nil && cause != nil && cause != context.Canceled && !errors.As(rerr, &own) {
		return res, cause
	}
	ferr := rt.Finish(ctx)
	var pe *PeerError
	switch {
	case rerr != nil && errors.As(rerr, &pe) && ferr != nil:
		return res, ferr // the server's own account of what went wrong
	case rerr != nil:
		return res, rerr
	}
	return res, ferr
}
