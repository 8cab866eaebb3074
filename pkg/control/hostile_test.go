package control

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/buildinfo"
)

// Servers that misbehave in every way one can script over a raw connection,
// against the real client (Dial, Run, Session's Send, Recv and Finish). Each
// must end in a named error (one of the package's sentinels) that names the
// server, within the client's timeout: never a hang nor a panic, and no
// goroutine is left over.

// hostileOpts are the client's options against a hostile server: a short
// timeout, so that silence is found quickly.
func hostileOpts() ClientOptions {
	return ClientOptions{Timeout: 500 * time.Millisecond, Keepalive: 50 * time.Millisecond}
}

// fake is a scripted server's end of one connection. Its methods never stop
// the test: the first failure is recorded, reported with t.Errorf (the
// script runs on its own goroutine) unless the script expects it, and makes
// the later calls no-ops.
type fake struct {
	t    *testing.T
	conn net.Conn
	quit chan struct{} // closed when the test ends

	wmu  sync.Mutex
	err  error
	ping chan struct{} // closed to stop the pinger; nil when none runs
	wg   sync.WaitGroup
}

// hostileServer accepts one connection and runs script on it; the
// connection is closed when script returns. It returns the address.
func hostileServer(t *testing.T, script func(f *fake)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		ln.Close()
		if err != nil {
			return
		}
		f := &fake{t: t, conn: conn, quit: quit}
		// A close with the client's pings unread would reset the
		// connection instead of closing it: say the end (FIN) and read
		// what is left first. (A script that resets has closed already.)
		defer func() {
			if tc, ok := conn.(*net.TCPConn); ok && tc.CloseWrite() == nil {
				_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				_, _ = io.Copy(io.Discard, conn)
			}
			conn.Close()
		}()
		defer f.quiet()
		script(f)
	}()
	t.Cleanup(func() {
		close(quit)
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

func (f *fake) failed(err error) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *fake) ok() bool {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	return f.err == nil
}

// raw writes b as it is.
func (f *fake) raw(b []byte) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.err != nil {
		return
	}
	_ = f.conn.SetWriteDeadline(time.Now().Add(patience))
	if _, err := f.conn.Write(b); err != nil {
		f.err = err
	}
}

// send writes m as a frame.
func (f *fake) send(m *Message) {
	b, err := EncodeFrame(m, 0)
	if err != nil {
		f.t.Errorf("fake server: encode %s: %v", m.Type, err)
		f.failed(err)
		return
	}
	f.raw(b)
}

// expect reads frames, pings dropped, and reports one that is not of type
// typ.
func (f *fake) expect(typ string) *Message {
	for f.ok() {
		_ = f.conn.SetReadDeadline(time.Now().Add(patience))
		m, err := ReadFrame(f.conn, 0)
		if err != nil {
			f.t.Errorf("fake server: read, expecting %s: %v", typ, err)
			f.failed(err)
			return nil
		}
		if m.Type == TypePing {
			continue
		}
		if m.Type != typ {
			f.t.Errorf("fake server: got %+v, expecting %s", m, typ)
			f.failed(errors.New("unexpected frame"))
			return nil
		}
		return m
	}
	return nil
}

// drain reads and drops what the client sends until it closes the
// connection (or the test ends).
func (f *fake) drain() {
	go func() {
		<-f.quit
		_ = f.conn.SetReadDeadline(time.Unix(1, 0))
	}()
	_ = f.conn.SetReadDeadline(time.Time{})
	_, _ = io.Copy(io.Discard, f.conn)
}

// hold reads nothing and sends nothing until the test ends.
func (f *fake) hold() { <-f.quit }

// pinger sends a ping every 50ms, as a live server would, until quiet.
func (f *fake) pinger() {
	f.ping = make(chan struct{})
	f.wg.Add(1)
	go func(stop chan struct{}) {
		defer f.wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for f.ok() {
			select {
			case <-stop:
				return
			case <-t.C:
				f.send(&Message{Type: TypePing})
			}
		}
	}(f.ping)
}

// quiet stops the pinger.
func (f *fake) quiet() {
	if f.ping != nil {
		close(f.ping)
		f.ping = nil
	}
	f.wg.Wait()
}

