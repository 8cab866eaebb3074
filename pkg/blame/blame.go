package blame

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
)

// Link is one direction between two ranks: From ran the client end of the
// test against To's server.
type Link struct{ From, To int }

// LinkFigure is one measured link's headline figure.
type LinkFigure struct {
	From, To int
	// Round is the round the link ran in: links of one round share its
	// conditions.
	Round int
	Value float64
}

// RankName names a rank in verdicts: its host and device.
type RankName struct{ Host, Device string }

// Input is one figure of the links of a mesh.
type Input struct {
	// Figure names the figure in verdicts, e.g. "p50" or "write-bw Gbit/s".
	Figure string
	// HigherIsWorse: a latency; else a bandwidth or a rate, where lower
	// is worse.
	HigherIsWorse bool
	Links         []LinkFigure
	// Names name the ranks, by rank (a rank past its end is unnamed).
	Names []RankName
	// Switches are, by rank, the switches over its host, from its leaf
	// up (topology.Topology.Up); nil, or a rank's nil: not placed. With
	// them, links are grouped by the switches they cross, and a switch
	// whose uplinks are slow is blamed (SwitchVerdict).
	Switches [][]string
	// Crowded, when the caller knows it, is why the figures may measure
	// something else than the links, e.g. "node1 runs 4 spinning ranks on
	// 2 CPUs": with Options.FleetCheck, such a fleet is not judged when
	// it would give a verdict, and the reason a fleet is not judged names
	// it as the likely cause.
	Crowded string
	// Format formats a figure in messages, with its unit (default: a
	// number).
	Format func(float64) string
}

// Options tune the rules; zero fields take the defaults.
type Options struct {
	// Multiplier: a link is bad past this many spreads from its baseline
	// (DefaultMultiplier).
	Multiplier float64
	// MinSpread is the least spread, as a fraction of the figure
	// (DefaultMinSpread): a fleet whose links agree closer than that does
	// not make a link a few percent off bad.
	MinSpread float64
	// MaxSpread, when above 0, is the most spread (at least MinSpread): a
	// fleet noisier than that does not excuse a link past Multiplier
	// times it. With MinSpread, it pins the spread, and the limit with it.
	MaxSpread float64
	// RetestPerRank is how many of a rank's (or a switch's) bad links
	// Suspects retests (DefaultRetestPerRank).
	RetestPerRank int
	// FleetCheck: say when the fleet as a whole cannot be judged (too
	// noisy, split in two clusters no verdict explains, or Input.Crowded)
	// and then give no verdict (Verdicts.Unjudged).
	FleetCheck bool
	// Noisy is, with FleetCheck, the most spread (a share of the figure)
	// of a fleet judged when MaxSpread does not bound it (DefaultNoisy).
	Noisy float64
}

// The rules' defaults: with them, the least ratio to the baseline that is bad
// is 1.02^5, about 1.10.
const (
	DefaultMultiplier    = 5
	DefaultMinSpread     = 0.02
	DefaultRetestPerRank = 4
	// minRoundPairs is the fewest pairs whose links a round is judged by
	// as a whole.
	minRoundPairs = 3
)

// Verdict kinds.
const (
	VerdictBad   = "bad"
	VerdictFlaky = "flaky" // bad, but good again on retest
)

// Verdicts are the verdicts on one figure of a mesh.
type Verdicts struct {
	Figure        string
	HigherIsWorse bool
	Options       Options // with the defaults filled in
	// Judged is the number of links judged.
	Judged int
	// FleetMedian is the median of the ranks' median figures; Spread the spread of
	// their logarithms (see the package doc); Limit the ratio to the baseline past
	// which a link is bad (above it for a latency, below for a bandwidth).
	FleetMedian float64
	Spread      float64
	Limit       float64
	Ranks       []RankVerdict
	Links       []LinkVerdict
	Rounds      []RoundVerdict
	// Switches are the switches at fault (with Input.Switches).
	Switches []SwitchVerdict
	// Unjudged, with Options.FleetCheck, says why the fleet cannot be
	// judged: then there is no verdict.
	Unjudged string
	format   func(float64) string
	// rawSpread is the fleet's spread before the options bound it.
	rawSpread float64
}

