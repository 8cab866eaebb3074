package mesh

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Link is one direction between two ranks: From runs the client end of the
// tests against To's server.
type Link struct{ From, To int }

// Pair is two ranks measured together in one round: each of its links in
// turn, so that neither rank runs two tests at once.
type Pair struct {
	A, B  int
	Links []Link
	// Hosts is set in the schedules over hosts (rail-aligned, a sample
	// with rails): the host pair this pair is a rail of. The pairs of a
	// round with the same Hosts are the rails of one host pair, which run
	// at once: the k-th link of each starts together (Together groups
	// them), so that a host pair's figures are those of all its NICs
	// busy, as a host-level test measures them.
	Hosts *HostPair
}

// Schedule is rounds of pairs: within a round no rank is in two pairs, so
// the pairs of a round run at the same time.
type Schedule [][]Pair

// Links counts the links of the schedule.
func (s Schedule) Links() int {
	n := 0
	for _, r := range s {
		for _, p := range r {
			n += len(p.Links)
		}
	}
	return n
}

// Duplex is s with each pair run once, both directions at once (a duplex
// mesh): of each pair's links only the first is kept, its client end
// being the rank that sent first (which alternates from round to round in
// a round-robin).
func (s Schedule) Duplex() Schedule {
	out := make(Schedule, len(s))
	for r, round := range s {
		out[r] = make([]Pair, len(round))
		for i, p := range round {
			p.Links = p.Links[:min(len(p.Links), 1)]
			out[r][i] = p
		}
	}
	return out
}

// RoundRobin is every pair of n ranks, both directions, as a round-robin
// tournament (the circle method): n-1 rounds of n/2 pairs (n rounds when
// n is odd, each leaving one rank out). In a pair the rank that sends
// first alternates from round to round.
func RoundRobin(n int) Schedule {
	if n < 2 {
		return nil
	}
	m := n
	if m%2 == 1 {
		m++ // a dummy rank m-1: its partner sits the round out
	}
	ring := make([]int, m)
	for i := range ring {
		ring[i] = i
	}
	var s Schedule
	for r := 0; r < m-1; r++ {
		var round []Pair
		for i := 0; i < m/2; i++ {
			a, b := ring[i], ring[m-1-i]
			if a >= n || b >= n {
				continue
			}
			if a > b {
				a, b = b, a
			}
			if r%2 == 1 {
				round = append(round, Pair{A: a, B: b, Links: []Link{{b, a}, {a, b}}})
			} else {
				round = append(round, Pair{A: a, B: b, Links: []Link{{a, b}, {b, a}}})
			}
		}
		s = append(s, round)
		// Rotate every position but the first.
		last := ring[m-1]
		copy(ring[2:], ring[1:m-1])
		ring[1] = last
	}
	return s
}

// FromLinks schedules the given links of n ranks: the links between the
// same two ranks form one pair (in the order given), and pairs go, in the
// order of their first link, into the first round where neither rank is
// busy yet.
func FromLinks(links []Link) Schedule {
	var s Schedule
	var busy []map[int]bool
	for _, p := range pairsOf(links) {
		r := 0
		for r < len(s) && (busy[r][p.A] || busy[r][p.B]) {
			r++
		}
		if r == len(s) {
			s = append(s, nil)
			busy = append(busy, map[int]bool{})
		}
		s[r] = append(s[r], p)
		busy[r][p.A], busy[r][p.B] = true, true
	}
	return s
}

// pairsOf groups links by the two ranks they join, A below B, in the order
// of each pair's first link; a pair's links keep their order.
func pairsOf(links []Link) []Pair {
	type key struct{ a, b int }
	at := map[key]int{}
	var pairs []Pair
	for _, l := range links {
		k := key{min(l.From, l.To), max(l.From, l.To)}
		i, ok := at[k]
		if !ok {
			i = len(pairs)
			at[k] = i
			pairs = append(pairs, Pair{A: k.a, B: k.b})
		}
		pairs[i].Links = append(pairs[i].Links, l)
	}
	return pairs
}

