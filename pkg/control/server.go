package control

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/internal/buildinfo"
)

// Handler decides which tests the server runs. It is called for one test
// at a time unless ServerOptions.MaxTests lets several run at once.
type Handler interface {
	// Accept checks spec before the test is accepted (bad spec, over the
	// memory cap, ...) and returns the test to run. Its error is sent to the
	// client with code "spec", or "limit" when it is (or wraps) a
	// LimitError.
	Accept(spec json.RawMessage) (Test, error)
}

// Test is a test the Handler accepted.
type Test interface {
	// Run runs the test's server end, exchanging messages with the client
	// through t, and returns when the test ends. ctx is cancelled when the
	// client disconnects, goes silent or misbehaves, and when the server
	// shuts down (context.Cause tells which): Run must then return soon,
	// because the server waits for it before accepting the next test. Its
	// error reaches the client in the done frame.
	Run(ctx context.Context, t Transport) error
}

// Transport carries a test's exchange messages; workloads.NewLink(t) is the
// server's Link. After the client is gone, both methods return the reason.
type Transport interface {
	Send(ctx context.Context, msg []byte) error
	Recv(ctx context.Context) ([]byte, error)
}

// ServerOptions configure a Server.
type ServerOptions struct {
	// Token, when set, is required of clients (as an HMAC of a nonce).
	Token string
	// Timeout bounds every read and write, the handshake, and how long a
	// client may stay silent (default 10s).
	Timeout time.Duration
	// Keepalive is the interval between pings (default 1s; at most half of
	// Timeout, and of the other end's timeout as its hello says).
	Keepalive time.Duration
	// MaxFrame is the largest frame accepted (default 1 MiB).
	MaxFrame int
	// MaxConns bounds the connections served at once (default 64); others
	// get a "limit" error and are closed.
	MaxConns int
	// Log, when set, gets one line per test (time, client address, test,
	// outcome, duration), per refused test and per refused or dropped
	// connection.
	Log io.Writer
	// Once makes Serve return after the first test: one that was accepted
	// and ended (successfully or not), or one refused for its spec or a
	// limit. A "busy" refusal does not count.
	Once bool
	// MaxTests bounds the tests run at once (default 1: a test measured
	// beside another measures the sharing as much as the path); a run
	// beyond it is refused "busy". A mesh rank's server takes several, as
	// a load pattern's flows meet at one receiver.
	MaxTests int
	// Registry, when set, keeps the registrations of the agents that
	// register on this server's connections and answers each with every
	// live one; without it a register frame is a protocol error.
	Registry *Registry
	// Features are named in the server's hello: what its Handler does
	// beyond the protocol's version (workloads.KeptFeature), so that a
	// client asks only a server that does it.
	Features []string
}

// Server is a persistent rdmabench server: it runs the tests clients ask
// for, up to ServerOptions.MaxTests at once (default one at a time).
type Server struct {
	h        Handler
	opt      ServerOptions
	hostname string

	mu      sync.Mutex
	running []*running // the tests in progress, oldest first

	logMu sync.Mutex
}

// running describes a test in progress, for the busy message.
type running struct {
	test, client string
	since        time.Time
}

// NewServer returns a Server that runs tests with h.
func NewServer(h Handler, opt ServerOptions) *Server {
	opt.Timeout, opt.Keepalive = timings(opt.Timeout, opt.Keepalive)
	opt.MaxFrame = maxOrDefault(opt.MaxFrame)
	if opt.MaxConns <= 0 {
		opt.MaxConns = 64
	}
	opt.MaxTests = max(opt.MaxTests, 1)
	host, _ := os.Hostname()
	return &Server{h: h, opt: opt, hostname: host}
}

// errShutdown is the cause of a test cancelled because the server stops.
var errShutdown = errors.New("the server is shutting down")

// errOnce is the cause of Serve's end in Once mode.
var errOnce = errors.New("once: the test is done")

