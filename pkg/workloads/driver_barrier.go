package workloads

// The barrier of the lanes of the devices (driver_lanes.go): each size
// starts on every device at once.

import (
	"context"
	"sync"
)

// barrier lets the lanes of the devices start each size together; a lane
// that has returned no longer holds the others.
type barrier struct {
	mu      sync.Mutex
	n       int
	at      []int // the size each lane waits to start, -1 when it is not waiting
	gone    []bool
	changed chan struct{}
}

func newBarrier(n int) *barrier {
	b := &barrier{n: n, at: make([]int, n), gone: make([]bool, n), changed: make(chan struct{})}
	for i := range b.at {
		b.at[i] = -1
	}
	return b
}

func (b *barrier) signal() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// arrive waits until every lane still running has reached size i.
func (b *barrier) arrive(ctx context.Context, lane, i int) error {
	b.mu.Lock()
	b.at[lane] = i
	b.signal()
	for {
		ready := true
		for j := range b.n {
			if !b.gone[j] && b.at[j] < i {
				ready = false
			}
		}
		if ready {
			b.mu.Unlock()
			return nil
		}
		ch := b.changed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		b.mu.Lock()
	}
}

func (b *barrier) leave(lane int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gone[lane] = true
	b.signal()
}
