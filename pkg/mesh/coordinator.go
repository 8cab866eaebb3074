package mesh

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// runner runs a link's job on the rank at its client end: over its
// control connection, or in this process for rank 0.
type runner interface {
	run(ctx context.Context, j job) (*outcome, error)
}

type localRunner struct{ cfg *Config }

func (l localRunner) run(ctx context.Context, j job) (*outcome, error) {
	return doJob(ctx, l.cfg, j)
}

type remoteRunner struct{ m *control.Member }

func (r remoteRunner) run(ctx context.Context, j job) (*outcome, error) {
	data, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	out, err := r.m.Run(ctx, data)
	if len(out) == 0 {
		return nil, err
	}
	var o outcome
	if derr := json.Unmarshal(out, &o); derr != nil {
		if err == nil {
			err = fmt.Errorf("the rank's outcome: %w", derr)
		}
		return nil, err
	}
	return &o, err
}

// coordinator is rank 0's state: the ranks, the schedule's links and the
// summary. control.MeshServer is its end of the protocol (the handshake,
// the token, each rank's connection and jobs); it knows nothing of what
// the jobs mean.
type coordinator struct {
	cfg  *Config
	plan *workloads.Plan

	mu      sync.Mutex
	ranks   []report.MeshRank
	runners []runner
	count   int           // registered
	all     chan struct{} // closed once every rank registered
	started bool          // the schedule started: no more registrations
	ending  bool          // the mesh is over: members closing are not lost
	selfIP  string        // rank 0's address, as the ranks reached it
	doc     *report.Document
	// streamFailed: a write to the link stream failed; no more are made.
	streamFailed bool
	// summary keeps each link's figures, errors and gate failures as it
	// ends; its full results go to the link stream only.
	summary *report.MeshBuilder

	// machines are the ranks' own hostnames (a rank's host may be one it
	// stands for, --host).
	machines []string
}

// coordinate is rank 0's part: the coordinator, then every round, then
// the document.
func coordinate(ctx context.Context, cfg *Config, plan *workloads.Plan, self registration) (*report.Document, error) {
	n := cfg.Launch.Size
	c := &coordinator{cfg: cfg, plan: plan, ranks: make([]report.MeshRank, n), runners: make([]runner, n),
		machines: make([]string, n), all: make(chan struct{})}
	for i := range c.ranks {
		c.ranks[i] = report.MeshRank{Rank: i, State: report.RankUnregistered}
	}
	c.doc = plan.NewDocument()
	c.doc.Hosts.Local = workloads.LocalHost()
	// The coordinator listens on its port on every address.
	_, port, _ := net.SplitHostPort(cfg.Coordinator)
	ln, err := net.Listen("tcp", net.JoinHostPort("", port))
	if err != nil {
		return nil, fmt.Errorf("coordinator: listen on port %s: %w", port, err)
	}
	cctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	coord := control.NewMeshServer(control.MeshServerOptions{Token: cfg.Token, MaxFrame: maxFrame, Log: cfg.Log,
		Register: c.register})
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = coord.Serve(cctx, ln)
	}()
	defer func() {
		c.mu.Lock()
		c.ending = true
		c.mu.Unlock()
		stop() // every member is told the mesh is over
		<-served
	}()
	c.mu.Lock()
	c.add(self, localRunner{cfg}, "")
	c.mu.Unlock()
	logf(cfg.Log, "rank 0 of %d: coordinator on port %s, waiting up to %v for the other ranks", n, port, cfg.RegisterTimeout)

	wait := time.NewTimer(cfg.RegisterTimeout)
	select {
	case <-c.all:
	case <-wait.C:
	case <-ctx.Done():
	}
	wait.Stop()
	c.mu.Lock()
	c.started = true
	missing := n - c.count
	selfHost := cfg.Advertise
	if selfHost == "" {
		selfHost = c.selfIP
	}
	if selfHost == "" {
		selfHost = hostOf(cfg.Coordinator)
	}
	c.ranks[0].Addr = joinHostPort(selfHost, self.Port)
	for i := range c.ranks {
		if c.ranks[i].State == report.RankUnregistered {
			c.ranks[i].Error = fmt.Sprintf("it did not register within %v", cfg.RegisterTimeout)
		}
	}
	c.mu.Unlock()
	if missing > 0 && ctx.Err() == nil {
		logf(cfg.Log, "%d of %d ranks did not register within %v: their links fail", missing, n, cfg.RegisterTimeout)
	}

	c.mu.Lock()
	ranks := slices.Clone(c.ranks)
	c.mu.Unlock()
	if cfg.HostLevel {
		if err := firstNonNil(oneRankPerHost(ranks, cfg.Launch.Launcher), sameLanes(ranks)); err != nil {
			return nil, err
		}
	}
	if err := hostsInTopology(cfg.Topology, ranks); err != nil {
		return nil, err
	}
	if cfg.Pattern != nil {
		return c.coordinatePattern(ctx, ranks)
	}
	sched, kind, sample, err := pickSchedule(cfg, ranks)
	if err != nil {
		return nil, err
	}
	if cfg.Duplex {
		sched = sched.Duplex()
	}
	m := &report.Mesh{Size: n, Launcher: cfg.Launch.Launcher, Coordinator: cfg.Coordinator, Tests: cfg.Request.Tests,
		Rounds: len(sched), Schedule: kind, Sample: sample, Duplex: cfg.Duplex, HostLevel: cfg.HostLevel}
	m.Topology = meshTopology(cfg.Topology)
	c.doc.Mesh = m
	c.summary = report.NewMeshBuilder(cfg.Request.Tests, cfg.Limits, cfg.Outlier)
	c.summary.SetRanks(n)
	c.mu.Lock()
	c.stream(report.Event{Event: report.EventStart, Document: c.header()})
	c.mu.Unlock()
	prog := &Progress{Rounds: len(sched), Links: sched.Links(), Ranks: n - missing, Started: true}
	c.progress(*prog)
	c.runRounds(ctx, sched, false, prog)
	c.mu.Lock()
	if crowded := c.crowded(spins(cfg.Request)); crowded != "" {
		c.doc.Warnings = append(c.doc.Warnings, crowded+": its links' figures measure the sharing of its CPUs as much as the links")
	}
	c.mu.Unlock()
	if cfg.Blame && ctx.Err() == nil {
		c.blame(ctx, prog)
	}
	return c.finish(ctx), nil
}