// RankVerdict is a rank at fault: slow with most of its peers.
type RankVerdict struct {
	Rank int
	Name RankName
	Kind string // VerdictBad or VerdictFlaky
	// BadPeers of its Peers (the ranks it has a judged link with) have a
	// bad link with it.
	BadPeers, Peers int
	// Value is the median figure of its bad links; Ratio that to the
	// fleet median.
	Value, FleetMedian, Ratio float64
	// Links are its bad links.
	Links  []Link
	Retest *RetestEvidence
}

// LinkVerdict is a bad link neither of whose ends is at fault.
type LinkVerdict struct {
	Link     Link
	Round    int
	From, To RankName
	Kind     string
	// Value is its figure; Baseline the fleet median, or its round's when
	// RoundSlow; Ratio the one to the other.
	Value, Baseline, Ratio float64
	RoundSlow              bool
	Retest                 *RetestEvidence
}

// RoundVerdict is a round slow as a whole: its links were judged against
// its median, not the fleet's.
type RoundVerdict struct {
	Round int
	// Median is the median figure of the round's links (of ranks not at
	// fault), Ratio that to the fleet median.
	Median, FleetMedian, Ratio float64
	// Links are its judged links; Spared those bad against the fleet that
	// are not against the round.
	Links, Spared int
}

// RetestEvidence is what the retests of a verdict's links measured.
type RetestEvidence struct {
	// Links were retested; Recovered of them measured good.
	Links, Recovered int
	// Value is the median of their figures; Ratio that to the fleet median.
	Value, Ratio float64
}

// WithDefaults is o with its zero fields set to the defaults, and
// MaxSpread, when set, at least MinSpread: the options Judge applies.
func (o Options) WithDefaults() Options {
	if o.Multiplier <= 0 {
		o.Multiplier = DefaultMultiplier
	}
	if o.MinSpread <= 0 {
		o.MinSpread = DefaultMinSpread
	}
	if o.RetestPerRank <= 0 {
		o.RetestPerRank = DefaultRetestPerRank
	}
	if o.MaxSpread > 0 {
		o.MaxSpread = max(o.MaxSpread, o.MinSpread)
	}
	if o.FleetCheck && o.Noisy <= 0 {
		o.Noisy = DefaultNoisy
	}
	return o
}

// spread is the spread s of a fleet's logarithms within the options' least
// and most.
func (o Options) spread(s float64) float64 {
	s = max(s, math.Log1p(o.MinSpread))
	if o.MaxSpread > 0 {
		s = min(s, math.Log1p(o.MaxSpread))
	}
	return s
}

// judged is a link as Judge works on it.
type judged struct {
	LinkFigure
	x   float64 // log of the figure, negated where lower is worse: higher x is worse
	bad bool
}

// worse is v on the scale where higher is worse.
func (b *Verdicts) worse(v float64) float64 {
	if b.HigherIsWorse {
		return math.Log(v)
	}
	return -math.Log(v)
}

// value is the figure of x, worse's inverse.
func (b *Verdicts) value(x float64) float64 {
	if b.HigherIsWorse {
		return math.Exp(x)
	}
	return math.Exp(-x)
}

// isBad says whether x is bad against the baseline bx.
func (b *Verdicts) isBad(x, bx float64) bool {
	return x-bx > b.Options.Multiplier*b.Spread
}

func usable(v float64) bool { return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }

// Judge gives the verdicts on one figure of a mesh's links.
func Judge(in Input, opt Options) Verdicts {
	b := Verdicts{Figure: in.Figure, HigherIsWorse: in.HigherIsWorse, Options: opt.WithDefaults(), format: in.Format}
	if b.format == nil {
		b.format = fmtValue
	}
	var ls []judged
	for _, l := range in.Links {
		if usable(l.Value) && l.From != l.To && l.From >= 0 && l.To >= 0 {
			ls = append(ls, judged{LinkFigure: l, x: b.worse(l.Value)})
		}
	}
	b.Judged = len(ls)
	if len(ls) == 0 {
		return b
	}
	m, meds := b.fleet(ls)
	// Against the fleet first, to know the switches and ranks at fault.
	for i := range ls {
		ls[i].bad = b.isBad(ls[i].x, m)
	}
	groups := switchGroups(ls, in.Switches)
	_, explained := b.switchFaults(ls, groups, in.Names)
	roundBase := b.slowRounds(ls, m, faults(without(ls, explained), meds), explained)
	b.againstRounds(ls, m, roundBase)
	sw, explained := b.switchFaults(ls, groups, in.Names)
	b.switchVerdicts(ls, sw)
	b.verdicts(ls, explained, faults(without(ls, explained), meds), roundBase, in.Names)
	if b.Options.FleetCheck {
		if why := b.unjudgeable(ls, b.rawSpread, in.Crowded); why != "" {
			b.Unjudged = why
			b.Ranks, b.Links, b.Rounds, b.Switches = nil, nil, nil, nil
		}
	}
	return b
}

// without is ls without the links at the indexes in skip.
func without(ls []judged, skip map[int]bool) []judged {
	if len(skip) == 0 {
		return ls
	}
	out := make([]judged, 0, len(ls)-len(skip))
	for i, l := range ls {
		if !skip[i] {
			out = append(out, l)
		}
	}
	return out
}

// fleet sets the fleet's median, spread and limit from the links ls, and
// returns the median's x and the ranks' medians. A rank whose median is
// worse than the fleet's by a spread is a suspect: the fleet is measured
// again without its links, when at least 3 ranks are left, so that a slow
// rank of a few does not widen the spread it is judged by.
func (b *Verdicts) fleet(ls []judged) (float64, map[int]float64) {
	m, spread, meds := fleetOf(ls, nil)
	b.Spread = b.Options.spread(spread)
	b.rawSpread = spread
	suspect := map[int]bool{}
	for r, x := range meds {
		if x-m > b.Spread {
			suspect[r] = true
		}
	}
	if len(suspect) > 0 && len(meds)-len(suspect) >= 3 {
		if m2, s2, rest := fleetOf(ls, suspect); len(rest) >= 3 {
			m, b.Spread, b.rawSpread = m2, b.Options.spread(s2), s2
		}
	}
	b.FleetMedian = b.value(m)
	b.Limit = math.Exp(b.Options.Multiplier * b.Spread)
	if !b.HigherIsWorse {
		b.Limit = 1 / b.Limit
	}
	return m, meds
}

// slowRounds finds the rounds slow as a whole (their median bad against
// the fleet's, m), without the links of the ranks at fault first where
// enough pairs are left, and returns the x of each one's median.
func (b *Verdicts) slowRounds(ls []judged, m float64, first map[int]peerCount, explained map[int]bool) map[int]float64 {
	byRound := map[int][]int{}
	for i, l := range ls {
		byRound[l.Round] = append(byRound[l.Round], i)
	}
	roundBase := map[int]float64{}
	for _, r := range slices.Sorted(maps.Keys(byRound)) {
		all := byRound[r]
		// A switch at fault explains its links: they never judge a round.
		var clean, unexplained []int
		for _, i := range all {
			if explained[i] {
				continue
			}
			unexplained = append(unexplained, i)
			_, from := first[ls[i].From]
			if _, to := first[ls[i].To]; !from && !to {
				clean = append(clean, i)
			}
		}
		use := clean
		if pairsIn(ls, use) < minRoundPairs {
			use = unexplained
		}
		if pairsIn(ls, use) < minRoundPairs {
			continue
		}
		vs := make([]float64, len(use))
		for k, i := range use {
			vs[k] = ls[i].Value
		}
		med := median(vs)
		if bx := b.worse(med); b.isBad(bx, m) {
			roundBase[r] = bx
			b.Rounds = append(b.Rounds, RoundVerdict{Round: r, Median: med, FleetMedian: b.FleetMedian,
				Ratio: med / b.FleetMedian, Links: len(all)})
		}
	}
	return roundBase
}