// handshake does a good server's handshake and starts pinging.
func (f *fake) handshake() {
	f.send(serverHello(buildinfo.ProtocolVersion, buildinfo.Version))
	f.expect(TypeHello)
	f.send(&Message{Type: TypeAccepted})
	f.pinger()
}

// accept waits for a run and accepts it.
func (f *fake) accept() {
	f.expect(TypeRun)
	f.send(&Message{Type: TypeAccepted})
}

// echoOnce answers one exchange message with the same body, then says done.
func (f *fake) echoOnce() {
	if m := f.expect(TypeExchange); m != nil {
		f.send(&Message{Type: TypeExchange, Body: m.Body})
	}
	f.send(&Message{Type: TypeDone})
}

// goodTest runs one test that succeeds against a fake server that accepts
// it and does echoOnce.
func goodTest(t *testing.T, ctx context.Context, c *Client) {
	t.Helper()
	s, err := c.Run(ctx, "echo", testSpec)
	if err != nil {
		t.Fatalf("first test: run: %v", err)
	}
	if err := s.Send(ctx, []byte("hi")); err != nil {
		t.Fatalf("first test: send: %v", err)
	}
	if b, err := s.Recv(ctx); err != nil || string(b) != "hi" {
		t.Fatalf("first test: recv: %q, %v", b, err)
	}
	if err := s.Finish(ctx); err != nil {
		t.Fatalf("first test: finish: %v", err)
	}
}

// The client's steps a case can fail at.
type step int

const (
	atDial   step = iota // Dial fails
	atRun                // Dial succeeds; Run fails
	atRecv               // Run succeeds; Recv fails, then Finish with the same error
	atFinish             // Run succeeds; Finish fails
	atRerun              // one good test (goodTest), then the second Run fails
	atSend               // Run succeeds; Send fails before the test ends
)

func (s step) String() string {
	return [...]string{"dial", "run", "recv", "finish", "second run", "send"}[s]
}

