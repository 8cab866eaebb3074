package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// A mesh is many rdmabench processes (ranks) measuring each other, driven
// by one of them, the coordinator. Ranks join it over this protocol, with
// the same handshake as a test (versions, then the token's proof):
//
//	rank -> coordinator         {"type":"register","data":{...the rank...}}
//	coordinator -> rank         {"type":"accepted"}  or  {"type":"error","code":"spec","message":"..."} and close
//
// then, any number of times, one at a time:
//
//	coordinator -> rank         {"type":"job","id":N,"data":{...}}
//	rank -> coordinator         {"type":"job_done","id":N,"data":{...}}  or  {"type":"job_done","id":N,"error":"..."}
//
// and at the end the coordinator sends {"type":"done"} and bye. Pings keep
// both ends alive meanwhile, so a rank that dies or goes silent is seen
// within the timeout, and so is a coordinator that does. The package leaves
// what the data mean to its user (pkg/mesh).

// ErrMeshDone is what Membership.Next returns once the coordinator said the
// mesh is over.
var ErrMeshDone = errors.New("the coordinator ended the mesh")

// MeshServerOptions configure a MeshServer.
type MeshServerOptions struct {
	// Token, when set, is required of ranks (as an HMAC of a nonce).
	Token string
	// Timeout bounds every read and write, the handshake, and how long a
	// rank may stay silent (default 10s).
	Timeout time.Duration
	// Keepalive is the interval between pings (default 1s).
	Keepalive time.Duration
	// MaxFrame is the largest frame accepted and sent (default 1 MiB).
	MaxFrame int
	// Log, when set, gets a line per refused connection.
	Log io.Writer
	// Register decides on a rank that registers: its error refuses the
	// rank (code "spec") and closes its connection. Nil accepts every one.
	// It may keep the Member: jobs are run on it.
	Register func(m *Member) error
}

// MeshServer is the protocol's end of a mesh at its coordinator (rank 0):
// it accepts the ranks' registrations and gives them jobs (Member.Run);
// what the jobs are, and when, is the caller's (pkg/mesh schedules them).
type MeshServer struct {
	opt MeshServerOptions
	srv *Server // for the handshake and the log

	mu      sync.Mutex
	members []*Member
}

// NewMeshServer returns a MeshServer with opt.
func NewMeshServer(opt MeshServerOptions) *MeshServer {
	opt.Timeout, opt.Keepalive = timings(opt.Timeout, opt.Keepalive)
	opt.MaxFrame = maxOrDefault(opt.MaxFrame)
	host, _ := os.Hostname()
	srv := &Server{opt: ServerOptions{Token: opt.Token, Timeout: opt.Timeout, Keepalive: opt.Keepalive,
		MaxFrame: opt.MaxFrame, Log: opt.Log}, hostname: host}
	return &MeshServer{opt: opt, srv: srv}
}

// Serve accepts ranks on ln until ctx ends, then closes ln and every
// member still open (telling each the mesh is over) and returns nil. It
// returns an error only when accepting fails for good.
func (c *MeshServer) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		c.mu.Lock()
		ms := c.members
		c.members = nil
		c.mu.Unlock()
		for _, m := range ms {
			m.Close()
		}
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if te, ok := err.(interface{ Temporary() bool }); ok && te.Temporary() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.handle(ctx, conn)
		}()
	}
}

