package plot

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// stepCat is one step on the x axis of the charts of a load pattern: its
// number, and what its tick says below it.
type stepCat struct {
	step  int
	below string // "into rank 3", "4 receivers"
}

// stepDot is one dot of a chart per step before it is placed: the line
// (series) it belongs to, the step it is at (an index into the steps),
// and the point without its x.
type stepDot struct {
	line, cat int
	pt        point
}

// patternSources are the indexes of the sources that are load pattern
// meshes (`rdmabench mesh --pattern`).
func (p *plotter) patternSources() []int {
	var out []int
	for si, s := range p.srcs {
		if m := s.Doc.Mesh; m != nil && m.Pattern != nil {
			out = append(out, si)
		}
	}
	return out
}

// steps are the charts of the load pattern meshes among the sources,
// one dot per step and receiver (or probe), the sources overlaid by step
// number as `compare` pairs them: the receivers' aggregate
// ([StepBandwidth]), its share of the nominal rate where the devices say
// it ([StepShare]), Jain's index ([StepFairness]) and the probe's p50
// and p99 under the load ([StepLatency]).
func (p *plotter) steps() []*chart {
	pats := p.patternSources()
	if len(pats) == 0 {
		return nil
	}
	// The steps of every source, in order; a tick says the first
	// source's receiver of the step.
	var cats []stepCat
	at := map[int]int{}
	var names []string
	test := ""
	for _, si := range pats {
		m := p.srcs[si].Doc.Mesh
		if !slices.Contains(names, m.Pattern.Name) {
			names = append(names, m.Pattern.Name)
		}
		if test == "" {
			test = m.Pattern.Test
		}
		if len(m.Steps) == 0 {
			p.notes = append(p.notes, fmt.Sprintf("%s: pattern %s: no step ran", p.srcs[si].Name, textfmt.Clean(m.Pattern.Name)))
		}
		for _, st := range m.Steps {
			if _, ok := at[st.Step]; ok {
				continue
			}
			at[st.Step] = -1 // its index once the steps are sorted
			below := fmt.Sprintf("%d receivers", len(st.Receivers))
			switch {
			case st.Receiver != nil:
				below = fmt.Sprintf("into rank %d", *st.Receiver)
			case len(st.Receivers) == 1:
				below = "1 receiver"
			}
			cats = append(cats, stepCat{step: st.Step, below: below})
		}
	}
	slices.SortFunc(cats, func(a, b stepCat) int { return a.step - b.step })
	for i, c := range cats {
		at[c.step] = i
	}
	if len(cats) == 0 {
		return nil
	}
	pattern := strings.Join(names, " vs ")
	key := report.Key{Test: test}
	head := textfmt.Clean(pattern)
	if test != "" {
		head += ", " + textfmt.Clean(test)
	}

	bw := &chart{kind: StepBandwidth, sweep: true, key: key, pattern: pattern, title: head + ": each receiver's aggregate per step"}
	share := &chart{kind: StepShare, sweep: true, key: key, pattern: pattern, title: head + ": each receiver's aggregate over its nominal rate per step"}
	jain := &chart{kind: StepFairness, sweep: true, key: key, pattern: pattern, title: head + ": Jain's index of each receiver's flows per step"}
	lat := &chart{kind: StepLatency, sweep: true, key: key, pattern: pattern, title: head + ": the probe's latency under the load per step"}
	var bwLines, shareLines, jainLines, latLines []series
	var bwDots, shareDots, jainDots, latDots []stepDot
	basis := ""
	for _, si := range pats {
		s := p.srcs[si]
		m := s.Doc.Mesh
		color := palette[si%len(palette)]
		name := func(what string) string {
			if len(p.srcs) > 1 {
				return s.Name + " " + what
			}
			return what
		}
		// The lines of this source: receivers (ranks) filled, hosts open.
		line := func(lines *[]series, what, figure string, dashed bool) int {
			*lines = append(*lines, series{name: name(what), legend: name(what), source: s.Name, figure: figure,
				color: color, dashed: dashed, marks: true, dots: true})
			return len(*lines) - 1
		}
		rankBW, hostBW := line(&bwLines, "receivers", "aggregate", false), line(&bwLines, "hosts", "aggregate", true)
		rankShare, hostShare := line(&shareLines, "receivers", "share", false), line(&shareLines, "hosts", "share", true)
		rankJain, hostJain := line(&jainLines, "receivers", "jain", false), line(&jainLines, "hosts", "jain", true)
		p50, p99 := line(&latLines, "p50", "p50", false), line(&latLines, "p99", "p99", true)
		for _, st := range m.Steps {
			ci := at[st.Step]
			if st.Error != "" {
				p.notes = append(p.notes, fmt.Sprintf("%s: step %d: %s", s.Name, st.Step, textfmt.Clean(st.Error)))
			}
			for _, group := range []struct {
				rcs            []report.StepReceiver
				bw, share, jfi int
			}{{st.Receivers, rankBW, rankShare, rankJain}, {st.Hosts, hostBW, hostShare, hostJain}} {
				for _, rc := range group.rcs {
					who := textfmt.Clean(rc.Name())
					if rc.Measured == 0 {
						p.notes = append(p.notes, fmt.Sprintf("%s: step %d, %s: none of its %d flows measured", s.Name, st.Step, who, rc.Flows))
						continue
					}
					k := strconv.Itoa(st.Step) + "/" + who
					flows := fmt.Sprintf("%d flows", rc.Measured)
					if rc.Measured != rc.Flows {
						flows = fmt.Sprintf("%d of %d flows", rc.Measured, rc.Flows)
					}
					tip := fmt.Sprintf("step %d, %s: aggregate %s Gbit/s over %s", st.Step, who, smallNum(rc.AggregateGbps), flows)
					if rc.Share != nil {
						tip += fmt.Sprintf(", %.1f%% of its %s Gbit/s link", 100**rc.Share, textfmt.Num(rc.LinkGbps))
					}
					tip += fmt.Sprintf(", Jain %.3f, min/median %.2f, max/median %.2f", rc.Jain, rc.MinOverMedian, rc.MaxOverMedian)
					bwDots = append(bwDots, stepDot{group.bw, ci, point{y: rc.AggregateGbps, key: k, tip: tip}})
					jainDots = append(jainDots, stepDot{group.jfi, ci, point{y: rc.Jain, key: k,
						tip: fmt.Sprintf("step %d, %s: Jain's index %.3f over %s", st.Step, who, rc.Jain, flows)}})
					if rc.Share != nil {
						shareDots = append(shareDots, stepDot{group.share, ci, point{y: 100 * *rc.Share, key: k,
							tip: fmt.Sprintf("step %d, %s: %.1f%% of its %s Gbit/s link (aggregate %s Gbit/s)", st.Step, who,
								100**rc.Share, textfmt.Num(rc.LinkGbps), smallNum(rc.AggregateGbps))}})
					}
				}
			}
			pr := st.Probe
			switch {
			case pr == nil:
			case pr.Latency == nil || pr.Latency.Count == 0 && pr.Latency.P50Ns == 0:
				msg := cmp.Or(pr.Error, "no latency measured")
				p.notes = append(p.notes, fmt.Sprintf("%s: step %d: the probe %d -> %d: %s", s.Name, st.Step, pr.From, pr.To, textfmt.Clean(msg)))
			default:
				l := pr.Latency
				if basis == "" {
					basis = l.Basis
				}
				k := fmt.Sprintf("%d/probe %d -> %d", st.Step, pr.From, pr.To)
				what := fmt.Sprintf("step %d, %s %d -> %d under the load", st.Step, textfmt.Clean(pr.Test), pr.From, pr.To)
				latDots = append(latDots,
					stepDot{p50, ci, point{y: l.P50Ns / 1e3, key: k, tip: fmt.Sprintf("%s: p50 %s µs", what, smallNum(l.P50Ns/1e3))}},
					stepDot{p99, ci, point{y: l.P99Ns / 1e3, key: k, tip: fmt.Sprintf("%s: p99 %s µs", what, smallNum(l.P99Ns/1e3))}})
			}
		}
	}
	var out []*chart
	if placeSteps(bw, bwLines, bwDots, cats) {
		_, hi := seriesRange(bw.series)
		bw.y = linearAxis("aggregate, Gbit/s", hi*1.05)
		out = append(out, bw)
	}
	if placeSteps(share, shareLines, shareDots, cats) {
		_, hi := seriesRange(share.series)
		share.y = linearAxis("share of the nominal rate, %", max(100, hi*1.05))
		out = append(out, share)
	}
	if placeSteps(jain, jainLines, jainDots, cats) {
		// From 0 to 1 (all flows got the same), with room above for a dot
		// at 1.
		jain.y = axis{label: "Jain's index", lo: 0, hi: 1.05}
		for i := 0; i <= 5; i++ {
			v := float64(i) / 5
			jain.y.ticks = append(jain.y.ticks, tick{v, tickNum(v)})
		}
		out = append(out, jain)
	}
	if placeSteps(lat, latLines, latDots, cats) {
		lo, hi := seriesRange(lat.series)
		if lo > 0 && hi > 20*lo {
			lat.y = logAxis(latencyLabel(basis)+", log scale", lo/1.1, hi*1.1)
		} else {
			lat.y = linearAxis(latencyLabel(basis), hi*1.05)
		}
		out = append(out, lat)
	}
	return out
}

