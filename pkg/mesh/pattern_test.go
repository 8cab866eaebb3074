package mesh

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestPatternParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Pattern
		err  string
	}{
		{"incast:3", Pattern{Kind: PatternIncast, K: 3}, ""},
		{"all-to-all", Pattern{Kind: PatternAllToAll}, ""},
		{"all-to-all:8", Pattern{Kind: PatternAllToAll, Group: 8}, ""},
		{"bisection", Pattern{Kind: PatternBisection}, ""},
		{"incast", Pattern{}, "say how many senders each receiver gets, incast:K"},
		{"incast:0", Pattern{}, "K is a number of ranks, at least 1"},
		{"incast:x", Pattern{}, "K is a number of ranks"},
		{"bisection:2", Pattern{}, "bisection takes no number"},
		{"ring", Pattern{}, "--pattern ring: unknown pattern (want incast:K, all-to-all, all-to-all:G, bisection)"},
	} {
		p, err := ParsePattern(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, ErrUsage)):
			t.Errorf("%s: %v, want a usage error %q", c.in, err, c.err)
		case c.err == "" && (err != nil || p != c.want || p.String() != c.in):
			t.Errorf("%s: %+v (%s), %v", c.in, p, p, err)
		}
	}
	for _, c := range []struct {
		p    Pattern
		n    int
		want string
	}{
		{Pattern{Kind: PatternIncast, K: 4}, 4, "K is 1 to 3 with 4 ranks"},
		{Pattern{Kind: PatternBisection}, 1, "needs at least 2 ranks, the mesh has 1"},
		{Pattern{Kind: PatternAllToAll, Group: 9}, 8, "G is 2 to 8 with 8 ranks"},
		{Pattern{Kind: PatternAllToAll, Group: 3}, 8, "G is even below the mesh's 8 ranks"},
	} {
		if err := c.p.Check(c.n); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on %d: %v, want %q", c.p, c.n, err, c.want)
		}
	}
}

// Every receiver gets K distinct senders, none itself; the probe is one
// of them; a seed repeats the draw; --sample picks that many receivers.
func TestPatternIncast(t *testing.T) {
	for _, n := range []int{2, 5, 8, 17} {
		for k := 1; k < n; k++ {
			steps := Incast(n, k, PatternOptions{Seed: 7})
			if len(steps) != n {
				t.Fatalf("n %d k %d: %d steps", n, k, len(steps))
			}
			for i, st := range steps {
				if st.Receiver != i || len(st.Flows) != k {
					t.Fatalf("n %d k %d: step %d receiver %d, %d flows", n, k, i, st.Receiver, len(st.Flows))
				}
				seen := map[int]bool{}
				for _, f := range st.Flows {
					if f.To != i || f.From == i || seen[f.From] || f.From < 0 || f.From >= n {
						t.Fatalf("n %d k %d: step %d flow %+v", n, k, i, f)
					}
					seen[f.From] = true
				}
				if st.Probe.To != i || !seen[st.Probe.From] {
					t.Errorf("probe %+v", st.Probe)
				}
			}
			if again := Incast(n, k, PatternOptions{Seed: 7}); fmt.Sprint(again) != fmt.Sprint(steps) {
				t.Errorf("n %d k %d: the same seed drew other senders", n, k)
			}
		}
	}
	steps := Incast(10, 3, PatternOptions{Seed: 1, Sample: 4})
	if len(steps) != 4 {
		t.Fatalf("--sample 4: %d steps", len(steps))
	}
	// With a topology, the senders come from the other leaf first.
	topo := parseTopology(t, "SwitchName=leaf1 Nodes=n[1-4]\nSwitchName=leaf2 Nodes=n[5-8]\nSwitchName=spine Switches=leaf[1-2]\n")
	hosts := []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"}
	for _, st := range Incast(8, 4, PatternOptions{Seed: 3, Hosts: hosts, Topology: topo}) {
		for _, f := range st.Flows {
			if (f.From < 4) == (st.Receiver < 4) {
				t.Errorf("receiver %d: sender %d under its own leaf while the other has 4", st.Receiver, f.From)
			}
		}
	}
}

