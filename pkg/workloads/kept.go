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
	"time"
)

// KeptFeature is the feature a server's hello names when it keeps probe
// sessions (Spec.Keep): a server without it would run a kept spec as an
// ordinary test, so a client asks only a server that names it.
const KeptFeature = "kept"

// MaxKeptSize is the largest message of a kept probe session: its
// buffers are kept as long as the session.
const MaxKeptSize = 64 << 10

// DefaultKeptWarmup is the warm-up of a kept session, once after its
// setup, when the spec leaves it to the default.
const DefaultKeptWarmup = 10

// keepProblem says what makes s no kept probe session ("" when it is one).
func (s *Spec) keepProblem() string {
	if s.udProbe() {
		return ""
	}
	switch {
	case KeptFeatureOf(s.Test) == "":
		return fmt.Sprintf("a kept probe session is a latency test (tcp-lat, write-lat, read-lat, send-lat or atomic-lat), not %s", s.Test)
	case s.Test != "tcp-lat" && s.Connection != "RC":
		return fmt.Sprintf("a kept %s session runs over RC, not %s (over UD, send-lat's is the server's UD probe)", s.Test, s.Connection)
	case len(s.Sizes) != 1:
		return "a kept probe session is one message size"
	case s.Sizes[0] > MaxKeptSize:
		return fmt.Sprintf("a kept probe session's message is at most %d bytes, not %d", MaxKeptSize, s.Sizes[0])
	case s.Duration > 0 || s.Precision > 0 || s.Load != nil || s.Threads > 1 || s.QPs > 1:
		return "a kept probe session runs bursts of ping-pongs: no duration, precision, load, threads or QPs"
	case s.Test != "tcp-lat" && (s.CheckData || s.RDMACM || (s.Mem != "" && s.Mem != "host") || s.ODP || s.Bidirectional || s.Events):
		return fmt.Sprintf("a kept %s session runs on host memory registered as usual, connected without rdma_cm, polled (no -e), with no data check", s.Test)
	}
	return ""
}

// keptLast marks the last message of a burst (its first byte; the others
// are 0): the server then waits for the next burst in Go's poller at once,
// where it holds nothing (keptConn). A server that does not know it echoes
// it; a client that does not send it costs the server keptDirect after each
// burst.
const keptLast = 1

// keptSetup is what the server of a kept session sends first: the TCP
// port it listens on and the token the client's connection presents.
type keptSetup struct {
	Port  int    `json:"port"`
	Token uint64 `json:"token"`
}

// runKept is the server end of a kept probe session: it listens, sends
// the port and a token, accepts the one connection that presents the
// token and echoes each message until the client closes it (the session's
// end: nil) or ctx ends (the control connection is lost or the server
// stops). It holds one goroutine, one socket and one buffer of the
// message size while it lasts.
func (t *ServerTest) runKept(ctx context.Context, tr Transport) error {
	s := &t.spec
	idle := s.IdleTimeout
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(t.srv.ListenHost, "0"))
	if err != nil {
		return fmt.Errorf("tcp listen: %w", err)
	}
	defer ln.Close()
	stopLn := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stopLn()
	var tb [8]byte
	if _, err := rand.Read(tb[:]); err != nil {
		return fmt.Errorf("tcp token: %w", err)
	}
	token := binary.BigEndian.Uint64(tb[:])
	body, _ := json.Marshal(keptSetup{Port: ln.Addr().(*net.TCPAddr).Port, Token: token})
	if err := tr.Send(ctx, body); err != nil {
		return err
	}
	tl := ln.(*net.TCPListener)
	deadline := time.Now().Add(idle)
	_ = tl.SetDeadline(deadline)
	var c *net.TCPConn
	for c == nil {
		nc, err := tl.AcceptTCP()
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return fmt.Errorf("tcp accept: the client did not connect within %s: %w", idle, err)
			}
			return fmt.Errorf("tcp accept: %w", err)
		}
		_ = nc.SetReadDeadline(minTime(deadline, time.Now().Add(tcpTokenWait)))
		var got [8]byte
		if _, err := io.ReadFull(nc, got[:]); err != nil || binary.BigEndian.Uint64(got[:]) != token {
			_ = nc.Close() // a stray connection
			continue
		}
		c = nc
	}
	_ = ln.Close()
	if err := c.SetNoDelay(true); err != nil {
		_ = c.Close()
		return fmt.Errorf("tcp: set TCP_NODELAY: %w", err)
	}
	kc, err := newKeptConn(c)
	if err != nil {
		_ = c.Close()
		return fmt.Errorf("tcp: %w", err)
	}
	defer kc.release()
	stop := context.AfterFunc(ctx, func() { _ = kc.Close() })
	defer stop()
	defer kc.Close()
	// No deadline: the session lasts while the control connection does
	// (its keepalives find a silent client) and the client keeps it.
	buf := make([]byte, s.Sizes[0])
	for {
		// After a burst's last message (keptLast: the client says so), the
		// next waits in Go's poller at once.
		if err := kc.readFull(buf, time.Time{}, buf[0] != keptLast); err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return nil // the session ended
			}
			return fmt.Errorf("kept session: read: %w", err)
		}
		if err := kc.write(buf, time.Time{}); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("kept session: write: %w", err)
		}
	}
}