// runRounds runs the rounds of sched one after the other: in a round, the
// pairs that run together (the rails of a host pair) run each of their
// links at once, and every pair of the round runs in parallel. Each link
// ends in the link stream and, unless it is a retest, in the summary.
// retests gets the retests' links, with their results.
func (c *coordinator) runRounds(ctx context.Context, sched Schedule, retest bool, prog *Progress) []report.MeshLink {
	var retests []report.MeshLink
	first := prog.Round
	for r, pairs := range sched {
		prog.Round = first + r + 1
		round := prog.Round
		var wg sync.WaitGroup
		for _, group := range Together(pairs) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				steps := 0
				for _, p := range group {
					steps = max(steps, len(p.Links))
				}
				for k := range steps {
					var step sync.WaitGroup
					for _, p := range group {
						if k >= len(p.Links) {
							continue
						}
						step.Add(1)
						go func() {
							defer step.Done()
							ml := c.runLink(ctx, round, p.Links[k])
							ml.Retest = retest
							c.mu.Lock()
							c.stream(report.Event{Event: report.EventLink, Link: &ml})
							if retest {
								retests = append(retests, ml)
							} else {
								c.summary.Add(&ml)
							}
							prog.Done++
							if ml.Error != "" {
								prog.Failed++
							}
							pr := *prog
							pr.Link = &ml
							c.mu.Unlock()
							c.progress(pr)
						}()
					}
					step.Wait()
				}
			}()
		}
		wg.Wait()
	}
	return retests
}

func (c *coordinator) progress(p Progress) {
	if c.cfg.Progress != nil {
		c.cfg.Progress(p)
	}
}

// add records a registered rank; c.mu is held, or the coordinator is not
// serving yet.
func (c *coordinator) add(reg registration, r runner, addr string) {
	rk := &c.ranks[reg.Rank]
	host := reg.Host
	rk.State, rk.Error, rk.LocalRank, rk.Host, rk.Devices = report.RankOK, "", reg.LocalRank, &host, reg.Devices
	rk.Lanes = reg.Lanes
	c.machines[reg.Rank] = cmp.Or(reg.Machine, reg.Host.Hostname)
	if reg.Rank != 0 {
		h := reg.Advertise
		if h == "" {
			h = hostOf(addr)
		}
		rk.Addr = joinHostPort(h, reg.Port)
	}
	c.runners[reg.Rank] = r
	c.count++
	if c.count == len(c.ranks) {
		close(c.all)
	}
}