// hostileClient drives the client to step against the server at addr and
// returns the error it ended with (nil if it did not fail where expected).
// After a failed Recv, Finish must fail with want too.
func hostileClient(t *testing.T, ctx context.Context, addr string, at step, want error) error {
	t.Helper()
	c, err := Dial(ctx, addr, hostileOpts())
	if at == atDial || err != nil {
		if err == nil {
			c.Close()
		}
		return err
	}
	defer c.Close()
	if at == atRerun {
		goodTest(t, ctx, c)
	}
	s, err := c.Run(ctx, "echo", testSpec)
	if at == atRun || at == atRerun || err != nil {
		if err == nil {
			_ = s.Finish(ctx)
		}
		return err
	}
	switch at {
	case atRecv:
		if err := s.Send(ctx, []byte("hi")); err != nil {
			return err
		}
		_, err := s.Recv(ctx)
		if err == nil {
			return nil
		}
		// Finish returns the same verdict.
		if ferr := s.Finish(ctx); !errors.Is(ferr, want) {
			t.Errorf("finish after recv failed: %v, want an error wrapping %q", ferr, want)
		}
		return err
	case atFinish:
		return s.Finish(ctx)
	case atSend:
		// Messages of half the frame limit: the socket buffers fill and
		// Send must give up at the timeout.
		msg := make([]byte, DefaultMaxFrame/2)
		for ctx.Err() == nil {
			if err := s.Send(ctx, msg); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
	return nil
}

func TestHostileServers(t *testing.T) {
	cases := []struct {
		name   string
		at     step
		server func(f *fake)
		want   error  // the sentinel the error wraps
		says   string // and what it says, besides the server's address
	}{
		// Before or during the handshake.
		{"closes at once", atDial, func(f *fake) {}, ErrPeerClosed, "closed the connection (while waiting for the server's hello)"},
		{"silence instead of hello", atDial, (*fake).drain, ErrPeerSilent, "accepted the connection but said nothing for 500ms: an rdmabench server says hello at once"},
		{"binary junk instead of hello", atDial, func(f *fake) {
			f.raw([]byte{0, 0, 0, 8, 0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3})
			f.drain()
		}, ErrBadFrame, `is not an rdmabench server: it answered "\x00\x00\x00\x08\xde\xad\xbe\xef\x00\x01\x02\x03" (bad control frame: not a JSON object)`},
		{"text instead of hello", atDial, func(f *fake) {
			f.raw([]byte("220 smtp.example.com ESMTP ready\r\n"))
			f.drain()
		}, ErrFrameTooLarge, `is not an rdmabench server: it answered "220 smtp.example.com ESMTP ready" (control frame too large: 842149920 bytes declared`},
		{"oversize length instead of hello", atDial, func(f *fake) {
			f.raw([]byte{0xff, 0xff, 0xff, 0xff})
			f.drain()
		}, ErrFrameTooLarge, "4294967295 bytes declared, the limit is 1048576"},
		{"zero length instead of hello", atDial, func(f *fake) {
			f.raw([]byte{0, 0, 0, 0})
			f.drain()
		}, ErrBadFrame, "zero length"},
		{"truncated hello then close", atDial, func(f *fake) {
			f.raw([]byte{0, 0, 0, 60, '{', '"', 't', 'y'})
		}, ErrPeerClosed, "closed the connection in the middle of a frame"},
		{"truncated hello then silence", atDial, func(f *fake) {
			f.raw([]byte{0, 0, 0, 60, '{', '"', 't', 'y'})
			f.drain()
		}, ErrPeerSilent, "no message from server"},
		{"unknown message type", atDial, func(f *fake) {
			f.raw(frame(`{"type":"welcome","protocol":1}`))
			f.drain()
		}, ErrBadFrame, `unknown type "welcome"`},
		{"JSON array instead of hello", atDial, func(f *fake) {
			f.raw(frame(`[{"type":"hello"}]`))
			f.drain()
		}, ErrBadFrame, "not a JSON object"},
		{"accepted before hello", atDial, func(f *fake) {
			f.send(&Message{Type: TypeAccepted})
			f.drain()
		}, ErrProtocol, `sent "accepted" first, not hello`},
		{"exchange before hello", atDial, func(f *fake) {
			f.send(&Message{Type: TypeExchange, Body: []byte("x")})
			f.drain()
		}, ErrProtocol, `sent "exchange" first, not hello`},
		{"hello without a nonce", atDial, func(f *fake) {
			f.send(&Message{Type: TypeHello, Protocol: buildinfo.ProtocolVersion, Version: buildinfo.Version})
			f.drain()
		}, ErrProtocol, "hello without a valid nonce"},
		{"hello with a short nonce", atDial, func(f *fake) {
			f.send(&Message{Type: TypeHello, Protocol: buildinfo.ProtocolVersion, Nonce: "abcd"})
			f.drain()
		}, ErrProtocol, "hello without a valid nonce"},
		{"a second hello instead of accepted", atDial, func(f *fake) {
			h := serverHello(buildinfo.ProtocolVersion, buildinfo.Version)
			f.send(h)
			f.expect(TypeHello)
			f.send(h)
			f.drain()
		}, ErrProtocol, `sent "hello" after hello`},
		{"done instead of accepted", atDial, func(f *fake) {
			f.send(serverHello(buildinfo.ProtocolVersion, buildinfo.Version))
			f.expect(TypeHello)
			f.send(&Message{Type: TypeDone})
			f.drain()
		}, ErrProtocol, `sent "done" after hello`},
		{"silence after hello", atDial, func(f *fake) {
			f.send(serverHello(buildinfo.ProtocolVersion, buildinfo.Version))
			f.drain()
		}, ErrPeerSilent, "no message from server"},
		{"junk after hello", atDial, func(f *fake) {
			f.send(serverHello(buildinfo.ProtocolVersion, buildinfo.Version))
			f.expect(TypeHello)
			f.raw([]byte("\x00\x00\x00\x05hello"))
			f.drain()
		}, ErrBadFrame, "bad control frame"},
		{"error without a code", atDial, func(f *fake) {
			f.raw(frame(`{"type":"error","message":"no"}`))
			f.drain()
		}, ErrBadFrame, "error without a code"},

		// After the handshake, waiting for a run to be accepted.
		{"exchange before accepted", atRun, func(f *fake) {
			f.handshake()
			f.expect(TypeRun)
			f.send(&Message{Type: TypeExchange, Body: []byte("x")})
			f.drain()
		}, ErrProtocol, `sent "exchange" while this client waited for the server to accept echo`},
		{"done before accepted", atRun, func(f *fake) {
			f.handshake()
			f.expect(TypeRun)
			f.send(&Message{Type: TypeDone})
			f.drain()
		}, ErrProtocol, `sent "done" while this client waited`},
		{"a second hello instead of accepting a run", atRun, func(f *fake) {
			f.handshake()
			f.expect(TypeRun)
			f.send(serverHello(buildinfo.ProtocolVersion, buildinfo.Version))
			f.drain()
		}, ErrProtocol, `sent "hello" while this client waited`},
		{"silence after run", atRun, func(f *fake) {
			f.handshake()
			f.quiet()
			f.drain()
		}, ErrPeerSilent, "no message from server"},
		{"only pings after run", atRun, func(f *fake) {
			f.handshake()
			f.drain()
		}, ErrPeerSilent, "did not answer run echo"},
		{"closes after the handshake", atRun, func(f *fake) {
			f.handshake()
			f.quiet()
		}, ErrPeerClosed, "closed the connection"},
		{"oversize length after run", atRun, func(f *fake) {
			f.handshake()
			f.expect(TypeRun)
			f.quiet()
			f.raw([]byte{0x7f, 0xff, 0xff, 0xff})
			f.drain()
		}, ErrFrameTooLarge, "2147483647 bytes declared"},

		// During a test.
		{"binary junk during a test", atRecv, func(f *fake) {
			f.handshake()
			f.accept()
			f.quiet()
			f.raw([]byte{0, 0, 0, 4, 0xff, 0xfe, 0xfd, 0xfc})
			f.drain()
		}, ErrBadFrame, "not a JSON object"},
		{"oversize length during a test", atRecv, func(f *fake) {
			f.handshake()
			f.accept()
			f.quiet()
			f.raw([]byte{0, 0x10, 0, 1})
			f.drain()
		}, ErrFrameTooLarge, "1048577 bytes declared, the limit is 1048576"},
		{"truncated frame then close during a test", atRecv, func(f *fake) {
			f.handshake()
			f.accept()
			f.quiet()
			f.raw([]byte{0, 0, 1, 0, '{', '"', 't'})
		}, ErrPeerClosed, "closed the connection in the middle of a frame"},
		{"truncated frame then silence during a test", atRecv, func(f *fake) {
			f.handshake()
			f.accept()
			f.quiet()
			f.raw([]byte{0, 0, 1, 0, '{', '"', 't'})
			f.drain()
		}, ErrPeerSilent, "no message from server"},
		{"trickles a frame a byte at a time during a test", atRecv, func(f *fake) {
			f.handshake()
			f.accept()
			f.quiet()
			b, _ := EncodeFrame(&Message{Type: TypeExchange, Body: []byte("slow")}, 0)
			for _, c := range b {
				select {
				case <-f.quit:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if f.raw([]byte{c}); !f.ok() {
					return
				}
			}
			f.drain()
		}, ErrPeerSilent, "no message from server"},
		{"silence during a test", atRecv, func(f *fake) {
			f.handshake()
			f.accept()
			f.quiet()
			f.drain()
		}, ErrPeerSilent, "no message from server"},
		{"closes during a test", atRecv, func(f *fake) {
			f.handshake()
			f.accept()
			f.quiet()
		}, ErrPeerClosed, "closed the connection"},
		{"resets during a test", atRecv, func(f *fake) {
			f.handshake()
			f.accept()
			f.quiet()
			f.expect(TypeExchange)
			_ = f.conn.(*net.TCPConn).SetLinger(0)
		}, ErrPeerClosed, "closed the connection"},
		{"a second hello during a test", atRecv, func(f *fake) {
			f.handshake()
			f.accept()
			f.send(serverHello(buildinfo.ProtocolVersion, buildinfo.Version))
			f.drain()
		}, ErrProtocol, `sent "hello" while this client waited for a message of echo`},
		{"accepted twice", atRecv, func(f *fake) {
			f.handshake()
			f.accept()
			f.send(&Message{Type: TypeAccepted})
			f.drain()
		}, ErrProtocol, `sent "accepted" while this client waited`},
		{"a run from the server", atRecv, func(f *fake) {
			f.handshake()
			f.accept()
			f.send(&Message{Type: TypeRun, Test: "x", Spec: testSpec})
			f.drain()
		}, ErrProtocol, `sent "run" while`},
		{"an auth from the server", atFinish, func(f *fake) {
			f.handshake()
			f.accept()
			f.send(&Message{Type: TypeAuth, MAC: "00"})
			f.drain()
		}, ErrProtocol, `sent "auth" while this client waited for the end of echo`},
		{"junk while the client waits for the end", atFinish, func(f *fake) {
			f.handshake()
			f.accept()
			f.send(&Message{Type: TypeExchange, Body: []byte("late")})
			f.quiet()
			f.raw([]byte("\x00\x00\x00\x02{}"))
			f.drain()
		}, ErrBadFrame, "no type"},
		{"stops reading during a test", atSend, func(f *fake) {
			f.handshake()
			f.accept()
			f.hold() // pinging, never reading
		}, ErrPeerSilent, "could not send to server"},

		// Between tests.
		{"done twice", atRerun, func(f *fake) {
			f.handshake()
			f.accept()
			f.echoOnce()
			f.send(&Message{Type: TypeDone})
			f.drain()
		}, ErrProtocol, `sent "done" while this client waited for the server to accept echo`},
		{"vanishes after the first test", atRerun, func(f *fake) {
			f.handshake()
			f.accept()
			f.echoOnce()
			f.quiet()
		}, ErrPeerClosed, "closed the connection"},
		{"resets after the first test", atRerun, func(f *fake) {
			f.handshake()
			f.accept()
			f.echoOnce()
			f.quiet()
			_ = f.conn.(*net.TCPConn).SetLinger(0)
		}, ErrPeerClosed, "closed the connection"},
		{"says bye after the first test", atRerun, func(f *fake) {
			f.handshake()
			f.accept()
			f.echoOnce()
			f.send(&Message{Type: TypeBye})
			f.drain()
		}, ErrPeerClosed, "closed the connection: it is shutting down"},
		{"goes silent after the first test", atRerun, func(f *fake) {
			f.handshake()
			f.accept()
			f.echoOnce()
			f.quiet()
			f.drain()
		}, ErrPeerSilent, "no message from server"},
		{"junk after the first test", atRerun, func(f *fake) {
			f.handshake()
			f.accept()
			f.echoOnce()
			f.quiet()
			f.raw([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			f.drain()
		}, ErrFrameTooLarge, "bytes declared"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			noLeaks(t)
			addr := hostileServer(t, tc.server)
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			err := hostileClient(t, ctx, addr, tc.at, tc.want)
			switch {
			case err == nil:
				t.Fatalf("%s succeeded against a server that %s", tc.at, tc.name)
			case ctx.Err() != nil:
				t.Fatalf("%s still waiting after %v (a hang): %v", tc.at, patience, err)
			case !errors.Is(err, tc.want):
				t.Errorf("%s: %v\nwant an error wrapping %q", tc.at, err, tc.want)
			}
			if !strings.Contains(err.Error(), "server "+addr) && !strings.Contains(err.Error(), addr+" is not an rdmabench server") {
				t.Errorf("%s: %q does not name the server %s", tc.at, err, addr)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("%s: %q does not say %q", tc.at, err, tc.says)
			}
		})
	}
}

// After a hostile server broke the connection, the client stays broken:
// every call returns at once with the first error, and Close does not block.
func TestBrokenClientStaysBroken(t *testing.T) {
	noLeaks(t)
	addr := hostileServer(t, func(f *fake) {
		f.handshake()
		f.accept()
		f.quiet()
		f.raw([]byte{0, 0, 0, 3, 'b', 'a', 'd'})
		f.drain()
	})
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	c, err := Dial(ctx, addr, hostileOpts())
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Run(ctx, "echo", testSpec)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Lost():
	case <-ctx.Done():
		t.Fatal("Lost never closed")
	}
	if err := s.LostErr(); !errors.Is(err, ErrBadFrame) {
		t.Errorf("lost: %v", err)
	}
	if _, err := s.Recv(ctx); !errors.Is(err, ErrBadFrame) {
		t.Errorf("recv: %v", err)
	}
	if err := s.Send(ctx, []byte("x")); !errors.Is(err, ErrBadFrame) {
		t.Errorf("send after the failure: %v", err)
	}
	if err := s.Finish(ctx); !errors.Is(err, ErrBadFrame) {
		t.Errorf("finish: %v", err)
	}
	if _, err := c.Run(ctx, "echo", testSpec); !errors.Is(err, ErrBadFrame) || !strings.Contains(err.Error(), "failed earlier") {
		t.Errorf("run after the failure: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}
