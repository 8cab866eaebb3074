package control

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// Defaults of the client and server options.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultKeepalive = time.Second
	// DefaultPort is the server's default TCP port (perftest's is 18515).
	DefaultPort = 19515
)

// timings returns timeout and keepalive with defaults applied; keepalive is
// kept under half the timeout so that a live peer is never taken for silent.
func timings(timeout, keepalive time.Duration) (time.Duration, time.Duration) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if keepalive <= 0 {
		keepalive = DefaultKeepalive
	}
	return timeout, min(keepalive, timeout/2)
}

// pingWithin makes the pings frequent enough for the other end's
// timeout, timeoutMS as its hello said: at least two within it. An older
// end says none, and gets a ping every DefaultKeepalive at least, as
// before.
func (p *peer) pingWithin(timeoutMS int64) {
	if timeoutMS <= 0 {
		p.keepalive = min(p.keepalive, DefaultKeepalive)
		return
	}
	p.keepalive = max(min(p.keepalive, time.Duration(timeoutMS)*time.Millisecond/2), minKeepalive)
}

// minKeepalive bounds the pings a peer's short timeout asks for.
const minKeepalive = 10 * time.Millisecond

// peer is one end of a control connection once the handshake is done: a
// reader goroutine hands every frame but pings and bye to frames, in order,
// and fails the connection on bye or when nothing arrives for timeout; a pinger goroutine
// sends a ping every keepalive; writes are serialized and have a deadline.
type peer struct {
	conn      net.Conn
	name      string // the other end, for messages: "server 10.0.0.2:19515", "client 10.0.0.3:51234"
	timeout   time.Duration
	keepalive time.Duration
	maxFrame  int
	byeMeans  string // what the other end's bye means, for messages

	wmu  sync.Mutex
	werr error // sticky: the connection cannot be written any more

	frames   chan *Message
	dead     chan struct{} // closed when the connection failed; err says why
	err      error
	failOnce sync.Once

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

func newPeer(conn net.Conn, name, byeMeans string, timeout, keepalive time.Duration, maxFrame int) *peer {
	return &peer{
		conn: conn, name: name, byeMeans: byeMeans, timeout: timeout, keepalive: keepalive, maxFrame: maxOrDefault(maxFrame),
		frames: make(chan *Message), dead: make(chan struct{}), stop: make(chan struct{}),
	}
}

// start starts the reader and the pinger.
func (p *peer) start() {
	p.wg.Add(2)
	go p.readLoop()
	go p.pingLoop()
}

// fail records the first reason the connection is unusable.
func (p *peer) fail(err error) {
	p.failOnce.Do(func() {
		p.err = err
		close(p.dead)
	})
}

// stopped tells whether shutdown was called.
func (p *peer) stopped() bool {
	select {
	case <-p.stop:
		return true
	default:
		return false
	}
}

func (p *peer) readLoop() {
	defer p.wg.Done()
	for {
		_ = p.conn.SetReadDeadline(time.Now().Add(p.timeout))
		if p.stopped() { // after setting the deadline: see shutdown
			p.fail(ErrClosed)
			return
		}
		m, err := ReadFrame(p.conn, p.maxFrame)
		if err != nil {
			if p.stopped() {
				err = ErrClosed
			}
			p.fail(p.readErr(err))
			return
		}
		switch m.Type {
		case TypePing:
			continue
		case TypeBye:
			p.fail(&closedError{name: p.name, how: ": " + p.byeMeans, cause: ErrPeerShutdown})
			_ = p.conn.Close()
			return
		}
		select {
		case p.frames <- m:
		case <-p.stop:
			p.fail(ErrClosed)
			return
		}
	}
}

func (p *peer) pingLoop() {
	defer p.wg.Done()
	t := time.NewTicker(p.keepalive)
	defer t.Stop()
	ping := &Message{Type: TypePing}
	for {
		select {
		case <-p.stop:
			return
		case <-p.dead:
			return
		case <-t.C:
			if p.write(context.Background(), ping) != nil {
				return
			}
		}
	}
}

// next returns the next frame (pings excepted), or why there is none.
func (p *peer) next(ctx context.Context) (*Message, error) {
	select {
	case m := <-p.frames:
		return m, nil
	case <-p.dead:
		select {
		case m := <-p.frames:
			return m, nil
		default:
		}
		return nil, p.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// write sends m within the timeout (or ctx's deadline, if earlier). A
// failed write leaves the stream unusable: the connection is failed and
// closed, and the error is the first reason it failed (the reader may have
// seen the other end go first).
func (p *peer) write(ctx context.Context, m *Message) error {
	b, err := EncodeFrame(m, p.maxFrame)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.werr != nil {
		return p.werr
	}
	dl := time.Now().Add(p.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	_ = p.conn.SetWriteDeadline(dl)
	if _, err := p.conn.Write(b); err != nil {
		p.fail(p.writeErr(err))
		p.werr = p.err // the first reason the connection failed says most
		_ = p.conn.Close()
		return p.werr
	}
	return nil
}

// readDirect reads one frame with the reader goroutine not running (during
// the handshake), under the connection's current deadline.
func (p *peer) readDirect() (*Message, error) {
	m, err := ReadFrame(p.conn, p.maxFrame)
	if err != nil {
		return nil, p.readErr(err)
	}
	return m, nil
}

func (p *peer) readErr(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, ErrClosed), errors.Is(err, net.ErrClosed):
		return ErrClosed
	case errors.Is(err, ErrBadFrame), errors.Is(err, ErrFrameTooLarge):
		return &frameError{name: p.name, err: err}
	case errors.As(err, &ne) && ne.Timeout():
		return &silentError{name: p.name, d: p.timeout}
	case err == io.EOF:
		return &closedError{name: p.name, cause: err}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &closedError{name: p.name, how: " in the middle of a frame", cause: err}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED):
		return &closedError{name: p.name, how: " (reset)", cause: err}
	}
	return err
}

func (p *peer) writeErr(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, net.ErrClosed):
		return ErrClosed
	case errors.As(err, &ne) && ne.Timeout():
		return &silentError{name: p.name, d: p.timeout, sending: true}
	case errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED):
		return &closedError{name: p.name, how: " (reset)", cause: err}
	case errors.Is(err, io.ErrClosedPipe): // an in-memory connection (net.Pipe)
		return &closedError{name: p.name, cause: err}
	}
	return err
}

