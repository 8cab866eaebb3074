// Package remote joins pkg/workloads to pkg/control: the two ends of a
// test that runs across hosts, as the commands and every rank of a mesh
// use them. Serve runs a workloads.Server's tests for the clients of a
// control listener (`rdmabench serve`, each rank's test server); Dial
// reaches such a server as the Target of a run (`rdmabench TEST HOST`,
// each link of a mesh); Token is the shared token both ends are given,
// from a flag or the environment.
//
// It knows no command and holds no state: cmd/rdmabench and pkg/mesh sit
// above it, pkg/control and pkg/workloads below.
package remote

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"slices"

	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// EnvToken holds the shared token when --token is not given.
const EnvToken = "RDMABENCH_TOKEN"

// Token is the token given, or $RDMABENCH_TOKEN when none is.
func Token(given string) string {
	if given == "" {
		return os.Getenv(EnvToken)
	}
	return given
}

// Serve serves srv's tests, over the control protocol, to the clients
// that connect to ln until ctx ends, as control.Server.Serve does; srv's
// TCP tests listen on ln's host.
func Serve(ctx context.Context, ln net.Listener, srv *workloads.Server, opt control.ServerOptions) error {
	srv.ListenHost, _, _ = net.SplitHostPort(ln.Addr().String())
	// The workloads Server keeps probe sessions (Spec.Keep), where it
	// runs several tests at once: a server of one test at a time would be
	// held by one kept session, busy to every other test.
	if opt.MaxTests > 1 {
		opt.Features = append(slices.Clip(opt.Features), workloads.KeptFeature)
		opt.Features = append(opt.Features, workloads.KeptRDMAFeatures...)
	}
	if srv.UDProbe != nil {
		opt.Features = append(slices.Clip(opt.Features), workloads.UDProbeFeature)
	}
	return control.NewServer(handler{srv}, opt).Serve(ctx, ln)
}

// handler is the workloads Server, as the control protocol drives it.
type handler struct{ srv *workloads.Server }

func (h handler) Accept(spec json.RawMessage) (control.Test, error) {
	t, err := h.srv.Accept(spec)
	if errors.Is(err, workloads.ErrOverLimit) {
		return nil, &control.LimitError{Err: err}
	}
	if err != nil {
		return nil, err
	}
	return served{t}, nil
}

// served is an accepted test, run over the control connection.
type served struct{ t *workloads.ServerTest }

func (s served) Run(ctx context.Context, tr control.Transport) error { return s.t.Run(ctx, tr) }

// Client is a test server reached through pkg/control: the
// workloads.Remote that runs the other end of each test.
type Client struct {
	c    *control.Client
	host string
}

// Dial connects to the test server at addr (HOST:PORT), with token when
// it requires one.
func Dial(ctx context.Context, addr, token string) (*Client, error) {
	return DialOptions(ctx, addr, control.ClientOptions{Token: token})
}

// DialOptions connects to the test server at addr (HOST:PORT) with the
// control connection's options opt.
func DialOptions(ctx context.Context, addr string, opt control.ClientOptions) (*Client, error) {
	c, err := control.Dial(ctx, addr, opt)
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	return &Client{c: c, host: host}, nil
}

// Target is where a run's tests run against this server: it, and its
// host as dialled.
func (r *Client) Target() workloads.Target { return workloads.Target{Remote: r, Host: r.host} }

// Start asks the server to run the server end of a test.
func (r *Client) Start(ctx context.Context, test string, spec json.RawMessage) (workloads.RemoteTest, error) {
	s, err := r.c.Run(ctx, test, spec)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Version is the server's rdmabench version.
func (r *Client) Version() string { return r.c.Server().Version }

// Has tells whether the server's hello named feature
// (workloads.KeptFeature).
func (r *Client) Has(feature string) bool { return r.c.Server().Has(feature) }

// Server is what the server said about itself.
func (r *Client) Server() control.ServerInfo { return r.c.Server() }

// Close closes the connection to the server.
func (r *Client) Close() error { return r.c.Close() }