// All-to-all: a flow per ordered pair, none to itself; in groups, every
// ordered pair of ranks is in some step, and no step has more than G
// ranks.
func TestPatternAllToAll(t *testing.T) {
	for _, c := range []struct{ n, g, steps int }{{4, 0, 1}, {5, 5, 1}, {8, 4, 6}, {9, 4, 10}, {16, 8, 6}, {6, 2, 15}} {
		steps := AllToAll(c.n, c.g)
		if len(steps) != c.steps {
			t.Errorf("n %d g %d: %d steps, want %d", c.n, c.g, len(steps), c.steps)
		}
		pairs := map[Flow]bool{}
		for _, st := range steps {
			if c.g > 0 && len(st.Ranks()) > c.g {
				t.Errorf("n %d g %d: a step of %d ranks", c.n, c.g, len(st.Ranks()))
			}
			r := len(st.Group)
			if len(st.Flows) != r*(r-1) {
				t.Errorf("n %d g %d: %d ranks, %d flows", c.n, c.g, r, len(st.Flows))
			}
			for _, f := range st.Flows {
				if f.From == f.To {
					t.Fatalf("a self flow %+v", f)
				}
				pairs[f] = true
			}
		}
		if len(pairs) != c.n*(c.n-1) {
			t.Errorf("n %d g %d: %d ordered pairs covered, want %d", c.n, c.g, len(pairs), c.n*(c.n-1))
		}
	}
}

// Bisection: the halves by rank order, or across the top switch with a
// topology (whole leaves on each side); every pair across, both ways.
func TestPatternBisection(t *testing.T) {
	a, b, note := Halves(5, nil, nil)
	if fmt.Sprint(a, b) != "[0 1] [2 3 4]" || note != "" {
		t.Errorf("by rank: %v %v %q", a, b, note)
	}
	st := Bisection(a, b)
	if len(st.Flows) != 2*2*3 || st.Probe != (Flow{0, 2}) {
		t.Errorf("%d flows, probe %+v", len(st.Flows), st.Probe)
	}
	for _, f := range st.Flows {
		if slices.Contains(a, f.From) == slices.Contains(a, f.To) {
			t.Errorf("flow %+v within a half", f)
		}
	}
	// Hosts interleaved over two leaves: the halves follow the leaves.
	topo := parseTopology(t, "SwitchName=leaf1 Nodes=n[1-2]\nSwitchName=leaf2 Nodes=n[3-4]\nSwitchName=spine Switches=leaf[1-2]\n")
	a, b, note = Halves(4, []string{"n1", "n3", "n2", "n4"}, topo)
	if fmt.Sprint(a, b) != "[0 2] [1 3]" || note != "" {
		t.Errorf("by topology: %v %v %q", a, b, note)
	}
	// Four leaves under two middle switches under a spine: split at the
	// middle switches.
	topo = parseTopology(t, "SwitchName=l1 Nodes=n1\nSwitchName=l2 Nodes=n2\nSwitchName=l3 Nodes=n3\nSwitchName=l4 Nodes=n4\n"+
		"SwitchName=m1 Switches=l[1-2]\nSwitchName=m2 Switches=l[3-4]\nSwitchName=spine Switches=m[1-2]\n")
	a, b, _ = Halves(4, []string{"n1", "n3", "n4", "n2"}, topo)
	if fmt.Sprint(a, b) != "[0 3] [1 2]" {
		t.Errorf("by the middle switches: %v %v", a, b)
	}
	// One leaf: nothing to split across; by rank, said.
	topo = parseTopology(t, "SwitchName=leaf1 Nodes=n[1-4]\n")
	a, b, note = Halves(4, []string{"n1", "n2", "n3", "n4"}, topo)
	if fmt.Sprint(a, b) != "[0 1] [2 3]" || !strings.Contains(note, "under one switch") {
		t.Errorf("one leaf: %v %v %q", a, b, note)
	}
}