// frameError: the other end sent a frame this end refuses.
type frameError struct {
	name string
	err  error
}

func (e *frameError) Error() string { return e.name + " sent a " + e.err.Error() }
func (e *frameError) Unwrap() error { return e.err }

// shutdown stops the reader and the pinger and waits for them, leaving the
// connection open.
func (p *peer) shutdown() {
	p.stopOnce.Do(func() { close(p.stop) })
	// The reader checks stop after setting its deadline, so either it sees
	// stop or this deadline interrupts its read.
	_ = p.conn.SetReadDeadline(time.Unix(1, 0))
	p.wg.Wait()
	p.fail(ErrClosed)
}

// close stops everything and closes the connection.
func (p *peer) close() {
	p.stopOnce.Do(func() { close(p.stop) })
	_ = p.conn.Close()
	p.wg.Wait()
	p.fail(ErrClosed)
}

// linger closes conn politely: it stops sending, reads (and drops) what the
// other end still sends for up to d, then closes. Closing a socket that has
// unread data resets the connection, and the other end could lose the
// error frame just sent to it.
func linger(conn net.Conn, d time.Duration) {
	if cw, ok := conn.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		_ = conn.SetReadDeadline(time.Now().Add(d))
		_, _ = io.Copy(io.Discard, io.LimitReader(conn, 1<<20))
	}
	_ = conn.Close()
}
