package blame

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// leaves places ranks on leaves under one spine: sizes[i] hosts (one rank
// each) on leaf i+1, host names h0, h1, ...
func leaves(sizes ...int) ([]RankName, [][]string) {
	var names []RankName
	var ups [][]string
	for i, n := range sizes {
		for range n {
			names = append(names, RankName{Host: fmt.Sprintf("h%d", len(names))})
			ups = append(ups, []string{fmt.Sprintf("leaf%d", i+1), "spine"})
		}
	}
	return names, ups
}

// slowUplinks slows the links with exactly one end on leaf.
func slowUplinks(ups [][]string, leaf string, k float64) func(Link, int) float64 {
	return func(l Link, _ int) float64 {
		if (ups[l.From][0] == leaf) != (ups[l.To][0] == leaf) {
			return k
		}
		return 1
	}
}

func switchInput(sizes []int, latency bool, seed uint64, slow func(ups [][]string) func(Link, int) float64) Input {
	names, ups := leaves(sizes...)
	n := len(names)
	f := fleet{sched: roundRobin(n), base: 20, latency: latency, names: names, seed: seed}
	if slow != nil {
		f.slow = slow(ups)
	}
	in := f.input(n)
	in.Switches = ups
	return in
}

// A leaf whose uplinks are slow is blamed, its cross-switch links its
// verdict, not its hosts' nor the links'; its inner links and the other
// leaves' are normal. A latency and a bandwidth, several seeds.
func TestBlameSwitch(t *testing.T) {
	for seed := range uint64(5) {
		for _, latency := range []bool{true, false} {
			in := switchInput([]int{4, 4, 4}, latency, seed, func(ups [][]string) func(Link, int) float64 {
				return slowUplinks(ups, "leaf2", 3)
			})
			b := Judge(in, Options{FleetCheck: true})
			if len(b.Switches) != 1 || len(b.Ranks) != 0 || len(b.Links) != 0 || b.Unjudged != "" {
				t.Fatalf("seed %d latency %v: switches %+v, %s, unjudged %q", seed, latency, b.Switches, verdicts(b), b.Unjudged)
			}
			v := b.Switches[0]
			// leaf2's 4 hosts, each to the 8 others and back: 64 links; 12 inside it.
			if v.Switch != "leaf2" || len(v.Or) != 0 || v.Cross != 64 || v.BadCross != 64 || v.Inner != 12 || v.BadInner != 0 ||
				v.Hosts != 4 || v.BadHosts != 4 || len(v.Links) != 64 {
				t.Errorf("seed %d latency %v: %+v", seed, latency, v)
			}
			if want := 3.0; latency && math.Abs(v.Ratio-want) > 0.3 || !latency && math.Abs(v.Ratio-1/want) > 0.05 {
				t.Errorf("seed %d latency %v: ratio %g", seed, latency, v.Ratio)
			}
			if b.Bad() != 1 {
				t.Errorf("Bad() = %d", b.Bad())
			}
			line := b.Lines()[0]
			if !strings.HasPrefix(line, "leaf2: its 64 cross-switch links (from 4 of its 4 hosts) at p50 3") &&
				!strings.HasPrefix(line, "leaf2: its 64 cross-switch links (from 4 of its 4 hosts) at write-bw Gbit/s 0.3") ||
				!strings.Contains(line, "its 12 inner links normal") {
				t.Errorf("line %q", line)
			}
			// Retested: RetestPerRank of its links, from distinct hosts of it.
			sus := b.Suspects()
			if len(sus) != DefaultRetestPerRank {
				t.Errorf("suspects %v", sus)
			}
			under := map[int]bool{}
			for _, l := range sus {
				r := l.From
				if in.Switches[r][0] != "leaf2" {
					r = l.To
				}
				under[r] = true
			}
			if len(under) != DefaultRetestPerRank {
				t.Errorf("suspects %v: from %d ranks of leaf2", sus, len(under))
			}
		}
	}
}

// A host slowed alone blames the host, not its leaf.
func TestBlameSwitchNotForOneHost(t *testing.T) {
	for seed := range uint64(5) {
		for _, sizes := range [][]int{{4, 4, 4}, {2, 2, 2, 2}, {4, 4}} {
			in := switchInput(sizes, true, seed, func([][]string) func(Link, int) float64 { return slowRank(1, 3) })
			b := Judge(in, Options{FleetCheck: true})
			if len(b.Switches) != 0 || len(b.Ranks) != 1 || b.Ranks[0].Rank != 1 || b.Unjudged != "" {
				t.Errorf("sizes %v seed %d: switches %+v, %s, unjudged %q", sizes, seed, b.Switches, verdicts(b), b.Unjudged)
			}
		}
	}
}

