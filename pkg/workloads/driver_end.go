package workloads

// One end of one test: its local settings (endOptions), what it measured
// (endResult), how it tells of its progress, and the driver's state.

import (
	"context"
	"errors"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// endOptions are one end's local settings, not part of the Spec.
type endOptions struct {
	// device overrides the spec's device on this end (the server's own -d).
	device string
	// maxMem caps the memory this end registers or allocates for a test
	// (the server's --max-mem); 0 means no cap.
	maxMem uint64
	// peerHost is the host the client dials for TCP tests (the server's
	// address); empty means 127.0.0.1.
	peerHost string
	// listenHost is the address a server's TCP listener binds; empty means
	// every address.
	listenHost string
	// noCounters: this end does not read its port's counters (in
	// loopback the server shares the client's device).
	noCounters bool
	// run is the run number to report in progress events.
	run int
	// progress, when set, hears of each interval and finished size.
	progress func(Progress)
	// onHosts, when set, gets both ends' hosts once they are connected.
	onHosts func(local report.Host, peer *report.Host)
	// onResult, when set, gets each size's result as soon as it is known
	// (the client's), with the clock it was timed with.
	onResult func(report.Result, clockInfo)
	// The hooks of a lane (driver_side.go). beforeSize runs before each size
	// (the devices start it together; the latency waits for its load).
	// load measures the background load during each latency size. stop
	// ends an open-ended stream (the load) when closed; streaming hears
	// of a stream once its warm-up is over.
	beforeSize func(ctx context.Context, i int) error
	load       *loadProbe
	stop       <-chan struct{}
	streaming  func(streamLoop)
}

// endResult is what one end measured.
type endResult struct {
	Host report.Host
	// Peer describes the other end, as it reported itself.
	Peer *report.Host
	// Results holds one entry per size run (the client's; a server's has
	// none).
	Results []report.Result
}

// newRunner makes one end's runner for a normalized spec.
type newRunner func(spec *Spec, role role, o endOptions) runner

// runners are the constructors of the runners, by the name a test's row
// gives (TestInfo.Runner); each runner's file adds its own. The engine
// names none.
var runners = map[string]newRunner{}

type driver struct {
	spec    *Spec
	role    role
	link    Link
	o       endOptions
	r       runner
	samples []uint64 // the client's latency batch
	// place is where this end's loop threads run; placed tells whether
	// the results record it (RDMA tests, or cores asked for).
	place  placement
	placed bool
}

// ownError is a failure this end's loops met by themselves, before the
// end was stopped from outside (a server lost because the link failed):
// it is what to report, with the stop that followed added (then).
type ownError struct{ err, then error }

func (e *ownError) Error() string {
	if e.then == nil || errors.Is(e.then, context.Canceled) {
		return e.err.Error()
	}
	return e.err.Error() + "; then " + e.then.Error()
}

func (e *ownError) Unwrap() error { return e.err }

// told tells the peer, waiting at phase, that this end failed with err, and
// returns err (or why this end was stopped).
func (d *driver) told(ctx context.Context, phase string, err error) error {
	var pe *PeerError
	if !errors.As(err, &pe) && ctx.Err() == nil {
		tctx, cancel := context.WithTimeout(ctx, d.spec.IdleTimeout)
		_ = d.link.Exchange(tctx, phase, Fail(err), nil)
		cancel()
	}
	return d.cause(ctx, err)
}

// cause returns, for an end stopped from outside (the server lost, an
// interrupt), why it was stopped rather than the error that followed.
func (d *driver) cause(ctx context.Context, err error) error {
	var own *ownError
	if errors.As(err, &own) {
		if own.then == nil && ctx.Err() != nil {
			own.then = context.Cause(ctx)
		}
		return err
	}
	if err != nil && ctx.Err() != nil {
		if c := context.Cause(ctx); c != nil && c != ctx.Err() {
			return c
		}
	}
	return err
}

// Progress reports how far a run is: one of Begin, Start, Interval, Done
// or Skipped is set.
type Progress struct {
	// Begin is the run's document as it begins: what runs it and what was
	// asked, no result yet.
	Begin *report.Document
	Run   int // the run, 1-based, when runs repeat; 0 otherwise
	Test  string
	Size  int
	// Start: Test begins (Size is its first size).
	Start bool
	// Interval: a duration-mode interval of Size ended.
	Interval *report.Interval
	// Done: Size finished, with Result.
	Done   bool
	Result *report.Result
	// Skipped counts sizes of Test that will not run (it failed).
	Skipped int
}
