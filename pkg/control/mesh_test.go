package control

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// startMeshServer serves a MeshServer on a loopback port until the test
// ends; registered members arrive on the returned channel.
func startMeshServer(t *testing.T, opt MeshServerOptions) (string, <-chan *Member) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	members := make(chan *Member, 16)
	register := opt.Register
	opt.Register = func(m *Member) error {
		if register != nil {
			if err := register(m); err != nil {
				return err
			}
		}
		members <- m
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewMeshServer(opt).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String(), members
}

func TestMeshJobs(t *testing.T) {
	noLeaks(t)
	addr, members := startMeshServer(t, MeshServerOptions{Token: "s3cret"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// The rank: answers each job with its data doubled, fails job "fail".
	ms, err := Join(ctx, addr, ClientOptions{Token: "s3cret"}, json.RawMessage(`{"rank":1}`))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var rankErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			j, err := ms.Next(ctx)
			if err != nil {
				rankErr = err
				return
			}
			if string(j.Data) == `"fail"` {
				_ = j.Reply(ctx, nil, errors.New("the peer is gone"))
				continue
			}
			_ = j.Reply(ctx, json.RawMessage(`[`+string(j.Data)+`,`+string(j.Data)+`]`), nil)
		}
	}()

	m := <-members
	if got := string(m.Data()); got != `{"rank":1}` {
		t.Errorf("registered data %s", got)
	}
	out, err := m.Run(ctx, json.RawMessage(`7`))
	if err != nil || string(out) != `[7,7]` {
		t.Errorf("job: %s, %v", out, err)
	}
	_, err = m.Run(ctx, json.RawMessage(`"fail"`))
	var je *JobError
	if !errors.As(err, &je) || je.Msg != "the peer is gone" {
		t.Errorf("failed job: %v", err)
	}
	out, err = m.Run(ctx, json.RawMessage(`{"a":1}`))
	if err != nil || string(out) != `[{"a":1},{"a":1}]` {
		t.Errorf("job after a failed one: %s, %v", out, err)
	}
	m.Close()
	wg.Wait()
	if !errors.Is(rankErr, ErrMeshDone) {
		t.Errorf("the rank's Next after the end: %v, want ErrMeshDone", rankErr)
	}
}

func TestMeshWrongToken(t *testing.T) {
	addr, _ := startMeshServer(t, MeshServerOptions{Token: "right"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Join(ctx, addr, ClientOptions{Token: "wrong"}, json.RawMessage(`{}`))
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("Join with a wrong token: %v, want ErrAuth", err)
	}
}

func TestMeshRegisterRefused(t *testing.T) {
	addr, _ := startMeshServer(t, MeshServerOptions{Register: func(m *Member) error {
		return errors.New("rank 1 is already registered")
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Join(ctx, addr, ClientOptions{}, json.RawMessage(`{}`))
	var se *ServerError
	if !errors.As(err, &se) || se.Code != CodeSpec || !strings.Contains(se.Msg, "already registered") {
		t.Fatalf("Join refused: %v", err)
	}
}

// The registration that completes a mesh may be the one that ends it (rank
// 0 refuses the mesh it makes): the rank is still accepted, then told the
// mesh is over, never dropped. A job given it waits for its acceptance.
func TestMeshEndsOnRegistration(t *testing.T) {
	noLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, end := context.WithCancel(context.Background())
	defer end()
	served := make(chan error, 1)
	go func() {
		served <- NewMeshServer(MeshServerOptions{Register: func(*Member) error {
			end()
			return nil
		}}).Serve(sctx, ln)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ms, err := Join(ctx, ln.Addr().String(), ClientOptions{}, json.RawMessage(`{"rank":1}`))
	if err != nil {
		t.Fatalf("Join: %v, want accepted", err)
	}
	defer ms.Close()
	if _, err := ms.Next(ctx); !errors.Is(err, ErrMeshDone) {
		t.Errorf("Next: %v, want ErrMeshDone", err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// A rank that dies mid-job: the coordinator's Run returns at once with the
// connection's error, and Lost is closed.
func TestMeshRankDies(t *testing.T) {
	addr, members := startMeshServer(t, MeshServerOptions{Timeout: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ms, err := Join(ctx, addr, ClientOptions{Timeout: 2 * time.Second}, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if _, err := ms.Next(ctx); err == nil {
			_ = ms.c.p.conn.Close() // dies with the job in hand
		}
	}()
	m := <-members
	start := time.Now()
	_, err = m.Run(ctx, json.RawMessage(`1`))
	if err == nil || !errors.Is(err, ErrPeerClosed) {
		t.Errorf("Run on a rank that died: %v, want ErrPeerClosed", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %v to see the rank die", d)
	}
	select {
	case <-m.Lost():
	case <-time.After(5 * time.Second):
		t.Error("Lost not closed")
	}
}

// A job past its deadline fails the rank's connection: it is not trusted
// with another job.
func TestMeshJobDeadline(t *testing.T) {
	addr, members := startMeshServer(t, MeshServerOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ms, err := Join(ctx, addr, ClientOptions{}, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	go func() { _, _ = ms.Next(ctx) }() // takes the job, never answers
	m := <-members
	jctx, jcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer jcancel()
	if _, err := m.Run(jctx, json.RawMessage(`1`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run past its deadline: %v", err)
	}
	select {
	case <-m.Lost():
	case <-time.After(5 * time.Second):
		t.Error("the rank's connection is still up after a job missed its deadline")
	}
}

// A test server is not a coordinator: registering there is a protocol
// error naming what went wrong.
func TestMeshJoinPlainServer(t *testing.T) {
	ts := startServer(t, newEcho(), serverOpts())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Join(ctx, ts.addr, clientOpts(), json.RawMessage(`{}`))
	var se *ServerError
	if !errors.As(err, &se) || se.Code != CodeProtocol || !strings.Contains(err.Error(), "mesh coordinator") {
		t.Fatalf("Join on a test server: %v, want a protocol error", err)
	}
}