// againstRounds judges each link of a slow round against its round's
// median instead, counting those it spares.
func (b *Verdicts) againstRounds(ls []judged, m float64, roundBase map[int]float64) {
	for i := range ls {
		bx, slow := roundBase[ls[i].Round]
		if !slow {
			continue
		}
		ls[i].bad = b.isBad(ls[i].x, bx)
		if !ls[i].bad && b.isBad(ls[i].x, m) {
			for k := range b.Rounds {
				if b.Rounds[k].Round == ls[i].Round {
					b.Rounds[k].Spared++
				}
			}
		}
	}
}

// verdicts gives each rank at fault its verdict, with its bad links, and
// each other bad link its own, named by names; the links a switch at
// fault explains (explained) are its.
func (b *Verdicts) verdicts(ls []judged, explained map[int]bool, fault map[int]peerCount, roundBase map[int]float64, names []RankName) {
	name := func(r int) RankName {
		if r < len(names) {
			return names[r]
		}
		return RankName{}
	}
	at := map[int]int{} // rank -> its verdict
	for _, r := range slices.Sorted(maps.Keys(fault)) {
		at[r] = len(b.Ranks)
		b.Ranks = append(b.Ranks, RankVerdict{Rank: r, Name: name(r), Kind: VerdictBad, BadPeers: fault[r].badPeers,
			Peers: fault[r].peers, FleetMedian: b.FleetMedian})
	}
	badValues := make([][]float64, len(b.Ranks))
	for i, l := range ls {
		if !l.bad || explained[i] {
			continue
		}
		blamed := false
		for _, r := range []int{l.From, l.To} {
			if k, ok := at[r]; ok {
				blamed = true
				b.Ranks[k].Links = append(b.Ranks[k].Links, Link{l.From, l.To})
				badValues[k] = append(badValues[k], l.Value)
			}
		}
		if blamed {
			continue
		}
		base, slow := b.FleetMedian, false
		if _, ok := roundBase[l.Round]; ok {
			slow = true
			for _, rv := range b.Rounds {
				if rv.Round == l.Round {
					base = rv.Median
				}
			}
		}
		b.Links = append(b.Links, LinkVerdict{Link: Link{l.From, l.To}, Round: l.Round, From: name(l.From), To: name(l.To),
			Kind: VerdictBad, Value: l.Value, Baseline: base, Ratio: l.Value / base, RoundSlow: slow})
	}
	for k := range b.Ranks {
		slices.SortFunc(b.Ranks[k].Links, cmpLink)
		b.Ranks[k].Value = median(badValues[k])
		b.Ranks[k].Ratio = b.Ranks[k].Value / b.FleetMedian
	}
	slices.SortFunc(b.Links, func(x, y LinkVerdict) int { return cmpLink(x.Link, y.Link) })
}

// fleetOf is the fleet of the links ls without those of the ranks in skip:
// the median m of its ranks' medians (of the x of their links), the spread
// (1.4826 times the median of the ranks' median absolute deviations from
// m), and every rank's median.
func fleetOf(ls []judged, skip map[int]bool) (m, spread float64, meds map[int]float64) {
	byRank := map[int][]float64{}
	for _, l := range ls {
		if skip[l.From] || skip[l.To] {
			continue
		}
		byRank[l.From] = append(byRank[l.From], l.x)
		byRank[l.To] = append(byRank[l.To], l.x)
	}
	meds = make(map[int]float64, len(byRank))
	all := make([]float64, 0, len(byRank))
	for r, xs := range byRank {
		meds[r] = median(xs)
		all = append(all, meds[r])
	}
	m = median(all)
	mads := make([]float64, 0, len(byRank))
	for _, xs := range byRank {
		devs := make([]float64, len(xs))
		for i, x := range xs {
			devs[i] = math.Abs(x - m)
		}
		mads = append(mads, median(devs))
	}
	return m, 1.4826 * median(mads), meds
}