// Serve accepts connections on ln until ctx ends (or, with Once, until the
// first test is done), then closes ln, cancels any test in progress, waits
// for every connection's goroutine and returns nil. It returns an error
// only when accepting fails for good.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	var onceDo sync.Once
	testDone := func() {
		if s.opt.Once {
			onceDo.Do(func() { cancel(errOnce) })
		}
	}
	conns := make(chan struct{}, s.opt.MaxConns)
	lingering := make(chan struct{}, s.opt.MaxConns)
	var wg sync.WaitGroup
	defer wg.Wait()
	var backoff time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if te, ok := err.(interface{ Temporary() bool }); ok && te.Temporary() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.logf("accept: %v; retrying in %v", err, backoff)
				select {
				case <-time.After(backoff):
				case <-ctx.Done():
				}
				continue
			}
			cancel(err)
			return fmt.Errorf("accept: %w", err)
		}
		backoff = 0
		select {
		case conns <- struct{}{}:
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-conns }()
				s.handle(ctx, conn, testDone)
			}()
		default:
			msg := fmt.Sprintf("too many connections (%d); try again later", s.opt.MaxConns)
			s.logf("%s refused %s: %s", conn.RemoteAddr(), CodeLimit, msg)
			_ = conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			_ = WriteFrame(conn, &Message{Type: TypeError, Code: CodeLimit, Msg: msg}, s.opt.MaxFrame)
			// The client's hello may be unread: a close would reset the
			// connection, and the client could lose the error frame. So
			// the refusal lingers, as others do, but on a goroutine of its
			// own (the accept loop goes on), as many at once as
			// connections are served, beyond which it is closed at once.
			select {
			case lingering <- struct{}{}:
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-lingering }()
					linger(conn, 100*time.Millisecond)
				}()
			default:
				_ = conn.Close()
			}
		}
	}
}

func (s *Server) lingerTime() time.Duration { return min(s.opt.Timeout, time.Second) }

// refuse sends an error frame on a connection whose reader is not running
// and closes it.
func (s *Server) refuse(conn net.Conn, code, msg string) {
	_ = conn.SetWriteDeadline(time.Now().Add(s.lingerTime()))
	_ = WriteFrame(conn, &Message{Type: TypeError, Code: code, Msg: msg}, s.opt.MaxFrame)
	linger(conn, s.lingerTime())
}

func (s *Server) logf(format string, args ...any) {
	if s.opt.Log == nil {
		return
	}
	line := time.Now().Format(time.RFC3339) + " " + fmt.Sprintf(format, args...) + "\n"
	s.logMu.Lock()
	defer s.logMu.Unlock()
	_, _ = io.WriteString(s.opt.Log, line)
}

