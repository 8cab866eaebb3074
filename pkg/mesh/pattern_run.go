package mesh

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// DefaultPatternDuration is how long a step's flows run when -D does not
// say.
const DefaultPatternDuration = 2 * time.Second

// flowJob is one flow of a step that the sender runs against the
// receiver's server, at once with its other flows of the step.
type flowJob struct {
	To       int            `json:"to"`
	PeerAddr string         `json:"peer_addr"`
	Tests    []string       `json:"tests"`
	Spec     workloads.Spec `json:"spec"`
	Probe    bool           `json:"probe,omitempty"`
}

// flowOutcome is a flow's document, or why it failed.
type flowOutcome struct {
	Document *report.Document `json:"document,omitempty"`
	Error    string           `json:"error,omitempty"`
}

// rankCounters are a rank's port counters at one moment (job.Counters).
type rankCounters struct {
	Device string            `json:"device,omitempty"`
	Port   int               `json:"port,omitempty"`
	Values map[string]uint64 `json:"values,omitempty"`
	Error  string            `json:"error,omitempty"`
}

// probeTest is the ping-pong beside a pattern's bandwidth test.
func probeTest(test string) string {
	if t, ok := workloads.LookupTest(test); ok && !t.IsRDMA() {
		return "tcp-lat"
	}
	return "write-lat"
}

// patternTests are the bandwidth tests a pattern runs.
var patternTests = []string{"write-bw", "send-bw", "read-bw", "tcp-bw"}

// checkPattern refuses, as usage errors, what a pattern cannot run with.
func (c *Config) checkPattern() error {
	if c.Pattern == nil {
		if !c.PatternLimits.IsZero() {
			return usagef("--limit-share, --limit-fairness and --limit-load-p99 gate the steps of a load pattern: they need --pattern")
		}
		return nil
	}
	p := c.Pattern
	switch {
	case c.Links != nil:
		return usagef("--pattern %s and --pairs are exclusive: the pattern makes its own flows", p)
	case c.Schedule.Rails:
		return usagef("--pattern %s and --rails are exclusive: a pattern's flows run between ranks, whatever their rail", p)
	case c.Duplex:
		return usagef("--pattern %s and --duplex are exclusive: the pattern says which flows run at once (bisection runs both directions)", p)
	case c.HostLevel:
		return usagef("--pattern %s and --host-level are exclusive: a pattern's flows run from rank to rank, one device each", p)
	case c.Schedule.Sample > 0 && p.Kind != PatternIncast:
		return usagef("--pattern %s: --sample picks incast's receivers; %s runs every rank at once", p, p.Kind)
	case c.Request.Repeat > 1 || c.Request.Baseline:
		return usagef("--pattern %s: --repeat and --baseline do not apply: a step runs its flows once, for -D", p)
	}
	if len(c.Request.Tests) != 1 || !slices.Contains(patternTests, c.Request.Tests[0]) {
		return usagef("--pattern %s runs one bandwidth test in its flows (%s), not %s; the latency under the load comes from a ping-pong beside them",
			p, strings.Join(patternTests, ", "), strings.Join(c.Request.Tests, " "))
	}
	if len(c.Request.Spec.Sizes) > 1 {
		return usagef("--pattern %s runs its flows at one message size for -D; -s gives %d (give one)", p, len(c.Request.Spec.Sizes))
	}
	if c.Schedule.Sample > 0 && c.Schedule.Sample > c.Launch.Size {
		return usagef("--pattern %s --sample %d: the mesh has %d ranks to receive", p, c.Schedule.Sample, c.Launch.Size)
	}
	return p.Check(c.Launch.Size)
}

// flowSpec is the spec of a pattern's flows, probeSpec its probe's: the
// request's settings, for the step's duration.
func (c *Config) flowSpec() workloads.Spec {
	s := c.Request.Spec
	s.Device = ""
	s.Duration = cmp.Or(s.Duration, DefaultPatternDuration)
	s.Precision, s.PrecisionCap, s.Iterations = 0, 0, 0
	return s
}

