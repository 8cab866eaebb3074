package workloads

import (
	"context"
	"crypto/rand"
	"encoding/binary"
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
// The Link coordinates, TCP carries the data:
//
//	tcp-setup    server -> client: its host, the port it listens on and a
//	             random token; client -> server: its host
//	             the client dials and writes the token (token+k on the k-th
//	             connection) so that the server accepts only this client
//	tcp-connect  barrier: the client has connected (or tells why not)
//	per size i:  ready/i, the data phase, finished/i, result/i (sizeOutcome)
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
	// tcpRecvChunk is the read buffer of a tcp-bw receiver.
	tcpRecvChunk = 256 << 10
	// tcpIOChunk bounds one read or write call, so that the idle deadline
	// is re-armed during huge messages.
	tcpIOChunk = 4 << 20
	// tcpLatBatch is how many round trips are buffered before they go to
	// the latency recorder.
	tcpLatBatch = 1024
	// tcpClockBytes: a tcp-bw sender reads the clock about once per this
	// many bytes (every message for large ones, every 64th at most), for
	// intervals, the duration and the idle deadline.
	tcpClockBytes = 4096
	// tcpTokenWait is how long an accepted connection has to present the
	// token before it is dropped as a stray.
	tcpTokenWait = 3 * time.Second
	// tcpPeerWait is how long an end that saw the peer close the connection
	// waits on the Link for the peer's reason.
	tcpPeerWait = 2 * time.Second
)

// errPeerClosed marks a connection the other end closed or reset.
var errPeerClosed = errors.New("the peer closed the connection")

// tcpSetup is what the ends exchange at "tcp-setup".
type tcpSetup struct {
	Host report.Host `json:"host"`
	// Port and Token are the server's.
	Port  int    `json:"port,omitempty"`
	Token uint64 `json:"token,omitempty"`
}

// tcpRun is one end of a TCP test.
type tcpRun struct {
	ctx   context.Context
	spec  *Spec
	role  Role
	link  Link
	opt   Options
	idle  time.Duration
	cl    closers
	conns []*tcpConn
	// sbuf is the send buffer (the largest size), rbuf the receive buffer
	// (the largest size for tcp-lat, tcpRecvChunk for tcp-bw).
	sbuf, rbuf []byte
	// total and iv are the client's tcp-lat recorders, reused across sizes.
	total, iv *report.LatencyRecorder
}

func runTCP(ctx context.Context, spec Spec, role Role, link Link, opt Options) (*EndResult, error) {
	r := &tcpRun{ctx: ctx, spec: &spec, role: role, link: link, opt: opt, idle: spec.IdleTimeout}
	if r.idle <= 0 {
		r.idle = DefaultIdleTimeout
	}
	res := &EndResult{Host: LocalHost()}
	// Cancelling ctx closes the listener and connections, which unblocks
	// any read, write or accept.
	stop := context.AfterFunc(ctx, r.cl.closeAll)
	defer stop()
	defer r.cl.closeAll()

	if err := r.setup(res); err != nil {
		if len(spec.Sizes) > 0 {
			res.Results = append(res.Results, failResult(&spec, spec.Sizes[0], err))
		}
		return res, fmt.Errorf("%s: %w", spec.Test, err)
	}
	for i, size := range spec.Sizes {
		rr, err := r.runSize(i, size)
		if err != nil {
			res.Results = append(res.Results, failResult(&spec, size, err))
			return res, fmt.Errorf("%s at %d B: %w", spec.Test, size, err)
		}
		if rr != nil {
			res.Results = append(res.Results, *rr)
		}
		if opt.Progress != nil {
			opt.Progress(Progress{Test: spec.Test, Size: size, SizeIdx: i, Sizes: len(spec.Sizes), Done: true})
		}
	}
	return res, nil
}

func (r *tcpRun) latency() bool { return r.spec.Info().Metric == Latency }

func (r *tcpRun) bidi() bool { return r.spec.Bidirectional && !r.latency() }

