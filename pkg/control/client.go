package control

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/internal/buildinfo"
)

// ClientOptions configure Dial.
type ClientOptions struct {
	// Token is the shared secret, when the server requires one. It never
	// crosses the wire: the client sends an HMAC of the server's nonce.
	Token string
	// Timeout bounds every read and write, and how long the server may stay
	// silent (default 10s).
	Timeout time.Duration
	// Keepalive is the interval between pings (default 1s; at most half of
	// Timeout, and of the other end's timeout as its hello says).
	Keepalive time.Duration
	// MaxFrame is the largest frame accepted and sent (default 1 MiB).
	MaxFrame int
}

// ServerInfo is what the server told about itself in its hello.
type ServerInfo struct {
	Addr          string // as dialled
	Hostname      string
	Version       string // rdmabench version
	Protocol      int
	TokenRequired bool
	// Features are what the server's hello said it does beyond the
	// protocol's version (ServerOptions.Features).
	Features []string
}

// Has tells whether the server's hello named feature.
func (i ServerInfo) Has(feature string) bool { return slices.Contains(i.Features, feature) }

// Client is a control connection to an rdmabench server. Tests run on it one
// after the other: Run, then the Session's Send/Recv, then Finish.
type Client struct {
	addr string
	opt  ClientOptions
	p    *peer
	info ServerInfo

	mu     sync.Mutex
	sess   *Session
	broken error // why the connection cannot be used any more
	closed bool
}

// Dial connects to the server at addr (host:port) and does the handshake:
// versions, then the token's proof when the server asks for one. Errors the
// server sends are *ServerError.
func Dial(ctx context.Context, addr string, opt ClientOptions) (*Client, error) {
	opt.Timeout, opt.Keepalive = timings(opt.Timeout, opt.Keepalive)
	opt.MaxFrame = maxOrDefault(opt.MaxFrame)
	d := net.Dialer{Timeout: opt.Timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connect to server %s: %w (is `rdmabench serve` running there?)", addr, err)
	}
	return newClient(ctx, conn, addr, opt)
}

// newClient does the handshake on conn, connected to the server at addr,
// and starts the client; conn is closed if that fails.
func newClient(ctx context.Context, conn net.Conn, addr string, opt ClientOptions) (*Client, error) {
	opt.Timeout, opt.Keepalive = timings(opt.Timeout, opt.Keepalive)
	opt.MaxFrame = maxOrDefault(opt.MaxFrame)
	c := &Client{addr: addr, opt: opt, info: ServerInfo{Addr: addr},
		p: newPeer(conn, "server "+addr, "it is shutting down", opt.Timeout, opt.Keepalive, opt.MaxFrame)}
	if err := c.handshake(ctx); err != nil {
		_ = conn.Close()
		return nil, err
	}
	c.p.start()
	return c, nil
}

