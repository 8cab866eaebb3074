package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/remote"
	"github.com/rdmabench/rdmabench/pkg/settings"
	"github.com/rdmabench/rdmabench/pkg/verbs"
	"github.com/rdmabench/rdmabench/pkg/watch"
	"github.com/rdmabench/rdmabench/pkg/workloads"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// agentProbeFlags are the test flags (testFlags') of an agent's probe
// beside the device's and the path's: its connection, size, iterations
// and how it waits, and the control port and token of its peers.
var agentProbeFlags = []string{"connection", "inline-size", "events", "dscp", "size", "iters", "warmup", "idle-timeout", "port", "token"}

// agentTestFlags are the test flags an agent takes: agentProbeFlags and
// every setting of the device and path (the Shared knobs) but
// --server-dev (a peer's agent serves on its own device). Those that do
// not apply to the probe test are refused by workloads as they are on
// the test commands.
func agentTestFlags() []string {
	names := slices.Clone(agentProbeFlags)
	for _, k := range workloads.Knobs {
		if k.Shared && k.Setting != settings.ServerDevice {
			names = append(names, k.Key)
		}
	}
	return names
}

func newAgentCmd() *cobra.Command {
	a := &agentFlags{}
	cmd := &cobra.Command{
		Use:   "agent --peers FILE|dns:NAME[:PORT]|srv:NAME|mesh:HOST[:PORT]",
		Short: "Serve tests and probe peers continuously, exporting OpenMetrics for Prometheus",
		Long: `Run as a long-lived agent on every host (or NIC): serve tests as 'rdmabench
serve' does, and probe the peers listed in --peers (one host[:port] a line, #
comments; re-read every --reload, so peers that appear or vanish are picked up
without a restart), or the addresses of --peers dns:NAME[:PORT] (a Kubernetes
headless Service's name; looked up every --reload; port -p when none), the
SRV records of --peers srv:NAME (every address of each target, with the
record's port; a headless Service's _PORTNAME._tcp.SVC; looked up every
--reload), or the agents registered with --peers mesh:HOST[:PORT] (an
agent started with --registry, which keeps the registrations of the agents
that register on its --listen port; this agent registers there every
--reload, and a registration not renewed for --registry-expiry is
forgotten) with a small latency test, round-robin, at --rate probes/s in all: every peer is
probed once every PEERS/RATE seconds. A probe is the
--probe test (write-lat over RC by default; tcp-lat needs no RDMA device) at
one size, -n iterations after its warm-up, against the peer's agent: on a
session kept per peer (--keep; tcp-lat, and the RDMA tests over RC without
-e: set up and warmed up once, each probe a burst of -n iterations on it);
or --probe ud-lat, the
UD probe: one UD QP answering every peer, a few probing them, nothing set up
per probe.

--metrics-listen serves /metrics, and only that: OpenMetrics text with, per
peer, a latency histogram since the start, probes by result, the time of the
last good probe, and blame's verdict (the mesh's rules over this agent's
peers); and the error and retransmission counters of the device's port. See docs/agent.md for the metrics and what a probe costs.`,
		Example: `  rdmabench agent --peers /etc/rdmabench/peers -d mlx5_0 --tclass 0x68
  rdmabench agent --peers dns:rdmabench-agent.monitoring.svc.cluster.local -d mlx5_0
  rdmabench agent --peers srv:_tests._tcp.rdmabench-agent.monitoring.svc.cluster.local -d mlx5_0
  rdmabench agent --registry --peers mesh:node1 -d mlx5_0    # on node1
  rdmabench agent --peers mesh:node1 -d mlx5_0               # on every other host
  rdmabench agent --peers peers.txt --probe tcp-lat --metrics-listen 127.0.0.1:19516`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := cmd.ErrOrStderr()
			agent, err := a.config(cmd.Flags(), log)
			if err != nil {
				return err
			}
			return a.run(cmd.Context(), agent, log)
		},
	}
	a.add(cmd.Flags())
	return cmd
}

// agentFlags are the agent's flags, and its probe's test flags.
type agentFlags struct {
	f                                   benchFlags
	cfg                                 watch.Config
	listen, metricsListen, probe, peers string
	advertise                           string
	logTests                            bool
	timeout                             time.Duration
	blame                               blameFlags
	bwShare                             percentFlag
	bwSize                              int
}