// Two leaves: every cross-switch link crosses both, so the verdict names
// both. (With two leaves of one size the cross-switch links are most of
// each rank's: their figure is the fleet median, and nothing is slow
// against it; unequal leaves keep the median the inner links'.)
func TestBlameSwitchTwoLeaves(t *testing.T) {
	in := switchInput([]int{6, 2}, true, 1, func(ups [][]string) func(Link, int) float64 { return slowUplinks(ups, "leaf1", 4) })
	b := Judge(in, Options{FleetCheck: true})
	if len(b.Switches) != 1 || len(b.Ranks) != 0 || len(b.Links) != 0 {
		t.Fatalf("switches %+v, %s", b.Switches, verdicts(b))
	}
	v := b.Switches[0]
	if v.Switch != "leaf1" || !slices.Equal(v.Or, []string{"leaf2"}) || !strings.Contains(b.Lines()[0], "leaf1 or leaf2: ") ||
		!strings.Contains(b.Lines()[0], "cannot tell which") {
		t.Errorf("%+v: %q", v, b.Lines())
	}
}

// A switch whose inner links are slow too is not blamed for its uplinks:
// its hosts are slow.
func TestBlameSwitchInnerSlow(t *testing.T) {
	in := switchInput([]int{4, 4, 4}, true, 2, func(ups [][]string) func(Link, int) float64 {
		return func(l Link, _ int) float64 {
			if ups[l.From][0] == "leaf1" || ups[l.To][0] == "leaf1" {
				return 3
			}
			return 1
		}
	})
	b := Judge(in, Options{})
	if len(b.Switches) != 0 || len(b.Ranks)+len(b.Links) == 0 {
		t.Errorf("switches %+v, %s", b.Switches, verdicts(b))
	}
	// Without the switches, no switch verdict.
	in = switchInput([]int{4, 4, 4}, true, 2, func(ups [][]string) func(Link, int) float64 { return slowUplinks(ups, "leaf2", 3) })
	in.Switches = nil
	if b := Judge(in, Options{}); len(b.Switches) != 0 {
		t.Errorf("no topology: switches %+v, %s", b.Switches, verdicts(b))
	}
}

// A switch verdict whose retests recover is flaky; one slow again stays bad.
func TestBlameSwitchRetest(t *testing.T) {
	in := switchInput([]int{4, 4, 4}, true, 3, func(ups [][]string) func(Link, int) float64 { return slowUplinks(ups, "leaf3", 3) })
	b := Judge(in, Options{})
	for _, c := range []struct {
		k    float64
		kind string
	}{{1, VerdictFlaky}, {3, VerdictBad}} {
		var figs []LinkFigure
		for _, l := range b.Suspects() {
			figs = append(figs, LinkFigure{From: l.From, To: l.To, Value: 20 * c.k})
		}
		r := b.Retested(figs)
		if len(r.Switches) != 1 || r.Switches[0].Kind != c.kind || r.Switches[0].Retest == nil ||
			r.Switches[0].Retest.Links != DefaultRetestPerRank {
			t.Errorf("retests at %g×: %+v", c.k, r.Switches)
		}
		if c.kind == VerdictFlaky && (r.Bad() != 0 || !strings.Contains(r.Lines()[0], "leaf3 is flaky: ")) {
			t.Errorf("flaky: bad %d, %q", r.Bad(), r.Lines())
		}
	}
}

