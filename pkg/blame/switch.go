package blame

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// minSwitchLinks is the fewest cross-switch links a switch is judged by.
const minSwitchLinks = 4

// SwitchVerdict is a switch at fault: the links through its uplinks (with
// one end under it) slow, while the links inside it and those of the
// rest of the fleet are not.
type SwitchVerdict struct {
	Switch string
	// Or are the switches the links measured cannot tell from it: every
	// link that crosses one crosses the others (two leaves under one
	// spine).
	Or   []string
	Kind string // VerdictBad or VerdictFlaky
	// Cross links have one end under it, BadCross of them bad; Inner
	// links both ends, BadInner of them bad.
	Cross, BadCross, Inner, BadInner int
	// Hosts under it have a cross-switch link; BadHosts of them have most
	// of theirs bad.
	Hosts, BadHosts int
	// Value is the median figure of its cross-switch links, InnerValue
	// of its inner links; Ratio and InnerRatio those to the fleet median.
	Value, InnerValue, FleetMedian, Ratio, InnerRatio float64
	// Links are its bad cross-switch links: its verdict, not theirs or
	// their ends'.
	Links  []Link
	Retest *RetestEvidence
}

// switchOf is what Judge knows of each switch: the links (indexes into
// the judged links) through its uplinks and inside it, and the ranks under
// it.
type switchOf struct {
	name         string
	cross, inner []int
	under        map[int]bool
}

// switchGroups groups the links ls by the switches they cross, from each
// rank's switches in ups (leaf first; a rank with none is in no group).
func switchGroups(ls []judged, ups [][]string) []*switchOf {
	up := func(r int) []string {
		if r >= 0 && r < len(ups) {
			return ups[r]
		}
		return nil
	}
	by := map[string]*switchOf{}
	get := func(name string) *switchOf {
		s := by[name]
		if s == nil {
			s = &switchOf{name: name, under: map[int]bool{}}
			by[name] = s
		}
		return s
	}
	for i, l := range ls {
		ua, ub := up(l.From), up(l.To)
		if ua == nil || ub == nil {
			continue
		}
		for _, name := range ua {
			get(name).under[l.From] = true
		}
		for _, name := range ub {
			get(name).under[l.To] = true
		}
		for _, name := range unionOf(ua, ub) {
			s := get(name)
			if slices.Contains(ua, name) && slices.Contains(ub, name) {
				s.inner = append(s.inner, i)
			} else {
				s.cross = append(s.cross, i)
			}
		}
	}
	out := slices.Collect(maps.Values(by))
	slices.SortFunc(out, func(a, b *switchOf) int { return cmp.Compare(a.name, b.name) })
	return out
}