func cmpLink(x, y Link) int {
	return cmp.Or(cmp.Compare(x.From, y.From), cmp.Compare(x.To, y.To))
}

// peerCount is a rank's distinct peers, and those with a bad link.
type peerCount struct{ peers, badPeers int }

func (p peerCount) atFault() bool { return p.badPeers >= 2 && 2*p.badPeers >= p.peers }

// faults are the ranks at fault, with their peers and bad peers. They are
// found one at a time, the worst first (the largest share of bad peers,
// then the worst median x in meds, then the lowest rank): a bad link to a
// rank at fault is explained by it, so the ranks after it are judged
// without their links to it. One slow host of four makes a bad link of
// each of the others; those do not put them at fault with it, nor does one
// more bad link of noise.
func faults(ls []judged, meds map[int]float64) map[int]peerCount {
	bad := map[int]map[int]bool{} // rank -> peer -> a bad link between them
	for _, l := range ls {
		for _, e := range [2][2]int{{l.From, l.To}, {l.To, l.From}} {
			if bad[e[0]] == nil {
				bad[e[0]] = map[int]bool{}
			}
			bad[e[0]][e[1]] = bad[e[0]][e[1]] || l.bad
		}
	}
	all := make(map[int]peerCount, len(bad))
	for r, peers := range bad {
		c := peerCount{peers: len(peers)}
		for _, b := range peers {
			if b {
				c.badPeers++
			}
		}
		all[r] = c
	}
	left := maps.Clone(all) // counts without the peers found at fault
	out := map[int]peerCount{}
	for {
		worst, wc := -1, peerCount{}
		for r, c := range left {
			if !c.atFault() {
				continue
			}
			// c worse than wc: a larger share, then a worse median, then a
			// lower rank.
			if d := c.badPeers*wc.peers - wc.badPeers*c.peers; worst < 0 || d > 0 ||
				d == 0 && (meds[r] > meds[worst] || meds[r] == meds[worst] && r < worst) {
				worst, wc = r, c
			}
		}
		if worst < 0 {
			return out
		}
		out[worst] = all[worst] // a verdict counts all its peers
		delete(left, worst)
		for p, b := range bad[worst] {
			if c, ok := left[p]; ok {
				c.peers--
				if b {
					c.badPeers--
				}
				left[p] = c
			}
		}
	}
}

// pairsIn counts the distinct pairs of ranks of the links ls[i], i in idx.
func pairsIn(ls []judged, idx []int) int {
	seen := map[[2]int]bool{}
	for _, i := range idx {
		seen[[2]int{min(ls[i].From, ls[i].To), max(ls[i].From, ls[i].To)}] = true
	}
	return len(seen)
}

