// Package mesh measures every pair of many hosts (or NICs): `rdmabench
// mesh`, started once per rank by the cluster's own launcher (Slurm,
// OpenMPI, a PMI or PMIx launcher, a Kubernetes Indexed Job). Every rank
// runs a test server (pkg/remote's, serving pkg/workloads' tests) and
// registers its address, host, devices and GIDs with the coordinator, rank
// 0, over the control protocol (token included). The coordinator schedules
// rounds of disjoint pairs (a round-robin tournament, both directions, or
// the links of a --pairs file) and gives each link to the rank at its
// client end, which runs the tests against the other's server exactly as
// `rdmabench TEST HOST` does (workloads.NewPlan, remote.Dial, Execute).
// Rank 0 merges every link into one summary: the N×N matrix per figure,
// each link's errors and the per-link gates; each link's full results go,
// as it ends, to the link stream (Config.Stream), so that rank 0's memory
// and the summary are linear in the links and a rank 0 killed at any point
// leaves every finished link on disk. With Config.Blame, rank 0 then
// judges the links with pkg/blame's rules, retests the suspects in rounds
// of their own and records the verdicts.
//
// Faults: a rank that never registers, or dies or goes silent, fails the
// links it is part of; the rest of the matrix completes. Every wait has a
// deadline (registration, each link, the control connections' keepalive),
// so a mesh never hangs.
package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/pkg/blame"
	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/remote"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/topology"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// Defaults.
const (
	DefaultRegisterTimeout = 60 * time.Second
	// maxFrame is the largest control frame of the mesh connections: a
	// link's document (sweeps and repeats hold many histograms).
	maxFrame = 64 << 20
)

// Config is one rank's part in a mesh.
type Config struct {
	Launch Launch
	// Coordinator is rank 0's host:port (see CoordinatorAddr).
	Coordinator string
	Token       string
	// Listen is this rank's test server address (default ":0": every
	// address, a free port).
	Listen string
	// Advertise is the host the other ranks dial this rank's test server
	// at (default: the address this rank reaches rank 0 from; rank 0's,
	// the address the ranks reached it at).
	Advertise string
	// Devices is -d: one device for every rank, or one per local rank.
	Devices []string
	// Request is the tests each link runs. Rank 0's is sent to the others:
	// every link runs the same tests.
	Request workloads.Request
	// RegisterTimeout is how long rank 0 waits for every rank to register,
	// and the others keep trying to reach it (default 60s).
	RegisterTimeout time.Duration
	// LinkTimeout bounds each link (default: from the tests; see
	// linkTimeout).
	LinkTimeout time.Duration
	// Links, when set, are the links to measure (--pairs); else every pair,
	// both directions.
	Links []Link
	// Schedule chooses the schedule when Links is nil (--rails, --sample).
	Schedule ScheduleOptions
	// Duplex runs each pair of the schedule once, both directions at once
	// (--duplex): a latency test's ping-pong crosses both ways, a
	// bandwidth test runs bidirectional. Every test must be one of those
	// (Check refuses the others).
	Duplex bool
	// HostLevel: ranks are hosts, each measuring on every device of
	// Devices at once (--host-level): each link runs its tests on this
	// rank's devices against the peer's (as it registered them), paired
	// one by one, as lanes (-d A,B with --server-dev C,D); a result is
	// their sum, with each device's own figures. Every rank must list as
	// many devices; Schedule.Rails does not apply.
	HostLevel bool
	Limits    report.Limits
	Outlier   float64
	// Blame judges the links measured from the fleet's own distribution
	// once the schedule is done, retests the suspects in rounds of their
	// own, and records the verdicts (report.Mesh.Verdicts).
	Blame bool
	// BlameOptions tune the rules of pkg/blame (zero: the defaults).
	BlameOptions blame.Options
	Progress     func(Progress)
	// Stream, when set, gets rank 0's link stream as it goes: the start
	// event (the run's facts and the ranks), each link's event as it ends,
	// with its full results, and the end event. Rank 0 keeps of each link
	// only its figures, errors and gate failures (the summary that Run
	// returns), so the stream is where the links' full results are kept.
	// A Stream that fails is not called again (the summary still has
	// every link).
	Stream func(report.Event) error
	// Log gets a line per rank event (registered, lost) on every rank.
	Log io.Writer

	// Topology, on rank 0, is the fabric (--topology): every rank's host
	// must be in it; each link records the switches it crossed, and blame
	// groups the links by them.
	Topology *topology.Topology
	// Host is the host this rank stands for (--host), in place of its
	// hostname: ranks started by hand on one machine can stand for the
	// hosts of a topology.
	Host string

	// Pattern, when set, runs a load pattern (--pattern) in place of the
	// pairs: its steps, each running its flows of the one bandwidth test
	// of Request at once for Request.Spec.Duration (default
	// DefaultPatternDuration), with a ping-pong beside them. Every rank
	// is given it (its server then takes that many tests at once).
	// Schedule.Sample and Seed pick incast's receivers and senders;
	// PatternLimits gate the steps.
	Pattern       *Pattern
	PatternLimits report.PatternLimits
}

