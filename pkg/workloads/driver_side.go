package workloads

// One side of a test: its lanes (driver_lanes.go) run at once over one
// transport, joined by the barrier, the load probe and the merge; and both
// sides in this process (loopback).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/workloads/mux"
)

// runSide runs this side of the normalized spec over tr: one end, or one
// per lane.
func runSide(ctx context.Context, spec *Spec, r role, tr Transport, o endOptions) (*endResult, error) {
	lanes, err := planLanes(spec, r, o)
	if n := laneCount(spec); err == nil && n == 1 {
		o.device = lanes[0].device
		return runEnd(ctx, &lanes[0].spec, r, NewLink(tr), o)
	}
	m := mux.New(ctx, tr, laneCount(spec))
	defer m.Close()
	if err != nil {
		// Every lane of the peer waits at setup: tell each.
		for i := range m.Lanes() {
			tctx, cancel := context.WithTimeout(ctx, spec.IdleTimeout)
			_ = NewLink(m.Lane(i)).Exchange(tctx, "setup", Fail(err), nil)
			cancel()
		}
		return nil, err
	}
	return runLanes(ctx, lanes, r, m, o)
}

// runLanes runs every lane at once, each over its lane of m. The first
// lane to fail stops the others. The client's result merges the results
// of its devices, size by size.
func runLanes(ctx context.Context, lanes []lane, r role, m *mux.Mux, o endOptions) (*endResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	j := newLaneJoin(lanes, o)
	errs := make([]error, len(lanes))
	results := make([]*endResult, len(lanes))
	var wg sync.WaitGroup
	for i, l := range lanes {
		lo := j.options(l, r, o)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := runEnd(ctx, &l.spec, r, NewLink(m.Lane(i)), lo)
			results[i], errs[i] = res, err
			if l.kind == mainLane {
				j.bar.leave(l.dev)
				close(j.stops[l.dev]) // its load ends with it
			} else {
				j.probes[l.dev].end(err)
			}
			if err != nil {
				cancel(laneError(l, err))
			}
		}()
	}
	wg.Wait()
	out := &endResult{}
	for i, l := range lanes {
		if l.kind == mainLane && results[i] != nil && out.Host.Hostname == "" {
			out.Host, out.Peer = results[i].Host, results[i].Peer
		}
	}
	if r == clientEnd {
		out.Results = j.merge.flush()
	}
	return out, firstLaneError(ctx, lanes, errs)
}

// laneJoin is what joins the lanes of one side: the merge of the main
// lanes' results, the barrier they start each size at, and per device the
// probe of its load and the channel that stops the load.
type laneJoin struct {
	lanes  []lane
	mains  int
	merge  *laneMerge
	bar    *barrier
	probes []*loadProbe
	stops  []chan struct{}
}

func newLaneJoin(lanes []lane, o endOptions) *laneJoin {
	var mains int
	for _, l := range lanes {
		if l.kind == mainLane {
			mains++
		}
	}
	j := &laneJoin{lanes: lanes, mains: mains, bar: newBarrier(mains),
		probes: make([]*loadProbe, mains), stops: make([]chan struct{}, mains)}
	j.merge = &laneMerge{parent: o, lanes: lanes, mains: mains, sizes: len(lanes[0].spec.Sizes), results: map[int][]*report.Result{},
		hosts: make([]*report.Host, mains), peers: make([]*report.Host, mains), clocks: map[int]clockInfo{}}
	for i := range j.probes {
		j.probes[i] = newLoadProbe()
		j.stops[i] = make(chan struct{})
	}
	for _, l := range lanes {
		if l.kind == loadLane {
			j.probes[l.dev].spec = l.spec
		}
	}
	return j
}

// options are lane l's end options. On the client, a main lane reports
// its hosts and results to the merge and starts each size at the barrier
// (the first once its load is sending); a load lane tells its probe it is
// streaming, and stops when its main lane ends.
func (j *laneJoin) options(l lane, r role, o endOptions) endOptions {
	lo := endOptions{device: l.device, maxMem: o.maxMem, peerHost: o.peerHost, listenHost: o.listenHost, run: o.run}
	if r != clientEnd {
		return lo
	}
	probe := j.probes[l.dev]
	switch l.kind {
	case mainLane:
		lo.onHosts = func(local report.Host, peer *report.Host) { j.merge.hostsOf(l.dev, local, peer) }
		lo.onResult = func(res report.Result, c clockInfo) { j.merge.result(l.dev, res, c) }
		if j.mains == 1 {
			lo.progress = o.progress
		}
		if l.spec.Info().Metric == Latency && len(j.lanes) > j.mains {
			lo.load = probe
		}
		load := lo.load
		lo.beforeSize = func(ctx context.Context, i int) error {
			if load != nil && i == 0 {
				if err := probe.wait(ctx); err != nil {
					return err
				}
			}
			return j.bar.arrive(ctx, l.dev, i)
		}
	case loadLane:
		lo.stop = j.stops[l.dev]
		lo.streaming = func(s streamLoop) { probe.start(s) }
	}
	return lo
}

// firstLaneError is the error of a side whose lanes ended with errs: the
// lane that failed first, not those it stopped.
func firstLaneError(ctx context.Context, lanes []lane, errs []error) error {
	var first error
	for i, err := range errs {
		if err != nil && first == nil {
			first = laneError(lanes[i], err)
		}
	}
	if c := context.Cause(ctx); first != nil && c != nil && !errors.Is(c, context.Canceled) {
		first = c // the lane that failed first, not those it stopped
	}
	return first
}

// laneError names the lane an error comes from.
func laneError(l lane, err error) error {
	var parts []string
	if l.device != "" {
		parts = append(parts, l.device)
	}
	if l.kind == loadLane {
		parts = append(parts, "the load ("+l.spec.Test+")")
	}
	if len(parts) == 0 {
		return err
	}
	return fmt.Errorf("%s: %w", strings.Join(parts, ", "), err)
}

// runLoopback runs both ends of the normalized spec in this process, on
// the local device (or over loopback TCP), and returns the client's
// result.
func runLoopback(ctx context.Context, spec *Spec, o endOptions) (*endResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a, b, hangupA, hangupB := pipeTransports()
	so := endOptions{device: spec.ServerDevice, maxMem: o.maxMem, listenHost: "127.0.0.1",
		noCounters: spec.ServerDevice == "" || spec.ServerDevice == spec.Device}
	if so.device == "" {
		so.device = spec.Device
	}
	if o.peerHost == "" {
		o.peerHost = "127.0.0.1"
	}
	var wg sync.WaitGroup
	var serr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer hangupB()
		_, serr = runSide(ctx, spec, serverEnd, b, so)
	}()
	res, err := runSide(ctx, spec, clientEnd, a, o)
	hangupA()
	if err != nil {
		cancel()
	}
	wg.Wait()
	if err == nil && serr != nil {
		err = fmt.Errorf("server side: %w", serr)
	}
	// The client's error is the more telling one, unless the server failed
	// first and the client only carries its message.
	var pe *PeerError
	if errors.As(err, &pe) && serr != nil && !errors.As(serr, &pe) {
		err = fmt.Errorf("server side: %w", serr)
	}
	return res, err
}