// handshake does the server's side of hello and auth. On failure it returns
// the code to send with the error (empty when the client cannot be told).
func (s *Server) handshake(ctx context.Context, p *peer) (string, error) {
	_ = p.conn.SetDeadline(time.Now().Add(s.opt.Timeout))
	stop := context.AfterFunc(ctx, func() { _ = p.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	nonce := make([]byte, NonceSize)
	_, _ = rand.Read(nonce)
	hello := &Message{Type: TypeHello, Protocol: buildinfo.ProtocolVersion, Version: buildinfo.Version,
		Hostname: s.hostname, Nonce: hex.EncodeToString(nonce), TokenRequired: s.opt.Token != "", Features: s.opt.Features,
		TimeoutMS: s.opt.Timeout.Milliseconds()}
	if err := WriteFrame(p.conn, hello, s.opt.MaxFrame); err != nil {
		return "", while(p.writeErr(err), "sending hello")
	}
	read := func(what string) (*Message, string, error) {
		m, err := p.readDirect()
		if err != nil {
			var fe *frameError
			if errors.As(err, &fe) {
				return nil, CodeProtocol, err
			}
			if ctx.Err() != nil {
				err = context.Cause(ctx)
			}
			return nil, "", while(err, "waiting for "+what)
		}
		switch m.Type {
		case what:
			return m, "", nil
		case TypeError:
			return nil, "", fmt.Errorf("the client gave up: %s", m.Msg)
		}
		return nil, CodeProtocol, fmt.Errorf("%w: expected %s, got %s", ErrProtocol, what, m.Type)
	}
	h, code, err := read(TypeHello)
	if err != nil {
		return code, err
	}
	p.pingWithin(h.TimeoutMS)
	if h.Protocol != buildinfo.ProtocolVersion {
		return CodeVersion, &VersionError{Peer: "the client", PeerProtocol: h.Protocol, PeerVersion: h.Version,
			Self: "server", Protocol: buildinfo.ProtocolVersion, Version: buildinfo.Version}
	}
	if s.opt.Token != "" {
		a, code, err := read(TypeAuth)
		if err != nil {
			return code, err
		}
		if !checkMAC(s.opt.Token, nonce, a.MAC) {
			return CodeAuth, errors.New("authentication failed: wrong or missing token")
		}
	}
	if err := WriteFrame(p.conn, &Message{Type: TypeAccepted}, s.opt.MaxFrame); err != nil {
		return "", while(p.writeErr(err), "sending accepted")
	}
	_ = p.conn.SetDeadline(time.Time{})
	return "", nil
}

// session is a test in progress on a connection.
type session struct {
	test   string
	slot   *running // its place among the tests running
	start  time.Time
	ctx    context.Context
	cancel context.CancelCauseFunc
	in     chan []byte
	done   chan struct{}
	err    error // the handler's, set before done is closed
}

// handle serves one connection until it ends or ctx does.
func (s *Server) handle(ctx context.Context, conn net.Conn, testDone func()) {
	addr := conn.RemoteAddr().String()
	p := newPeer(conn, "client "+addr, "it said bye", s.opt.Timeout, s.opt.Keepalive, s.opt.MaxFrame)
	if code, err := s.handshake(ctx, p); err != nil {
		if ctx.Err() == nil {
			s.logf("%s refused %s: %v", addr, orDash(code), err)
		}
		if code != "" {
			s.refuse(conn, code, err.Error())
		} else {
			_ = conn.Close()
		}
		return
	}
	p.start()
	c := &serverConn{s: s, p: p, addr: addr, testDone: testDone}
	c.loop(ctx)
	p.shutdown()
	linger(conn, s.lingerTime())
}

func orDash(code string) string {
	if code == "" {
		return "-"
	}
	return code
}

// serverConn is the state of one connection after the handshake.
type serverConn struct {
	s        *Server
	p        *peer
	addr     string
	testDone func()
	sess     *session // the test in progress on this connection
	ran      bool     // a test ran on this connection
}

func (c *serverConn) send(m *Message) { _ = c.p.write(context.Background(), m) }

// protocolError tells the client it broke the protocol and cancels the test
// in progress; the connection is then closed.
func (c *serverConn) protocolError(msg string) {
	c.s.logf("%s refused %s: %s", c.addr, CodeProtocol, msg)
	c.send(&Message{Type: TypeError, Code: CodeProtocol, Msg: msg})
	c.endSession(fmt.Errorf("%w: the client sent %s", ErrProtocol, msg))
}

func (c *serverConn) loop(ctx context.Context) {
	for {
		var sessDone chan struct{}
		if c.sess != nil {
			sessDone = c.sess.done
		}
		select {
		case <-ctx.Done():
			c.endSession(errShutdown)
			c.send(&Message{Type: TypeBye})
			return
		case <-sessDone:
			c.finishSession(nil)
		case <-c.p.dead:
			err := c.p.err
			var fe *frameError
			switch {
			case errors.As(err, &fe):
				c.protocolError(fe.err.Error())
			case c.sess != nil:
				c.endSession(err)
			case errors.Is(err, ErrPeerSilent):
				c.s.logf("%s dropped: %v", c.addr, err)
			}
			return
		case m := <-c.p.frames:
			if !c.handleFrame(ctx, m) {
				return
			}
		}
	}
}

// handleFrame acts on a frame from the client; false closes the connection.
func (c *serverConn) handleFrame(ctx context.Context, m *Message) bool {
	switch m.Type {
	case TypeRun:
		if c.sess != nil {
			c.protocolError(fmt.Sprintf("run %s while %s is running", m.Test, c.sess.test))
			return false
		}
		c.run(ctx, m)
	case TypeExchange:
		if c.sess == nil {
			if c.ran {
				return true // late, for a test that has ended
			}
			c.protocolError("exchange before run")
			return false
		}
		select {
		case c.sess.in <- m.Body:
		case <-c.sess.done: // dropped: the test has ended
		case <-ctx.Done():
		}
	case TypeRegister:
		if c.s.opt.Registry == nil {
			c.protocolError("unexpected register (this server keeps no registry)")
			return false
		}
		c.register(m)
	case TypeError:
		err := fmt.Errorf("client %s failed: %s", c.addr, m.Msg)
		if c.sess == nil {
			c.s.logf("%s closed: %v", c.addr, err)
		}
		c.endSession(err)
		return false
	default:
		c.protocolError(fmt.Sprintf("unexpected %s", m.Type))
		return false
	}
	return true
}

// run handles a run request while no test runs on this connection.
func (c *serverConn) run(ctx context.Context, m *Message) {
	s := c.s
	test := m.Test
	if test == "" {
		test = "test"
	}
	refuse := func(code, msg string) {
		s.logf("%s %s refused %s: %s", c.addr, test, code, msg)
		c.send(&Message{Type: TypeError, Code: code, Msg: msg})
	}
	if t := bytes.TrimLeft(m.Spec, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		refuse(CodeSpec, "the spec is not a JSON object")
		c.testDone()
		return
	}
	host, _, err := net.SplitHostPort(c.addr)
	if err != nil {
		host = c.addr
	}
	s.mu.Lock()
	if len(s.running) >= s.opt.MaxTests {
		cur := s.running[0]
		msg := fmt.Sprintf("busy: running %s for %s since %s", cur.test, cur.client, cur.since.Format("15:04:05"))
		if n := len(s.running); n > 1 {
			msg += fmt.Sprintf(" (and %d more, at most %d at once)", n-1, s.opt.MaxTests)
		}
		s.mu.Unlock()
		refuse(CodeBusy, msg)
		return
	}
	slot := &running{test: test, client: host, since: time.Now()}
	s.running = append(s.running, slot)
	s.mu.Unlock()
	accepted, err := s.accept(m.Spec)
	if err != nil {
		s.release(slot)
		code := CodeSpec
		var le LimitError
		var lp *LimitError
		if errors.As(err, &le) || errors.As(err, &lp) {
			code = CodeLimit
		}
		refuse(code, err.Error())
		c.testDone()
		return
	}
	if err := c.p.write(ctx, &Message{Type: TypeAccepted}); err != nil {
		s.release(slot) // the connection failed: loop sees it
		return
	}
	sctx, cancel := context.WithCancelCause(ctx)
	se := &session{test: test, slot: slot, start: time.Now(), ctx: sctx, cancel: cancel,
		in: make(chan []byte, 16), done: make(chan struct{})}
	c.sess, c.ran = se, true
	t := &serverTransport{p: c.p, in: se.in, ctx: sctx}
	go func() {
		defer close(se.done)
		defer func() {
			if r := recover(); r != nil {
				se.err = fmt.Errorf("the server's handler panicked: %v", r)
			}
		}()
		se.err = accepted.Run(sctx, t)
	}()
}

// accept calls the handler's Accept, turning a panic into an error.
func (s *Server) accept(spec json.RawMessage) (t Test, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the server's spec check panicked: %v", r)
		}
	}()
	t, err = s.h.Accept(spec)
	if err == nil && t == nil {
		err = errors.New("the server accepted no test")
	}
	return t, err
}

