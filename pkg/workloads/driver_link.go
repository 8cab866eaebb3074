package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// Link carries the few messages the two ends of a test exchange: endpoints,
// barriers between phases, and results. Every exchange is symmetric: each
// end sends its message for a phase and receives the peer's for the same
// phase. In one process the link is a pair of channels (Pipe); across hosts
// it is the control connection (pkg/control).
type Link interface {
	// Exchange sends out (JSON-encodable) for phase and decodes the peer's
	// message for the same phase into in (may be nil to discard). A peer
	// that reached a different phase, or failed, is an error.
	Exchange(ctx context.Context, phase string, out, in any) error
}

// PeerError is a failure the other end reported.
type PeerError struct {
	Phase string
	Msg   string
}

func (e *PeerError) Error() string { return fmt.Sprintf("peer failed (%s): %s", e.Phase, e.Msg) }

// ErrPhaseMismatch means the two ends disagree about where they are.
var ErrPhaseMismatch = errors.New("the two ends are at different phases")

// envelope is what one exchange carries.
type envelope struct {
	Phase string          `json:"phase"`
	Err   string          `json:"error,omitempty"`
	Body  json.RawMessage `json:"body,omitempty"`
}

// failure is passed as out to tell the peer this end failed.
type failure struct{ err error }

// Fail returns a message that, exchanged, makes the peer's Exchange return a
// *PeerError carrying err. Exchanging it does not wait for the peer's answer.
func Fail(err error) any { return failure{err} }

func encodeEnvelope(phase string, out any) ([]byte, error) {
	env := envelope{Phase: phase}
	if f, ok := out.(failure); ok {
		env.Err = f.err.Error()
		if env.Err == "" {
			env.Err = "failed" // an empty message would read as success
		}
	} else if out != nil {
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", phase, err)
		}
		env.Body = b
	}
	return json.Marshal(env)
}

func decodeEnvelope(phase string, msg []byte, in any) error {
	var env envelope
	if err := json.Unmarshal(msg, &env); err != nil {
		return fmt.Errorf("decode %s: %w", phase, err)
	}
	if env.Err != "" {
		return &PeerError{Phase: env.Phase, Msg: env.Err}
	}
	if env.Phase != phase {
		return fmt.Errorf("%w: this end at %q, the peer at %q", ErrPhaseMismatch, phase, env.Phase)
	}
	if in != nil && len(env.Body) > 0 {
		if err := json.Unmarshal(env.Body, in); err != nil {
			return fmt.Errorf("decode %s: %w", phase, err)
		}
	}
	return nil
}

// Transport moves opaque exchange messages between the two ends: a pair of
// channels in one process, the control connection across hosts.
type Transport interface {
	Send(ctx context.Context, msg []byte) error
	Recv(ctx context.Context) ([]byte, error)
}

// NewLink returns the Link that exchanges over t.
func NewLink(t Transport) Link { return &transportLink{t} }

type transportLink struct{ t Transport }

func (l *transportLink) Exchange(ctx context.Context, phase string, out, in any) error {
	msg, err := encodeEnvelope(phase, out)
	if err != nil {
		return err
	}
	if err := l.t.Send(ctx, msg); err != nil {
		return err
	}
	if _, ok := out.(failure); ok {
		return nil // a failure is told, not answered
	}
	m, err := l.t.Recv(ctx)
	if err != nil {
		return err
	}
	return decodeEnvelope(phase, m, in)
}

// chanTransport is one end of an in-process transport. Messages are
// JSON-encoded envelopes, as on the wire, so loopback runs exercise the same
// encoding.
type chanTransport struct {
	send chan<- []byte
	recv <-chan []byte
	// peerGone is closed when the other end has returned: nothing more
	// will come from it.
	peerGone <-chan struct{}
}

// errPeerEnded: the other end of an in-process link returned, and will
// not answer.
var errPeerEnded = errors.New("the other end has ended")

// Pipe returns the two ends of an in-process Link.
func Pipe() (Link, Link) {
	a, b, _, _ := pipe()
	return a, b
}

// pipe returns the two ends of an in-process Link and, for each, a hangup
// that tells the other end this one has returned: the other's exchanges
// then fail at once (after taking what was already sent) instead of
// waiting for ever.
func pipe() (a, b Link, hangupA, hangupB func()) {
	ta, tb, hangupA, hangupB := pipeTransports()
	return NewLink(ta), NewLink(tb), hangupA, hangupB
}

// pipeTransports returns the two ends of an in-process Transport, with
// their hangups (see pipe).
func pipeTransports() (a, b Transport, hangupA, hangupB func()) {
	ab, ba := make(chan []byte, 1), make(chan []byte, 1)
	goneA, goneB := make(chan struct{}), make(chan struct{})
	a = &chanTransport{send: ab, recv: ba, peerGone: goneB}
	b = &chanTransport{send: ba, recv: ab, peerGone: goneA}
	var onceA, onceB sync.Once
	return a, b, func() { onceA.Do(func() { close(goneA) }) }, func() { onceB.Do(func() { close(goneB) }) }
}

// Send to an end that has returned drops msg: nobody will read it, and the
// Recv that follows says the peer ended (after what it sent before).
func (c *chanTransport) Send(ctx context.Context, msg []byte) error {
	select {
	case c.send <- msg:
		return nil
	case <-c.peerGone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *chanTransport) Recv(ctx context.Context) ([]byte, error) {
	select {
	case m := <-c.recv:
		return m, nil
	case <-c.peerGone:
		select {
		case m := <-c.recv:
			return m, nil
		default:
			return nil, errPeerEnded
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func phase(name string, i int) string { return fmt.Sprintf("%s/%d", name, i) }