// Kept is the client end of a kept probe session: one test's setup (its
// spec to the server, the server's socket and a connection to it, or
// both ends' QPs, a warm-up) done once, and then any number of bursts of
// ping-pongs over the same connection. It is not safe for concurrent use.
type Kept struct {
	rt   RemoteTest
	kc   *keptConn       // tcp-lat's
	rdma *keptRDMAClient // an RDMA test's
	buf  []byte
	half bool // samples are half the round trip (the test's basis, rtt_half)
	slow func()
}

// OpenKept opens a kept probe session of spec (a tcp-lat spec, or an RDMA
// latency test over RC; Keep is set here) on target's server, which must
// name the test's feature in its hello (KeptFeatureOf): the caller
// checks. It returns after the warm-up.
func OpenKept(ctx context.Context, target Target, spec Spec) (*Kept, error) {
	if target.Remote == nil {
		return nil, errors.New("a kept probe session runs against a server")
	}
	spec.Keep = true
	if err := spec.Normalize(); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(&spec)
	if err != nil {
		return nil, err
	}
	rt, err := target.Remote.Start(ctx, spec.Test, raw)
	if err != nil {
		return nil, err
	}
	k := &Kept{rt: rt, buf: make([]byte, spec.Sizes[0]), half: spec.Info().Basis == "rtt_half"}
	fail := func(err error) (*Kept, error) {
		k.abort()
		return nil, err
	}
	warm := DefaultKeptWarmup
	if spec.Warmup != nil {
		warm = *spec.Warmup
	}
	if spec.Info().IsRDMA() {
		if k.rdma, err = openKeptRDMAClient(ctx, rt, &spec, warm); err != nil {
			return fail(err)
		}
		return k, nil
	}
	body, err := rt.Recv(ctx)
	if err != nil {
		return fail(err)
	}
	var srv keptSetup
	if err := json.Unmarshal(body, &srv); err != nil {
		return fail(fmt.Errorf("the server's kept session setup: %w", err))
	}
	if srv.Port < 1 || srv.Port > 65535 {
		return fail(fmt.Errorf("the server gave an invalid TCP port %d", srv.Port))
	}
	addr := net.JoinHostPort(dialHost(target.Host), strconv.Itoa(srv.Port))
	d := net.Dialer{Timeout: spec.IdleTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fail(fmt.Errorf("tcp dial %s: %w", addr, err))
	}
	c := nc.(*net.TCPConn)
	if err := c.SetNoDelay(true); err != nil {
		_ = c.Close()
		return fail(fmt.Errorf("tcp: set TCP_NODELAY: %w", err))
	}
	if k.kc, err = newKeptConn(c); err != nil {
		_ = c.Close()
		return fail(fmt.Errorf("tcp: %w", err))
	}
	var tb [8]byte
	binary.BigEndian.PutUint64(tb[:], srv.Token)
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(spec.IdleTimeout)
	}
	if err := k.kc.write(tb[:], dl); err != nil {
		return fail(fmt.Errorf("tcp connect %s: %w", addr, err))
	}
	for i := range warm {
		if err := k.pingPong(dl, i == warm-1); err != nil {
			return fail(fmt.Errorf("kept session warm-up: %w", err))
		}
	}
	return k, nil
}