// release frees a test's place among those running.
func (s *Server) release(slot *running) {
	s.mu.Lock()
	s.running = slices.DeleteFunc(s.running, func(r *running) bool { return r == slot })
	s.mu.Unlock()
}

// endSession cancels the test in progress, if any, for cause and waits for
// the handler to return.
func (c *serverConn) endSession(cause error) {
	if c.sess == nil {
		return
	}
	c.sess.cancel(cause)
	<-c.sess.done
	c.finishSession(cause)
}

// finishSession ends the session whose handler returned: it frees the server
// for the next test, tells the client (unless it is gone) and logs.
func (c *serverConn) finishSession(cause error) {
	se := c.sess
	c.sess = nil
	se.cancel(nil)
	d := time.Since(se.start).Round(time.Millisecond)
	c.s.release(se.slot) // before done: the client may send its next run at once
	err := se.err
	if err != nil && errors.Is(err, context.Canceled) && cause != nil {
		err = cause // "context canceled" says less than why
	}
	clientGone := cause != nil && cause != errShutdown
	if !clientGone {
		done := &Message{Type: TypeDone}
		if err != nil {
			done.Err = err.Error()
		}
		c.send(done)
	}
	switch {
	case clientGone:
		c.s.logf("%s %s failed %v: %v", c.addr, se.test, d, cause)
	case err != nil:
		c.s.logf("%s %s failed %v: %v", c.addr, se.test, d, err)
	default:
		c.s.logf("%s %s ok %v", c.addr, se.test, d)
	}
	c.testDone()
}

// serverTransport is the handler's side of a session.
type serverTransport struct {
	p   *peer
	in  <-chan []byte
	ctx context.Context // the session's: cancelled when the client is gone
}

func (t *serverTransport) Send(ctx context.Context, msg []byte) error {
	if t.ctx.Err() != nil {
		return context.Cause(t.ctx)
	}
	return t.p.write(ctx, &Message{Type: TypeExchange, Body: msg})
}

func (t *serverTransport) Recv(ctx context.Context) ([]byte, error) {
	select {
	case b := <-t.in:
		if b == nil {
			b = []byte{}
		}
		return b, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-t.ctx.Done():
		return nil, context.Cause(t.ctx)
	}
}
