package mesh

import (
	"bufio"
	"fmt"
	"io"
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

// RoundRobin is every pair of n ranks, both directions, as a round-robin
// tournament (the circle method): n-1 rounds of n/2 pairs (n rounds when
// n is odd, each leaving one rank out). In a pair the rank that sends
// first alternates from round to round.
func RoundRobin(n int) Schedule {
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
	type key struct{ a, b int }
	var order []key
	pairs := map[key]*Pair{}
	for _, l := range links {
		k := key{min(l.From, l.To), max(l.From, l.To)}
		p := pairs[k]
		if p == nil {
			p = &Pair{A: k.a, B: k.b}
			pairs[k] = p
			order = append(order, k)
		}
		p.Links = append(p.Links, l)
	}
	var s Schedule
	var busy []map[int]bool
	for _, k := range order {
		r := 0
		for r < len(s) && (busy[r][k.a] || busy[r][k.b]) {
			r++
		}
		if r == len(s) {
			s = append(s, nil)
			busy = append(busy, map[int]bool{})
		}
		s[r] = append(s[r], *pairs[k])
		busy[r][k.a], busy[r][k.b] = true, true
	}
	return s
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