func unionOf(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// switchFault is a switch found at fault, with the cross-switch links it
// explains.
type switchFault struct {
	s     *switchOf
	or    []string
	share float64
}

// switchFaults finds the switches at fault, one at a time, the worst
// first (the largest share of bad cross-switch links, then the worst
// median, then the name): a switch whose cross-switch links are mostly
// bad, on at least 2 of its hosts and most of those with such links,
// while its inner links are mostly good, and the links that do not cross
// it (of those not explained yet) are too. Its cross-switch links are
// explained by it: the switches after it are judged without them. It
// returns the faults and the links they explain.
func (b *Verdicts) switchFaults(ls []judged, groups []*switchOf, names []RankName) ([]switchFault, map[int]bool) {
	explained := map[int]bool{}
	var out []switchFault
	done := map[string]bool{}
	host := func(r int) string {
		if r < len(names) && names[r].Host != "" {
			return names[r].Host
		}
		return fmt.Sprintf("rank %d", r)
	}
	badShare := func(idx []int) (n, bad int) {
		for _, i := range idx {
			if !explained[i] {
				n++
				if ls[i].bad {
					bad++
				}
			}
		}
		return n, bad
	}
	// The links with both ends placed, not explained yet, and of those
	// the bad: the rest of a switch is these but its own.
	placed := make(map[int]bool)
	for _, s := range groups {
		for _, i := range s.cross {
			placed[i] = true
		}
		for _, i := range s.inner {
			placed[i] = true
		}
	}
	left, leftBad := 0, 0
	for i := range placed {
		left++
		if ls[i].bad {
			leftBad++
		}
	}
	for {
		var best *switchOf
		bestShare, bestMed := 0.0, 0.0
		for _, s := range groups {
			if done[s.name] {
				continue
			}
			n, bad := badShare(s.cross)
			if n < minSwitchLinks || 2*bad <= n {
				continue
			}
			// Most of its hosts, and at least 2: one slow host is the host's.
			perHost := map[string][2]int{}
			for _, i := range s.cross {
				if explained[i] {
					continue
				}
				r := ls[i].From
				if !s.under[r] {
					r = ls[i].To
				}
				c := perHost[host(r)]
				c[0]++
				if ls[i].bad {
					c[1]++
				}
				perHost[host(r)] = c
			}
			badHosts := 0
			for _, c := range perHost {
				if 2*c[1] > c[0] {
					badHosts++
				}
			}
			if badHosts < 2 || 2*badHosts <= len(perHost) {
				continue
			}
			// Its inner links good: they exonerate its hosts.
			in, inBad := 0, 0
			for _, i := range s.inner {
				in++
				if ls[i].bad {
					inBad++
				}
			}
			if in == 0 || 2*inBad >= in {
				continue
			}
			// The rest of the fleet good: not the whole fabric slow.
			inLeft, inLeftBad := badShare(s.inner)
			rest, restBad := left-n-inLeft, leftBad-bad-inLeftBad
			if rest > 0 && 2*restBad >= rest {
				continue
			}
			share := float64(bad) / float64(n)
			med := medianX(ls, s.cross)
			if best == nil || share > bestShare || share == bestShare && med > bestMed {
				best, bestShare, bestMed = s, share, med
			}
		}
		if best == nil {
			return out, explained
		}
		f := switchFault{s: best, share: bestShare}
		done[best.name] = true
		for _, s := range groups {
			if !done[s.name] && slices.Equal(s.cross, best.cross) {
				f.or = append(f.or, s.name)
				done[s.name] = true
			}
		}
		for _, i := range best.cross {
			if !explained[i] {
				explained[i] = true
				left--
				if ls[i].bad {
					leftBad--
				}
			}
		}
		out = append(out, f)
	}
}

// medianX is the median x of the links ls[i], i in idx.
func medianX(ls []judged, idx []int) float64 {
	xs := make([]float64, len(idx))
	for k, i := range idx {
		xs[k] = ls[i].x
	}
	return median(xs)
}

// switchVerdicts makes the verdicts of the switches at fault.
func (b *Verdicts) switchVerdicts(ls []judged, faults []switchFault) {
	for _, f := range faults {
		s := f.s
		v := SwitchVerdict{Switch: s.name, Or: f.or, Kind: VerdictBad, Cross: len(s.cross), Inner: len(s.inner),
			FleetMedian: b.FleetMedian}
		hosts := map[int][2]int{}
		var cross, inner []float64
		for _, i := range s.cross {
			cross = append(cross, ls[i].Value)
			r := ls[i].From
			if !s.under[r] {
				r = ls[i].To
			}
			c := hosts[r]
			c[0]++
			if ls[i].bad {
				v.BadCross++
				c[1]++
				v.Links = append(v.Links, Link{ls[i].From, ls[i].To})
			}
			hosts[r] = c
		}
		for _, i := range s.inner {
			inner = append(inner, ls[i].Value)
			if ls[i].bad {
				v.BadInner++
			}
		}
		v.Hosts = len(hosts)
		for _, c := range hosts {
			if 2*c[1] > c[0] {
				v.BadHosts++
			}
		}
		v.Value, v.InnerValue = median(cross), median(inner)
		v.Ratio, v.InnerRatio = v.Value/b.FleetMedian, v.InnerValue/b.FleetMedian
		slices.SortFunc(v.Links, cmpLink)
		b.Switches = append(b.Switches, v)
	}
}

// switchSuspects are the links of a switch verdict to retest:
// RetestPerRank of its bad links, each from another rank under it and to
// another peer where it has them.
func (b Verdicts) switchSuspects(v SwitchVerdict) []Link {
	var out []Link
	used := map[int]bool{}
	for pass := 0; pass < 2 && len(out) < b.Options.RetestPerRank; pass++ {
		for _, l := range v.Links {
			if len(out) == b.Options.RetestPerRank {
				break
			}
			if slices.Contains(out, l) || pass == 0 && (used[l.From] || used[l.To]) {
				continue
			}
			used[l.From], used[l.To] = true, true
			out = append(out, l)
		}
	}
	return out
}

// String is the verdict as a sentence, e.g. "leaf3: its 96 cross-switch
// links at 3.1× the fleet median, its 28 inner links normal".
func (v SwitchVerdict) String(figure string) string {
	name := v.Switch
	if len(v.Or) > 0 {
		name = strings.Join(append([]string{v.Switch}, v.Or...), " or ")
	}
	cross := fmt.Sprintf("its %d cross-switch links", v.Cross)
	if v.BadCross < v.Cross {
		cross = fmt.Sprintf("%d of its %d cross-switch links slow", v.BadCross, v.Cross)
	}
	s := fmt.Sprintf("%s: %s (from %d of its %d hosts) at %s %s× the fleet median, its %d inner links normal (%s×)", name, cross,
		v.BadHosts, v.Hosts, figure, ratio(v.Ratio), v.Inner, ratio(v.InnerRatio))
	if len(v.Or) > 0 {
		s += "; every link through one crosses the others: the links measured cannot tell which"
	}
	switch {
	case v.Retest == nil:
		return s
	case v.Kind == VerdictFlaky:
		return fmt.Sprintf("%s is flaky: %s, but %s", name, strings.TrimPrefix(s, name+": "), v.Retest)
	}
	return fmt.Sprintf("%s; %s", s, v.Retest)
}