func (c *Config) probeSpec() workloads.Spec {
	s := c.flowSpec()
	s.Sizes = nil
	s.QPs = 0
	s.Bidirectional = false
	return s
}

// doJob runs a job on this rank: a link's tests, a step's flows, or a
// reading of the port counters.
func doJob(ctx context.Context, cfg *Config, j job) (*outcome, error) {
	switch {
	case j.Counters:
		rc := readCounters(cfg)
		return &outcome{Counters: &rc}, nil
	case len(j.Flows) > 0:
		out := make([]flowOutcome, len(j.Flows))
		var wg sync.WaitGroup
		for i, f := range j.Flows {
			wg.Go(func() {
				doc, err := runJob(ctx, cfg, job{From: j.From, To: f.To, PeerAddr: f.PeerAddr, Tests: f.Tests, Spec: f.Spec})
				out[i].Document = doc
				if err != nil {
					out[i].Error = err.Error()
				}
			})
		}
		wg.Wait()
		return &outcome{Flows: out}, nil
	}
	doc, err := runJob(ctx, cfg, j)
	if doc == nil {
		return nil, err
	}
	return &outcome{Document: doc}, err
}

// readCounters reads every counter of this rank's port (its -d, else the
// host's first device) and of its network device.
func readCounters(cfg *Config) rankCounters {
	dev, _ := cfg.device()
	port := cmp.Or(cfg.Request.Spec.Port, 1)
	devs := workloads.LocalDevices()
	if dev == "" {
		if len(devs) == 0 {
			return rankCounters{Error: "no RDMA device on this host: no port counters"}
		}
		dev, port = devs[0].Name, devs[0].Port
	}
	netdev := ""
	for _, d := range devs {
		if d.Name == dev && d.Port == port {
			for _, g := range d.GIDs {
				if g.Netdev != "" {
					netdev = g.Netdev
					break
				}
			}
		}
	}
	v, err := workloads.AllPortCounters(dev, port, netdev)
	if err != nil {
		return rankCounters{Device: dev, Port: port, Error: err.Error()}
	}
	return rankCounters{Device: dev, Port: port, Values: v}
}

