package workloads

import (
	"context"
	"encoding/json"
	"fmt"
)

// Server runs the server end of the tests clients send (`rdmabench serve`):
// pkg/control carries the spec and the exchanges, Server decides and runs.
type Server struct {
	// Device is the RDMA device tests run on, unless a client names one
	// (Spec.ServerDevice); empty means the first.
	Device string
	// MaxMem caps the memory a test may register or allocate here; 0 means
	// no cap.
	MaxMem uint64
	// ListenHost is the address TCP tests listen on (the control
	// listener's); empty means every address.
	ListenHost string
	// UDProbe, when set, is this host's UD probe (an agent's): a client
	// that asks (Spec.Keep with send-lat over UD) learns its endpoint.
	UDProbe *UDProbe
}

// ServerTest is a test a Server accepted: its spec, decoded and normalized
// once.
type ServerTest struct {
	srv  *Server
	spec Spec
}

// Accept decodes and checks a client's spec before the test runs: a
// malformed or invalid spec is an error, and so is a test that needs more
// memory than the cap or than this host has (wrapping ErrOverLimit).
func (sv *Server) Accept(raw json.RawMessage) (*ServerTest, error) {
	var s Spec
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("malformed test spec: %w", err)
	}
	if err := s.Normalize(); err != nil {
		return nil, err
	}
	if err := s.checkMemory(sv.MaxMem, 1, true); err != nil {
		return nil, err
	}
	if err := s.checkGPU(); err != nil {
		return nil, err
	}
	return &ServerTest{srv: sv, spec: s}, nil
}

// Name is the test's name, for logs.
func (t *ServerTest) Name() string { return t.spec.Test }

// Run runs the test's server end, exchanging with the client through tr.
func (t *ServerTest) Run(ctx context.Context, tr Transport) error {
	if t.spec.udProbe() {
		return t.sendUDProbe(ctx, tr)
	}
	if t.spec.Keep && t.spec.Info().IsRDMA() {
		return t.runKeptRDMA(ctx, tr)
	}
	if t.spec.Keep {
		return t.runKept(ctx, tr)
	}
	o := endOptions{device: t.srv.Device, maxMem: t.srv.MaxMem, listenHost: t.srv.ListenHost}
	if t.spec.ServerDevice != "" {
		o.device = t.spec.ServerDevice
	}
	_, err := runSide(ctx, &t.spec, serverEnd, tr, o)
	return err
}
