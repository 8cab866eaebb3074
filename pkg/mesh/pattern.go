package mesh

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/topology"
)

// Load patterns (--pattern), as report.Mesh.Pattern records them.
const (
	PatternIncast    = "incast"     // incast:K: K senders into one receiver, each receiver in turn
	PatternAllToAll  = "all-to-all" // every rank to every other at once (all-to-all:G: in groups of G)
	PatternBisection = "bisection"  // two halves, every pair across them at once, both directions
)

// PatternNames are the patterns as --pattern takes them.
var PatternNames = []string{PatternIncast + ":K", PatternAllToAll, PatternAllToAll + ":G", PatternBisection}

// Pattern is a load pattern: a sequence of steps, in each of which many
// flows run at once.
type Pattern struct {
	Kind string
	// K is incast's senders per receiver; Group all-to-all's ranks per
	// step (0: every rank in one step).
	K, Group int
}

// String is the pattern as --pattern takes it.
func (p Pattern) String() string {
	switch {
	case p.Kind == PatternIncast:
		return p.Kind + ":" + strconv.Itoa(p.K)
	case p.Kind == PatternAllToAll && p.Group > 0:
		return p.Kind + ":" + strconv.Itoa(p.Group)
	}
	return p.Kind
}

// ParsePattern reads --pattern: incast:K, all-to-all, all-to-all:G or
// bisection. The numbers are checked against the ranks by Check.
func ParsePattern(s string) (Pattern, error) {
	name, arg, hasArg := strings.Cut(strings.TrimSpace(s), ":")
	num := func(what string) (int, error) {
		v, err := strconv.Atoi(arg)
		if err != nil || v < 1 {
			return 0, usagef("--pattern %s: %s is a number of ranks, at least 1 (%s:%s)", s, what, name, what)
		}
		return v, nil
	}
	switch name {
	case PatternIncast:
		if !hasArg {
			return Pattern{}, usagef("--pattern %s: say how many senders each receiver gets, incast:K (incast:3)", s)
		}
		k, err := num("K")
		return Pattern{Kind: PatternIncast, K: k}, err
	case PatternAllToAll:
		if !hasArg {
			return Pattern{Kind: PatternAllToAll}, nil
		}
		g, err := num("G")
		return Pattern{Kind: PatternAllToAll, Group: g}, err
	case PatternBisection:
		if hasArg {
			return Pattern{}, usagef("--pattern %s: bisection takes no number (its halves come from --topology, else the rank order)", s)
		}
		return Pattern{Kind: PatternBisection}, nil
	}
	return Pattern{}, usagef("--pattern %s: unknown pattern (want %s)", s, strings.Join(PatternNames, ", "))
}

// Check refuses, as a usage error, a pattern that n ranks cannot run.
func (p Pattern) Check(n int) error {
	if n < 2 {
		return usagef("--pattern %s needs at least 2 ranks, the mesh has %d", p, n)
	}
	switch p.Kind {
	case PatternIncast:
		if p.K < 1 || p.K > n-1 {
			return usagef("--pattern %s: K is 1 to %d with %d ranks (each receiver's senders are the other ranks)", p, n-1, n)
		}
	case PatternAllToAll:
		if p.Group != 0 && (p.Group < 2 || p.Group > n) {
			return usagef("--pattern %s: G is 2 to %d with %d ranks", p, n, n)
		}
		if p.Group != 0 && p.Group < n && p.Group%2 != 0 {
			return usagef("--pattern %s: G is even below the mesh's %d ranks (a step joins two blocks of G/2 ranks)", p, n)
		}
	}
	return nil
}

// Flow is one stream of a step: From sends to To's server.
type Flow struct{ From, To int }

// Step is what runs at once: every flow, and beside them the probe, a
// ping-pong between two ranks of the step (latency under the load).
// Receiver is the incast's receiver, -1 when every rank of the step
// receives (all-to-all, bisection).
type Step struct {
	Flows    []Flow
	Receiver int
	Probe    Flow
	// Group is an all-to-all step's ranks; Halves a bisection's.
	Group  []int
	Halves [2][]int
}