// add declares the flags.
func (a *agentFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&a.listen, "listen", ":"+strconv.Itoa(control.DefaultPort), "address to serve tests on (HOST:PORT, or HOST for the default port)")
	fs.StringVar(&a.metricsListen, "metrics-listen", ":19516", "address of the HTTP endpoint serving /metrics (empty: none)")
	fs.StringVar(&a.peers, "peers", "", "the peers to probe: a file, one host[:port] a line, # comments, re-read while running; or dns:NAME[:PORT], the addresses of a name (a headless Service's), looked up while running; or srv:NAME, the SRV records of a name (_PORTNAME._tcp.SVC), every address of each target with the record's port, looked up while running; or mesh:HOST[:PORT], the agents registered with the agent there started with --registry (this one registers too)")
	fs.BoolVar(&a.cfg.Registry, "registry", false, "keep a registry on --listen: the agents that register there (--peers mesh:THIS_HOST, this one too) get every live registration, at most --max-peers")
	fs.Var(positiveDuration(&a.cfg.RegistryExpiry), "registry-expiry", "with --registry: forget a registration not renewed for this long, at least twice --reload (default 30s)")
	fs.StringVar(&a.advertise, "advertise", "", "with --peers mesh: the HOST[:PORT] registered, that peers probe (default: --listen's; from an address of every interface, the one the registry sees this agent from; port --listen's when none)")
	fs.StringVar(&a.probe, "probe", "write-lat", "the probe: a latency test (write-lat, send-lat, read-lat, atomic-lat, tcp-lat), each probe a burst on a session kept per peer (--keep) or a whole test; or ud-lat, the UD probe: one UD QP answering every peer, a few probing them through address handles, each probe -n SEND ping-pongs on them and nothing set up (32-byte messages unless -s)")
	fs.Float64Var(&a.cfg.Rate, "rate", watch.DefaultRate, "probes per second, over all peers (each at a random time within its 1/rate)")
	fs.StringVar(&a.cfg.BW.Test, "bw-probe", "", "also probe bandwidth with this test (write-bw, send-bw, read-bw, tcp-bw; default none): one peer at a time, round-robin, --bw-duration each, taking --bw-share of the time; on the probe's device and path")
	fs.Var(&a.bwShare, "bw-share", "the share of the time the bandwidth probes take, about the share of the link they load on average (default 1%, at most 50%)")
	fs.Var(positiveDuration(&a.cfg.BW.Duration), "bw-duration", "how long each bandwidth probe sends (default 1s)")
	fs.Var(oneSize(&a.bwSize), "bw-size", "the bandwidth probe's message size (default 64K)")
	fs.BoolVar(&a.cfg.Keep, "keep", true, "with a latency --probe (tcp-lat, or an RDMA test over RC without -e): keep, per peer, the control connection and the test's socket or QPs, and probe with a burst of -n iterations on them (set up and warmed up once); false: a whole test each probe")
	fs.Var(positiveDuration(&a.cfg.ProbeTimeout), "probe-timeout", "give up a probe after this long (default 5s)")
	fs.Var(positiveDuration(&a.cfg.Reload), "reload", "re-read the peers file, look the peers' name up, or renew the registration, this often (default 5s)")
	fs.Var(positiveDuration(&a.cfg.BlameEvery), "blame-every", "judge the peers' recent p50 this often (default 10s)")
	fs.IntVar(&a.cfg.BlameProbes, "blame-probes", 16, "blame judges the median p50 of each peer's last this many good probes (3 to 16): fewer react sooner, more are steadier")
	a.blame.add(fs, "a peer")
	fs.Var(positiveInt(&a.cfg.MaxPeers), "max-peers", "probe at most this many peers, the first of the file, of the name's sorted addresses or of the registrations (default 1024); with --registry, keep at most this many registrations too")
	fs.Var(positiveInt(&a.cfg.MaxInflight), "max-inflight", "probes in flight at once at most, so that a silent peer does not stop the others (default 4)")
	fs.StringVar(&a.cfg.Host, "host", "", "the host label of every sample (default: this host's name)")
	fs.Var(byteSize(&a.f.maxMem), "max-mem", "refuse served tests that would register or allocate more memory than this, e.g. 256M")
	fs.DurationVar(&a.timeout, "timeout", control.DefaultTimeout, "drop a client silent for this long")
	fs.BoolVar(&a.logTests, "log-tests", false, "log every test served, as serve does (default: only failures and refusals other than busy)")
	// The probe's test flags, as the test commands define them.
	all := pflag.NewFlagSet("tests", pflag.ContinueOnError)
	for _, d := range testFlags {
		d.add(all, &a.f)
	}
	for _, name := range agentTestFlags() {
		fl := all.Lookup(name)
		switch name {
		case "iters":
			fl.Usage = "measured iterations of each probe (default 10)"
		case "warmup":
			fl.Usage = "warm-up iterations of each probe, not measured (default 10)"
		case "ib-dev":
			fl.Usage = "the RDMA device the agent probes from and serves tests on, one (default: the first one)"
		case "size":
			fl.Usage = "the probe's message size (default the test's: 2 B)"
		case "port":
			fl.Usage = "the control port of a peer given without one"
		case "token":
			fl.Usage = "shared token: required of clients, and proved to peers (default $" + EnvToken + ")"
		}
		fs.AddFlag(fl)
	}
}

