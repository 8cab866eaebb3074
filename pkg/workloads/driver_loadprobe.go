package workloads

// The probe that joins a latency lane to its background load (--load,
// driver_lanes.go).

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// loadProbe joins a latency lane to its load: the latency waits until the
// load streams, and reads what it completed during each size.
type loadProbe struct {
	spec    Spec // the load's
	once    sync.Once
	started chan struct{} // closed once the load streams, or ended
	mu      sync.Mutex
	stream  progressor
	err     error
}

// progressor reads a running stream's completions from another thread.
type progressor interface {
	progress() (msgs, lastNs uint64)
}

func newLoadProbe() *loadProbe { return &loadProbe{started: make(chan struct{})} }

func (p *loadProbe) start(s streamLoop) {
	p.mu.Lock()
	if pr, ok := s.(progressor); ok {
		p.stream = pr
	}
	p.mu.Unlock()
	p.once.Do(func() { close(p.started) })
}

func (p *loadProbe) end(err error) {
	p.mu.Lock()
	if err == nil {
		err = errors.New("the load ended before the latency test")
	}
	p.err, p.stream = err, nil
	p.mu.Unlock()
	p.once.Do(func() { close(p.started) })
}

// wait waits until the load streams.
func (p *loadProbe) wait(ctx context.Context) error {
	select {
	case <-p.started:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stream == nil {
		return fmt.Errorf("the load did not start: %w", p.err)
	}
	return nil
}

// failure is why the load ended.
func (p *loadProbe) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// mark reads the load's completions so far; ok is false when it has ended.
func (p *loadProbe) mark() (msgs uint64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stream == nil {
		return 0, false
	}
	msgs, _ = p.stream.progress()
	return msgs, true
}