// Progress is how far rank 0 is.
type Progress struct {
	Round, Rounds int
	Done, Links   int
	Failed        int
	Ranks         int // registered
	// Link is the link that just ended, if any.
	Link *report.MeshLink
	// Started: the schedule starts (every rank registered, or the wait
	// ended).
	Started bool
}

// device is this rank's device.
func (c *Config) device() (string, error) {
	switch {
	case c.HostLevel:
		return strings.Join(c.Devices, ","), nil
	case len(c.Devices) == 0:
		return "", nil
	case len(c.Devices) == 1:
		return c.Devices[0], nil
	case c.Launch.LocalRank < len(c.Devices):
		return c.Devices[c.Launch.LocalRank], nil
	}
	return "", usagef("-d lists %d devices, one per rank of a host, but this rank's local rank is %d", len(c.Devices), c.Launch.LocalRank)
}

// registration is what a rank tells the coordinator.
type registration struct {
	Rank      int                 `json:"rank"`
	Size      int                 `json:"size"`
	LocalRank int                 `json:"local_rank"`
	Port      int                 `json:"port"`
	Advertise string              `json:"advertise,omitempty"`
	Host      report.Host         `json:"host"`
	Devices   []report.MeshDevice `json:"devices,omitempty"`
	// Lanes are, with --host-level, the devices the rank measures on at
	// once (its -d list).
	Lanes []string `json:"lanes,omitempty"`
	// Machine is the rank's own hostname when Host names another
	// (--host): the ranks of one machine share its CPUs.
	Machine string `json:"machine,omitempty"`
}

// job is a link the coordinator gives the rank at its client end.
type job struct {
	From     int            `json:"from"`
	To       int            `json:"to"`
	PeerAddr string         `json:"peer_addr"`
	Tests    []string       `json:"tests"`
	Spec     workloads.Spec `json:"spec"`
	Repeat   int            `json:"repeat,omitempty"`
	Baseline bool           `json:"baseline,omitempty"`
	Command  []string       `json:"command,omitempty"`
	// Flows are, in place of a link, a load pattern's flows from this
	// rank in one step, run at once; Counters asks, in place of both, for
	// the rank's port counters.
	Flows    []flowJob `json:"flows,omitempty"`
	Counters bool      `json:"counters,omitempty"`
}

// outcome is the rank's answer: the link's document, the flows', or the
// counters.
type outcome struct {
	Document *report.Document `json:"document,omitempty"`
	Flows    []flowOutcome    `json:"flows,omitempty"`
	Counters *rankCounters    `json:"counters,omitempty"`
}

