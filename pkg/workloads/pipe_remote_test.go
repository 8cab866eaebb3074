package workloads

import (
	"context"
	"encoding/json"
)

// pipeRemote is a Remote whose server end is a workloads Server in this
// process, joined by an in-process transport: the path a test takes
// through `rdmabench serve`, without the control protocol (which carries
// the exchanges as opaque messages).
type pipeRemote struct{ srv *Server }

func (p pipeRemote) Version() string { return "test" }

func (p pipeRemote) Start(ctx context.Context, _ string, spec json.RawMessage) (RemoteTest, error) {
	st, err := p.srv.Accept(spec)
	if err != nil {
		return nil, err
	}
	ab, ba := make(chan []byte, 1), make(chan []byte, 1)
	clientGone, serverGone := make(chan struct{}), make(chan struct{})
	rt := &pipeTest{chanTransport: chanTransport{send: ab, recv: ba, peerGone: serverGone}, lost: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		err := st.Run(ctx, &chanTransport{send: ba, recv: ab, peerGone: clientGone})
		close(serverGone)
		rt.done <- err
	}()
	rt.hangup = func() { close(clientGone) }
	return rt, nil
}

type pipeTest struct {
	chanTransport
	lost   chan struct{}
	done   chan error
	hangup func()
}

func (p *pipeTest) Lost() <-chan struct{} { return p.lost }
func (p *pipeTest) LostErr() error        { return nil }
func (p *pipeTest) Finish(ctx context.Context) error {
	p.hangup()
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
