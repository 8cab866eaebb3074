package control

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/buildinfo"
)

func TestEndToEnd(t *testing.T) {
	noLeaks(t)
	ts := startServer(t, newEcho(), serverOpts())
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	c, err := Dial(ctx, ts.addr, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if info := c.Server(); info.Protocol != buildinfo.ProtocolVersion || info.Version != buildinfo.Version || info.Addr != ts.addr || info.TokenRequired {
		t.Errorf("server info %+v", info)
	}
	// A suite runs its tests one after the other on one connection.
	for i := range 3 {
		echoTest(t, ctx, c, fmt.Sprintf("echo-%d", i))
	}
	for i := range 3 {
		waitLog(t, ts, fmt.Sprintf(" echo-%d ok ", i))
	}
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if _, err := c.Run(ctx, "after-close", testSpec); !errors.Is(err, ErrClosed) {
		t.Errorf("run after close: %v", err)
	}
}

func TestHandlerErrors(t *testing.T) {
	noLeaks(t)
	ts := startServer(t, newEcho(), serverOpts())
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	c, err := Dial(ctx, ts.addr, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// The handler's error ends the test: Recv and Finish return it, prefixed
	// with the server's address.
	s, err := c.Run(ctx, "echo", testSpec)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(ctx, []byte("fail")); err != nil {
		t.Fatal(err)
	}
	_, rerr := s.Recv(ctx)
	ferr := s.Finish(ctx)
	var se *ServerError
	if !errors.As(ferr, &se) || se.Code != CodeRun {
		t.Fatalf("finish: %v, want a ServerError with code run", ferr)
	}
	want := "server " + ts.addr + ": size 4096: IBV_WC_RETRY_EXC_ERR"
	if ferr.Error() != want || rerr == nil || rerr.Error() != want {
		t.Errorf("finish: %q, recv: %v; want %q", ferr, rerr, want)
	}
	if err := s.Send(ctx, []byte("x")); err == nil {
		t.Error("send after the test ended succeeded")
	}
	waitLog(t, ts, " echo failed ")

	// A panic is recovered and reported; the server goes on.
	s, err = c.Run(ctx, "echo", testSpec)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(ctx, []byte("panic")); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx); err == nil || !strings.Contains(err.Error(), "panicked: handler exploded") {
		t.Errorf("finish after a panic: %v", err)
	}

	// Check's errors refuse the test with code spec or limit; the connection
	// stays usable.
	for _, tc := range []struct{ spec, code, msg string }{
		{`{"test":"bad"}`, CodeSpec, `unknown test "bad"`},
		{`{"test":"huge"}`, CodeLimit, "over this server's cap"},
		{`{"test":"checkpanic"}`, CodeSpec, "panicked: check exploded"},
		{`["not","an","object"]`, CodeSpec, "not a JSON object"},
	} {
		_, err := c.Run(ctx, "x", []byte(tc.spec))
		if !errors.As(err, &se) || se.Code != tc.code || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("spec %s: %v, want code %s and %q", tc.spec, err, tc.code, tc.msg)
		}
	}
	// A Recv after a successful end says the test ended.
	s, err = c.Run(ctx, "echo", testSpec)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(ctx, []byte("end")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(ctx); !errors.Is(err, ErrTestEnded) {
		t.Errorf("recv after the server's end returned: %v", err)
	}
	if err := s.Finish(ctx); err != nil {
		t.Errorf("finish: %v", err)
	}
	echoTest(t, ctx, c, "echo")
}

// recListener records every byte the server reads.
type recListener struct {
	net.Listener
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *recListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recConn{Conn: c, l: l}, nil
}

func (l *recListener) bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.buf.Bytes())
}

type recConn struct {
	net.Conn
	l *recListener
}

func (c *recConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.l.mu.Lock()
	c.l.buf.Write(b[:n])
	c.l.mu.Unlock()
	return n, err
}

