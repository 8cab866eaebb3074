package control

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/buildinfo"
)

// Clients that misbehave in every way one can script over a raw connection.
// The server must survive each (cancelling the test in progress, if any),
// and a good client must succeed right after. At the end, no goroutine is
// left over.
func TestMisbehavingClients(t *testing.T) {
	noLeaks(t)
	h := newEcho()
	ts := startServer(t, h, serverOpts())
	// clientName is how the server's log names r.
	clientName := func(r *rawConn) string { return r.conn.LocalAddr().String() }
	// testFailed waits until the server logged r's test as failed: the
	// handler has returned and the server is free again.
	testFailed := func(t *testing.T, r *rawConn) {
		t.Helper()
		waitLog(t, ts, clientName(r)+" echo failed ")
	}
	// closed checks that the server closed r.
	closed := func(t *testing.T, r *rawConn) {
		t.Helper()
		for {
			_, err := r.read()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(err.Error(), "reset") {
					t.Errorf("expected the server to close the connection: %v", err)
				}
				return
			}
		}
	}
	kill := func(r *rawConn, reset bool) {
		if tc, ok := r.conn.(*net.TCPConn); ok && reset {
			_ = tc.SetLinger(0) // close with RST
		}
		r.conn.Close()
	}
	blocked := func(t *testing.T, r *rawConn) {
		t.Helper()
		r.startRun()
		r.write(&Message{Type: TypeExchange, Body: []byte("block")})
		waitStarted(t, h)
	}

	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"http request instead of hello", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			r.expect(TypeHello)
			r.writeBytes([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
			if msg := r.expectError(CodeProtocol); !strings.Contains(msg, "too large") {
				t.Errorf("error %q", msg)
			}
			closed(t, r)
			waitLog(t, ts, clientName(r)+" refused protocol")
		}},
		{"binary garbage after the handshake", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			r.handshake("")
			r.writeBytes([]byte{0, 0, 0, 8, 0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3})
			if msg := r.expectError(CodeProtocol); !strings.Contains(msg, "bad control frame: not a JSON object") {
				t.Errorf("error %q", msg)
			}
			closed(t, r)
		}},
		{"truncated frame then close during the handshake", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			r.expect(TypeHello)
			r.writeBytes([]byte{0, 0, 0, 50, '{', '"'})
			r.conn.Close()
			waitLog(t, ts, clientName(r)+" refused -: client "+clientName(r)+" closed the connection in the middle of a frame")
		}},
		{"oversized length after the handshake", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			r.handshake("")
			r.writeBytes([]byte{0xff, 0xff, 0xff, 0xff})
			if msg := r.expectError(CodeProtocol); !strings.Contains(msg, "too large: 4294967295 bytes declared") {
				t.Errorf("error %q", msg)
			}
			closed(t, r)
		}},
		{"run before hello", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			r.expect(TypeHello)
			r.write(&Message{Type: TypeRun, Test: "echo", Spec: testSpec})
			if msg := r.expectError(CodeProtocol); !strings.Contains(msg, "expected hello, got run") {
				t.Errorf("error %q", msg)
			}
			closed(t, r)
		}},
		{"exchange before run", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			r.handshake("")
			r.write(&Message{Type: TypeExchange, Body: []byte("hi")})
			if msg := r.expectError(CodeProtocol); !strings.Contains(msg, "exchange before run") {
				t.Errorf("error %q", msg)
			}
			closed(t, r)
		}},
		{"hello twice", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			r.handshake("")
			r.write(&Message{Type: TypeHello, Protocol: buildinfo.ProtocolVersion})
			r.expectError(CodeProtocol)
			closed(t, r)
		}},
		{"server messages from the client", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			r.handshake("")
			r.write(&Message{Type: TypeDone})
			r.expectError(CodeProtocol)
			closed(t, r)
		}},
		{"silence after connect", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			// Others are served meanwhile.
			goodClient(t, ts.addr, clientOpts())
			waitLog(t, ts, clientName(r)+" refused -: no message from client "+clientName(r)+" for 1s")
			r.expect(TypeHello)
			closed(t, r)
		}},
		{"silence after the handshake", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			r.handshake("")
			waitLog(t, ts, clientName(r)+" dropped: no message from client")
			closed(t, r)
		}},
		{"silence during a test", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			r.startRun() // and no ping
			if err := waitGone(t, h); !errors.Is(err, ErrPeerSilent) {
				t.Errorf("test cancelled for %v, want ErrPeerSilent", err)
			}
			testFailed(t, r)
		}},
		{"connection closed during a test", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			blocked(t, r)
			kill(r, false)
			if err := waitGone(t, h); !errors.Is(err, ErrPeerClosed) {
				t.Errorf("test cancelled for %v, want ErrPeerClosed", err)
			}
			testFailed(t, r)
		}},
		{"connection reset during a test", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			blocked(t, r)
			kill(r, true)
			if err := waitGone(t, h); !errors.Is(err, ErrPeerClosed) {
				t.Errorf("test cancelled for %v, want ErrPeerClosed", err)
			}
			testFailed(t, r)
		}},
		{"truncated frame then close during a test", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			blocked(t, r)
			r.writeBytes([]byte{0, 0, 1, 0, '{', '"', 't'})
			kill(r, false)
			err := waitGone(t, h)
			if !errors.Is(err, ErrPeerClosed) || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("test cancelled for %v, want ErrPeerClosed and io.ErrUnexpectedEOF", err)
			}
			testFailed(t, r)
		}},
		{"garbage during a test", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			blocked(t, r)
			r.writeBytes([]byte("\x00\x00\x00\x05hello"))
			if err := waitGone(t, h); !errors.Is(err, ErrProtocol) {
				t.Errorf("test cancelled for %v, want ErrProtocol", err)
			}
			r.expectError(CodeProtocol)
			closed(t, r)
			testFailed(t, r)
		}},
		{"second run during a test", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			blocked(t, r)
			r.write(&Message{Type: TypeRun, Test: "echo", Spec: testSpec})
			if err := waitGone(t, h); !errors.Is(err, ErrProtocol) {
				t.Errorf("test cancelled for %v, want ErrProtocol", err)
			}
			r.expectError(CodeProtocol)
			testFailed(t, r)
		}},
		{"error frame during a test", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			blocked(t, r)
			r.write(&Message{Type: TypeError, Code: CodeRun, Msg: "client crashed"})
			if err := waitGone(t, h); err == nil || !strings.Contains(err.Error(), "client crashed") {
				t.Errorf("test cancelled for %v", err)
			}
			testFailed(t, r)
		}},
		{"exchange after the test ended is dropped", func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			r.startRun()
			r.write(&Message{Type: TypeExchange, Body: []byte("end")})
			r.write(&Message{Type: TypeExchange, Body: []byte("late")})
			r.expect(TypeDone)
			r.write(&Message{Type: TypeExchange, Body: []byte("later")})
			r.write(&Message{Type: TypeRun, Test: "echo", Spec: testSpec})
			r.expect(TypeAccepted)
			r.write(&Message{Type: TypeExchange, Body: []byte("end")})
			r.expect(TypeDone)
			r.write(&Message{Type: TypeBye})
			closed(t, r)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t)
			goodClient(t, ts.addr, clientOpts())
		})
	}
}

func TestTooManyConnections(t *testing.T) {
	noLeaks(t)
	opt := serverOpts()
	opt.MaxConns = 2
	ts := startServer(t, newEcho(), opt)
	a, b := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	a.handshake("")
	b.handshake("")
	c := dialRaw(t, ts.addr)
	if msg := c.expectError(CodeLimit); msg != "too many connections (2); try again later" {
		t.Errorf("error %q", msg)
	}
	waitLog(t, ts, "refused limit: too many connections")
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	_, err := Dial(ctx, ts.addr, clientOpts())
	var se *ServerError
	if !errors.As(err, &se) || se.Code != CodeLimit {
		t.Errorf("dial beyond the limit: %v", err)
	}
	a.conn.Close()
	b.conn.Close()
	// The slots free up as soon as the server has seen both go.
	deadline := time.Now().Add(patience)
	for {
		cl, err := Dial(ctx, ts.addr, clientOpts())
		if err == nil {
			echoTest(t, ctx, cl, "echo")
			cl.Close()
			break
		}
		if !errors.As(err, &se) || se.Code != CodeLimit || time.Now().After(deadline) {
			t.Fatalf("dial after the others left: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