func (c *Client) handshake(ctx context.Context) error {
	conn := c.p.conn
	dl := time.Now().Add(c.opt.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	_ = conn.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	err := c.handshakeFrames()
	if !stop() || ctx.Err() != nil {
		return fmt.Errorf("connect to server %s: %w", c.addr, context.Cause(ctx))
	}
	if err != nil {
		return err
	}
	_ = conn.SetDeadline(time.Time{})
	return nil
}

func (c *Client) handshakeFrames() error {
	notRDMABench := func(err error) error {
		return fmt.Errorf("%w (is %s an rdmabench server?)", err, c.addr)
	}
	// The client's hello goes first, before the server's is read: a
	// server reads it only after sending its own, so the order changes
	// nothing for one; but a server of another protocol that waits for
	// its client to speak first (HTTP) answers it at once, and is named
	// as what it is instead of being waited for until the timeout.
	werr := c.writeHello()
	h, err := c.readFirst()
	if err != nil {
		return err
	}
	switch h.Type {
	case TypeHello:
	case TypeError:
		return c.serverError(h)
	default:
		return notRDMABench(fmt.Errorf("%w: server %s sent %q first, not hello", ErrProtocol, c.addr, h.Type))
	}
	nonce, err := hex.DecodeString(h.Nonce)
	if err != nil || len(nonce) != NonceSize {
		return notRDMABench(fmt.Errorf("%w: server %s sent a hello without a valid nonce", ErrProtocol, c.addr))
	}
	c.info.Hostname, c.info.Version, c.info.Protocol, c.info.TokenRequired = h.Hostname, h.Version, h.Protocol, h.TokenRequired
	c.info.Features = h.Features
	c.p.pingWithin(h.TimeoutMS)
	w := func(m *Message) error { return WriteFrame(c.p.conn, m, c.opt.MaxFrame) }
	if werr != nil {
		return while(c.p.writeErr(werr), "sending hello")
	}
	if h.TokenRequired {
		a := &Message{Type: TypeAuth}
		if c.opt.Token != "" {
			a.MAC = mac(c.opt.Token, nonce)
		}
		if err := w(a); err != nil {
			return while(c.p.writeErr(err), "sending auth")
		}
	}
	v, err := c.p.readDirect()
	if err != nil {
		return while(err, "waiting for the server to accept the connection")
	}
	switch v.Type {
	case TypeAccepted:
	case TypeError:
		return c.serverError(v)
	default:
		return fmt.Errorf("%w: server %s sent %q after hello", ErrProtocol, c.addr, v.Type)
	}
	if h.Protocol != buildinfo.ProtocolVersion {
		ve := &VersionError{Peer: "server " + c.addr, PeerProtocol: h.Protocol, PeerVersion: h.Version,
			Self: "client", Protocol: buildinfo.ProtocolVersion, Version: buildinfo.Version}
		_ = w(&Message{Type: TypeError, Code: CodeVersion, Msg: ve.Error()})
		return ve
	}
	return nil
}

// Server tells what the server said about itself.
func (c *Client) Server() ServerInfo { return c.info }

func (c *Client) serverError(m *Message) *ServerError {
	msg := m.Msg
	if msg == "" {
		msg = m.Code + " error"
	}
	return &ServerError{Addr: c.addr, Code: m.Code, Msg: msg}
}

// breakWith makes the connection unusable for err: it is closed, so the
// server cancels a test in progress.
func (c *Client) breakWith(err error) {
	c.mu.Lock()
	if c.broken == nil {
		c.broken = err
	}
	c.mu.Unlock()
	c.p.close()
}

// unexpected handles a frame out of order: the server is told and the
// connection closed.
func (c *Client) unexpected(m *Message, what string) error {
	err := fmt.Errorf("%w: server %s sent %q while this client waited for %s", ErrProtocol, c.addr, m.Type, what)
	_ = c.p.write(context.Background(), &Message{Type: TypeError, Code: CodeProtocol, Msg: fmt.Sprintf("unexpected %q frame", m.Type)})
	c.breakWith(err)
	return err
}

// Run asks the server to run test (a name, for its logs) with spec (the
// workloads spec, a JSON object) and waits until it accepts, at most twice
// the timeout (a server that does not answer is ErrPeerSilent). A refusal is a
// *ServerError: with code "busy", "spec" or "limit" the client stays usable.
// A cancelled ctx, like any connection failure, closes the client.
func (c *Client) Run(ctx context.Context, test string, spec json.RawMessage) (*Session, error) {
	c.mu.Lock()
	broken, closed, prev := c.broken, c.closed, c.sess
	c.mu.Unlock()
	switch {
	case closed:
		return nil, fmt.Errorf("run %s: %w", test, ErrClosed)
	case broken != nil:
		return nil, fmt.Errorf("run %s: the connection to server %s failed earlier: %w", test, c.addr, broken)
	case prev != nil && !prev.ended():
		return nil, fmt.Errorf("run %s: test %s is still running on server %s (call Finish first)", test, prev.test, c.addr)
	case len(spec) == 0:
		return nil, fmt.Errorf("run %s: empty spec", test)
	}
	if err := c.p.write(ctx, &Message{Type: TypeRun, Test: test, Spec: spec}); err != nil {
		if errors.Is(err, ErrBadFrame) || errors.Is(err, ErrFrameTooLarge) || ctx.Err() != nil {
			return nil, fmt.Errorf("run %s: %w", test, err) // nothing was sent
		}
		c.breakWith(err)
		return nil, while(err, "sending run")
	}
	// A server answers a run at once (accepted, or why not): one that keeps
	// the connection alive but does not answer is given up, like a silent
	// one, after twice the timeout (a silent one is found by the reader
	// first, within the timeout).
	wait := 2 * c.opt.Timeout
	actx, cancel := context.WithTimeoutCause(ctx, wait,
		&silentError{name: c.p.name, d: wait, answer: "run " + test})
	m, err := c.p.next(actx)
	cancel()
	if err != nil {
		c.breakWith(err)
		return nil, while(err, "waiting for the server to accept "+test)
	}
	switch m.Type {
	case TypeAccepted:
		s := &Session{c: c, test: test}
		c.mu.Lock()
		c.sess = s
		c.mu.Unlock()
		return s, nil
	case TypeError:
		se := c.serverError(m)
		if !se.usable() {
			c.breakWith(se)
		}
		return nil, se
	}
	return nil, c.unexpected(m, "the server to accept "+test)
}

// Close says bye and closes the connection; a test in progress is cancelled
// on the server.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	broken := c.broken
	c.mu.Unlock()
	if broken == nil {
		_ = c.p.write(context.Background(), &Message{Type: TypeBye})
	}
	c.p.close()
	return nil
}