func TestToken(t *testing.T) {
	noLeaks(t)
	const token = "s3cret-T0ken-never-on-the-wire"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recListener{Listener: ln}
	opt := serverOpts()
	opt.Token = token
	ts := serveOn(t, rec, newEcho(), opt)

	// The right token is accepted.
	copt := clientOpts()
	copt.Token = token
	goodClient(t, ts.addr, copt)

	// A wrong or missing token is refused.
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	for _, tok := range []string{"wrong", ""} {
		copt.Token = tok
		c, err := Dial(ctx, ts.addr, copt)
		if err == nil {
			c.Close()
			t.Fatalf("token %q accepted", tok)
		}
		var se *ServerError
		if !errors.As(err, &se) || se.Code != CodeAuth || !errors.Is(err, ErrAuth) ||
			err.Error() != "server "+ts.addr+": authentication failed: wrong or missing token" {
			t.Errorf("token %q: %v", tok, err)
		}
	}
	waitLog(t, ts, "refused auth: authentication failed")

	// The token never crossed the wire, in any form.
	sent := rec.bytes()
	for _, form := range []string{token, hex.EncodeToString([]byte(token)), "T0ken"} {
		if bytes.Contains(sent, []byte(form)) {
			t.Errorf("the client sent %q", form)
		}
	}
	if !bytes.Contains(sent, []byte(`"mac":"`)) {
		t.Errorf("no MAC in what the clients sent: the capture is broken")
	}

	// A client with a token talks to a server that needs none.
	ts2 := startServer(t, newEcho(), serverOpts())
	copt.Token = token
	goodClient(t, ts2.addr, copt)
}

// otherProtocol is a protocol version this build does not speak.
var otherProtocol = buildinfo.ProtocolVersion + 1

func TestVersionMismatchAtServer(t *testing.T) {
	noLeaks(t)
	ts := startServer(t, newEcho(), serverOpts())
	r := dialRaw(t, ts.addr)
	h := r.expect(TypeHello)
	if h.Protocol != buildinfo.ProtocolVersion || h.Version != buildinfo.Version || len(h.Nonce) != 2*NonceSize || h.TokenRequired {
		t.Errorf("server hello %+v", h)
	}
	r.write(&Message{Type: TypeHello, Protocol: otherProtocol, Version: "v1.3.0"})
	msg := r.expectError(CodeVersion)
	for _, want := range []string{fmt.Sprintf("protocol version %d (rdmabench v1.3.0)", otherProtocol),
		fmt.Sprintf("this server speaks %d (rdmabench %s)", buildinfo.ProtocolVersion, buildinfo.Version)} {
		if !strings.Contains(msg, want) {
			t.Errorf("version error %q does not say %q", msg, want)
		}
	}
	if _, err := r.read(); err == nil {
		t.Error("the connection stayed open after a version mismatch")
	}
	waitLog(t, ts, "refused version")
	goodClient(t, ts.addr, clientOpts())
}

