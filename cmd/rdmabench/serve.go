package main

import (
	"cmp"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/remote"
	"github.com/rdmabench/rdmabench/pkg/workloads"
	"github.com/spf13/cobra"
)

// EnvToken holds the shared token when --token is not given.
const EnvToken = remote.EnvToken

func newServeCmd() *cobra.Command {
	var listen, token string
	var srv workloads.Server
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
(HMAC over a server nonce; the token never crosses the network).

SIGUSR1 prints a line of the server's process stats on stderr (goroutines,
open files, resident memory, open verbs objects).`,
		Example: `  rdmabench serve                                # port 19515, the first device
  rdmabench serve -d mlx5_0 --token "$TOKEN" --max-mem 16G
  rdmabench serve --listen 127.0.0.1:19600 --once  # one test, for scripts`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			token = remote.Token(token)
			addr := listen
			if _, _, err := net.SplitHostPort(addr); err != nil {
				addr = net.JoinHostPort(addr, strconv.Itoa(control.DefaultPort))
			}
			// Before listening: once clients can connect, SIGUSR1 is caught.
			log := cmd.ErrOrStderr()
			logStatsOnSignal(cmd.Context(), log)
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", addr, err)
			}
			auth, maxMem := "none", "none"
			if token != "" {
				auth = "required"
			}
			if srv.MaxMem > 0 {
				maxMem = strconv.FormatUint(srv.MaxMem, 10) + " bytes"
			}
			fmt.Fprintf(log, "rdmabench serve: listening on %s (device %s, token %s, max-mem %s)\n", ln.Addr(),
				cmp.Or(srv.Device, "first"), auth, maxMem)
			return remote.Serve(cmd.Context(), ln, &srv, control.ServerOptions{Token: token, Timeout: timeout, Log: log, Once: once})
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", ":"+strconv.Itoa(control.DefaultPort), "address to listen on (HOST:PORT, or HOST for the default port)")
	f.StringVarP(&srv.Device, "ib-dev", "d", "", "RDMA device to serve tests on (default: the first one)")
	f.StringVar(&token, "token", "", "shared token clients must prove they know (default $"+EnvToken+")")
	f.Var(byteSize(&srv.MaxMem), "max-mem", "refuse tests that would register or allocate more memory than this, e.g. 256M or 64G")
	f.BoolVar(&once, "once", false, "serve one test, then exit (for scripts)")
	f.DurationVar(&timeout, "timeout", control.DefaultTimeout, "drop a client silent for this long")
	return cmd
}
