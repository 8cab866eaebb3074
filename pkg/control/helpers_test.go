package control

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/buildinfo"
)

// Short timings keep the package's tests to a few seconds. Nothing asserts
// how long anything took: waits have generous upper bounds only.
const (
	testTimeout   = time.Second
	testKeepalive = 100 * time.Millisecond
	// patience bounds every wait for something that must happen.
	patience = 10 * time.Second
)

func clientOpts() ClientOptions { return ClientOptions{Timeout: testTimeout, Keepalive: testKeepalive} }

func serverOpts() ServerOptions {
	return ServerOptions{Timeout: testTimeout, Keepalive: testKeepalive}
}

var testSpec = json.RawMessage(`{"test":"echo","sizes":[2]}`)

// echoHandler echoes exchange messages back. The message "end" ends the
// test successfully, "fail" with an error, "panic" with a panic, and "block"
// blocks until release is closed or the test is cancelled. When the test is
// cancelled, the cause is sent on gone.
type echoHandler struct {
	checkErr error
	release  chan struct{}
	started  chan string // receives "block" when blocking
	gone     chan error
}

func newEcho() *echoHandler {
	return &echoHandler{release: make(chan struct{}), started: make(chan string, 16), gone: make(chan error, 16)}
}

func (h *echoHandler) Accept(spec json.RawMessage) (Test, error) {
	if err := h.check(spec); err != nil {
		return nil, err
	}
	return acceptedEcho{h}, nil
}

func (h *echoHandler) check(spec json.RawMessage) error {
	var v struct {
		Test string `json:"test"`
	}
	if err := json.Unmarshal(spec, &v); err != nil {
		return err
	}
	switch v.Test {
	case "bad":
		return errors.New("unknown test \"bad\"")
	case "huge":
		return &LimitError{Err: errors.New("the test needs 64 GiB of registered memory, over this server's cap of 1 GiB")}
	case "checkpanic":
		panic("check exploded")
	}
	return h.checkErr
}

// acceptedEcho is a test the echoHandler accepted.
type acceptedEcho struct{ h *echoHandler }

func (e acceptedEcho) Run(ctx context.Context, t Transport) error {
	h := e.h
	for {
		msg, err := t.Recv(ctx)
		if err != nil {
			if ctx.Err() != nil {
				h.gone <- context.Cause(ctx)
			}
			return err
		}
		switch string(msg) {
		case "end":
			return nil
		case "fail":
			return errors.New("size 4096: IBV_WC_RETRY_EXC_ERR")
		case "panic":
			panic("handler exploded")
		case "block":
			h.started <- "block"
			select {
			case <-h.release:
			case <-ctx.Done():
				h.gone <- context.Cause(ctx)
				return context.Cause(ctx)
			}
		}
		if err := t.Send(ctx, msg); err != nil {
			return err
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the server's log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type testServer struct {
	addr string
	log  *syncBuffer
	stop func() error // stops the server and returns Serve's error
	done chan error   // Serve's result
}

// startServer serves h on a loopback port until the test ends.
func startServer(t *testing.T, h Handler, opt ServerOptions) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, ln, h, opt)
}

func serveOn(t *testing.T, ln net.Listener, h Handler, opt ServerOptions) *testServer {
	t.Helper()
	ts := &testServer{addr: ln.Addr().String(), log: &syncBuffer{}, done: make(chan error, 1)}
	opt.Log = ts.log
	ctx, cancel := context.WithCancel(context.Background())
	srv := NewServer(h, opt)
	go func() { ts.done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	var serr error
	ts.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case serr = <-ts.done:
			case <-time.After(patience):
				serr = errors.New("Serve did not return after its context ended")
			}
		})
		return serr
	}
	t.Cleanup(func() {
		if err := ts.stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", ts.log)
		}
	})
	return ts
}

// noLeaks fails t if, once its cleanups ran, goroutines are left over. Call
// it first so that its check runs last.
func noLeaks(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(patience)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Errorf("%d goroutines left over (%d before):\n%s", n-before, before, buf)
		}
	})
}

// goodClient runs an echo test through Dial, Run, Send, Recv and Finish,
// and fails t if anything goes wrong.
func goodClient(t *testing.T, addr string, opt ClientOptions) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	c, err := Dial(ctx, addr, opt)
	if err != nil {
		t.Fatalf("good client: dial: %v", err)
	}
	defer c.Close()
	echoTest(t, ctx, c, "echo")
}