// fakeServer accepts one connection and runs script on it.
func fakeServer(t *testing.T, script func(r *rawConn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		script(&rawConn{t: t, conn: conn})
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

func serverHello(protocol int, version string) *Message {
	nonce := make([]byte, NonceSize)
	_, _ = rand.Read(nonce)
	return &Message{Type: TypeHello, Protocol: protocol, Version: version, Hostname: "fake", Nonce: hex.EncodeToString(nonce)}
}

func TestVersionMismatchAtClient(t *testing.T) {
	noLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()

	// A server of another protocol that accepts anyway: the client refuses,
	// and tells it.
	got := make(chan *Message, 1)
	addr := fakeServer(t, func(r *rawConn) {
		r.write(serverHello(otherProtocol, "v1.3.0"))
		r.expect(TypeHello)
		r.write(&Message{Type: TypeAccepted})
		m, _ := r.read()
		got <- m
	})
	_, err := Dial(ctx, addr, clientOpts())
	var ve *VersionError
	if !errors.As(err, &ve) || !errors.Is(err, ErrVersion) {
		t.Fatalf("dial: %v, want a VersionError", err)
	}
	for _, want := range []string{fmt.Sprintf("server %s speaks protocol version %d (rdmabench v1.3.0)", addr, otherProtocol),
		fmt.Sprintf("this client speaks %d (rdmabench %s)", buildinfo.ProtocolVersion, buildinfo.Version)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if m := <-got; m == nil || m.Type != TypeError || m.Code != CodeVersion || !strings.Contains(m.Msg, fmt.Sprintf("protocol version %d", otherProtocol)) {
		t.Errorf("the server was told %+v", m)
	}

	// A server that refuses: its message is the error.
	addr = fakeServer(t, func(r *rawConn) {
		r.write(serverHello(otherProtocol, "v1.3.0"))
		r.expect(TypeHello)
		r.write(&Message{Type: TypeError, Code: CodeVersion, Msg: fmt.Sprintf("version mismatch: the client speaks protocol version %d (rdmabench dev) but this server speaks %d (rdmabench v1.3.0)",
			buildinfo.ProtocolVersion, otherProtocol)})
	})
	_, err = Dial(ctx, addr, clientOpts())
	if !errors.Is(err, ErrVersion) || !strings.HasPrefix(err.Error(), "server "+addr+": version mismatch:") {
		t.Errorf("dial: %v", err)
	}
}

func TestBusy(t *testing.T) {
	noLeaks(t)
	h := newEcho()
	ts := startServer(t, h, serverOpts())
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	a, err := Dial(ctx, ts.addr, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sa, err := a.Run(ctx, "write-bw", testSpec)
	if err != nil {
		t.Fatal(err)
	}
	if err := sa.Send(ctx, []byte("block")); err != nil {
		t.Fatal(err)
	}
	waitStarted(t, h)

	// Connecting and saying hello is fine while a test runs; running is not.
	b, err := Dial(ctx, ts.addr, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.Run(ctx, "read-lat", testSpec)
	var se *ServerError
	if !errors.As(err, &se) || se.Code != CodeBusy || !errors.Is(err, ErrBusy) ||
		!strings.HasPrefix(err.Error(), "server "+ts.addr+": busy: running write-bw for 127.0.0.1 since ") {
		t.Fatalf("second client: %v, want busy", err)
	}
	waitLog(t, ts, "read-lat refused busy")

	// The first test ends; the second client's connection is still usable.
	close(h.release)
	got, err := sa.Recv(ctx)
	if err != nil || string(got) != "block" {
		t.Fatalf("recv: %q, %v", got, err)
	}
	if err := sa.Send(ctx, []byte("end")); err != nil {
		t.Fatal(err)
	}
	if err := sa.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	echoTest(t, ctx, b, "read-lat")
	// The first client runs again: the server was freed before it said done.
	echoTest(t, ctx, a, "write-bw")
}

func TestOnce(t *testing.T) {
	noLeaks(t)
	opt := serverOpts()
	opt.Once = true
	ts := startServer(t, newEcho(), opt)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	idle, err := Dial(ctx, ts.addr, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	goodClient(t, ts.addr, clientOpts())
	select {
	case err := <-ts.done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
		ts.done <- err // for the cleanup's stop
	case <-time.After(patience):
		t.Fatal("Serve did not return after the test in Once mode")
	}
	// The idle client was told the server is gone.
	if _, err := idle.Run(ctx, "echo", testSpec); !errors.Is(err, ErrPeerClosed) {
		t.Errorf("run on a server that ended: %v", err)
	}
	if _, err := net.Dial("tcp", ts.addr); err == nil {
		t.Error("the listener is still open")
	}
}

// A test refused for its spec counts as the one test in Once mode, so that
// a scripted server does not wait forever after a client's mistake.
func TestOnceSpecError(t *testing.T) {
	noLeaks(t)
	opt := serverOpts()
	opt.Once = true
	ts := startServer(t, newEcho(), opt)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	c, err := Dial(ctx, ts.addr, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Run(ctx, "bad", []byte(`{"test":"bad"}`)); err == nil {
		t.Fatal("bad spec accepted")
	}
	select {
	case err := <-ts.done:
		ts.done <- err
	case <-time.After(patience):
		t.Fatal("Serve did not return")
	}
}

// A server that goes silent makes the client fail with ErrPeerSilent.
func TestSilentServer(t *testing.T) {
	noLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	hold := make(chan struct{})
	addr := fakeServer(t, func(r *rawConn) {
		r.write(serverHello(buildinfo.ProtocolVersion, buildinfo.Version))
		r.expect(TypeHello)
		r.write(&Message{Type: TypeAccepted})
		r.expect(TypeRun)
		r.write(&Message{Type: TypeAccepted})
		<-hold // and never a ping
	})
	defer close(hold)
	opt := ClientOptions{Timeout: 300 * time.Millisecond, Keepalive: 50 * time.Millisecond}
	c, err := Dial(ctx, addr, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Run(ctx, "echo", testSpec)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Recv(ctx)
	if !errors.Is(err, ErrPeerSilent) || ctx.Err() != nil {
		t.Fatalf("recv from a silent server: %v, want ErrPeerSilent", err)
	}
	if want := "no message from server " + addr + " for 300ms: it is gone or the network is down"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("%q, want %q", err, want)
	}
	if err := s.Finish(ctx); !errors.Is(err, ErrPeerSilent) {
		t.Errorf("finish: %v", err)
	}
	if _, err := c.Run(ctx, "echo", testSpec); !errors.Is(err, ErrPeerSilent) {
		t.Errorf("run after failure: %v", err)
	}
}

// A server that vanishes mid-test gives a clear error.
func TestServerCloses(t *testing.T) {
	noLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	addr := fakeServer(t, func(r *rawConn) {
		r.write(serverHello(buildinfo.ProtocolVersion, buildinfo.Version))
		r.expect(TypeHello)
		r.write(&Message{Type: TypeAccepted})
		r.expect(TypeRun)
		r.write(&Message{Type: TypeAccepted})
		r.writeBytes([]byte{0, 0, 0, 100, '{'}) // half a frame, then close
	})
	c, err := Dial(ctx, addr, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Run(ctx, "echo", testSpec)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Finish(ctx)
	if !errors.Is(err, ErrPeerClosed) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("finish: %v, want ErrPeerClosed", err)
	}
	if want := "server " + addr + " closed the connection in the middle of a frame (while waiting for the server to finish echo)"; err.Error() != want {
		t.Errorf("%q, want %q", err, want)
	}
}

// A client whose context ends while a test runs closes the connection, and
// the server cancels the test.
func TestClientCancels(t *testing.T) {
	noLeaks(t)
	h := newEcho()
	ts := startServer(t, h, serverOpts())
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	_, s := blockedEcho(t, ctx, ts.addr, clientOpts(), h)
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if err := s.Finish(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("finish: %v", err)
	}
	if err := waitGone(t, h); !errors.Is(err, ErrPeerClosed) {
		t.Errorf("the handler's context was cancelled for %v, want ErrPeerClosed", err)
	}
	// The server is free once the handler has returned (and it logged so).
	waitLogN(t, ts, " echo failed ", 1)
	goodClient(t, ts.addr, clientOpts())

	// Close during a test says bye: the server cancels the test too.
	c2, _ := blockedEcho(t, ctx, ts.addr, clientOpts(), h)
	c2.Close()
	if err := waitGone(t, h); !errors.Is(err, ErrPeerClosed) {
		t.Errorf("the handler's context was cancelled for %v", err)
	}
	waitLogN(t, ts, " echo failed ", 2)
	goodClient(t, ts.addr, clientOpts())
}

func TestDialErrors(t *testing.T) {
	noLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := Dial(ctx, addr, clientOpts()); err == nil || !strings.Contains(err.Error(), "is `rdmabench serve` running there?") {
		t.Errorf("dial a closed port: %v", err)
	}
	// Something that is not an rdmabench server.
	addr = fakeServer(t, func(r *rawConn) { r.writeBytes([]byte("SSH-2.0-OpenSSH_9.6\r\n")) })
	want := addr + ` is not an rdmabench server: it answered "SSH-2.0-OpenSSH_9.6" (an SSH server?)`
	if _, err := Dial(ctx, addr, clientOpts()); !errors.Is(err, ErrNotServer) || !errors.Is(err, ErrFrameTooLarge) || err.Error() != want {
		t.Errorf("dial an SSH server: %v\nwant %s", err, want)
	}
}

// TestMaxTests: a server that takes two tests at once runs both, refuses a
// third "busy" naming how many run, and takes it once one ends.
func TestMaxTests(t *testing.T) {
	noLeaks(t)
	h := newEcho()
	opt := serverOpts()
	opt.MaxTests = 2
	ts := startServer(t, h, opt)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	var blocked []*Session
	for _, test := range []string{"write-bw", "send-bw"} {
		c, err := Dial(ctx, ts.addr, clientOpts())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := c.Run(ctx, test, testSpec)
		if err != nil {
			t.Fatalf("%s: %v", test, err)
		}
		if err := s.Send(ctx, []byte("block")); err != nil {
			t.Fatal(err)
		}
		waitStarted(t, h)
		blocked = append(blocked, s)
	}
	third, err := Dial(ctx, ts.addr, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	_, err = third.Run(ctx, "read-lat", testSpec)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "busy: running write-bw for 127.0.0.1 since ") ||
		!strings.HasSuffix(err.Error(), "(and 1 more, at most 2 at once)") {
		t.Fatalf("third client: %v, want busy with two running", err)
	}
	close(h.release)
	for _, s := range blocked {
		if got, err := s.Recv(ctx); err != nil || string(got) != "block" {
			t.Fatalf("recv: %q, %v", got, err)
		}
		if err := s.Send(ctx, []byte("end")); err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(ctx); err != nil {
			t.Fatal(err)
		}
	}
	echoTest(t, ctx, third, "read-lat")
}
