package workloads

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// The TCP baseline (tcp-lat, tcp-bw) runs with the conventions of the RDMA
// send tests, so that each RDMA row can be read against the TCP row of the
// same size: every message is exactly size bytes of payload with no header,
// one write per message, TCP_NODELAY on, socket buffers left to the kernel.
//
// The driver's Link coordinates (driver.go), TCP carries the data: at
// "setup" the server gives the port it listens on and a random token; the
// client dials and writes the token (token+k on the k-th connection) so
// that the server accepts only this client, which it does during the
// "connected" barrier.
//
// End of a size is marked in band, in the first byte of a message (the
// payload is otherwise zero):
//
//	tcp-lat  the client sends markEnd in one extra message, which the
//	         server neither echoes nor counts
//	tcp-bw   the sender marks the last warm-up message markAck and the last
//	         measured message markEnd; the receiver answers each marked
//	         message with an 8-byte ack (big-endian count of payload bytes
//	         it received since the previous ack), so bandwidth is timed
//	         from the first write to the ack of the last message. This works
//	         alike in iteration and duration mode and leaves the connection
//	         open for the next size.
//
// Bidirectional tcp-bw uses two connections, one per direction, each with
// its own sender and receiver goroutine.
const (
	markData byte = 0 // an ordinary message
	markAck  byte = 1 // tcp-bw: the last warm-up message; the receiver acks it
	markEnd  byte = 2 // the end of a size (see above)
)

const (
	// tcpClockBytes: a tcp-bw sender reads the clock about once per this
	// many bytes (every message for large ones, every 64th at most), for
	// intervals and the duration.
	tcpClockBytes = 4096
	// tcpTokenWait is how long an accepted connection has to present the
	// token before it is dropped as a stray.
	tcpTokenWait = 3 * time.Second
)

// tcpSetup is what a TCP server tells the client at "setup".
type tcpSetup struct {
	Port  int    `json:"port,omitempty"`
	Token uint64 `json:"token,omitempty"`
}

// tcpEpoch is the origin of tcpNow.
var tcpEpoch = time.Now()

// tcpNow reads the clock the TCP loops time with (Go's monotonic clock),
// in ns.
func tcpNow() uint64 { return uint64(time.Since(tcpEpoch)) }

var tcpClock = sync.OnceValue(measureGoClock)

// measureGoClock measures Go's monotonic clock: its smallest step and the
// mean cost of a read.
func measureGoClock() report.Clock {
	best := uint64(1 << 62)
	for range 2000 {
		a := tcpNow()
		b := tcpNow()
		for b == a {
			b = tcpNow()
		}
		best = min(best, b-a)
	}
	const n = 100000
	t0 := tcpNow()
	for range n {
		_ = tcpNow()
	}
	return report.Clock{Source: "Go time.Now (monotonic)", ResolutionNs: float64(best), ReadCostNs: float64(tcpNow()-t0) / n}
}

// tcpRunner is one end of a TCP test.
type tcpRunner struct {
	spec *Spec
	role role
	o    endOptions
	idle time.Duration
	cl   closers
	// stop ends the closing of everything when the context is cancelled.
	stop func() bool
	// ln and token are a server's listener and the token it gave.
	ln    *net.TCPListener
	token uint64
	conns []*tcpConn
	// sbuf is the send buffer (the largest size), rbuf the receive buffer
	// (the largest size for tcp-lat, tcpRecvChunk for tcp-bw).
	sbuf, rbuf []byte
}

func init() { runners[runnerTCP] = newTCP }

func newTCP(spec *Spec, role role, o endOptions) runner {
	return &tcpRunner{spec: spec, role: role, o: o, idle: spec.IdleTimeout}
}

func (r *tcpRunner) now() uint64      { return tcpNow() }
func (r *tcpRunner) clock() clockInfo { return clockInfo{"go", tcpClock()} }

func (r *tcpRunner) latency() bool { return r.spec.Info().Metric == Latency }

func (r *tcpRunner) bidi() bool { return r.spec.Bidirectional && !r.latency() }

// conns is how many connections the test uses: one per direction.
func (r *tcpRunner) connCount() int {
	if r.bidi() {
		return 2
	}
	return 1
}