// runPattern runs the pattern's steps one after the other, each into the
// document's steps; each flow ends in the link stream, tagged with its
// step.
func (c *coordinator) runPattern(ctx context.Context, steps []Step, prog *Progress) {
	for i, st := range steps {
		prog.Round = i + 1
		ms := c.runStep(ctx, i+1, st, prog)
		c.mu.Lock()
		c.doc.Mesh.Steps = append(c.doc.Mesh.Steps, ms)
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.doc.Mesh.StepFailures = report.CheckSteps(c.doc.Mesh.Steps, c.cfg.PatternLimits)
	c.mu.Unlock()
}

// runStep runs one step: the counters of its ranks, its flows and probe
// at once, the counters again.
func (c *coordinator) runStep(ctx context.Context, n int, st Step, prog *Progress) report.MeshStep {
	ranks := st.Ranks()
	t0 := time.Now()
	before := c.counters(ctx, ranks)
	t1 := time.Now()
	// Each sender's flows, its probe among them, in one job.
	type sent struct {
		flows []Flow
		jobs  []flowJob
	}
	bySender := map[int]*sent{}
	fspec, pspec := c.cfg.flowSpec(), c.cfg.probeSpec()
	test := c.cfg.Request.Tests[0]
	c.mu.Lock()
	add := func(f Flow, probe bool) {
		s := bySender[f.From]
		if s == nil {
			s = &sent{}
			bySender[f.From] = s
		}
		fj := flowJob{To: f.To, PeerAddr: c.ranks[f.To].Addr, Tests: []string{test}, Spec: fspec, Probe: probe}
		if probe {
			fj.Tests, fj.Spec = []string{probeTest(test)}, pspec
		}
		s.flows = append(s.flows, f)
		s.jobs = append(s.jobs, fj)
	}
	for _, f := range st.Flows {
		add(f, false)
	}
	add(st.Probe, true)
	c.mu.Unlock()
	links := map[Flow]*report.MeshLink{}
	var probe *report.MeshLink
	linkGbps := map[int]float64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	timeout := fspec.Duration + c.cfg.LinkTimeout
	for from, s := range bySender {
		wg.Go(func() {
			outs, err := c.runFlows(ctx, from, s.jobs, timeout)
			mu.Lock()
			defer mu.Unlock()
			for i, f := range s.flows {
				ml := &report.MeshLink{From: f.From, To: f.To, Round: n, Step: n, Probe: s.jobs[i].Probe, Results: []report.Result{}}
				c.mu.Lock()
				ml.Switches = c.path(f.From, f.To)
				c.mu.Unlock()
				switch {
				case err != nil:
					ml.Error = err.Error()
				case outs[i].Document != nil:
					d := outs[i].Document
					ml.Start, ml.End, ml.Results, ml.Warnings = d.Start, d.End, d.Results, d.Warnings
					ml.Error = outs[i].Error
					if r := d.Hosts.Remote; r != nil && r.Device != nil && r.Device.LinkGbps > 0 && !ml.Probe {
						linkGbps[f.To] = r.Device.LinkGbps
					}
				default:
					ml.Error = cmp.Or(outs[i].Error, "the flow's run returned no document")
				}
				if ml.Probe {
					probe = ml
				} else {
					links[f] = ml
				}
			}
		})
	}
	wg.Wait()
	t2 := time.Now()
	after := c.counters(ctx, ranks)
	t3 := time.Now()
	in := report.StepInput{Step: n, Receiver: st.Receiver, Ranks: ranks, Duration: fspec.Duration, Probe: probe, LinkGbps: linkGbps}
	if t, ok := workloads.LookupTest(test); ok && !t.IsRDMA() {
		in.NoShare = test + ": TCP has no nominal rate of its own"
	}
	c.mu.Lock()
	in.Hosts = make([]string, len(c.ranks))
	for r := range c.ranks {
		in.Hosts[r] = c.hostName(r)
	}
	for _, f := range st.Flows {
		ml := links[f]
		in.Flows = append(in.Flows, *ml)
		c.stream(report.Event{Event: report.EventLink, Link: ml})
		prog.Done++
		if ml.Error != "" {
			prog.Failed++
		}
	}
	if probe != nil {
		c.stream(report.Event{Event: report.EventLink, Link: probe})
	}
	pr := *prog
	c.mu.Unlock()
	c.progress(pr)
	for _, r := range ranks {
		b, a := before[r], after[r]
		switch {
		case b.Error != "" || a.Error != "":
			in.Counters = append(in.Counters, report.StepCounters{Rank: r, Device: a.Device, Port: a.Port, Error: cmp.Or(a.Error, b.Error)})
		default:
			in.Counters = append(in.Counters, report.CounterChange(r, a.Device, a.Port, b.Values, a.Values))
		}
	}
	ms := report.NewMeshStep(in)
	flowsNs := t2.Sub(t1).Nanoseconds()
	ms.Cost = &report.StepCost{CountersNs: (t1.Sub(t0) + t3.Sub(t2)).Nanoseconds(), FlowsNs: flowsNs,
		SetupNs: max(0, flowsNs-fspec.Duration.Nanoseconds()), RecordNs: time.Since(t3).Nanoseconds()}
	return ms
}

// runFlows gives a sender its flows of a step and waits for them.
func (c *coordinator) runFlows(ctx context.Context, from int, jobs []flowJob, timeout time.Duration) ([]flowOutcome, error) {
	c.mu.Lock()
	why := c.unavailable(from)
	for _, j := range jobs {
		why = cmp.Or(why, c.unavailable(j.To))
	}
	r := c.runners[from]
	c.mu.Unlock()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("not run: %w", context.Cause(ctx))
	}
	if why != "" {
		return nil, errors.New(why)
	}
	lctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("the step's flows did not finish within %v", timeout))
	defer cancel()
	o, err := r.run(lctx, job{From: from, Flows: jobs})
	if err == nil && (o == nil || len(o.Flows) != len(jobs)) {
		err = fmt.Errorf("rank %d answered %d flows of %d", from, len(o.flowsOrNil()), len(jobs))
	}
	if err != nil {
		var je *control.JobError
		if !errors.As(err, &je) && from != 0 {
			c.lost(from, err)
		}
		return nil, err
	}
	return o.Flows, nil
}

