package control

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/buildinfo"
)

// An end of a long keepalive pings one of a short timeout often enough
// (the hellos say each end's timeout): a server that pings every 2 s keeps
// a client that waits 300 ms, and a client that pings every 2 s is kept by
// a server that waits 300 ms, through a test that is silent for over a
// second.
func TestKeepaliveWithinOtherTimeout(t *testing.T) {
	short := 300 * time.Millisecond
	long := ServerOptions{Timeout: 10 * time.Second, Keepalive: 2 * time.Second}
	for _, tc := range []struct {
		name string
		srv  ServerOptions
		cli  ClientOptions
	}{
		{"server of a long keepalive", long, ClientOptions{Timeout: short, Keepalive: 50 * time.Millisecond}},
		{"client of a long keepalive", ServerOptions{Timeout: short, Keepalive: 50 * time.Millisecond},
			ClientOptions{Timeout: 10 * time.Second, Keepalive: 2 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noLeaks(t)
			h := newEcho()
			ts := startServer(t, h, tc.srv)
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			_, s := blockedEcho(t, ctx, ts.addr, tc.cli, h)
			// Nothing but pings for 4 of the short timeouts.
			select {
			case <-s.Lost():
				t.Fatalf("the client lost the server: %v", s.LostErr())
			case err := <-h.gone:
				t.Fatalf("the server dropped the client: %v", err)
			case <-time.After(4 * short):
			}
			close(h.release)
			if err := s.Send(ctx, []byte("end")); err != nil {
				t.Fatal(err)
			}
			if err := s.Finish(ctx); err != nil {
				t.Fatalf("finish: %v", err)
			}
		})
	}
}

// Each hello says its sender's timeout; an end whose hello says none (an
// older one) is pinged every second at least, whatever the keepalive.
func TestHelloTimeout(t *testing.T) {
	noLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	got := make(chan *Message, 1)
	pinged := make(chan error, 1)
	addr := fakeServer(t, func(r *rawConn) {
		r.write(serverHello(buildinfo.ProtocolVersion, buildinfo.Version)) // no timeout_ms
		got <- r.expect(TypeHello)
		r.write(&Message{Type: TypeAccepted})
		// The first frame after the handshake: a ping, long before the
		// client's keepalive of 30 s.
		_ = r.conn.SetReadDeadline(time.Now().Add(patience))
		m, err := ReadFrame(r.conn, 0)
		if err == nil && m.Type != TypePing {
			err = errors.New("got " + m.Type + ", want a ping")
		}
		pinged <- err
	})
	c, err := Dial(ctx, addr, ClientOptions{Timeout: 90 * time.Second, Keepalive: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if h := <-got; h.TimeoutMS != 90000 {
		t.Errorf("the client's hello says timeout_ms %d, want 90000", h.TimeoutMS)
	}
	if err := <-pinged; err != nil {
		t.Errorf("no ping to a server whose hello says no timeout: %v", err)
	}

	// The server's hello says its timeout.
	ts := startServer(t, newEcho(), ServerOptions{Timeout: 7 * time.Second})
	r := dialRaw(t, ts.addr)
	if h := r.expect(TypeHello); h.TimeoutMS != 7000 {
		t.Errorf("the server's hello says timeout_ms %d, want 7000", h.TimeoutMS)
	}
}