// handle does the handshake and the registration of one rank.
func (c *MeshServer) handle(ctx context.Context, conn net.Conn) {
	addr := conn.RemoteAddr().String()
	p := newPeer(conn, "rank at "+addr, "the rank stopped", c.opt.Timeout, c.opt.Keepalive, c.opt.MaxFrame)
	if code, err := c.srv.handshake(ctx, p); err != nil {
		if ctx.Err() == nil {
			c.srv.logf("%s refused %s: %v", addr, orDash(code), err)
		}
		if code != "" {
			c.srv.refuse(conn, code, err.Error())
		} else {
			_ = conn.Close()
		}
		return
	}
	p.start()
	rctx, cancel := context.WithTimeout(ctx, c.opt.Timeout)
	m, err := p.next(rctx)
	cancel()
	if err != nil {
		c.srv.logf("%s dropped before registering: %v", addr, err)
		p.close()
		return
	}
	if m.Type != TypeRegister {
		msg := fmt.Sprintf("expected register, got %s (is this a mesh coordinator's port?)", m.Type)
		c.srv.logf("%s refused %s: %s", addr, CodeProtocol, msg)
		_ = p.write(ctx, &Message{Type: TypeError, Code: CodeProtocol, Msg: msg})
		p.shutdown()
		linger(conn, c.srv.lingerTime())
		return
	}
	mem := &Member{p: p, addr: addr, local: conn.LocalAddr().String(), data: m.Data,
		replies: make(map[uint64]chan *Message), accepted: make(chan struct{})}
	defer close(mem.accepted)
	if c.opt.Register != nil {
		if err := c.opt.Register(mem); err != nil {
			c.srv.logf("%s refused %s: %v", addr, CodeSpec, err)
			_ = p.write(ctx, &Message{Type: TypeError, Code: CodeSpec, Msg: err.Error()})
			p.shutdown()
			linger(conn, c.srv.lingerTime())
			return
		}
	}
	// Registered, the rank is the coordinator's: it is accepted even when
	// Register's owner ends the mesh at once (the registration that
	// completed the mesh may be the one that made it fail), so that it is
	// told the mesh is over rather than dropped.
	if err := p.write(context.WithoutCancel(ctx), &Message{Type: TypeAccepted}); err != nil {
		p.close()
		return
	}
	c.mu.Lock()
	c.members = append(c.members, mem)
	c.mu.Unlock()
	go mem.dispatch()
}

// Member is a rank registered with a MeshServer: the coordinator's end of
// its connection.
type Member struct {
	p     *peer
	addr  string
	local string
	data  json.RawMessage

	// accepted is closed once the rank was told it is registered (or its
	// registration failed): no job goes before that word.
	accepted chan struct{}

	mu        sync.Mutex
	nextID    uint64
	replies   map[uint64]chan *Message
	closeOnce sync.Once
}

// Data is what the rank registered with.
func (m *Member) Data() json.RawMessage { return m.data }

// Addr is the rank's address, as the coordinator sees the connection.
func (m *Member) Addr() string { return m.addr }

// LocalAddr is the coordinator's address the rank reached.
func (m *Member) LocalAddr() string { return m.local }

// Lost is closed when the connection to the rank fails (it died, went
// silent past the timeout, broke the protocol) or was closed; Err says
// why.
func (m *Member) Lost() <-chan struct{} { return m.p.dead }

// Err says why the connection failed, once Lost is closed.
func (m *Member) Err() error {
	select {
	case <-m.p.dead:
		return m.p.err
	default:
		return nil
	}
}

// dispatch hands every frame of the rank to the job waiting for it; any
// other frame fails the connection.
func (m *Member) dispatch() {
	for {
		f, err := m.p.next(context.Background())
		if err != nil {
			return // dead: the waiting jobs see it
		}
		switch f.Type {
		case TypeJobDone:
			m.mu.Lock()
			ch := m.replies[f.ID]
			delete(m.replies, f.ID)
			m.mu.Unlock()
			if ch != nil {
				ch <- f
				continue
			}
			m.fail(fmt.Errorf("%w: %s answered job %d, which it was not given", ErrProtocol, m.p.name, f.ID))
		case TypeError:
			m.fail(fmt.Errorf("%s failed: %s", m.p.name, f.Msg))
		default:
			_ = m.p.write(context.Background(), &Message{Type: TypeError, Code: CodeProtocol, Msg: fmt.Sprintf("unexpected %q frame", f.Type)})
			m.fail(fmt.Errorf("%w: %s sent %q", ErrProtocol, m.p.name, f.Type))
		}
		if m.Err() != nil {
			return
		}
	}
}

func (m *Member) fail(err error) {
	m.p.fail(err)
	m.p.close()
}

// JobError is a job the rank ran and reports as failed.
type JobError struct {
	Rank string // the rank's address
	Msg  string
}

func (e *JobError) Error() string { return e.Msg }

// Run gives the rank a job (data, any JSON value) and waits for its
// outcome: the rank's data, or a *JobError when it reports a failure, or
// the connection's error when the rank is lost. A ctx that ends first
// (a deadline) fails the connection: the rank cannot be trusted with
// another job while it may still run this one.
func (m *Member) Run(ctx context.Context, data json.RawMessage) (json.RawMessage, error) {
	ch := make(chan *Message, 1)
	m.mu.Lock()
	m.nextID++
	id := m.nextID
	m.replies[id] = ch
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.replies, id)
		m.mu.Unlock()
	}()
	select {
	case <-m.accepted:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if err := m.p.write(ctx, &Message{Type: TypeJob, ID: id, Data: data}); err != nil {
		if ctx.Err() != nil {
			m.fail(context.Cause(ctx))
		}
		return nil, while(err, "sending a job")
	}
	select {
	case f := <-ch:
		if f.Err != "" {
			return f.Data, &JobError{Rank: m.addr, Msg: f.Err}
		}
		return f.Data, nil
	case <-m.p.dead:
		select {
		case f := <-ch: // answered just before the connection went
			if f.Err != "" {
				return f.Data, &JobError{Rank: m.addr, Msg: f.Err}
			}
			return f.Data, nil
		default:
		}
		return nil, while(m.p.err, "waiting for a job's outcome")
	case <-ctx.Done():
		err := context.Cause(ctx)
		m.fail(fmt.Errorf("%s did not finish a job in time: %w", m.p.name, err))
		return nil, err
	}
}