// placeSteps sets chart c's x axis (one tick per step) and its lines:
// each dot at its step, the dots of one step side by side in line order;
// false when there is no dot.
func placeSteps(c *chart, lines []series, dots []stepDot, cats []stepCat) bool {
	if len(dots) == 0 {
		return false
	}
	slices.SortStableFunc(dots, func(a, b stepDot) int { return a.line - b.line })
	per := make([]int, len(cats))
	for _, d := range dots {
		per[d.cat]++
	}
	seen := make([]int, len(cats))
	for _, d := range dots {
		n := per[d.cat]
		off := 0.0
		if n > 1 {
			half := math.Min(0.35, 0.06*float64(n-1))
			off = -half + 2*half*float64(seen[d.cat])/float64(n-1)
		}
		seen[d.cat]++
		d.pt.x = float64(d.cat+1) + off
		lines[d.line].points = append(lines[d.line].points, d.pt)
	}
	for _, l := range lines {
		if len(l.points) > 0 {
			c.series = append(c.series, l)
		}
	}
	c.x = axis{lo: 0.5, hi: float64(len(cats)) + 0.5}
	// With many steps a tick every few, so that labels do not run into
	// each other.
	every := 1
	for len(cats)/every > 16 {
		every++
	}
	for i, s := range cats {
		if i%every != 0 {
			continue
		}
		label := strconv.Itoa(s.step)
		if len(cats) <= 8 {
			label = "step " + label + "\n" + s.below
		} else {
			c.x.label = "step"
		}
		c.x.ticks = append(c.x.ticks, tick{float64(i + 1), label})
	}
	return true
}
