package mux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// chanEnd is one end of an in-process transport; closing gone ends the
// other's Recv.
type chanEnd struct {
	send chan<- []byte
	recv <-chan []byte
	gone <-chan struct{}
}

var errGone = errors.New("the other end has ended")

func (c chanEnd) Send(ctx context.Context, msg []byte) error {
	select {
	case c.send <- msg:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c chanEnd) Recv(ctx context.Context) ([]byte, error) {
	select {
	case m := <-c.recv:
		return m, nil
	case <-c.gone:
		return nil, errGone
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func pair() (a, b chanEnd, hangupA, hangupB func()) {
	ab, ba := make(chan []byte, 16), make(chan []byte, 16)
	goneA, goneB := make(chan struct{}), make(chan struct{})
	a = chanEnd{send: ab, recv: ba, gone: goneB}
	b = chanEnd{send: ba, recv: ab, gone: goneA}
	return a, b, func() { close(goneA) }, func() { close(goneB) }
}

func TestLanesMeetTheirPeers(t *testing.T) {
	ta, tb, hangA, hangB := pair()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ma, mb := New(ctx, ta, 3), New(ctx, tb, 3)
	defer ma.Close()
	defer mb.Close()
	if ma.Lanes() != 3 {
		t.Fatalf("lanes = %d, want 3", ma.Lanes())
	}
	// Each lane's message reaches the peer's same lane, whatever the order.
	done := make(chan error, 6)
	for i := range 3 {
		go func() { done <- ma.Lane(i).Send(ctx, fmt.Appendf(nil, "a%d", i)) }()
		go func() { done <- mb.Lane(2-i).Send(ctx, fmt.Appendf(nil, "b%d", 2-i)) }()
	}
	for range 6 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		got, err := mb.Lane(i).Recv(ctx)
		if err != nil || string(got) != fmt.Sprintf("a%d", i) {
			t.Fatalf("b's lane %d got %q, %v", i, got, err)
		}
		got, err = ma.Lane(i).Recv(ctx)
		if err != nil || string(got) != fmt.Sprintf("b%d", i) {
			t.Fatalf("a's lane %d got %q, %v", i, got, err)
		}
	}
	// The peer gone, every lane's Recv says why.
	hangB()
	if _, err := ma.Lane(1).Recv(ctx); !errors.Is(err, errGone) {
		t.Fatalf("recv from a peer that has ended: %v", err)
	}
	hangA()
}

func TestFraming(t *testing.T) {
	f := encode(258, []byte("body"))
	if want := []byte{1, 2, 'b', 'o', 'd', 'y'}; !bytes.Equal(f, want) {
		t.Fatalf("frame % x, want % x", f, want)
	}
	i, body, err := decode(f, 300)
	if err != nil || i != 258 || string(body) != "body" {
		t.Fatalf("decode = %d %q %v", i, body, err)
	}
	if i, body, err := decode(encode(0, nil), 1); err != nil || i != 0 || len(body) != 0 {
		t.Fatalf("empty body: %d %q %v", i, body, err)
	}
}

func TestBadFrames(t *testing.T) {
	for _, c := range []struct {
		frame []byte
		want  error
	}{
		{nil, ErrShortFrame},
		{[]byte{0}, ErrShortFrame},
		{[]byte{0, 2, 'x'}, ErrNoLane},
	} {
		if _, _, err := decode(c.frame, 2); !errors.Is(err, c.want) {
			t.Errorf("decode(% x) = %v, want %v", c.frame, err, c.want)
		}
	}
	// A bad frame ends the reader: every lane's Recv returns the error,
	// after what came before it.
	ta, tb, _, _ := pair()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := New(ctx, ta, 2)
	defer m.Close()
	for _, f := range [][]byte{encode(1, []byte("first")), {0, 7}} {
		if err := tb.Send(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := m.Lane(1).Recv(ctx); err != nil || string(got) != "first" {
		t.Fatalf("lane 1 got %q, %v", got, err)
	}
	if _, err := m.Lane(0).Recv(ctx); !errors.Is(err, ErrNoLane) {
		t.Fatalf("after a bad frame: %v", err)
	}
}