// udProbe checks the flags of --probe ud-lat, the UD probe (setting
// cfg.UD), and returns the probe's test: send-lat over UD for it, else
// --probe's.
func (a *agentFlags) udProbe(fs *pflag.FlagSet) (string, error) {
	if a.probe != workloads.UDProbeTest {
		return a.probe, nil
	}
	for _, name := range []string{"inline-size", "events", "warmup", "idle-timeout", "keep"} {
		if fs.Changed(name) {
			return "", fmt.Errorf("agent: --%s does not apply to --probe %s (its probers spin on their CQ, then sleep on its channel; a peer's first probe learns its responder, no warm-up; nothing is set up per probe)",
				name, workloads.UDProbeTest)
		}
	}
	if fs.Changed("connection") && !strings.EqualFold(a.f.spec.Connection, "UD") {
		return "", fmt.Errorf("agent: --probe %s runs over UD, not -c %s", workloads.UDProbeTest, a.f.spec.Connection)
	}
	if fs.Changed("size") && len(a.f.spec.Sizes) == 1 && a.f.spec.Sizes[0] < verbs.UDProbeMinSize {
		return "", fmt.Errorf("agent: -s %d: a UD probe's message holds a %d-byte header: want -s %d or more (the default)",
			a.f.spec.Sizes[0], verbs.UDProbeMinSize, verbs.UDProbeMinSize)
	}
	a.cfg.UD = true
	return "send-lat", nil
}

// config checks the flags (fs) and makes the agent, without its
// listeners, its log going to log: a mistake is refused here, by name (a
// usage error), before anything listens.
func (a *agentFlags) config(fs *pflag.FlagSet, log io.Writer) (*watch.Agent, error) {
	test, err := a.udProbe(fs)
	if err != nil {
		return nil, usageError{err}
	}
	info, known := workloads.LookupTest(test) // watch.New refuses what is no latency test
	if a.cfg.Rate <= 0 || a.cfg.Rate > 1000 {
		return nil, usageError{fmt.Errorf("agent: --rate %g: want probes per second above 0, at most 1000", a.cfg.Rate)}
	}
	src, err := watch.ParsePeerSource(a.peers)
	if err != nil {
		return nil, usageError{fmt.Errorf("agent: %w", err)}
	}
	if src.SRV != "" && fs.Changed("port") {
		return nil, usageError{fmt.Errorf("agent: --port applies to peers given without a port; the SRV records of --peers %s give each peer's", a.peers)}
	}
	a.cfg.SetPeers(src)
	if a.advertise != "" && src.Mesh == "" {
		return nil, usageError{fmt.Errorf("agent: --advertise applies to --peers mesh:HOST, which is not given")}
	}
	if a.advertise != "" {
		host, port, err := net.SplitHostPort(a.advertise)
		if err != nil {
			host, port = a.advertise, ""
		}
		if host == "" || strings.ContainsAny(host, " \t/") {
			return nil, usageError{fmt.Errorf("agent: --advertise %q: want HOST or HOST:PORT", a.advertise)}
		}
		if port != "" {
			if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
				return nil, usageError{fmt.Errorf("agent: --advertise %q: port %q: want 1..65535", a.advertise, port)}
			}
		}
	}
	blame, err := a.blame.options("agent")
	if err != nil {
		return nil, usageError{err}
	}
	a.cfg.Blame = blame
	req := a.f.request([]string{test}, false, nil)
	if a.cfg.UD {
		req.Spec.Connection = "UD"
		if !fs.Changed("size") {
			req.Spec.Sizes = []int{verbs.UDProbeMinSize}
		}
	}
	if err := settings.MergeDSCP(&req.Spec.Path, a.f.dscp); err != nil {
		return nil, usageError{fmt.Errorf("agent: %w", err)}
	}
	if known && info.IsRDMA() && req.Spec.Device == "" {
		// The device label names the device: the first, as tests take it.
		names, err := verbs.DeviceNames()
		if err != nil || len(names) == 0 {
			return nil, fmt.Errorf("agent: --probe %s needs an RDMA device and this host has none (%v); --probe tcp-lat needs none", a.probe, orNoDevice(err))
		}
		req.Spec.Device = names[0]
	}
	for _, name := range []string{"bw-share", "bw-duration", "bw-size"} {
		if fs.Changed(name) && a.cfg.BW.Test == "" {
			return nil, usageError{fmt.Errorf("agent: --%s applies to --bw-probe, which is off", name)}
		}
	}
	a.cfg.BW.Share, a.cfg.BW.Size = a.bwShare.v, a.bwSize
	a.cfg.Probe, a.cfg.Token, a.cfg.DefaultPort = req, remote.Token(a.f.token), a.f.ctlPort
	a.cfg.Server.Device = req.Spec.Device
	a.cfg.Server.MaxMem = a.f.maxMem
	a.cfg.Log = log
	conns, tests := watch.ServerLimits(orMaxPeers(a.cfg.MaxPeers))
	a.cfg.ServerOptions = control.ServerOptions{Token: a.cfg.Token, Timeout: a.timeout, Log: quietTests{log, a.logTests},
		MaxConns: conns, MaxTests: tests}
	agent, err := watch.New(a.cfg)
	if err != nil {
		return nil, usageError{fmt.Errorf("agent: %w", err)}
	}
	return agent, nil
}

