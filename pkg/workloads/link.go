package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// EncodeExchange and DecodeExchange let another transport (the control
// connection) carry the same envelopes as Pipe.
func EncodeExchange(phase string, out any) ([]byte, error) { return encodeEnvelope(phase, out) }

// DecodeExchange decodes a peer's envelope for phase into in.
func DecodeExchange(phase string, msg []byte, in any) error { return decodeEnvelope(phase, msg, in) }

// pipeEnd is one end of an in-process link. Messages are JSON-encoded, as
// on the wire, so loopback runs exercise the same encoding.
type pipeEnd struct {
	send chan<- []byte
	recv <-chan []byte
}

// Pipe returns the two ends of an in-process Link.
func Pipe() (Link, Link) {
	a, b := make(chan []byte, 1), make(chan []byte, 1)
	return &pipeEnd{send: a, recv: b}, &pipeEnd{send: b, recv: a}
}

func (p *pipeEnd) Exchange(ctx context.Context, phase string, out, in any) error {
	msg, err := encodeEnvelope(phase, out)
	if err != nil {
		return err
	}
	select {
	case p.send <- msg:
	case <-ctx.Done():
		return ctx.Err()
	}
	if _, ok := out.(failure); ok {
		return nil // a failure is told, not answered
	}
	select {
	case m := <-p.recv:
		return decodeEnvelope(phase, m, in)
	case <-ctx.Done():
		return ctx.Err()
	}
}