// Ranks are the ranks of the step, sorted, each once.
func (s Step) Ranks() []int {
	var out []int
	for _, f := range append(slices.Clone(s.Flows), s.Probe) {
		out = append(out, f.From, f.To)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// PatternOptions are what the steps are drawn from besides the ranks.
type PatternOptions struct {
	// Sample, above 0, is incast's number of receivers (--sample), drawn
	// by Seed; else every rank receives in turn.
	Sample int
	Seed   uint64
	// Hosts are the ranks' hosts (for the topology); Topology, when set,
	// splits bisection's halves across the top switch and makes incast
	// prefer senders under other leaves.
	Hosts    []string
	Topology *topology.Topology
}

// Steps are the pattern's steps over n ranks; a note says how the
// halves of a bisection were split when it is worth saying.
func (p Pattern) Steps(n int, o PatternOptions) ([]Step, string, error) {
	if err := p.Check(n); err != nil {
		return nil, "", err
	}
	switch p.Kind {
	case PatternIncast:
		return Incast(n, p.K, o), "", nil
	case PatternAllToAll:
		return AllToAll(n, p.Group), "", nil
	}
	a, b, note := Halves(n, o.Hosts, o.Topology)
	return []Step{Bisection(a, b)}, note, nil
}

// Incast is K senders into each receiver in turn: every rank, or
// o.Sample receivers drawn by o.Seed. Each receiver's senders are drawn
// by the seed too, from the ranks under other leaves first when a
// topology is given. The probe runs from the first sender to the
// receiver.
func Incast(n, k int, o PatternOptions) []Step {
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	receivers := make([]int, n)
	for i := range receivers {
		receivers[i] = i
	}
	if o.Sample > 0 && o.Sample < n {
		shuffle(rng, receivers)
		receivers = receivers[:o.Sample]
		slices.Sort(receivers)
	}
	leaf := leaves(n, o.Hosts, o.Topology)
	var steps []Step
	for _, r := range receivers {
		var far, near []int
		for s := range n {
			switch {
			case s == r:
			case leaf != nil && leaf[s] != leaf[r]:
				far = append(far, s)
			default:
				near = append(near, s)
			}
		}
		shuffle(rng, far)
		shuffle(rng, near)
		senders := append(far, near...)[:k]
		slices.Sort(senders)
		st := Step{Receiver: r}
		for _, s := range senders {
			st.Flows = append(st.Flows, Flow{From: s, To: r})
		}
		st.Probe = Flow{From: senders[0], To: r}
		steps = append(steps, st)
	}
	return steps
}

// AllToAll is every rank sending to every other at once, a flow per
// ordered pair, in one step; with a group g below n, the ranks in blocks
// of g/2 and a step for each two blocks (every ordered pair of their g
// ranks), so that every pair of ranks meets in some step. The probe runs
// between the step's first flow's ends.
func AllToAll(n, g int) []Step {
	if g == 0 || g >= n {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return []Step{allToAll(all)}
	}
	h := g / 2
	var blocks [][]int
	for start := 0; start < n; start += h {
		var b []int
		for r := start; r < min(start+h, n); r++ {
			b = append(b, r)
		}
		blocks = append(blocks, b)
	}
	var steps []Step
	for i := range blocks {
		for j := i + 1; j < len(blocks); j++ {
			steps = append(steps, allToAll(append(slices.Clone(blocks[i]), blocks[j]...)))
		}
	}
	return steps
}

func allToAll(group []int) Step {
	st := Step{Receiver: -1, Group: group}
	for _, a := range group {
		for _, b := range group {
			if a != b {
				st.Flows = append(st.Flows, Flow{From: a, To: b})
			}
		}
	}
	st.Probe = st.Flows[0]
	return st
}

// Bisection is every pair across halves a and b at once, both
// directions; the probe runs between the first rank of each half.
func Bisection(a, b []int) Step {
	st := Step{Receiver: -1, Halves: [2][]int{a, b}}
	for _, x := range a {
		for _, y := range b {
			st.Flows = append(st.Flows, Flow{From: x, To: y}, Flow{From: y, To: x})
		}
	}
	st.Probe = Flow{From: a[0], To: b[0]}
	return st
}

// Halves split n ranks in two: across the top switch of the topology
// (the subtrees under it, whole, balanced by their ranks), else by rank
// order (the first n/2, the rest). The note says when a topology could
// not split them.
func Halves(n int, hosts []string, t *topology.Topology) (a, b []int, note string) {
	byRank := func() ([]int, []int) {
		for r := range n {
			if r < n/2 {
				a = append(a, r)
			} else {
				b = append(b, r)
			}
		}
		return a, b
	}
	if t == nil {
		a, b = byRank()
		return a, b, ""
	}
	// Each rank's subtree: its top switch when the fabric has several,
	// else the switch under the top one that it hangs from.
	tops := map[string]bool{}
	ups := make([][]string, n)
	for r := range n {
		if r < len(hosts) {
			ups[r] = t.Up(hosts[r])
		}
		if len(ups[r]) > 0 {
			tops[ups[r][len(ups[r])-1]] = true
		}
	}
	sub := make([]string, n)
	count := map[string]int{}
	for r, up := range ups {
		switch {
		case len(up) == 0:
			sub[r] = ""
		case len(tops) > 1:
			sub[r] = up[len(up)-1]
		case len(up) >= 2:
			sub[r] = up[len(up)-2]
		default:
			sub[r] = up[0]
		}
		count[sub[r]]++
	}
	if len(count) < 2 {
		a, b = byRank()
		return a, b, fmt.Sprintf("bisection: the topology %s puts every rank under one switch, nothing to split across: the halves are by rank order", t.File)
	}
	// The subtrees, largest first, each into the half with fewer ranks.
	names := make([]string, 0, len(count))
	for s := range count {
		names = append(names, s)
	}
	slices.SortFunc(names, func(x, y string) int { return cmp.Or(count[y]-count[x], cmp.Compare(x, y)) })
	side := map[string]int{}
	var size [2]int
	for _, s := range names {
		h := 0
		if size[1] < size[0] {
			h = 1
		}
		side[s] = h
		size[h] += count[s]
	}
	for r := range n {
		if side[sub[r]] == 0 {
			a = append(a, r)
		} else {
			b = append(b, r)
		}
	}
	if a[0] > b[0] {
		a, b = b, a
	}
	return a, b, ""
}

// leaves are the ranks' leaf switches, nil without a topology.
func leaves(n int, hosts []string, t *topology.Topology) []string {
	if t == nil {
		return nil
	}
	out := make([]string, n)
	for r := range n {
		if r < len(hosts) {
			out[r], _ = t.Leaf(hosts[r])
		}
	}
	return out
}