// setup allocates the buffers and connects the two ends.
func (r *tcpRun) setup(res *EndResult) error {
	maxSize := 0
	for _, s := range r.spec.Sizes {
		maxSize = max(maxSize, s)
	}
	var need uint64
	switch {
	case r.latency() && r.role == Client:
		need = 2 * uint64(maxSize)
	case r.latency():
		need = uint64(maxSize)
	case r.role == Client || r.bidi():
		need = uint64(maxSize) + tcpRecvChunk
	default:
		need = tcpRecvChunk
	}
	if r.opt.MaxMem > 0 && need > r.opt.MaxMem {
		return r.fail("tcp-setup", fmt.Errorf("%s needs %d bytes of buffers on the %s, more than its limit of %d (--max-mem)",
			r.spec.Test, need, r.role, r.opt.MaxMem))
	}
	if r.latency() {
		r.rbuf = make([]byte, maxSize)
		if r.role == Client {
			r.sbuf = make([]byte, maxSize)
			r.total = report.NewLatencyRecorder(r.spec.Info().Basis)
			r.iv = report.NewLatencyRecorder(r.spec.Info().Basis)
		}
	} else {
		r.rbuf = make([]byte, tcpRecvChunk)
		if r.role == Client || r.bidi() {
			r.sbuf = make([]byte, maxSize)
		}
	}
	n := 1
	if r.bidi() {
		n = 2
	}
	if r.role == Server {
		return r.serverSetup(res, n)
	}
	return r.clientSetup(res, n)
}

func (r *tcpRun) serverSetup(res *EndResult, n int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(r.opt.ListenHost, "0"))
	if err != nil {
		return r.fail("tcp-setup", fmt.Errorf("tcp listen: %w", err))
	}
	tl := ln.(*net.TCPListener)
	r.cl.add(tl)
	var tb [8]byte
	if _, err := rand.Read(tb[:]); err != nil {
		return r.fail("tcp-setup", fmt.Errorf("tcp token: %w", err))
	}
	token := binary.BigEndian.Uint64(tb[:])
	out := tcpSetup{Host: res.Host, Port: tl.Addr().(*net.TCPAddr).Port, Token: token}
	var peer tcpSetup
	if err := r.link.Exchange(r.ctx, "tcp-setup", out, &peer); err != nil {
		return r.fail("tcp-setup", err)
	}
	res.Peer = &peer.Host

	// Accept while waiting for the client to say it connected (or why it
	// could not): a client that fails does not leave the server waiting
	// for the accept deadline.
	type accepted struct {
		conns []*net.TCPConn
		err   error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := r.accept(tl, token, n)
		ch <- accepted{c, err}
	}()
	if err := r.link.Exchange(r.ctx, "tcp-connect", nil, nil); err != nil {
		r.cl.closeAll() // the listener, and any connection being checked
		<-ch
		return r.fail("tcp-connect", err)
	}
	a := <-ch
	_ = tl.Close()
	if a.err != nil {
		return r.fail(phase("ready", 0), a.err)
	}
	return r.useConns(a.conns)
}

// accept accepts the client's n connections: the k-th presents token+k.
// Connections that present anything else are closed; accepting stops at the
// idle deadline.
func (r *tcpRun) accept(ln *net.TCPListener, token uint64, n int) ([]*net.TCPConn, error) {
	deadline := time.Now().Add(r.idle)
	if err := ln.SetDeadline(deadline); err != nil {
		return nil, fmt.Errorf("tcp accept: %w", err)
	}
	conns := make([]*net.TCPConn, n)
	var buf [8]byte
	for got := 0; got < n; {
		c, err := ln.AcceptTCP()
		if err != nil {
			if r.ctx.Err() != nil {
				return nil, fmt.Errorf("tcp accept: %w", r.ctx.Err())
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, fmt.Errorf("tcp accept: the client did not connect within %s (firewall? wrong address?): %w", r.idle, err)
			}
			return nil, fmt.Errorf("tcp accept: %w", err)
		}
		r.cl.add(c)
		_ = c.SetReadDeadline(minTime(deadline, time.Now().Add(tcpTokenWait)))
		_, err = io.ReadFull(c, buf[:])
		k := binary.BigEndian.Uint64(buf[:]) - token
		if err != nil || k >= uint64(n) || conns[k] != nil {
			_ = c.Close() // a stray connection
			continue
		}
		conns[k] = c
		got++
	}
	return conns, nil
}