// pingPong sends one message, the last of a burst when last, and reads
// its echo, by deadline.
func (k *Kept) pingPong(deadline time.Time, last bool) error {
	k.buf[0] = 0
	if last {
		k.buf[0] = keptLast
	}
	if err := k.kc.write(k.buf, deadline); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	if err := k.kc.readFull(k.buf, deadline, true); err != nil {
		return fmt.Errorf("receive: %w", err)
	}
	return nil
}

// OnSlow sets f (nil: none) to be called before a burst's wait that may
// be longer than a ping-pong's quick answer: tcp-lat's in Go's poller (on
// Linux: no answer within keptDirect, or no direct wait free; elsewhere
// every wait), an RDMA burst before it starts. A caller that paces
// bursts (the agent's probers, one of which waits for the next slot while
// the others probe) hands the pacing on there, so that a slow peer does
// not hold it. Not during a Burst.
func (k *Kept) OnSlow(f func()) {
	k.slow = f
	if k.kc != nil {
		k.kc.slow = f
	}
}

// Burst runs len(samples) ping-pongs, each sample its latency in ns on
// the test's basis (Go's monotonic clock), all done by deadline. The loop
// allocates nothing, takes no lock and makes no cgo call; while the
// server answers within keptDirect it does not go through Go's scheduler
// either (keptConn). An error leaves the session unusable: Close it.
func (k *Kept) Burst(deadline time.Time, samples []uint64) error {
	if k.rdma != nil {
		return k.burstRDMA(deadline, samples)
	}
	for i := range samples {
		t0 := time.Now()
		if err := k.pingPong(deadline, i == len(samples)-1); err != nil {
			return fmt.Errorf("kept session: %w", err)
		}
		ns := uint64(time.Since(t0))
		if k.half {
			ns /= 2
		}
		samples[i] = ns
	}
	return nil
}

// burstRDMA is Burst of a kept RDMA session: a ping-pong's burst announced
// to the server by deadline, then its samples in one call of the test's
// timed loop (which gives up after the spec's idle timeout of no answer).
func (k *Kept) burstRDMA(deadline time.Time, samples []uint64) error {
	if k.slow != nil {
		k.slow()
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := k.rdma.burst(ctx, samples); err != nil {
		return fmt.Errorf("kept session: %w", err)
	}
	if k.half {
		for i := range samples {
			samples[i] /= 2
		}
	}
	return nil
}

// Lost is closed when the server's control connection is lost; LostErr
// says why.
func (k *Kept) Lost() <-chan struct{} { return k.rt.Lost() }

// LostErr is why the session's control connection was lost.
func (k *Kept) LostErr() error { return k.rt.LostErr() }

// Close ends the session: the connection closed, the server's end waited
// for (until ctx ends), its error returned.
func (k *Kept) Close(ctx context.Context) error {
	if k.rdma != nil {
		k.rdma.end(ctx)
		k.rdma = nil
	}
	if k.kc != nil {
		_ = k.kc.Close()
		k.kc.release()
	}
	return k.rt.Finish(ctx)
}

// abort ends a session whose setup failed, not waiting long for the
// server.
func (k *Kept) abort() {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = k.Close(ctx)
}