// Session is one test on a Client. Its Send and Recv carry the test's
// exchange messages, so workloads.NewLink(session) is the client's Link;
// Send may run concurrently with Recv, but Recv and Finish are for one
// goroutine at a time.
type Session struct {
	c    *Client
	test string

	mu   sync.Mutex
	done bool
	err  error // the server's verdict, once done
}

func (s *Session) ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// end records the end of the test: the server's verdict (nil: success).
func (s *Session) end(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		s.done, s.err = true, err
	}
}

// endedErr is what Send and Recv return once the test has ended.
func (s *Session) endedErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	return fmt.Errorf("%w: server %s finished %s", ErrTestEnded, s.c.addr, s.test)
}

// Send sends one exchange message to the server's end of the test.
func (s *Session) Send(ctx context.Context, msg []byte) error {
	if s.ended() {
		return s.endedErr()
	}
	err := s.c.p.write(ctx, &Message{Type: TypeExchange, Body: msg})
	if err != nil && ctx.Err() == nil && !errors.Is(err, ErrFrameTooLarge) {
		s.end(err)
		s.c.breakWith(err)
		return while(err, "sending a message of "+s.test)
	}
	return err
}

// Recv returns the next exchange message from the server's end of the test.
// When the server's end returned instead, Recv returns its error (a
// *ServerError) or ErrTestEnded; Finish then returns the same verdict.
func (s *Session) Recv(ctx context.Context) ([]byte, error) {
	if s.ended() {
		return nil, s.endedErr()
	}
	m, err := s.c.p.next(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		s.end(err)
		s.c.breakWith(err)
		return nil, while(err, "waiting for a message of "+s.test+" from the server")
	}
	switch m.Type {
	case TypeExchange:
		if m.Body == nil {
			m.Body = []byte{}
		}
		return m.Body, nil
	case TypeDone, TypeError:
		s.verdict(m)
		return nil, s.endedErr()
	}
	err = s.c.unexpected(m, "a message of "+s.test)
	s.end(err)
	return nil, err
}

// verdict ends the session on a done or error frame.
func (s *Session) verdict(m *Message) {
	if m.Type == TypeDone {
		if m.Err != "" {
			s.end(&ServerError{Addr: s.c.addr, Code: CodeRun, Msg: m.Err})
		} else {
			s.end(nil)
		}
		return
	}
	se := s.c.serverError(m)
	s.end(se)
	if !se.usable() {
		s.c.breakWith(se)
	}
}