func (o *outcome) flowsOrNil() []flowOutcome {
	if o == nil {
		return nil
	}
	return o.Flows
}

// counters reads the port counters of ranks, at once.
func (c *coordinator) counters(ctx context.Context, ranks []int) map[int]rankCounters {
	out := map[int]rankCounters{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, rk := range ranks {
		c.mu.Lock()
		why := c.unavailable(rk)
		r := c.runners[rk]
		c.mu.Unlock()
		if why != "" {
			out[rk] = rankCounters{Error: why}
			continue
		}
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			o, err := r.run(cctx, job{From: rk, Counters: true})
			rc := rankCounters{Error: "no counters"}
			switch {
			case err != nil:
				rc.Error = err.Error()
			case o != nil && o.Counters != nil:
				rc = *o.Counters
			}
			mu.Lock()
			out[rk] = rc
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// coordinatePattern is rank 0's part once the ranks registered, for a
// load pattern: its steps, then the document.
func (c *coordinator) coordinatePattern(ctx context.Context, ranks []report.MeshRank) (*report.Document, error) {
	cfg := c.cfg
	n := len(ranks)
	hosts := make([]string, n)
	for i, rk := range ranks {
		if rk.Host != nil {
			hosts[i] = rk.Host.Hostname
		}
	}
	steps, note, err := cfg.Pattern.Steps(n, PatternOptions{Sample: cfg.Schedule.Sample, Seed: cfg.Schedule.Seed, Hosts: hosts, Topology: cfg.Topology})
	if err != nil {
		return nil, err
	}
	flows := 0
	for _, st := range steps {
		flows += len(st.Flows)
	}
	spec := cfg.flowSpec()
	test := cfg.Request.Tests[0]
	mp := &report.MeshPattern{Name: cfg.Pattern.String(), Test: test, Probe: probeTest(test), DurationNs: int64(spec.Duration),
		QPs: spec.QPs, Seed: cfg.Schedule.Seed, Sample: cfg.Schedule.Sample}
	if !cfg.PatternLimits.IsZero() {
		mp.Gates = &cfg.PatternLimits
	}
	m := &report.Mesh{Size: n, Launcher: cfg.Launch.Launcher, Coordinator: cfg.Coordinator, Tests: cfg.Request.Tests,
		Rounds: len(steps), Schedule: KindPattern, Pattern: mp, Ranks: []report.MeshRank{}, Links: []report.MeshLink{}, Matrices: []report.Matrix{}}
	m.Topology = meshTopology(cfg.Topology)
	c.doc.Mesh = m
	if note != "" {
		c.doc.Warnings = append(c.doc.Warnings, note)
	}
	c.summary = report.NewMeshBuilder(cfg.Request.Tests, report.Limits{}, 0)
	c.summary.SetRanks(n)
	c.mu.Lock()
	c.stream(report.Event{Event: report.EventStart, Document: c.header()})
	c.mu.Unlock()
	prog := &Progress{Rounds: len(steps), Links: flows, Ranks: n, Started: true}
	c.progress(*prog)
	c.runPattern(ctx, steps, prog)
	c.mu.Lock()
	if crowded := c.crowded(spins(cfg.Request)); crowded != "" {
		c.doc.Warnings = append(c.doc.Warnings, crowded+": its flows' figures measure the sharing of its CPUs as much as the fabric")
	}
	c.mu.Unlock()
	return c.finish(ctx), nil
}