// open allocates the buffers and, on the server, listens.
func (r *tcpRunner) open(ctx context.Context) (any, *report.Device, error) {
	// Cancelling ctx closes the listener and connections, which unblocks
	// any read, write or accept.
	r.stop = context.AfterFunc(ctx, r.cl.closeAll)
	need := r.spec.tcpBuffers(r.role)
	if r.o.maxMem > 0 && need > r.o.maxMem {
		return nil, nil, fmt.Errorf("%w: %s needs %d bytes of buffers on the %s, more than its limit of %d (--max-mem)",
			ErrOverLimit, r.spec.Test, need, r.role, r.o.maxMem)
	}
	chunk := min(r.spec.largest(), tcpChunk)
	if r.latency() {
		r.rbuf = make([]byte, chunk)
		if r.role == clientEnd {
			r.sbuf = make([]byte, chunk)
		}
	} else {
		r.rbuf = make([]byte, tcpRecvChunk)
		if r.spec.initiates(r.role) || r.bidi() {
			r.sbuf = make([]byte, chunk)
		}
	}
	if r.role == clientEnd {
		return tcpSetup{}, nil, nil
	}
	var lc net.ListenConfig
	if tc := r.spec.TClass; tc != nil {
		lc.Control = tclassControl(*tc) // accepted connections inherit it
	}
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(r.o.listenHost, "0"))
	if err != nil {
		return nil, nil, fmt.Errorf("tcp listen: %w", err)
	}
	r.ln = ln.(*net.TCPListener)
	r.cl.add(r.ln)
	var tb [8]byte
	if _, err := rand.Read(tb[:]); err != nil {
		return nil, nil, fmt.Errorf("tcp token: %w", err)
	}
	r.token = binary.BigEndian.Uint64(tb[:])
	return tcpSetup{Port: r.ln.Addr().(*net.TCPAddr).Port, Token: r.token}, nil, nil
}

// connect dials the server (client), or starts accepting the client's
// connections, which wait completes after the "connected" barrier (server):
// a client that fails to connect says so at the barrier, and the server
// does not wait for its accept deadline.
func (r *tcpRunner) connect(ctx context.Context, body json.RawMessage) (func() error, error) {
	n := r.connCount()
	if r.role == serverEnd {
		type accepted struct {
			conns []*net.TCPConn
			err   error
		}
		ch := make(chan accepted, 1)
		go func() {
			c, err := r.accept(n)
			ch <- accepted{c, err}
		}()
		return func() error {
			a := <-ch
			_ = r.ln.Close()
			if a.err != nil {
				return a.err
			}
			return r.useConns(a.conns)
		}, nil
	}
	var srv tcpSetup
	if err := json.Unmarshal(body, &srv); err != nil {
		return nil, fmt.Errorf("the server's setup: %w", err)
	}
	if srv.Port < 1 || srv.Port > 65535 {
		return nil, fmt.Errorf("the server gave an invalid TCP port %d", srv.Port)
	}
	addr := net.JoinHostPort(dialHost(r.o.peerHost), strconv.Itoa(srv.Port))
	d := net.Dialer{Timeout: r.idle}
	if tc := r.spec.TClass; tc != nil {
		d.Control = tclassControl(*tc)
	}
	conns := make([]*net.TCPConn, n)
	var buf [8]byte
	for k := range conns {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("tcp dial %s: %w", addr, err)
		}
		tc := c.(*net.TCPConn)
		r.cl.add(tc)
		binary.BigEndian.PutUint64(buf[:], srv.Token+uint64(k))
		_ = tc.SetWriteDeadline(time.Now().Add(r.idle))
		if _, err := tc.Write(buf[:]); err != nil {
			return nil, fmt.Errorf("tcp connect %s: %w", addr, err)
		}
		conns[k] = tc
	}
	return nil, r.useConns(conns)
}

