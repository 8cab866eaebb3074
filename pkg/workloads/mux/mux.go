// Package mux carries the messages of several lanes over one transport.
//
// A test that runs several ends at once on each side (one per device, and
// beside a latency end the end of its background load) exchanges over one
// control connection: each lane's messages travel as frames of
//
//	lane    2 bytes, big-endian: the lane's number, 0..n-1
//	body    the lane's message, as it was sent
//
// and the reader hands each frame's body to its lane. The lanes' exchanges
// are in lockstep with the peer's, so few frames wait for a lane at once.
package mux

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// Transport moves whole messages between the two ends, as the workloads'
// Transport does.
type Transport interface {
	Send(ctx context.Context, msg []byte) error
	Recv(ctx context.Context) ([]byte, error)
}

// headerLen is the length of a frame's lane number.
const headerLen = 2

// ErrShortFrame is a frame too short to hold its lane's number.
var ErrShortFrame = errors.New("a lane message shorter than its lane number")

// ErrNoLane is a frame for a lane this end does not have.
var ErrNoLane = errors.New("a message for a lane this end does not have")

// laneQueue bounds the messages waiting for a lane: its exchanges are in
// lockstep with the peer's, so one or two at most are in flight.
const laneQueue = 8

// Mux carries n lanes over one Transport. Its reader runs until Close, or
// until the transport fails or sends a bad frame; every lane's Recv then
// returns that error, after the messages already received.
type Mux struct {
	t      Transport
	lanes  []chan []byte
	done   chan struct{} // the transport failed or ended: err says why
	err    error
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sendMu sync.Mutex
}

// New starts reading t for n lanes (a lane's number is 2 bytes: n is at
// most 65536).
func New(ctx context.Context, t Transport, n int) *Mux {
	ctx, cancel := context.WithCancel(ctx)
	m := &Mux{t: t, done: make(chan struct{}), cancel: cancel}
	for range n {
		m.lanes = append(m.lanes, make(chan []byte, laneQueue))
	}
	m.wg.Add(1)
	go m.read(ctx)
	return m
}

// Lanes is the number of lanes m carries.
func (m *Mux) Lanes() int { return len(m.lanes) }

// Lane is lane i's transport: what it sends reaches the peer's lane i, and
// it receives what the peer's lane i sent.
func (m *Mux) Lane(i int) Transport { return lane{m, i} }

// Close stops reading (the lanes are done) and waits for the reader.
func (m *Mux) Close() {
	m.cancel()
	m.wg.Wait()
}

func (m *Mux) read(ctx context.Context) {
	defer m.wg.Done()
	defer close(m.done)
	for {
		msg, err := m.t.Recv(ctx)
		if err != nil {
			m.err = err
			return
		}
		i, body, err := decode(msg, len(m.lanes))
		if err != nil {
			m.err = err
			return
		}
		select {
		case m.lanes[i] <- body:
		default: // nobody reads that lane any more
		}
	}
}

// encode frames msg for lane i.
func encode(i int, msg []byte) []byte {
	b := make([]byte, headerLen+len(msg))
	binary.BigEndian.PutUint16(b, uint16(i))
	copy(b[headerLen:], msg)
	return b
}

// decode splits a frame into its lane (one of n) and its body.
func decode(frame []byte, n int) (int, []byte, error) {
	if len(frame) < headerLen {
		return 0, nil, fmt.Errorf("%w: %d bytes", ErrShortFrame, len(frame))
	}
	i := int(binary.BigEndian.Uint16(frame))
	if i >= n {
		return 0, nil, fmt.Errorf("%w: lane %d of %d", ErrNoLane, i, n)
	}
	return i, frame[headerLen:], nil
}

type lane struct {
	m *Mux
	i int
}

func (l lane) Send(ctx context.Context, msg []byte) error {
	b := encode(l.i, msg)
	l.m.sendMu.Lock()
	defer l.m.sendMu.Unlock()
	return l.m.t.Send(ctx, b)
}

func (l lane) Recv(ctx context.Context) ([]byte, error) {
	select {
	case msg := <-l.m.lanes[l.i]:
		return msg, nil
	case <-l.m.done:
		select {
		case msg := <-l.m.lanes[l.i]:
			return msg, nil
		default:
			return nil, l.m.err
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