// register is the control coordinator's callback for a rank that
// registers.
func (c *coordinator) register(m *control.Member) error {
	var reg registration
	if err := json.Unmarshal(m.Data(), &reg); err != nil {
		return fmt.Errorf("malformed registration: %w", err)
	}
	n := len(c.ranks)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case reg.Size != n:
		return fmt.Errorf("rank %d says the mesh has %d ranks, the coordinator %d: were they started by one launcher?", reg.Rank, reg.Size, n)
	case reg.Rank <= 0 || reg.Rank >= n:
		return fmt.Errorf("rank %d is not a rank this coordinator waits for (1 to %d)", reg.Rank, n-1)
	case c.started:
		return fmt.Errorf("the mesh started without rank %d: it registered after %v (--register-timeout)", reg.Rank, c.cfg.RegisterTimeout)
	case c.ranks[reg.Rank].State != report.RankUnregistered:
		return fmt.Errorf("rank %d is already registered (from %s)", reg.Rank, c.ranks[reg.Rank].Addr)
	}
	if c.selfIP == "" {
		c.selfIP = hostOf(m.LocalAddr())
	}
	c.add(reg, remoteRunner{m}, m.Addr())
	logf(c.cfg.Log, "rank %d registered from %s (%s)", reg.Rank, m.Addr(), reg.Host.Hostname)
	go func() {
		<-m.Lost()
		c.lost(reg.Rank, m.Err())
	}()
	return nil
}

// lost marks a rank lost, unless the mesh is ending.
func (c *coordinator) lost(rank int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ending || c.ranks[rank].State != report.RankOK {
		return
	}
	c.ranks[rank].State = report.RankLost
	c.ranks[rank].Error = fmt.Sprint(err)
	logf(c.cfg.Log, "rank %d lost: %v", rank, err)
}

// unavailable says why rank cannot take part in a link, or "".
func (c *coordinator) unavailable(rank int) string {
	rk := c.ranks[rank]
	name := "rank " + strconv.Itoa(rank)
	if rk.Host != nil && rk.Host.Hostname != "" {
		name += " (" + rk.Host.Hostname + ")"
	}
	switch rk.State {
	case report.RankUnregistered:
		return name + " never registered: " + rk.Error
	case report.RankLost:
		return name + " was lost: " + rk.Error
	}
	return ""
}

// runLink runs one link on the rank at its client end.
func (c *coordinator) runLink(ctx context.Context, round int, l Link) report.MeshLink {
	ml := report.MeshLink{From: l.From, To: l.To, Round: round, Results: []report.Result{}, Duplex: c.cfg.Duplex}
	c.mu.Lock()
	ml.Switches = c.path(l.From, l.To)
	why := c.unavailable(l.From)
	if why == "" {
		why = c.unavailable(l.To)
	}
	r := c.runners[l.From]
	peer := c.ranks[l.To].Addr
	c.mu.Unlock()
	if ctx.Err() != nil {
		ml.Error = "not run: " + context.Cause(ctx).Error()
		return ml
	}
	if why != "" {
		ml.Error = why
		return ml
	}
	req := c.cfg.Request
	spec := req.Spec
	spec.Device = "" // each rank uses its own
	if c.cfg.HostLevel {
		// The peer's devices as it registered them, paired one by one
		// with the client's.
		c.mu.Lock()
		spec.ServerDevice = strings.Join(c.ranks[l.To].Lanes, ",")
		c.mu.Unlock()
	}
	j := job{From: l.From, To: l.To, PeerAddr: peer, Tests: req.Tests, Spec: spec, Repeat: req.Repeat,
		Baseline: req.Baseline, Command: req.Command}
	lctx, cancel := context.WithTimeoutCause(ctx, c.cfg.LinkTimeout,
		fmt.Errorf("the link did not finish within %v", c.cfg.LinkTimeout))
	defer cancel()
	start := time.Now().UTC()
	o, err := r.run(lctx, j)
	var doc *report.Document
	if o != nil {
		doc = o.Document
	}
	ml.Start, ml.End = start, time.Now().UTC()
	if doc != nil {
		ml.Start, ml.End = doc.Start, doc.End
		ml.Results = doc.Results
		ml.Warnings = doc.Warnings
		c.mu.Lock()
		from := &c.ranks[l.From]
		if from.Host == nil || from.Host.Device == nil {
			h := doc.Hosts.Local
			keepName(&h, from.Host)
			from.Host = &h
		}
		if to := &c.ranks[l.To]; doc.Hosts.Remote != nil && (to.Host == nil || to.Host.Device == nil) {
			h := *doc.Hosts.Remote
			keepName(&h, to.Host)
			to.Host = &h
		}
		for name, cl := range doc.Clocks {
			if from.Clocks == nil {
				from.Clocks = map[string]report.Clock{}
			}
			from.Clocks[name] = cl
		}
		c.mu.Unlock()
	}
	if err != nil {
		// A JobError is the client rank's own account of the link's
		// failure; any other error lost that rank (its connection failed
		// or it missed the link's deadline).
		ml.Error = err.Error()
		var je *control.JobError
		isJob := errors.As(err, &je)
		if !isJob && l.From != 0 {
			c.lost(l.From, err)
		}
		c.mu.Lock()
		if why := c.unavailable(l.From); why != "" && !isJob {
			ml.Error = why
		} else if why := c.unavailable(l.To); why != "" {
			ml.Error += " (" + why + ")"
		}
		c.mu.Unlock()
	} else if len(ml.Results) == 0 {
		ml.Error = "no result"
	}
	return ml
}