// A fleet too noisy or too split to judge gets no verdict, with the reason;
// with the likely cause when the caller knows it.
func TestBlameUnjudged(t *testing.T) {
	// Too noisy: links anywhere from a tenth to ten times the median.
	rng := rand.New(rand.NewPCG(1, 2))
	noisy := fleet{sched: roundRobin(8), base: 20, latency: true, slow: func(Link, int) float64 {
		return math.Exp(2.3 * (2*rng.Float64() - 1))
	}}.input(8)
	b := Judge(noisy, Options{FleetCheck: true})
	if !strings.HasPrefix(b.Unjudged, "too noisy: the spread of its links is ") || len(b.Lines()) != 1 || b.Bad() != 0 ||
		len(b.Suspects()) != 0 || !strings.Contains(b.Lines()[0], "p50: the fleet cannot be judged, no verdict: too noisy") {
		t.Errorf("noisy: %q %q, %s", b.Unjudged, b.Lines(), verdicts(b))
	}
	// A cap on the spread judges it anyway; without FleetCheck, as before.
	if b := Judge(noisy, Options{FleetCheck: true, MaxSpread: 0.5}); b.Unjudged != "" {
		t.Errorf("max spread: %q", b.Unjudged)
	}
	if b := Judge(noisy, Options{}); b.Unjudged != "" {
		t.Errorf("no fleet check: %q", b.Unjudged)
	}
	// Split: half the links, at random, 300 times slower (4 spinning
	// ranks on 2 CPUs): no rank explains them.
	rng = rand.New(rand.NewPCG(3, 4))
	split := fleet{sched: roundRobin(4), base: 20, latency: true, slow: func(Link, int) float64 {
		if rng.IntN(2) == 0 {
			return 300
		}
		return 1
	}}
	for seed := range uint64(10) {
		split.seed = seed
		in := split.input(4)
		in.Crowded = "h0 runs 4 spinning ranks on 2 CPUs"
		in.Format = func(v float64) string { return fmt.Sprintf("%.0f µs", v) }
		b := Judge(in, Options{FleetCheck: true})
		if b.Unjudged == "" || !strings.HasSuffix(b.Unjudged, "; likely cause: h0 runs 4 spinning ranks on 2 CPUs") ||
			len(b.Ranks)+len(b.Links)+len(b.Rounds)+len(b.Switches) != 0 {
			t.Errorf("split, seed %d: %q, %s", seed, b.Unjudged, verdicts(b))
		}
	}
	// Split into two clusters that no rank explains, no cause known.
	rng = rand.New(rand.NewPCG(5, 6))
	half := fleet{sched: roundRobin(8), base: 20, latency: true, slow: func(Link, int) float64 {
		if rng.IntN(2) == 0 {
			return 50
		}
		return 1
	}}.input(8)
	half.Format = func(v float64) string { return fmt.Sprintf("%.0f µs", v) }
	if b := Judge(half, Options{FleetCheck: true}); !strings.HasPrefix(b.Unjudged, "split in two: ") ||
		!strings.Contains(b.Unjudged, " at about 20 µs and ") || strings.Contains(b.Unjudged, "likely") {
		t.Errorf("half: %q, %s", b.Unjudged, verdicts(b))
	}
	// One slow rank of four is two clusters too, but the rank explains
	// them: judged. With a crowded host, its verdict is not given.
	one := fleet{sched: roundRobin(4), base: 20, latency: true, slow: slowRank(2, 5)}.input(4)
	if b := Judge(one, Options{FleetCheck: true}); b.Unjudged != "" || len(b.Ranks) != 1 {
		t.Errorf("one slow rank: %q, %s", b.Unjudged, verdicts(b))
	}
	one.Crowded = "h0 runs 4 spinning ranks on 2 CPUs"
	if b := Judge(one, Options{FleetCheck: true}); !strings.HasPrefix(b.Unjudged, "its verdicts would blame figures that measure the hosts' CPUs; likely cause: h0") {
		t.Errorf("crowded: %q, %s", b.Unjudged, verdicts(b))
	}
	// Two ranks: no link can stand out, whatever the noise; not said.
	two := fleet{sched: roundRobin(2), base: 20, latency: true, slow: func(l Link, _ int) float64 {
		return []float64{1, 3}[l.From]
	}}.input(2)
	if b := Judge(two, Options{FleetCheck: true}); b.Unjudged != "" || len(b.Lines()) != 0 {
		t.Errorf("two ranks: %q %q", b.Unjudged, b.Lines())
	}
	// A tight fleet, crowded or not, is judged: no verdict, no reason.
	tight := fleet{sched: roundRobin(6), base: 20, latency: true}.input(6)
	tight.Crowded = "h0 runs 6 spinning ranks on 2 CPUs"
	if b := Judge(tight, Options{FleetCheck: true}); b.Unjudged != "" || len(b.Lines()) != 0 {
		t.Errorf("tight: %q %q", b.Unjudged, b.Lines())
	}
}