// echoTest runs one echo test on c.
func echoTest(t *testing.T, ctx context.Context, c *Client, test string) {
	t.Helper()
	s, err := c.Run(ctx, test, testSpec)
	if err != nil {
		t.Fatalf("good client: run: %v", err)
	}
	for i := range 3 {
		msg := fmt.Appendf(nil, `{"phase":"p%d","body":{"n":%d}}`, i, i)
		if err := s.Send(ctx, msg); err != nil {
			t.Fatalf("good client: send: %v", err)
		}
		got, err := s.Recv(ctx)
		if err != nil {
			t.Fatalf("good client: recv: %v", err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("good client: echo of %s is %s", msg, got)
		}
	}
	if err := s.Send(ctx, []byte("end")); err != nil {
		t.Fatalf("good client: send end: %v", err)
	}
	if err := s.Finish(ctx); err != nil {
		t.Fatalf("good client: finish: %v", err)
	}
}

// rawConn is a hand-driven client or server, to misbehave with.
type rawConn struct {
	t    *testing.T
	conn net.Conn
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawConn{t: t, conn: conn}
}

func (r *rawConn) write(m *Message) {
	r.t.Helper()
	_ = r.conn.SetWriteDeadline(time.Now().Add(patience))
	if err := WriteFrame(r.conn, m, 0); err != nil {
		r.t.Fatalf("raw write %s: %v", m.Type, err)
	}
}

func (r *rawConn) writeBytes(b []byte) {
	r.t.Helper()
	_ = r.conn.SetWriteDeadline(time.Now().Add(patience))
	if _, err := r.conn.Write(b); err != nil {
		r.t.Fatalf("raw write: %v", err)
	}
}

// read returns the next frame that is not a ping.
func (r *rawConn) read() (*Message, error) {
	for {
		_ = r.conn.SetReadDeadline(time.Now().Add(patience))
		m, err := ReadFrame(r.conn, 0)
		if err != nil || m.Type != TypePing {
			return m, err
		}
	}
}

func (r *rawConn) expect(typ string) *Message {
	r.t.Helper()
	m, err := r.read()
	if err != nil {
		r.t.Fatalf("raw read, expecting %s: %v", typ, err)
	}
	if m.Type != typ {
		r.t.Fatalf("raw read: got %+v, expecting %s", m, typ)
	}
	return m
}

// expectError reads frames until an error frame with code, and returns its
// message.
func (r *rawConn) expectError(code string) string {
	r.t.Helper()
	for {
		m, err := r.read()
		if err != nil {
			r.t.Fatalf("raw read, expecting error %s: %v", code, err)
		}
		if m.Type == TypeError {
			if m.Code != code {
				r.t.Fatalf("error %s (%s), want code %s", m.Code, m.Msg, code)
			}
			return m.Msg
		}
	}
}

// handshake says hello as a good client would (with token, if the server
// asks for one).
func (r *rawConn) handshake(token string) {
	r.t.Helper()
	h := r.expect(TypeHello)
	r.write(&Message{Type: TypeHello, Protocol: buildinfo.ProtocolVersion, Version: buildinfo.Version})
	if h.TokenRequired {
		nonce, _ := hex.DecodeString(h.Nonce)
		r.write(&Message{Type: TypeAuth, MAC: mac(token, nonce)})
	}
	r.expect(TypeAccepted)
}

// startRun handshakes and starts an echo test.
func (r *rawConn) startRun() {
	r.t.Helper()
	r.handshake("")
	r.write(&Message{Type: TypeRun, Test: "echo", Spec: testSpec})
	r.expect(TypeAccepted)
}

// blockedEcho dials addr with opt and starts an echo test that blocks
// in h (until h.release is closed or the test is cancelled); the client
// is closed when the test ends, if not before.
func blockedEcho(t *testing.T, ctx context.Context, addr string, opt ClientOptions, h *echoHandler) (*Client, *Session) {
	t.Helper()
	c, err := Dial(ctx, addr, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := c.Run(ctx, "echo", testSpec)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(ctx, []byte("block")); err != nil {
		t.Fatal(err)
	}
	waitStarted(t, h)
	return c, s
}

// waitGone waits for the handler to report its test cancelled.
func waitGone(t *testing.T, h *echoHandler) error {
	t.Helper()
	select {
	case err := <-h.gone:
		return err
	case <-time.After(patience):
		t.Fatal("the handler's context was never cancelled")
		return nil
	}
}

func waitStarted(t *testing.T, h *echoHandler) {
	t.Helper()
	select {
	case <-h.started:
	case <-time.After(patience):
		t.Fatal("the handler never started blocking")
	}
}

// waitLog waits until the server log contains s.
func waitLog(t *testing.T, ts *testServer, s string) {
	t.Helper()
	waitLogN(t, ts, s, 1)
}

// waitLogN waits until the server log contains s n times.
func waitLogN(t *testing.T, ts *testServer, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for strings.Count(ts.log.String(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the server log never said %q:\n%s", s, ts.log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