// sameLanes refuses, before the first round, host-level ranks that list
// different numbers of devices: a link pairs the two hosts' devices one by
// one. Ranks that never registered are left to fail their links.
func sameLanes(ranks []report.MeshRank) error {
	first := -1
	for i, rk := range ranks {
		if rk.State != report.RankOK {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		if a, b := len(ranks[first].Lanes), len(rk.Lanes); a != b {
			return fmt.Errorf("--host-level: %s lists %d devices (%s), %s %d (%s): a link pairs the two hosts' devices one by one, so every rank needs as many (-d)",
				rankName(ranks[first]), a, strings.Join(ranks[first].Lanes, ","), rankName(rk), b, strings.Join(rk.Lanes, ","))
		}
	}
	return nil
}

// oneRankPerHost refuses a host-level mesh with two ranks on one host: each
// would run all of the host's devices at once, against the other. Ranks
// started by hand (--rank) may share one, as a test on one host does.
func oneRankPerHost(ranks []report.MeshRank, launcher string) error {
	if launcher == LauncherFlags {
		return nil
	}
	seen := map[string]report.MeshRank{}
	for _, rk := range ranks {
		if rk.State != report.RankOK || rk.Host == nil || rk.Host.Hostname == "" {
			continue
		}
		if o, dup := seen[rk.Host.Hostname]; dup {
			return fmt.Errorf("--host-level: ranks %d and %d both run on %s: a host-level mesh runs one rank per host, on all its devices at once; start one task per node (srun --ntasks-per-node=1, mpirun --map-by ppr:1:node)",
				o.Rank, rk.Rank, rk.Host.Hostname)
		}
		seen[rk.Host.Hostname] = rk
	}
	return nil
}

// rankName is "rank 3 (node4)", or "rank 3" when its host is unknown.
func rankName(rk report.MeshRank) string {
	name := "rank " + strconv.Itoa(rk.Rank)
	if rk.Host != nil && rk.Host.Hostname != "" {
		name += " (" + rk.Host.Hostname + ")"
	}
	return name
}

// stream hands an event to the link stream, if any; c.mu is held, so
// that the events are written one at a time, in order.
func (c *coordinator) stream(e report.Event) {
	if c.cfg.Stream == nil || c.streamFailed {
		return
	}
	if err := c.cfg.Stream(e); err != nil {
		// The summary still gets every link; the stream is not written
		// again, so that it holds no gap.
		c.streamFailed = true
		logf(c.cfg.Log, "link stream: %v: the links from %d on are only in the summary", err, c.summary.Links()+1)
	}
}

// header is the document without links or matrices: the run's facts, the
// mesh's schedule and its ranks as they are now; c.mu is held.
func (c *coordinator) header() *report.Document {
	d := *c.doc
	m := *c.doc.Mesh
	m.Ranks = slices.Clone(c.ranks)
	d.Mesh = &m
	return &d
}

// finish completes the document: the summary of every link, and the end
// of the link stream.
func (c *coordinator) finish(ctx context.Context) *report.Document {
	c.mu.Lock()
	defer c.mu.Unlock()
	doc := c.header()
	doc.Partial = false
	doc.End = time.Now().UTC()
	if h := c.ranks[0].Host; h != nil {
		doc.Hosts.Local = *h
	}
	if ctx.Err() != nil {
		doc.Error = "interrupted"
		if cause := context.Cause(ctx); cause != ctx.Err() {
			doc.Error = cause.Error()
		}
	}
	// Failed links are in the mesh, each with its error; the document's
	// Error says only why the mesh stopped before its end.
	c.summary.Fill(doc.Mesh)
	end := *doc
	m := *doc.Mesh
	m.Links, m.Matrices, m.Aggregate, m.LinkCount = nil, nil, nil, 0 // the stream's reader makes them again
	end.Mesh = &m
	c.stream(report.Event{Event: report.EventEnd, Document: &end})
	return doc
}