// Finish waits for the server's end of the test to return and returns its
// error (a *ServerError), nil if it succeeded. Exchange messages still
// arriving are dropped. A cancelled ctx closes the client.
func (s *Session) Finish(ctx context.Context) error {
	for !s.ended() {
		m, err := s.c.p.next(ctx)
		if err != nil {
			s.end(err)
			s.c.breakWith(err)
			return while(err, "waiting for the server to finish "+s.test)
		}
		switch m.Type {
		case TypeExchange:
		case TypeDone, TypeError:
			s.verdict(m)
		default:
			s.end(s.c.unexpected(m, "the end of "+s.test))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// A Session is the client's workloads.Transport.
var _ Transport = (*Session)(nil)

// Lost is closed when the connection to the server fails (the server died,
// the network went down, or it went silent past the timeout); LostErr then
// says why. A test in progress should stop at once: its peer is gone.
func (s *Session) Lost() <-chan struct{} { return s.c.p.dead }

// LostErr says why the connection failed, once Lost is closed.
func (s *Session) LostErr() error {
	select {
	case <-s.c.p.dead:
		return s.c.p.err
	default:
		return nil
	}
}

// writeHello sends the client's hello. Its JSON ends with a newline, which
// a JSON decoder skips: a line-based server of another protocol (HTTP)
// then has a whole line to answer.
func (c *Client) writeHello() error {
	b, err := EncodeFrame(&Message{Type: TypeHello, Protocol: buildinfo.ProtocolVersion, Version: buildinfo.Version,
		TimeoutMS: c.opt.Timeout.Milliseconds()}, c.opt.MaxFrame)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	binary.BigEndian.PutUint32(b, uint32(len(b)-headerSize))
	_, err = c.p.conn.Write(b)
	return err
}

// readFirst reads the server's first frame, under the handshake's
// deadline. Bytes that cannot start a control frame (a length over the
// limit, as the first 4 bytes of any text are, or a body that is no JSON
// object) are a *NotServerError with what the other end answered.
func (c *Client) readFirst() (*Message, error) {
	conn := c.p.conn
	var h [headerSize]byte
	for n := 0; n < headerSize; {
		k, err := conn.Read(h[n:])
		n += k
		if err != nil && n < headerSize {
			if errors.Is(err, io.EOF) && n > 0 {
				err = io.ErrUnexpectedEOF
			}
			err = c.p.readErr(err)
			var se *silentError
			switch {
			case n > 0: // a few bytes, then the end or silence
				return nil, &NotServerError{Addr: c.addr, Answer: h[:n], Err: err}
			case errors.As(err, &se):
				se.first = true
			}
			return nil, while(err, "waiting for the server's hello")
		}
		// The first bytes of a length over the limit (those of any text)
		// are enough: the rest is not waited for.
		var least [headerSize]byte
		copy(least[:], h[:n])
		if size := int64(binary.BigEndian.Uint32(least[:])); size > int64(c.opt.MaxFrame) || n == headerSize {
			err := checkLen(size, c.opt.MaxFrame)
			if err != nil && n < headerSize {
				err = fmt.Errorf("%w: at least %d bytes declared, the limit is %d", ErrFrameTooLarge, size, c.opt.MaxFrame)
			}
			if err != nil {
				return nil, &NotServerError{Addr: c.addr, Answer: append(h[:n:n], moreOf(conn, h[:n])...), Err: err}
			}
		}
	}
	size := int64(binary.BigEndian.Uint32(h[:]))
	buf := bytes.NewBuffer(make([]byte, 0, min(size, 4096)))
	if _, err := io.CopyN(buf, conn, size); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, while(c.p.readErr(err), "waiting for the server's hello")
	}
	m, err := decodeBody(buf.Bytes())
	switch {
	case err == nil:
		return m, nil
	case !jsonObject(buf.Bytes()):
		return nil, &NotServerError{Addr: c.addr, Answer: append(h[:], buf.Bytes()[:min(buf.Len(), maxAnswer)]...), Err: err}
	}
	return nil, fmt.Errorf("%w (is %s an rdmabench server?)", c.p.readErr(err), c.addr)
}

// maxAnswer bounds what a NotServerError keeps of the answer.
const maxAnswer = 256

// moreOf reads what else the other end sent with got, its first bytes:
// to the end of the first line, at most maxAnswer bytes, within a tenth
// of a second.
func moreOf(conn net.Conn, got []byte) []byte {
	if bytes.IndexByte(got, '\n') >= 0 {
		return nil
	}
	_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	var more []byte
	buf := make([]byte, maxAnswer)
	for len(got)+len(more) < maxAnswer {
		n, err := conn.Read(buf[:maxAnswer-len(got)-len(more)])
		more = append(more, buf[:n]...)
		if err != nil || bytes.IndexByte(buf[:n], '\n') >= 0 {
			break
		}
	}
	return more
}