// Run runs this rank's part of the mesh until it ends. Rank 0 returns the
// mesh's document (nil only when it could not start); the other ranks
// return nil, nil once the coordinator ended the mesh. A mistake in the
// configuration wraps ErrUsage and is found before anything starts.
func Run(ctx context.Context, cfg Config) (*report.Document, error) {
	if cfg.RegisterTimeout <= 0 {
		cfg.RegisterTimeout = DefaultRegisterTimeout
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	dev, err := cfg.device()
	if err != nil {
		return nil, err
	}
	cfg.Request.Suite = true
	cfg.Request.Spec.Device = dev
	if cfg.Duplex {
		cfg.Request.Spec.Bidirectional = true // the bandwidth tests' (a suite leaves it out of the others)
	}
	plan, err := workloads.NewPlan(cfg.Request)
	if err != nil {
		return nil, usageErr{err}
	}
	if cfg.LinkTimeout <= 0 {
		cfg.LinkTimeout = linkTimeout(plan, cfg.Request.Repeat)
	}
	if cfg.Listen == "" {
		cfg.Listen = ":0"
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	sctx, stopServer := context.WithCancel(ctx)
	srv := &workloads.Server{Device: dev, MaxMem: cfg.Request.MaxMem}
	sopt := control.ServerOptions{Token: cfg.Token, Log: cfg.Log}
	if cfg.Pattern != nil {
		// A pattern's flows meet at their receiver: at most every other
		// rank's, and the probe.
		sopt.MaxTests = cfg.Launch.Size + 1
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = remote.Serve(sctx, ln, srv, sopt)
	}()
	defer func() {
		stopServer()
		<-served
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	self := registration{Rank: cfg.Launch.Rank, Size: cfg.Launch.Size, LocalRank: cfg.Launch.LocalRank, Port: port,
		Advertise: cfg.Advertise, Host: workloads.LocalHost(), Devices: workloads.LocalDevices()}
	if cfg.Host != "" {
		self.Machine, self.Host.Hostname = self.Host.Hostname, cfg.Host
	}
	if cfg.HostLevel {
		self.Lanes = cfg.Devices
	}
	if cfg.Launch.Rank != 0 {
		return nil, member(ctx, &cfg, self)
	}
	return coordinate(ctx, &cfg, plan, self)
}

// Check refuses, as a usage error, the schedule's options that do not go
// together: what Run would refuse before anything listens, for a command
// to refuse before anything else.
func (c *Config) Check() error {
	if err := c.checkPattern(); err != nil {
		return err
	}
	if c.HostLevel {
		switch {
		case c.Schedule.Rails:
			return usagef("--host-level and --rails are exclusive: --host-level runs one rank per host on all its devices at once, --rails one rank per NIC")
		case len(c.Devices) == 0:
			return usagef("--host-level measures every device of a host at once: list them with -d (-d mlx5_0,mlx5_1,...)")
		case c.Launch.LocalRank > 0:
			return usagef("--host-level runs one rank per host, on all its devices at once: %s says this rank is local rank %d of its host; start one task per node (srun --ntasks-per-node=1, mpirun --map-by ppr:1:node)",
				c.Launch.Launcher, c.Launch.LocalRank)
		}
	}
	if c.Duplex {
		if err := duplexTests(c.Request.Tests); err != nil {
			return usageErr{err}
		}
		if c.Request.Spec.Reverse {
			return usagef("--duplex and --reverse are exclusive: a duplex link runs each bandwidth test both ways at once")
		}
	}
	return nil
}

// duplexTests refuses, naming it, a test that a duplex link cannot run
// both ways at once: a latency test that is no ping-pong (read-lat and
// atomic-lat time a post to its completion, one rank's operations only).
func duplexTests(tests []string) error {
	for _, name := range tests {
		t, ok := workloads.LookupTest(name)
		if !ok || t.Metric == workloads.Bandwidth || t.Basis == "rtt_half" {
			continue // an unknown test is refused with the others
		}
		return usagef("--duplex: %s times one rank's operations to their completion, not a ping-pong, and cannot run bidirectional: a duplex link would measure one direction only (measure it without --duplex)", name)
	}
	return nil
}

// linkTimeout bounds one link: a minute, plus per size of each test
// half a minute, its duration or its precision cap, per repeat.
func linkTimeout(plan *workloads.Plan, repeat int) time.Duration {
	d := time.Minute
	for _, s := range plan.Specs() {
		per := 30 * time.Second
		if s.Duration > 0 {
			per += s.Duration
		}
		if s.Precision > 0 {
			per += s.PrecisionCap
		}
		d += time.Duration(len(s.Sizes)) * per * time.Duration(max(repeat, 1))
	}
	return d
}

// runJob runs a link's tests from this rank against the peer's server, as
// `rdmabench TEST HOST` does, and returns its document.
func runJob(ctx context.Context, cfg *Config, j job) (*report.Document, error) {
	req := workloads.Request{Tests: j.Tests, Spec: j.Spec, Suite: true, Repeat: j.Repeat, Baseline: j.Baseline,
		Command: j.Command, MaxMem: cfg.Request.MaxMem}
	dev, _ := cfg.device()
	req.Spec.Device = dev
	plan, err := workloads.NewPlan(req)
	if err != nil {
		return nil, err
	}
	c, err := remote.Dial(ctx, j.PeerAddr, cfg.Token)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return plan.Execute(ctx, c.Target())
}

// member is the part of every rank but 0: register with the coordinator
// (trying until the registration deadline), then run the links it is
// given until the coordinator ends the mesh.
func member(ctx context.Context, cfg *Config, self registration) error {
	data, _ := json.Marshal(self)
	deadline := time.Now().Add(cfg.RegisterTimeout)
	var ms *control.Membership
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		jctx, cancel := context.WithDeadline(ctx, deadline)
		var err error
		ms, err = control.Join(jctx, cfg.Coordinator, control.ClientOptions{Token: cfg.Token, MaxFrame: maxFrame}, data)
		cancel()
		if err == nil {
			break
		}
		var se *control.ServerError
		var ve *control.VersionError
		switch {
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case errors.As(err, &se), errors.As(err, &ve):
			return fmt.Errorf("rank %d: the coordinator %s refused it: %w", self.Rank, cfg.Coordinator, err)
		case time.Now().Add(wait).After(deadline):
			return fmt.Errorf("rank %d: could not register with the coordinator %s within %v: %w", self.Rank, cfg.Coordinator, cfg.RegisterTimeout, err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	defer ms.Close()
	logf(cfg.Log, "rank %d of %d: registered with the coordinator %s", self.Rank, self.Size, cfg.Coordinator)
	// A job in progress stops when the coordinator is lost.
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-ms.Lost():
			cancel()
		case <-jctx.Done():
		}
	}()
	for {
		jb, err := ms.Next(ctx)
		if errors.Is(err, control.ErrMeshDone) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("rank %d: lost the coordinator %s: %w", self.Rank, cfg.Coordinator, err)
		}
		var j job
		var o *outcome
		if err = json.Unmarshal(jb.Data, &j); err == nil {
			o, err = doJob(jctx, cfg, j)
		}
		var out json.RawMessage
		switch {
		case o != nil:
			b, merr := json.Marshal(o)
			if merr != nil {
				err = firstNonNil(err, merr)
			} else {
				out = b
			}
		case err == nil:
			err = errors.New("the link's run returned no document")
		}
		rerr := jb.Reply(ctx, out, err)
		if errors.Is(rerr, control.ErrFrameTooLarge) {
			rerr = jb.Reply(ctx, nil, fmt.Errorf("the link's document is too large to send (%w)", rerr))
		}
		if rerr != nil {
			return fmt.Errorf("rank %d: lost the coordinator %s: %w", self.Rank, cfg.Coordinator, rerr)
		}
	}
}

func firstNonNil(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, "rdmabench mesh: "+format+"\n", args...)
	}
}

// hostOf is the host part of addr.
func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}

func joinHostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