// run listens, then serves and probes until ctx ends.
func (a *agentFlags) run(ctx context.Context, agent *watch.Agent, log io.Writer) error {
	cfg := a.cfg
	addr := a.listen
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, strconv.Itoa(control.DefaultPort))
	}
	logStatsOnSignal(ctx, log)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	var mln net.Listener
	if a.metricsListen != "" {
		if mln, err = net.Listen("tcp", a.metricsListen); err != nil {
			ln.Close()
			return fmt.Errorf("metrics: listen on %s: %w", a.metricsListen, err)
		}
	}
	agent.Listen(ln, mln, a.advertise)
	auth := "none"
	if cfg.Token != "" {
		auth = "required"
	}
	maddr := "none"
	if mln != nil {
		maddr = "http://" + mln.Addr().String() + "/metrics"
	}
	bw := ""
	if b := agent.BW(); b.Test != "" {
		bw = fmt.Sprintf(", bandwidth with %s (%v of %d B messages, %g%% of the time)", b.Test, b.Duration, b.Size, 100*b.Share)
	}
	reg := ""
	if cfg.Registry {
		reg = fmt.Sprintf(" and keeping a registry (at most %d agents, each forgotten %v after its last renewal)", orMaxPeers(cfg.MaxPeers), agent.RegistryExpiry())
	}
	fmt.Fprintf(log, "rdmabench agent: serving tests on %s (device %s, token %s)%s; probing the peers of %s with %s at %g/s%s; metrics %s\n",
		ln.Addr(), cmp.Or(cfg.Server.Device, "first"), auth, reg, a.peers, a.probe, orRate(cfg.Rate), bw, maddr)
	return agent.Run(ctx)
}

func orRate(r float64) float64 {
	if r <= 0 {
		return watch.DefaultRate
	}
	return r
}

func orMaxPeers(n int) int {
	if n <= 0 {
		return watch.DefaultMaxPeers
	}
	return n
}

func orNoDevice(err error) error {
	if err == nil {
		return verbs.ErrNoDevices
	}
	return err
}

// quietTests is the served tests' log without the lines of probes that
// went well or were refused busy (many a second), unless all is set.
type quietTests struct {
	w   io.Writer
	all bool
}

func (q quietTests) Write(p []byte) (int, error) {
	if !q.all {
		// "TIME ADDR TEST ok DUR" and "TIME ADDR TEST refused busy: ..."
		if fs := strings.Fields(string(p)); len(fs) >= 5 && (fs[3] == "ok" || (fs[3] == "refused" && fs[4] == "busy:")) {
			return len(p), nil
		}
	}
	return q.w.Write(p)
}
