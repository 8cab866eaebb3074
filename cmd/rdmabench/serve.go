package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/workloads"
	"github.com/spf13/cobra"
)

// EnvToken holds the shared token when --token is not given.
const EnvToken = "RDMABENCH_TOKEN"

func newServeCmd() *cobra.Command {
	var listen, device, token, maxMem string
	var once bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve tests to clients, one at a time, until stopped",
		Long: `Serve tests to rdmabench clients: start it once, then run any test, sweep or
suite from another host with 'rdmabench TEST HOST'. The client sends the whole
test; the server needs no test flags. One test runs at a time (another client
gets "busy"); every verbs object is freed after each test; a client that dies
or goes silent never takes the server down.

With a token (--token or $` + EnvToken + `), clients must prove they know it
(HMAC over a server nonce; the token never crosses the network).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if token == "" {
				token = os.Getenv(EnvToken)
			}
			var capBytes uint64
			if maxMem != "" {
				sz, err := workloads.ParseSizes(maxMem)
				if err != nil || len(sz) != 1 {
					return usageError{fmt.Errorf("--max-mem %q: want one size such as 64M or 1G", maxMem)}
				}
				capBytes = uint64(sz[0])
			}
			addr := listen
			if _, _, err := net.SplitHostPort(addr); err != nil {
				addr = net.JoinHostPort(addr, strconv.Itoa(control.DefaultPort))
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", addr, err)
			}
			host, _, _ := net.SplitHostPort(ln.Addr().String())
			h := &serveHandler{device: device, maxMem: capBytes, listenHost: host}
			log := cmd.ErrOrStderr()
			auth := "none"
			if token != "" {
				auth = "required"
			}
			fmt.Fprintf(log, "rdmabench serve: listening on %s (device %s, token %s, max-mem %s)\n", ln.Addr(),
				orDefault(device, "first"), auth, orDefault(maxMem, "none"))
			srv := control.NewServer(h, control.ServerOptions{Token: token, Timeout: timeout, Log: log, Once: once})
			return srv.Serve(cmd.Context(), ln)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", ":"+strconv.Itoa(control.DefaultPort), "address to listen on (HOST:PORT, or HOST for the default port)")
	f.StringVarP(&device, "ib-dev", "d", "", "RDMA device to serve tests on (default: the first one)")
	f.StringVar(&token, "token", "", "shared token clients must prove they know (default $"+EnvToken+")")
	f.StringVar(&maxMem, "max-mem", "", "refuse tests that would register more memory than this, e.g. 256M")
	f.BoolVar(&once, "once", false, "serve one test, then exit (for scripts)")
	f.DurationVar(&timeout, "timeout", control.DefaultTimeout, "drop a client silent for this long")
	return cmd
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// serveHandler runs the server end of each test a client asks for.
type serveHandler struct {
	device     string
	maxMem     uint64
	listenHost string
}

func decodeSpec(raw json.RawMessage) (workloads.Spec, error) {
	var s workloads.Spec
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("malformed test spec: %w", err)
	}
	s.ApplyDefaults()
	return s, s.Validate()
}

func (h *serveHandler) Check(raw json.RawMessage) error {
	s, err := decodeSpec(raw)
	if err != nil {
		return err
	}
	if need := s.RegisteredBytes(); h.maxMem > 0 && need > h.maxMem {
		return &control.LimitError{Err: fmt.Errorf("%s needs %d bytes of registered memory (%d B messages); this server allows %d (--max-mem)",
			s.Test, need, s.BufferHalf()-64, h.maxMem)}
	}
	return nil
}

func (h *serveHandler) Run(ctx context.Context, raw json.RawMessage, t control.Transport) error {
	s, err := decodeSpec(raw)
	if err != nil {
		return err
	}
	dev := h.device
	if s.ServerDevice != "" {
		dev = s.ServerDevice
	}
	_, err = workloads.Run(ctx, s, workloads.Server, workloads.NewLink(t),
		workloads.Options{Device: dev, MaxMem: h.maxMem, ListenHost: h.listenHost})
	return err
}