func (r *tcpRun) clientSetup(res *EndResult, n int) error {
	var srv tcpSetup
	if err := r.link.Exchange(r.ctx, "tcp-setup", tcpSetup{Host: res.Host}, &srv); err != nil {
		return r.fail("tcp-setup", err)
	}
	res.Peer = &srv.Host
	if srv.Port < 1 || srv.Port > 65535 {
		return r.fail("tcp-connect", fmt.Errorf("the server gave an invalid TCP port %d", srv.Port))
	}
	addr := net.JoinHostPort(dialHost(r.opt.PeerHost), strconv.Itoa(srv.Port))
	d := net.Dialer{Timeout: r.idle}
	conns := make([]*net.TCPConn, n)
	var buf [8]byte
	for k := range conns {
		c, err := d.DialContext(r.ctx, "tcp", addr)
		if err != nil {
			return r.fail("tcp-connect", fmt.Errorf("tcp dial %s: %w", addr, err))
		}
		tc := c.(*net.TCPConn)
		r.cl.add(tc)
		binary.BigEndian.PutUint64(buf[:], srv.Token+uint64(k))
		_ = tc.SetWriteDeadline(time.Now().Add(r.idle))
		if _, err := tc.Write(buf[:]); err != nil {
			return r.fail("tcp-connect", fmt.Errorf("tcp connect %s: %w", addr, err))
		}
		conns[k] = tc
	}
	if err := r.link.Exchange(r.ctx, "tcp-connect", nil, nil); err != nil {
		return r.fail("tcp-connect", err)
	}
	return r.useConns(conns)
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

func (r *tcpRun) useConns(cs []*net.TCPConn) error {
	for _, c := range cs {
		if err := c.SetNoDelay(true); err != nil {
			return r.fail(phase("ready", 0), fmt.Errorf("tcp: set TCP_NODELAY: %w", err))
		}
		r.conns = append(r.conns, &tcpConn{c: c, idle: r.idle})
	}
	return nil
}

// runSize runs one size: ready, the data phase, finished, result. It
// returns the client's result, or the server's when it measured something
// (its own sending in bidirectional tcp-bw), else nil.
func (r *tcpRun) runSize(i, size int) (*report.Result, error) {
	if err := r.link.Exchange(r.ctx, phase("ready", i), nil, nil); err != nil {
		return nil, r.fail(phase("ready", i), err)
	}
	res := baseResult(r.spec, size)
	var mine sizeOutcome
	var sent, got uint64 // client: messages sent; messages received from the server (bidirectional)
	var err error
	switch {
	case r.latency() && r.role == Client:
		sent, err = r.latClient(i, size, &res)
	case r.latency():
		mine.Received, err = r.latServer(size)
	case r.role == Client:
		send := func() error {
			var e error
			res.Bandwidth, res.Intervals, e = r.sendStream(r.conns[0], size, r.onInterval(i, size))
			if e == nil {
				sent = res.Bandwidth.Messages
				res.Iterations = int(sent)
			}
			return e
		}
		if r.bidi() {
			err = r.together(send, func() (e error) {
				got, e = r.recvStream(r.conns[1], size)
				return e
			})
			mine.Received = got
		} else {
			err = send()
		}
	default:
		recv := func() (e error) {
			mine.Received, e = r.recvStream(r.conns[0], size)
			return e
		}
		if r.bidi() {
			err = r.together(recv, func() (e error) {
				mine.Bandwidth, _, e = r.sendStream(r.conns[1], size, nil)
				return e
			})
		} else {
			err = recv()
		}
	}
	if err != nil {
		return nil, r.fail(phase("finished", i), err)
	}
	if err := r.link.Exchange(r.ctx, phase("finished", i), nil, nil); err != nil {
		return nil, r.fail(phase("finished", i), err)
	}
	var peer sizeOutcome
	if err := r.link.Exchange(r.ctx, phase("result", i), mine, &peer); err != nil {
		return nil, r.fail(phase("result", i), err)
	}
	if r.role == Server {
		if mine.Bandwidth == nil {
			return nil, nil
		}
		res.Bandwidth, res.Iterations = mine.Bandwidth, int(mine.Bandwidth.Messages)
		return &res, nil
	}
	// The client checks that both ends saw the same traffic.
	var err2 error
	switch {
	case peer.Err != "":
		err2 = &PeerError{Phase: phase("result", i), Msg: peer.Err}
	case peer.Received != sent:
		err2 = fmt.Errorf("the server received %d messages, the client sent %d", peer.Received, sent)
	case r.bidi() && peer.Bandwidth == nil:
		err2 = errors.New("the server reported no bandwidth for its direction")
	case r.bidi() && peer.Bandwidth.Messages != got:
		err2 = fmt.Errorf("the client received %d messages, the server sent %d", got, peer.Bandwidth.Messages)
	}
	if err2 != nil {
		return nil, r.fail(phase("result", i), err2)
	}
	if r.bidi() {
		res.Reverse = peer.Bandwidth
		res.Total = report.Sum(res.Bandwidth, res.Reverse)
	}
	return &res, nil
}

// onInterval returns the client's per-interval progress callback.
func (r *tcpRun) onInterval(i, size int) func(report.Interval) {
	if r.opt.Progress == nil || r.role != Client {
		return nil
	}
	return func(iv report.Interval) {
		r.opt.Progress(Progress{Test: r.spec.Test, Size: size, SizeIdx: i, Sizes: len(r.spec.Sizes), Interval: &iv})
	}
}

// latClient runs tcp-lat's ping-pong: warm-up, then measured round trips
// (a number or for the duration), then the terminator. It fills res and
// returns the messages sent, warm-up included and terminator excluded.
func (r *tcpRun) latClient(i, size int, res *report.Result) (uint64, error) {
	c := r.conns[0]
	sb, rb := r.sbuf[:size], r.rbuf[:size]
	sb[0] = markData
	c.armed = time.Time{}
	prev := time.Now()
	warm := r.spec.WarmupFor(size)
	for k := 0; k < warm; k++ {
		if err := c.arm(prev); err != nil {
			return 0, r.ioErr("warm-up", err)
		}
		if err := c.write(sb); err != nil {
			return 0, r.ioErr("warm-up: send", err)
		}
		if err := c.readFull(rb); err != nil {
			return 0, r.ioErr("warm-up: receive", err)
		}
		prev = time.Now()
	}

	total, iv := r.total, r.iv
	total.Reset()
	iv.Reset()
	batch := make([]uint64, 0, tcpLatBatch)
	flush := func() {
		total.RecordBatch(batch)
		if r.spec.Duration > 0 {
			iv.RecordBatch(batch)
		}
		batch = batch[:0]
	}
	onInterval := r.onInterval(i, size)
	iters := r.spec.ItersFor(size)
	dur, step := r.spec.Duration, r.spec.Interval
	if step <= 0 {
		step = time.Second
	}
	start := time.Now()
	end, next, ivStart := start.Add(dur), start.Add(step), start
	prev = start
	var n int
	for {
		// The deadline is armed from the previous sample's clock, outside
		// the timed part.
		if err := c.arm(prev); err != nil {
			return 0, r.ioErr("send", err)
		}
		t1 := time.Now()
		if (dur > 0 && !t1.Before(end)) || (dur == 0 && n == iters) {
			break
		}
		if err := c.write(sb); err != nil {
			return 0, r.ioErr("send", err)
		}
		if err := c.readFull(rb); err != nil {
			return 0, r.ioErr("receive", err)
		}
		t2 := time.Now()
		batch = append(batch, uint64(t2.Sub(t1)))
		n++
		if len(batch) == cap(batch) {
			flush()
		}
		if dur > 0 && !t2.Before(next) {
			flush()
			res.Intervals = append(res.Intervals, latInterval(start, ivStart, t2, iv, onInterval))
			ivStart = t2
			for !next.After(t2) {
				next = next.Add(step)
			}
		}
		prev = t2
	}
	flush()
	if dur > 0 && iv.Count() > 0 {
		// The samples after the last interval boundary.
		res.Intervals = append(res.Intervals, latInterval(start, ivStart, prev, iv, onInterval))
	}
	sb[0] = markEnd
	err := c.write(sb)
	sb[0] = markData
	if err != nil {
		return 0, r.ioErr("send end of test", err)
	}
	res.Latency = total.Snapshot()
	res.Iterations = n
	return uint64(warm + n), nil
}

// latInterval closes an interval of the latency recorder iv (then reset).
func latInterval(start, from, to time.Time, iv *report.LatencyRecorder, progress func(report.Interval)) report.Interval {
	out := report.Interval{
		StartS:    from.Sub(start).Seconds(),
		DurationS: to.Sub(from).Seconds(),
		Latency:   iv.Snapshot(),
	}
	iv.Reset()
	if progress != nil {
		progress(out)
	}
	return out
}

// latServer echoes tcp-lat messages until the terminator and returns how
// many it echoed.
func (r *tcpRun) latServer(size int) (uint64, error) {
	c := r.conns[0]
	b := r.rbuf[:size]
	c.armed = time.Time{}
	var n uint64
	for now := time.Now(); ; now = time.Now() {
		if err := c.arm(now); err != nil {
			return n, r.ioErr("receive", err)
		}
		if err := c.readFull(b); err != nil {
			return n, r.ioErr("receive", err)
		}
		switch b[0] {
		case markEnd:
			return n, nil
		case markData:
		default:
			return n, fmt.Errorf("receive: unexpected message marker %d (is the peer another version?)", b[0])
		}
		if err := c.write(b); err != nil {
			return n, r.ioErr("send", err)
		}
		n++
	}
}

// sendStream sends tcp-bw messages on c: the warm-up (acked, excluded),
// then the measured part, a number of messages or for the duration. The
// bandwidth is the payload over first write -> ack of the last message.
// In duration mode, the intervals partition that period and its bytes: the
// last one ends at the ack.
func (r *tcpRun) sendStream(c *tcpConn, size int, onInterval func(report.Interval)) (*report.Bandwidth, []report.Interval, error) {
	buf := r.sbuf[:size]
	buf[0] = markData
	c.armed = time.Time{}
	if warm := r.spec.WarmupFor(size); warm > 0 {
		for k := 0; k < warm; k++ {
			if k == warm-1 {
				buf[0] = markAck
			}
			if err := c.arm(time.Now()); err != nil {
				return nil, nil, r.ioErr("warm-up", err)
			}
			if err := c.write(buf); err != nil {
				buf[0] = markData
				return nil, nil, r.ioErr("warm-up: send", err)
			}
		}
		buf[0] = markData
		if err := c.readAck(uint64(warm) * uint64(size)); err != nil {
			return nil, nil, r.ioErr("warm-up: read ack", err)
		}
	}

	iters := uint64(r.spec.ItersFor(size))
	dur, step := r.spec.Duration, r.spec.Interval
	if step <= 0 {
		step = time.Second
	}
	every := max(1, min(64, tcpClockBytes/size))
	var ivs []report.Interval
	var msgs, ivMsgs uint64
	start := time.Now()
	end, next, ivStart := start.Add(dur), start.Add(step), start
	interval := func(to time.Time) {
		d := to.Sub(ivStart)
		iv := report.Interval{
			StartS:    ivStart.Sub(start).Seconds(),
			DurationS: d.Seconds(),
			Bandwidth: report.NewBandwidth(ivMsgs*uint64(size), ivMsgs, d),
		}
		ivs = append(ivs, iv)
		if onInterval != nil {
			onInterval(iv)
		}
		ivStart, ivMsgs = to, 0
	}
	countdown := 1
	for last := false; !last; {
		if countdown--; countdown == 0 {
			countdown = every
			now := time.Now()
			if err := c.arm(now); err != nil {
				return nil, nil, r.ioErr("send", err)
			}
			if dur > 0 {
				// At the end, the current interval runs on to the ack.
				if !now.Before(end) {
					last = true
				} else if !now.Before(next) {
					interval(now)
					for !next.After(now) {
						next = next.Add(step)
					}
				}
			}
		}
		if dur == 0 && msgs+1 == iters {
			last = true
		}
		if last {
			buf[0] = markEnd
		}
		if err := c.write(buf); err != nil {
			buf[0] = markData
			return nil, nil, r.ioErr("send", err)
		}
		msgs++
		ivMsgs++
	}
	buf[0] = markData
	bytes := msgs * uint64(size)
	if err := c.readAck(bytes); err != nil {
		return nil, nil, r.ioErr("read ack", err)
	}
	done := time.Now()
	if dur > 0 {
		interval(done)
	}
	return report.NewBandwidth(bytes, msgs, done.Sub(start)), ivs, nil
}

// recvStream receives tcp-bw messages on c, acking each marked message,
// until the end-of-test message. It returns the measured messages.
func (r *tcpRun) recvStream(c *tcpConn, size int) (uint64, error) {
	buf := r.rbuf
	var ack [8]byte
	var pos int
	var mark byte
	var bytes, msgs uint64 // since the last ack
	c.armed = time.Time{}
	for now := time.Now(); ; now = time.Now() {
		if err := c.arm(now); err != nil {
			return msgs, r.ioErr("receive", err)
		}
		k, rerr := c.c.Read(buf)
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
			bytes, msgs = 0, 0 // the end of the warm-up
		}
		if rerr != nil {
			return msgs, r.ioErr("receive", rerr)
		}
	}
}

