package workloads

import (
	"errors"
	"sync"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// A bandwidth test run on several threads (--threads) spreads its QPs over
// that many loops on each end, each with its own CQs and its own loop
// thread. The driver sees one stream (parallelStream) whose every call
// runs on all the threads at once; each thread is a loopWorker that stays
// on its OS thread (and its cores) for the whole size.

// loopWorker is a loop thread that runs the calls it is given until
// stopped.
type loopWorker struct {
	calls chan func()
	done  chan cpuSpan
}

func startWorker(p *placement) *loopWorker {
	w := &loopWorker{calls: make(chan func()), done: make(chan cpuSpan, 1)}
	go func() {
		w.done <- onLoopThread(p, func() {
			for f := range w.calls {
				f()
			}
		})
	}()
	return w
}

// do runs f on the worker's thread and waits for it.
func (w *loopWorker) do(f func()) {
	ran := make(chan struct{})
	w.calls <- func() {
		defer close(ran)
		f()
	}
	<-ran
}

// stop ends the worker's thread and returns what it used.
func (w *loopWorker) stop() cpuSpan {
	close(w.calls)
	return <-w.done
}

// parallelStream runs streams, one per thread, as one: each call runs on
// every thread at once and returns when all have; the first failure stops
// the others (abort) and is the one returned.
type parallelStream struct {
	parts   []streamLoop
	workers []*loopWorker
	abort   func()
	endName string // "client" or "server": whose sending it is
	qps     int
	cpu     cpuSpan
}

func newParallelStream(parts []streamLoop, abort func(), p *placement, end string, qps int) *parallelStream {
	ps := &parallelStream{parts: parts, abort: abort, endName: end, qps: qps}
	for range parts {
		ps.workers = append(ps.workers, startWorker(p))
	}
	return ps
}

// close ends the threads; cpu then holds what they used.
func (ps *parallelStream) close() {
	for _, w := range ps.workers {
		ps.cpu = ps.cpu.add(w.stop())
	}
	ps.workers = nil
}

func (ps *parallelStream) each(f func(streamLoop) error) error {
	errs := make([]error, len(ps.parts))
	var wg sync.WaitGroup
	var once sync.Once
	for i, l := range ps.parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ps.workers[i].do(func() { errs[i] = f(l) })
			if errs[i] != nil {
				once.Do(ps.abort)
			}
		}()
	}
	wg.Wait()
	return firstCause(errs)
}

// firstCause is the first error that is not only another's consequence
// (a loop stopped because a sibling failed), else the first error.
func firstCause(errs []error) error {
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if first == nil {
			first = err
		}
		if !errors.Is(err, verbs.ErrAborted) {
			return err
		}
	}
	return first
}

func (ps *parallelStream) warmup(n int, flowing bool) error {
	return ps.each(func(l streamLoop) error { return l.warmup(n, flowing) })
}
func (ps *parallelStream) round(n uint64) error {
	return ps.each(func(l streamLoop) error { return l.round(n) })
}
func (ps *parallelStream) send(until uint64) error {
	return ps.each(func(l streamLoop) error { return l.send(until) })
}
func (ps *parallelStream) finish() error { return ps.each(streamLoop.finish) }
func (ps *parallelStream) end() error    { return ps.each(streamLoop.end) }

// measured sums the threads' messages, from the earliest first post to the
// latest last completion.
func (ps *parallelStream) measured() (msgs, first, last uint64) {
	for _, l := range ps.parts {
		m, f, t := l.measured()
		msgs += m
		if f != 0 && (first == 0 || f < first) {
			first = f
		}
		last = max(last, t)
	}
	return msgs, first, last
}

func (ps *parallelStream) sent() uint64 {
	var n uint64
	for _, l := range ps.parts {
		n += l.sent()
	}
	return n
}

// sentPerThread is each thread's count of messages sent, warm-up included.
func (ps *parallelStream) sentPerThread() []uint64 {
	out := make([]uint64, len(ps.parts))
	for i, l := range ps.parts {
		out[i] = l.sent()
	}
	return out
}

// threads are each thread's figures at size.
func (ps *parallelStream) threads(size int) []report.Thread {
	out := make([]report.Thread, len(ps.parts))
	for i, l := range ps.parts {
		lo, hi := threadQPs(ps.qps, len(ps.parts), i)
		qps := make([]int, 0, hi-lo)
		for q := lo; q < hi; q++ {
			qps = append(qps, q)
		}
		m, f, t := l.measured()
		out[i] = report.Thread{End: ps.endName, Index: i, QPs: qps,
			Bandwidth: report.NewBandwidth(m*uint64(size), m, elapsed(f, t))}
	}
	return out
}

// runPassives runs each passive part on a loop thread of its own, side by
// side, and returns the CPU the threads used and the first failure (which
// stops the others).
func runPassives(parts []func() error, abort func(), p *placement) (cpuSpan, error) {
	errs := make([]error, len(parts))
	spans := make([]cpuSpan, len(parts))
	var wg sync.WaitGroup
	var once sync.Once
	for i, f := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spans[i] = onLoopThread(p, func() { errs[i] = f() })
			if errs[i] != nil {
				once.Do(abort)
			}
		}()
	}
	wg.Wait()
	var cpu cpuSpan
	for _, s := range spans {
		cpu = cpu.add(s)
	}
	return cpu, firstCause(errs)
}