// median of v (NaN when empty); v is not changed.
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Suspects are the links to retest (pkg/mesh: in rounds of their own): every
// link of a link verdict, and RetestPerRank of a rank's bad links (to
// distinct peers, those not at fault first), once each, in order.
func (b Verdicts) Suspects() []Link {
	seen := map[Link]bool{}
	var out []Link
	add := func(l Link) {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	for _, v := range b.Links {
		add(v.Link)
	}
	for _, v := range b.Switches {
		for _, l := range b.switchSuspects(v) {
			add(l)
		}
	}
	atFault := map[int]bool{}
	for _, v := range b.Ranks {
		atFault[v.Rank] = true
	}
	for _, v := range b.Ranks {
		// Links to peers not at fault first: a link to another rank at
		// fault stays slow whatever this rank's retest shows.
		peerOf := func(l Link) int { return l.From + l.To - v.Rank }
		links := slices.Clone(v.Links)
		slices.SortStableFunc(links, func(x, y Link) int {
			switch ax, ay := atFault[peerOf(x)], atFault[peerOf(y)]; {
			case ax == ay:
				return 0
			case ax:
				return 1
			}
			return -1
		})
		peers := map[int]bool{}
		for _, l := range links {
			if len(peers) == b.Options.RetestPerRank {
				break
			}
			if peer := peerOf(l); !peers[peer] {
				peers[peer] = true
				add(l)
			}
		}
	}
	slices.SortFunc(out, cmpLink)
	return out
}

// Retested merges the retests' figures into the verdicts: a retest judged
// good against the fleet (median and spread of the first run: a retest's
// few links have no distribution of their own) recovered. A link whose
// retest recovered is flaky; a rank more than half of whose retested links
// recovered is flaky (its links to other ranks at fault left out, where it
// has others). Verdicts with no retest stay as they were. A link
// retested more than once counts by the median of its figures.
func (b Verdicts) Retested(figs []LinkFigure) Verdicts {
	got := map[Link][]float64{}
	for _, f := range figs {
		l := Link{f.From, f.To}
		got[l] = append(got[l], f.Value)
	}
	m := b.worse(b.FleetMedian)
	recovered := func(v float64) bool { return usable(v) && !b.isBad(b.worse(v), m) }
	evidence := func(links []Link) *RetestEvidence {
		var e RetestEvidence
		var vs []float64
		for _, l := range links {
			v, ok := got[l]
			if !ok {
				continue
			}
			e.Links++
			med := median(v)
			if recovered(med) {
				e.Recovered++
			}
			vs = append(vs, med)
		}
		if e.Links == 0 {
			return nil
		}
		e.Value = median(vs)
		e.Ratio = e.Value / b.FleetMedian
		return &e
	}
	out := b
	out.Ranks = slices.Clone(b.Ranks)
	out.Links = slices.Clone(b.Links)
	atFault := map[int]bool{}
	for _, v := range b.Ranks {
		atFault[v.Rank] = true
	}
	for i := range out.Ranks {
		v := &out.Ranks[i]
		// Its links to peers not at fault tell, where it has any: a link
		// to another rank at fault is slow whatever this one is.
		var own []Link
		for _, l := range v.Links {
			if peer := l.From + l.To - v.Rank; !atFault[peer] {
				own = append(own, l)
			}
		}
		if evidence(own) == nil {
			own = v.Links
		}
		if e := evidence(own); e != nil {
			v.Retest = e
			v.Kind = VerdictBad
			if 2*e.Recovered > e.Links {
				v.Kind = VerdictFlaky
			}
		}
	}
	out.Switches = slices.Clone(b.Switches)
	for i := range out.Switches {
		v := &out.Switches[i]
		if e := evidence(v.Links); e != nil {
			v.Retest = e
			v.Kind = VerdictBad
			if 2*e.Recovered > e.Links {
				v.Kind = VerdictFlaky
			}
		}
	}
	for i := range out.Links {
		v := &out.Links[i]
		if e := evidence([]Link{v.Link}); e != nil {
			v.Retest = e
			v.Kind = VerdictBad
			if e.Recovered == 1 {
				v.Kind = VerdictFlaky
			}
		}
	}
	return out
}

// Bad counts the verdicts that are bad (not flaky), of switches, ranks
// and links.
func (b Verdicts) Bad() int {
	n := 0
	for _, v := range b.Switches {
		if v.Kind == VerdictBad {
			n++
		}
	}
	for _, v := range b.Ranks {
		if v.Kind == VerdictBad {
			n++
		}
	}
	for _, v := range b.Links {
		if v.Kind == VerdictBad {
			n++
		}
	}
	return n
}

// Lines are the verdicts as sentences: switches, ranks, links, then
// rounds; or why the fleet cannot be judged.
func (b Verdicts) Lines() []string {
	var out []string
	if b.Unjudged != "" {
		out = append(out, b.UnjudgedString())
	}
	for _, v := range b.Switches {
		out = append(out, v.String(b.Figure))
	}
	for _, v := range b.Ranks {
		out = append(out, v.String(b.Figure))
	}
	for _, v := range b.Links {
		out = append(out, v.String(b.Figure))
	}
	for _, v := range b.Rounds {
		out = append(out, v.String(b.Figure))
	}
	return out
}

// ratio formats a ratio: 2.4, 0.41, 12.
func ratio(r float64) string {
	if r >= 10 {
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strconv.FormatFloat(r, 'g', 2, 64)
}

func (n RankName) String() string {
	switch {
	case n.Host != "" && n.Device != "":
		return n.Host + " " + n.Device
	case n.Host != "":
		return n.Host
	}
	return n.Device
}

func rankLabel(r int, n RankName) string {
	if s := n.String(); s != "" {
		return fmt.Sprintf("rank %d (%s)", r, s)
	}
	return fmt.Sprintf("rank %d", r)
}

func (e *RetestEvidence) String() string {
	return fmt.Sprintf("%d of %d retests recovered (%s× the fleet median)", e.Recovered, e.Links, ratio(e.Ratio))
}

// String is the verdict as a sentence, e.g. "rank 12 (node7 mlx5_3) is
// slow with 14 of 15 peers: p50 2.4× the fleet median".
func (v RankVerdict) String(figure string) string {
	s := fmt.Sprintf("slow with %d of %d peers", v.BadPeers, v.Peers)
	what := fmt.Sprintf("%s %s× the fleet median", figure, ratio(v.Ratio))
	switch {
	case v.Retest == nil:
		return fmt.Sprintf("%s is %s: %s", rankLabel(v.Rank, v.Name), s, what)
	case v.Kind == VerdictFlaky:
		return fmt.Sprintf("%s is flaky: %s (%s), but %s", rankLabel(v.Rank, v.Name), s, what, v.Retest)
	}
	return fmt.Sprintf("%s is %s: %s; %s", rankLabel(v.Rank, v.Name), s, what, v.Retest)
}

// String is the verdict as a sentence, e.g. "link 3 -> 9 (node2 mlx5_0 ->
// node5 mlx5_0) is slow, not its ends: p50 2.3× the fleet median".
func (v LinkVerdict) String(figure string) string {
	label := fmt.Sprintf("link %d -> %d", v.Link.From, v.Link.To)
	if f, t := v.From.String(), v.To.String(); f != "" || t != "" {
		label += fmt.Sprintf(" (%s -> %s)", cmp.Or(f, "?"), cmp.Or(t, "?"))
	}
	against := "the fleet median"
	if v.RoundSlow {
		against = fmt.Sprintf("the median of its round %d, slow as a whole", v.Round)
	}
	what := fmt.Sprintf("%s %s× %s", figure, ratio(v.Ratio), against)
	switch {
	case v.Retest == nil:
		return fmt.Sprintf("%s is slow, not its ends: %s", label, what)
	case v.Kind == VerdictFlaky:
		return fmt.Sprintf("%s is flaky: slow (%s), but its retest recovered (%s× the fleet median)", label, what, ratio(v.Retest.Ratio))
	}
	return fmt.Sprintf("%s is slow, not its ends: %s; slow again on retest (%s× the fleet median)", label, what, ratio(v.Retest.Ratio))
}

// String is the verdict as a sentence.
func (v RoundVerdict) String(figure string) string {
	return fmt.Sprintf("round %d was slow as a whole: its median %s %s× the fleet's; its %d links were judged against it, %d spared",
		v.Round, figure, ratio(v.Ratio), v.Links, v.Spared)
}

// UnjudgedString says that the fleet cannot be judged and why, or "".
func (b Verdicts) UnjudgedString() string {
	if b.Unjudged == "" {
		return ""
	}
	return fmt.Sprintf("%s: the fleet cannot be judged, no verdict: %s", b.Figure, b.Unjudged)
}