// accept accepts the client's n connections: the k-th presents token+k.
// Connections that present anything else are closed; accepting stops at the
// idle deadline.
func (r *tcpRunner) accept(n int) ([]*net.TCPConn, error) {
	deadline := time.Now().Add(r.idle)
	if err := r.ln.SetDeadline(deadline); err != nil {
		return nil, fmt.Errorf("tcp accept: %w", err)
	}
	conns := make([]*net.TCPConn, n)
	var buf [8]byte
	for got := 0; got < n; {
		c, err := r.ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, fmt.Errorf("tcp accept: the client did not connect within %s (firewall? wrong address?): %w", r.idle, err)
			}
			return nil, fmt.Errorf("tcp accept: %w", err)
		}
		r.cl.add(c)
		_ = c.SetReadDeadline(minTime(deadline, time.Now().Add(tcpTokenWait)))
		_, err = io.ReadFull(c, buf[:])
		k := binary.BigEndian.Uint64(buf[:]) - r.token
		if err != nil || k >= uint64(n) || conns[k] != nil {
			_ = c.Close() // a stray connection
			continue
		}
		conns[k] = c
		got++
	}
	return conns, nil
}

// dialHost is the host part of h, 127.0.0.1 if empty.
func dialHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if h == "" {
		return "127.0.0.1"
	}
	return h
}

func (r *tcpRunner) useConns(cs []*net.TCPConn) error {
	for _, c := range cs {
		if err := c.SetNoDelay(true); err != nil {
			return fmt.Errorf("tcp: set TCP_NODELAY: %w", err)
		}

		tc, err := newTCPConn(c, r.idle)
		if err != nil {
			return fmt.Errorf("tcp: %w", err)
		}
		r.cl.add(tc)
		r.conns = append(r.conns, tc)
	}
	return nil
}

func (r *tcpRunner) close() {
	if r.stop != nil {
		r.stop()
	}
	r.cl.closeAll()
	for _, c := range r.conns {
		c.release()
	}
}

// prepare gives each connection its part at one size: the client pings or
// streams on the first (the server streams there with --reverse); the
// server echoes or receives there; in bidirectional tcp-bw the second
// carries the server's stream.
func (r *tcpRunner) prepare(size int) (*stage, error) {
	st := &stage{abort: r.cl.closeAll, release: func() {}, effective: r.effective()}
	if tc := r.spec.TClass; tc != nil && size == r.spec.Sizes[0] && st.effective.IPTOS != nil && *st.effective.IPTOS != *tc {
		st.warnings = append(st.warnings, fmt.Sprintf("the kernel set IP_TOS 0x%02x, not 0x%02x as asked (--tclass): it keeps the ECN bits of TCP to itself",
			*st.effective.IPTOS, *tc))
	}
	var got uint64
	count := func(f func() (uint64, error)) func() error {
		return func() error {
			n, err := f()
			got = n
			return err
		}
	}
	st.received = func() uint64 { return got }
	first := r.conns[0]
	switch {
	case r.latency() && r.role == clientEnd:
		st.ping = &tcpPing{r: r, c: first, size: size}
		st.received = nil
	case r.latency():
		st.passive = count(func() (uint64, error) { return r.echo(first, size) })
	case r.spec.initiates(r.role):
		st.stream = &tcpStream{r: r, c: first, size: size, every: max(1, min(64, tcpClockBytes/size))}
		if r.bidi() {
			st.passive = count(func() (uint64, error) { return r.receive(r.conns[1], size) })
		} else {
			st.received = nil
		}
	default:
		st.passive = count(func() (uint64, error) { return r.receive(first, size) })
		if r.bidi() {
			st.stream = &tcpStream{r: r, c: r.conns[1], size: size, every: max(1, min(64, tcpClockBytes/size))}
		}
	}
	return st, nil
}

// effective are the client socket's settings, as the kernel set them.
func (r *tcpRunner) effective() report.Effective {
	snd, rcv := socketBuffers(r.conns[0].c)
	eff := report.Effective{Connections: len(r.conns), NoDelay: true, SendBuf: snd, RecvBuf: rcv, Reverse: r.spec.Reverse}
	if tc := readTClass(r.conns[0].c); tc >= 0 {
		eff.IPTOS = &tc
	}
	return eff
}

// writeMessage writes a message of size bytes marked mark, from the
// bounded buffer buf (written in turn until size bytes went).
func writeMessage(c *tcpConn, buf []byte, size int, mark byte) error {
	buf[0] = mark
	defer func() { buf[0] = markData }()
	for left := size; left > 0; {
		n := min(left, len(buf))
		if err := c.write(buf[:n]); err != nil {
			return err
		}
		buf[0] = markData
		left -= n
	}
	return nil
}