// ParsePairs reads a --pairs file: one link per line, "FROM TO" (ranks,
// separated by spaces, a comma or "->"); "A <-> B" or "A B both" means
// both directions. Blank lines and text after # are ignored. Every rank
// must be below n, and no link may be given twice.
func ParsePairs(r io.Reader, name string, n int) ([]Link, error) {
	sc := bufio.NewScanner(r)
	var links []Link
	seen := map[Link]bool{}
	line := 0
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		both := strings.Contains(text, "<->")
		text = strings.NewReplacer("<->", " ", "->", " ", ",", " ").Replace(text)
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if len(f) == 3 && f[2] == "both" {
			both, f = true, f[:2]
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: want two ranks, FROM TO (or A <-> B), not %q", name, line, sc.Text())
		}
		var rk [2]int
		for i, s := range f {
			v, err := strconv.Atoi(s)
			if err != nil || v < 0 || v >= n {
				return nil, fmt.Errorf("%s:%d: %q is not a rank of this mesh (0 to %d)", name, line, s, n-1)
			}
			rk[i] = v
		}
		if rk[0] == rk[1] {
			return nil, fmt.Errorf("%s:%d: rank %d with itself: a link joins two ranks", name, line, rk[0])
		}
		add := []Link{{rk[0], rk[1]}}
		if both {
			add = append(add, Link{rk[1], rk[0]})
		}
		for _, l := range add {
			if seen[l] {
				return nil, fmt.Errorf("%s:%d: the link %d -> %d is given twice", name, line, l.From, l.To)
			}
			seen[l] = true
			links = append(links, l)
		}
		if len(links) > 1<<22 {
			return nil, fmt.Errorf("%s: too many links", name)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(links) == 0 {
		return nil, fmt.Errorf("%s: no link", name)
	}
	return links, nil
}

// HostPair is two hosts, by their index in a Layout, measured together
// in a round: every rail they share at once.
type HostPair struct{ A, B int }

// HostRounds are rounds of host pairs: in each, a host is in at most one
// pair. OnRails makes them a schedule of ranks.
type HostRounds [][]HostPair

// HostRoundRobin is every pair of n hosts as a round-robin tournament (the
// circle method): n-1 rounds (n when n is odd, one host resting in each).
func HostRoundRobin(n int) HostRounds {
	return matchings(n, n, nil)
}

// SampleHosts is k rounds of random perfect matchings of n hosts (or
// ranks), seeded: the same n, k and seed give the same rounds. No two
// rounds share a pair, so in k rounds every host meets k distinct peers;
// when n is odd one host rests in each round (a different one each time),
// and meets k-1. A k at or above the round-robin's rounds (n-1; n when n
// is odd) gives all of them: every pair, in a random order.
//
// The rounds are those of a round-robin over the hosts relabelled by a
// random permutation, k of them picked at random: each round is a uniformly
// random perfect matching, and together they are disjoint.
func SampleHosts(n, k int, seed uint64) HostRounds {
	return matchings(n, k, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
}

// matchings is k rounds of the circle method over n players, relabelled
// and picked at random when rng is given.
func matchings(n, k int, rng *rand.Rand) HostRounds {
	if n < 2 || k < 1 {
		return nil
	}
	m := n + n%2 // a dummy player n when n is odd: its partner rests
	label := make([]int, m)
	rounds := make([]int, m-1)
	for i := range label {
		label[i] = i
	}
	for i := range rounds {
		rounds[i] = i
	}
	if rng != nil {
		shuffle(rng, label[:n])
		shuffle(rng, rounds)
	}
	var out HostRounds
	for _, r := range rounds[:min(k, m-1)] {
		round := make([]HostPair, 0, n/2)
		circle(m, r, func(a, b int) {
			if a >= n || b >= n {
				return
			}
			a, b = label[a], label[b]
			round = append(round, HostPair{min(a, b), max(a, b)})
		})
		slices.SortFunc(round, func(x, y HostPair) int { return x.A - y.A })
		out = append(out, round)
	}
	return out
}

// circle calls f with the pairs of round r of the circle method over m
// players (m even): player 0 stays, the others turn one place per round,
// and position i plays position m-1-i.
func circle(m, r int, f func(a, b int)) {
	at := func(p int) int {
		if p == 0 {
			return 0
		}
		return ((p-1-r)%(m-1)+(m-1))%(m-1) + 1
	}
	for i := 0; i < m/2; i++ {
		f(at(i), at(m-1-i))
	}
}

// shuffle is Fisher-Yates over rng's raw output, so that a seed gives the
// same order whatever Go's own shuffles do in a later release.
func shuffle(rng *rand.Rand, x []int) {
	for i := len(x) - 1; i > 0; i-- {
		j := int(rng.Uint64() % uint64(i+1)) // the bias, below 2^-40 at these sizes, does not matter
		x[i], x[j] = x[j], x[i]
	}
}

// Sample is k rounds of random perfect matchings of n ranks (see
// SampleHosts), both directions of each pair.
func Sample(n, k int, seed uint64) Schedule {
	var s Schedule
	for r, round := range SampleHosts(n, k, seed) {
		pairs := make([]Pair, len(round))
		for i, hp := range round {
			pairs[i] = Pair{A: hp.A, B: hp.B, Links: both(hp.A, hp.B, r)}
		}
		s = append(s, pairs)
	}
	return s
}

// both is the two directions of a pair, a's first in even rounds.
func both(a, b, round int) []Link {
	if round%2 == 1 {
		return []Link{{b, a}, {a, b}}
	}
	return []Link{{a, b}, {b, a}}
}

// Layout is where the ranks are: Host[r] is rank r's host, an index from
// 0 (-1 when unknown: the rank never registered), and Rail[r] its rail,
// the launcher's local rank, which picks its NIC (NIC Rail[r] of its
// host, with -d listing the NICs).
type Layout struct {
	Host, Rail []int
	// Hostnames are the hosts' names, by index.
	Hostnames []string
}

// NewLayout is the layout of ranks on the hosts named (one name per rank,
// "" when unknown) with their local ranks. Hosts are numbered in the order
// of their first rank. Two ranks of one host with the same local rank are
// an error: a rail-aligned schedule needs one rank per NIC.
func NewLayout(hostnames []string, localRanks []int) (Layout, error) {
	if len(hostnames) != len(localRanks) {
		return Layout{}, fmt.Errorf("layout: %d hostnames for %d local ranks", len(hostnames), len(localRanks))
	}
	l := Layout{Host: make([]int, len(hostnames)), Rail: slices.Clone(localRanks)}
	index := map[string]int{}
	type slot struct{ host, rail int }
	taken := map[slot]int{}
	for r, name := range hostnames {
		if name == "" {
			l.Host[r] = -1
			continue
		}
		h, ok := index[name]
		if !ok {
			h = len(l.Hostnames)
			index[name] = h
			l.Hostnames = append(l.Hostnames, name)
		}
		l.Host[r] = h
		if localRanks[r] < 0 {
			return Layout{}, fmt.Errorf("rank %d (%s) has local rank %d", r, name, localRanks[r])
		}
		if o, dup := taken[slot{h, localRanks[r]}]; dup {
			return Layout{}, fmt.Errorf("ranks %d and %d both run on %s with local rank %d: rails need one rank per NIC, each with the launcher's local rank (SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID)",
				o, r, name, localRanks[r])
		}
		taken[slot{h, localRanks[r]}] = r
	}
	return l, nil
}

// Hosts is the number of hosts.
func (l Layout) Hosts() int {
	n := 0
	for _, h := range l.Host {
		n = max(n, h+1)
	}
	return n
}

// RailAligned is every pair of hosts, each on every rail they share, as a
// round-robin over the hosts: NIC i of a host meets NIC i of every other
// host, and the rails of a host pair run in the same round, at once. That
// is H-1 rounds for H hosts (H when H is odd), each pair running both its
// directions; ranks of unknown hosts are left out.
func RailAligned(l Layout) Schedule {
	return OnRails(HostRoundRobin(l.Hosts()), l)
}

// OnRails applies rounds of host pairs on every rail of l: in each round,
// a host pair becomes one pair of ranks per rail the two hosts share
// (Hosts set to the host pair), both directions, the first from host A in
// even rounds and from host B in odd ones, the same on every rail. Rounds
// left with no pair are dropped.
func OnRails(rounds HostRounds, l Layout) Schedule {
	type nic struct{ rail, rank int }
	nics := make([][]nic, l.Hosts())
	for r, h := range l.Host {
		if h >= 0 {
			nics[h] = append(nics[h], nic{l.Rail[r], r})
		}
	}
	for _, n := range nics {
		slices.SortFunc(n, func(x, y nic) int { return x.rail - y.rail })
	}
	var s Schedule
	for _, round := range rounds {
		var pairs []Pair
		for _, hp := range round {
			hosts := &HostPair{hp.A, hp.B}
			a, b := nics[hp.A], nics[hp.B]
			for i, j := 0, 0; i < len(a) && j < len(b); {
				switch {
				case a[i].rail < b[j].rail:
					i++
				case a[i].rail > b[j].rail:
					j++
				default:
					pairs = append(pairs, Pair{A: a[i].rank, B: b[j].rank, Links: both(a[i].rank, b[j].rank, len(s)), Hosts: hosts})
					i++
					j++
				}
			}
		}
		if len(pairs) > 0 {
			s = append(s, pairs)
		}
	}
	return s
}

// Together groups the pairs of a round that run at once: the rails of one
// host pair (the same Hosts); a pair of a schedule over ranks is a group
// of its own. Groups keep the order of their first pair.
func Together(round []Pair) [][]Pair {
	var groups [][]Pair
	at := map[HostPair]int{}
	for _, p := range round {
		if p.Hosts == nil {
			groups = append(groups, []Pair{p})
			continue
		}
		i, ok := at[*p.Hosts]
		if !ok {
			i = len(groups)
			at[*p.Hosts] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], p)
	}
	return groups
}

// Retest packs links, the suspects of a mesh, into as few rounds of
// disjoint pairs as it can: the links between two ranks form one pair (in
// the order given), and the pairs, those of the busiest ranks first, go
// into the first round where neither rank is busy (a greedy edge colouring:
// at most 2D-1 rounds, where D is the most pairs of one rank, and at least
// D).
func Retest(links []Link) Schedule {
	pairs := pairsOf(links)
	deg := map[int]int{}
	for _, p := range pairs {
		deg[p.A]++
		deg[p.B]++
	}
	slices.SortStableFunc(pairs, func(x, y Pair) int {
		if c := max(deg[y.A], deg[y.B]) - max(deg[x.A], deg[x.B]); c != 0 {
			return c
		}
		return deg[y.A] + deg[y.B] - deg[x.A] - deg[x.B]
	})
	busy := map[int][]bool{} // busy[rank][round]
	var s Schedule
	for _, p := range pairs {
		a, b := busy[p.A], busy[p.B]
		r := 0
		for (r < len(a) && a[r]) || (r < len(b) && b[r]) {
			r++
		}
		if r == len(s) {
			s = append(s, nil)
		}
		s[r] = append(s[r], p)
		for _, k := range []int{p.A, p.B} {
			for len(busy[k]) <= r {
				busy[k] = append(busy[k], false)
			}
			busy[k][r] = true
		}
	}
	return s
}