// Close tells the rank the mesh is over and closes the connection.
func (m *Member) Close() {
	m.closeOnce.Do(func() {
		if m.Err() == nil {
			_ = m.p.write(context.Background(), &Message{Type: TypeDone})
			_ = m.p.write(context.Background(), &Message{Type: TypeBye})
		}
		m.p.shutdown()
		linger(m.p.conn, min(m.p.timeout, time.Second))
	})
}

// Membership is a rank's registration with a coordinator: it receives
// jobs, one at a time, until the coordinator ends the mesh.
type Membership struct {
	c *Client
}

// Join connects to the coordinator at addr, does the handshake (with the
// token, if the coordinator requires one) and registers with data (a JSON
// object describing the rank). A refusal is a *ServerError.
func Join(ctx context.Context, addr string, opt ClientOptions, data json.RawMessage) (*Membership, error) {
	c, err := Dial(ctx, addr, opt)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Membership, error) {
		c.breakWith(err)
		_ = c.Close()
		return nil, err
	}
	if err := c.p.write(ctx, &Message{Type: TypeRegister, Data: data}); err != nil {
		return fail(while(err, "registering"))
	}
	wctx, cancel := context.WithTimeout(ctx, 2*c.opt.Timeout)
	m, err := c.p.next(wctx)
	cancel()
	if err != nil {
		return fail(while(err, "waiting for the coordinator to accept the rank"))
	}
	switch m.Type {
	case TypeAccepted:
		return &Membership{c: c}, nil
	case TypeError:
		se := c.serverError(m)
		if se.Code == CodeProtocol {
			se.Msg += " (is it a mesh coordinator, rank 0's --coordinator port, rather than a test server?)"
		}
		return fail(se)
	}
	return fail(fmt.Errorf("%w: coordinator %s sent %q after register", ErrProtocol, addr, m.Type))
}

// Coordinator tells what the coordinator said about itself.
func (ms *Membership) Coordinator() ServerInfo { return ms.c.info }

// LocalAddr is this end's address of the connection: the address the
// coordinator's host reaches this one at.
func (ms *Membership) LocalAddr() string { return ms.c.p.conn.LocalAddr().String() }

// Job is work the coordinator gave this rank.
type Job struct {
	ID   uint64
	Data json.RawMessage
	ms   *Membership
}

// Next waits for the next job. It returns ErrMeshDone when the coordinator
// ended the mesh, and the connection's error when it was lost.
func (ms *Membership) Next(ctx context.Context) (*Job, error) {
	m, err := ms.c.p.next(ctx)
	if err != nil {
		return nil, while(err, "waiting for the coordinator")
	}
	switch m.Type {
	case TypeJob:
		return &Job{ID: m.ID, Data: m.Data, ms: ms}, nil
	case TypeDone:
		ms.c.breakWith(ErrMeshDone)
		return nil, ErrMeshDone
	case TypeError:
		se := ms.c.serverError(m)
		ms.c.breakWith(se)
		return nil, se
	}
	return nil, ms.c.unexpected(m, "a job")
}

// Reply sends the job's outcome: data (any JSON value, may be nil) or, when
// err is not nil, its message.
func (j *Job) Reply(ctx context.Context, data json.RawMessage, err error) error {
	m := &Message{Type: TypeJobDone, ID: j.ID, Data: data}
	if err != nil {
		m.Err = err.Error()
		if m.Err == "" {
			m.Err = "failed"
		}
	}
	return j.ms.c.p.write(ctx, m)
}

// Lost is closed when the connection to the coordinator fails.
func (ms *Membership) Lost() <-chan struct{} { return ms.c.p.dead }

// Close leaves the mesh: the connection is closed.
func (ms *Membership) Close() error { return ms.c.Close() }