// readMessage reads a message of size bytes into the bounded buffer buf
// (in turn) and returns its mark.
func readMessage(c *tcpConn, buf []byte, size int) (byte, error) {
	var mark byte
	for got := 0; got < size; {
		n := min(size-got, len(buf))
		if err := c.readFull(buf[:n]); err != nil {
			return 0, err
		}
		if got == 0 {
			mark = buf[0]
		}
		got += n
	}
	return mark, nil
}

// tcpPing is the client's ping-pong on c.
type tcpPing struct {
	r    *tcpRunner
	c    *tcpConn
	size int
}

func (p *tcpPing) ping(samples []uint64, until uint64) (int, int, error) {
	c := p.c
	for k := range samples {
		t1 := tcpNow()
		if err := writeMessage(c, p.r.sbuf, p.size, markData); err != nil {
			return k, k, p.r.ioErr("send", err)
		}
		if _, err := readMessage(c, p.r.rbuf, p.size); err != nil {
			return k, k, p.r.ioErr("receive", err)
		}
		t2 := tcpNow() // Go's monotonic clock never runs backwards
		samples[k] = t2 - t1
		if until > 0 && t2 >= until {
			return k + 1, k + 1, nil
		}
	}
	return len(samples), len(samples), nil
}

// done sends the terminator, which the server neither echoes nor counts.
func (p *tcpPing) done() error {
	if err := writeMessage(p.c, p.r.sbuf, p.size, markEnd); err != nil {
		return p.r.ioErr("send end of test", err)
	}
	return nil
}

// echo answers tcp-lat messages on c until the terminator and returns how
// many it answered: each message is read whole, then a message of the same
// size is written back, both through the bounded buffer.
func (r *tcpRunner) echo(c *tcpConn, size int) (uint64, error) {
	var n uint64
	for {
		mark, err := readMessage(c, r.rbuf, size)
		if err != nil {
			return n, r.ioErr("receive", err)
		}
		switch mark {
		case markEnd:
			return n, nil
		case markData:
		default:
			return n, fmt.Errorf("receive: unexpected message marker %d (is the peer another version?)", mark)
		}
		if err := writeMessage(c, r.rbuf, size, markData); err != nil {
			return n, r.ioErr("send", err)
		}
		n++
	}
}

// tcpStream is a tcp-bw sender on c. Bandwidth is timed from the first
// measured write to the ack of the last measured message.
type tcpStream struct {
	r     *tcpRunner
	c     *tcpConn
	size  int
	every int // messages between clock reads
	// countdown counts messages down to the next clock read.
	countdown int
	// warm, msgs and extra count the warm-up, measured and end-of-stream
	// messages; unacked those written since the last ack.
	warm, msgs, extra, unacked uint64
	first, last                uint64
}

// warmup drains what it sent whether flowing or not: the socket's buffers
// refill in the first microseconds of the stream.
func (s *tcpStream) warmup(n int, _ bool) error {
	for k := 0; k < n; k++ {
		mark := markData
		if k == n-1 {
			mark = markAck
		}
		if err := writeMessage(s.c, s.r.sbuf, s.size, mark); err != nil {
			return s.r.ioErr("send", err)
		}
	}
	s.warm = uint64(n)
	if err := s.c.readAck(uint64(n) * uint64(s.size)); err != nil {
		return s.r.ioErr("read ack", err)
	}
	return nil
}

// round writes n more measured messages, the last marked for an ack, and
// reads the ack: the round ends when the receiver has every byte.
func (s *tcpStream) round(n uint64) error {
	if n == 0 {
		return nil
	}
	if s.first == 0 {
		s.first = tcpNow()
	}
	for k := uint64(0); k < n-1; k++ {
		if err := writeMessage(s.c, s.r.sbuf, s.size, markData); err != nil {
			return s.r.ioErr("send", err)
		}
		s.unacked++
	}
	if err := s.ackedWrite(markAck); err != nil {
		return err
	}
	s.msgs += n
	return nil
}