// together runs a and b at once (the two directions of a bidirectional
// test). When one fails, the connections are closed so that the other
// returns too; the first error is returned.
func (r *tcpRun) together(a, b func() error) error {
	var mu sync.Mutex
	var first error
	run := func(f func() error) {
		if err := f(); err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
			r.cl.closeAll()
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		run(b)
	}()
	run(a)
	wg.Wait()
	return first
}

// ioErr says what a failed network operation means.
func (r *tcpRun) ioErr(op string, err error) error {
	switch {
	case r.ctx.Err() != nil:
		return fmt.Errorf("%s: %w", op, r.ctx.Err())
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%s: no progress for %s (idle timeout): %w", op, r.idle, err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("%s: %w: %w", op, errPeerClosed, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// fail makes sure the peer learns about err, and returns the error to
// report: a failure the peer reported is not told back; when the peer
// closed the connection, its reason (sent over the Link before it closed)
// is waited for a little and returned instead; otherwise err is told.
func (r *tcpRun) fail(ph string, err error) error {
	var pe *PeerError
	if errors.As(err, &pe) || r.ctx.Err() != nil {
		return err
	}
	if errors.Is(err, errPeerClosed) {
		// The peer has ended: nothing waits on us, but it may have told why.
		ctx, cancel := context.WithTimeout(r.ctx, min(r.idle, tcpPeerWait))
		perr := r.link.Exchange(ctx, ph, nil, nil)
		cancel()
		if errors.As(perr, &pe) {
			return perr
		}
		return err
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.idle)
	_ = r.link.Exchange(ctx, ph, Fail(err), nil)
	cancel()
	return err
}

// tcpConn is a connection with an idle deadline, re-armed lazily: arm sets
// it only when a quarter of the idle timeout has passed since it was last
// set, so that a hot loop rarely touches the poller's timer.
type tcpConn struct {
	c     *net.TCPConn
	idle  time.Duration
	armed time.Time // when the deadline was last set; zero forces arm
}

func (c *tcpConn) arm(now time.Time) error {
	if !c.armed.IsZero() && now.Sub(c.armed) < c.idle/4 {
		return nil
	}
	c.armed = now
	return c.c.SetDeadline(now.Add(c.idle))
}

// write writes b, in chunks that each re-arm the deadline.
func (c *tcpConn) write(b []byte) error {
	for len(b) > tcpIOChunk {
		if _, err := c.c.Write(b[:tcpIOChunk]); err != nil {
			return err
		}
		b = b[tcpIOChunk:]
		if err := c.arm(time.Now()); err != nil {
			return err
		}
	}
	_, err := c.c.Write(b)
	return err
}

// readFull reads exactly len(b) bytes, in chunks that each re-arm the
// deadline.
func (c *tcpConn) readFull(b []byte) error {
	for len(b) > tcpIOChunk {
		if _, err := io.ReadFull(c.c, b[:tcpIOChunk]); err != nil {
			return err
		}
		b = b[tcpIOChunk:]
		if err := c.arm(time.Now()); err != nil {
			return err
		}
	}
	_, err := io.ReadFull(c.c, b)
	return err
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
