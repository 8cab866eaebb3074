package mesh

import (
	"context"
	"math"

	"github.com/rdmabench/rdmabench/pkg/blame"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// judgedFigure is one figure of the mesh that blame judges.
type judgedFigure struct {
	key   report.Key
	fig   report.Figure
	blame blame.Verdicts
}

// judgesFigure says whether blame judges a figure: the p50 of latency
// tests and the bandwidth of the others. The p99 is too noisy to judge a
// link by its neighbours' (--limit-p99 gates it).
func judgesFigure(f report.Figure) bool { return f == report.FigP50 || f == report.FigGbps }

// blame judges every judged figure of the links measured, retests the
// suspects in rounds of their own, and records the verdicts in the
// document's mesh.
func (c *coordinator) blame(ctx context.Context, prog *Progress) {
	c.mu.Lock()
	names := make([]blame.RankName, len(c.ranks))
	for i, rk := range c.ranks {
		if rk.Host != nil {
			names[i].Host = rk.Host.Hostname
			if rk.Host.Device != nil {
				names[i].Device = rk.Host.Device.Name
			}
		}
	}
	ups := c.switchesUp()
	crowded := c.crowded(spins(c.cfg.Request))
	opt := c.cfg.BlameOptions
	opt.FleetCheck = true
	var judged []judgedFigure
	c.summary.Figures(func(k report.Key, f report.Figure, values []report.LinkValue) {
		if !judgesFigure(f) {
			return
		}
		if c.cfg.Duplex && f.IsLatency() {
			// A ping-pong's figure is in both cells of its pair: judged
			// once, as the link ran.
			values = onePerPair(values)
		}
		in := blame.Input{Figure: k.String() + " " + figureWord(f), HigherIsWorse: f.IsLatency(), Names: names,
			Links: linkFigures(values), Switches: ups, Crowded: crowded,
			Format: func(v float64) string { return f.FormatAll(v)[0] }}
		judged = append(judged, judgedFigure{key: k, fig: f, blame: blame.Judge(in, opt)})
	})
	c.mu.Unlock()

	var suspects []Link
	seen := map[Link]bool{}
	for _, j := range judged {
		for _, s := range j.blame.Suspects() {
			if l := Link(s); !seen[l] {
				seen[l] = true
				suspects = append(suspects, l)
			}
		}
	}
	if len(suspects) > 0 && ctx.Err() == nil {
		sched := Retest(suspects)
		if c.cfg.Duplex {
			// A duplex link measures both directions of its pair: a pair
			// with two suspects runs once.
			sched = sched.Duplex()
		}
		logf(c.cfg.Log, "%d suspect links: retesting them in %d rounds of their own", len(suspects), len(sched))
		prog.Rounds += len(sched)
		c.mu.Lock()
		c.doc.Mesh.RetestRounds = len(sched)
		c.mu.Unlock()
		prog.Links += sched.Links()
		retests := c.runRounds(ctx, sched, true, prog)
		// The retests' figures, as the summary would take them.
		again := report.NewMeshBuilder(c.cfg.Request.Tests, report.Limits{}, 0)
		for i := range retests {
			again.Add(&retests[i])
		}
		again.Figures(func(k report.Key, f report.Figure, values []report.LinkValue) {
			for i := range judged {
				j := &judged[i]
				if j.key != k || j.fig != f {
					continue
				}
				j.blame = j.blame.Retested(linkFigures(values))
			}
		})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.cfg.BlameOptions.WithDefaults()
	record := &report.MeshBlame{Multiplier: o.Multiplier, MinSpread: o.MinSpread, MaxSpread: o.MaxSpread,
		Figures: []report.BlameFigure{}}
	for _, j := range judged {
		c.doc.Mesh.Verdicts = append(c.doc.Mesh.Verdicts, docVerdicts(j.key, j.fig, j.blame)...)
		record.Figures = append(record.Figures, report.BlameFigure{Test: j.key.Test, Connection: j.key.Connection,
			Size: j.key.Size, Figure: j.fig, Links: j.blame.Judged, FleetMedian: j.blame.FleetMedian,
			Spread: math.Expm1(j.blame.Spread), Limit: j.blame.Limit, Unjudged: j.blame.Unjudged})
	}
	c.doc.Mesh.Blame = record
}

// spins says whether a test of req spins on its host's CPU: an RDMA
// test polls its completions, unless it waits for them on a completion
// channel (-e); a TCP test sleeps in the kernel.
func spins(req workloads.Request) bool {
	if req.Spec.Events {
		return false
	}
	for _, name := range req.Tests {
		if t, ok := workloads.LookupTest(name); ok && t.Loop != 0 {
			return true
		}
	}
	return false
}

// linkFigures are the summary's values of a figure as blame takes them.
func linkFigures(values []report.LinkValue) []blame.LinkFigure {
	figs := make([]blame.LinkFigure, len(values))
	for i, v := range values {
		figs[i] = blame.LinkFigure{From: v.From, To: v.To, Round: v.Round, Value: v.Value}
	}
	return figs
}

// onePerPair keeps, of the values of a duplex mesh's ping-pong, the first
// of each pair of ranks (the link as it ran: the summary adds its own
// direction first).
func onePerPair(values []report.LinkValue) []report.LinkValue {
	seen := make(map[[2]int]bool, len(values)/2)
	out := values[:0:0]
	for _, v := range values {
		k := [2]int{min(v.From, v.To), max(v.From, v.To)}
		if !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	return out
}

// figureWord names a figure in a verdict: "p50", "bandwidth".
func figureWord(f report.Figure) string {
	if f == report.FigGbps {
		return "bandwidth"
	}
	return string(f)
}

// docVerdicts are b's verdicts as the document records them.
func docVerdicts(k report.Key, f report.Figure, b blame.Verdicts) []report.Verdict {
	base := report.Verdict{Test: k.Test, Connection: k.Connection, Size: k.Size, Figure: f}
	var out []report.Verdict
	for _, v := range b.Switches {
		s := base
		s.Subject, s.Kind = report.SubjectSwitch, v.Kind
		s.Value, s.Baseline, s.Ratio = v.Value, v.FleetMedian, v.Ratio
		if v.Retest != nil {
			s.Retested, s.Recovered = v.Retest.Links, v.Retest.Recovered
		}
		s.Message = v.String(b.Figure)
		s.Switch = &report.SwitchEvidence{Switch: v.Switch, Or: v.Or, CrossLinks: v.Cross, BadCrossLinks: v.BadCross,
			InnerLinks: v.Inner, BadInnerLinks: v.BadInner, Hosts: v.Hosts, BadHosts: v.BadHosts, InnerValue: v.InnerValue,
			InnerRatio: v.InnerRatio}
		out = append(out, s)
	}
	for _, v := range b.Ranks {
		r := base
		r.Subject, r.Kind, r.Rank = report.SubjectRank, v.Kind, ptr(v.Rank)
		r.Value, r.Baseline, r.Ratio = v.Value, v.FleetMedian, v.Ratio
		r.BadPeers, r.Peers = v.BadPeers, v.Peers
		if v.Retest != nil {
			r.Retested, r.Recovered = v.Retest.Links, v.Retest.Recovered
		}
		r.Message = v.String(b.Figure)
		out = append(out, r)
	}
	for _, v := range b.Links {
		l := base
		l.Subject, l.Kind, l.From, l.To, l.Round = report.SubjectLink, v.Kind, ptr(v.Link.From), ptr(v.Link.To), v.Round
		l.Value, l.Baseline, l.Ratio = v.Value, v.Baseline, v.Ratio
		if v.Retest != nil {
			l.Retested, l.Recovered = v.Retest.Links, v.Retest.Recovered
		}
		l.Message = v.String(b.Figure)
		out = append(out, l)
	}
	for _, v := range b.Rounds {
		r := base
		r.Subject, r.Kind, r.Round = report.SubjectRound, report.VerdictSlow, v.Round
		r.Value, r.Baseline, r.Ratio = v.Median, v.FleetMedian, v.Ratio
		r.Message = v.String(b.Figure)
		out = append(out, r)
	}
	return out
}

func ptr(i int) *int { return &i }