// send writes until the clock (read every few messages) passes until.
func (s *tcpStream) send(until uint64) error {
	if s.first == 0 {
		s.first = tcpNow()
	}
	for {
		if s.countdown--; s.countdown <= 0 {
			s.countdown = s.every
			if tcpNow() >= until {
				return nil
			}
		}
		if err := writeMessage(s.c, s.r.sbuf, s.size, markData); err != nil {
			return s.r.ioErr("send", err)
		}
		s.msgs++
		s.unacked++
	}
}

// finish sends the last message of a duration, marked as the end, and
// waits for its ack.
func (s *tcpStream) finish() error {
	if err := s.ackedWrite(markEnd); err != nil {
		return err
	}
	s.msgs++
	return nil
}

// end sends one more message, marked as the end and not measured, after
// the last round.
func (s *tcpStream) end() error {
	if err := s.ackedWrite(markEnd); err != nil {
		return err
	}
	s.extra++
	return nil
}

// ackedWrite writes one message marked mark and reads the receiver's ack
// of every byte since the previous one.
func (s *tcpStream) ackedWrite(mark byte) error {
	if err := writeMessage(s.c, s.r.sbuf, s.size, mark); err != nil {
		return s.r.ioErr("send", err)
	}
	if err := s.c.readAck((s.unacked + 1) * uint64(s.size)); err != nil {
		return s.r.ioErr("read ack", err)
	}
	s.unacked = 0
	s.last = tcpNow()
	return nil
}

func (s *tcpStream) measured() (uint64, uint64, uint64) { return s.msgs, s.first, s.last }

func (s *tcpStream) sent() uint64 { return s.warm + s.msgs + s.extra }

// receive receives tcp-bw messages on c, acking each marked message,
// until the end-of-test message. It returns every message it received,
// warm-up included.
func (r *tcpRunner) receive(c *tcpConn, size int) (uint64, error) {
	buf := r.rbuf
	var ack [8]byte
	var pos int
	var mark byte
	var bytes, msgs uint64 // bytes since the last ack; every message
	for {
		k, rerr := c.read(buf)
		for j := 0; j < k; {
			if pos == 0 {
				mark = buf[j]
			}
			adv := min(size-pos, k-j)
			pos += adv
			j += adv
			bytes += uint64(adv)
			if pos < size {
				continue
			}
			pos = 0
			msgs++
			if mark == markData {
				continue
			}
			if mark != markAck && mark != markEnd {
				return msgs, fmt.Errorf("receive: unexpected message marker %d (is the peer another version?)", mark)
			}
			if j != k {
				return msgs, fmt.Errorf("receive: %d bytes after a marked message (is the peer another version?)", k-j)
			}
			binary.BigEndian.PutUint64(ack[:], bytes)
			if err := c.write(ack[:]); err != nil {
				return msgs, r.ioErr("send ack", err)
			}
			if mark == markEnd {
				return msgs, nil
			}
			bytes = 0 // the end of the warm-up
		}
		if rerr != nil {
			return msgs, r.ioErr("receive", rerr)
		}
	}
}

// ioErr says what a failed network operation means.
func (r *tcpRunner) ioErr(op string, err error) error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%s: %w: no progress for %s (idle timeout): %w", op, errPeerSilent, r.idle, err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("%s: %w: %w", op, errPeerClosed, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// readAck reads a receiver's ack and checks its byte count.
func (c *tcpConn) readAck(want uint64) error {
	var b [8]byte
	if err := c.readFull(b[:]); err != nil {
		return err
	}
	if got := binary.BigEndian.Uint64(b[:]); got != want {
		return fmt.Errorf("the receiver got %d bytes, %d were sent", got, want)
	}
	return nil
}

// closers closes what a test opened, once, from any goroutine: on return
// and when the context is cancelled. What is added after closeAll is
// closed at once.
type closers struct {
	mu     sync.Mutex
	cs     []io.Closer
	closed bool
}

func (c *closers) add(x io.Closer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		_ = x.Close()
		return
	}
	c.cs = append(c.cs, x)
}

func (c *closers) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, x := range c.cs {
		_ = x.Close()
	}
	c.cs = nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
