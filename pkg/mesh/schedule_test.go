package mesh

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRoundRobin(t *testing.T) {
	for n := 2; n <= 17; n++ {
		s := RoundRobin(n)
		wantRounds := n - 1
		if n%2 == 1 {
			wantRounds = n
		}
		if len(s) != wantRounds {
			t.Errorf("n=%d: %d rounds, want %d", n, len(s), wantRounds)
		}
		seen := map[Link]int{}
		for r, round := range s {
			busy := map[int]bool{}
			for _, p := range round {
				if busy[p.A] || busy[p.B] {
					t.Errorf("n=%d round %d: rank in two pairs: %+v", n, r, round)
				}
				busy[p.A], busy[p.B] = true, true
				if len(p.Links) != 2 || p.Links[0].From != p.Links[1].To || p.Links[0].To != p.Links[1].From {
					t.Errorf("n=%d: pair %+v does not run both directions", n, p)
				}
				for _, l := range p.Links {
					seen[l]++
				}
			}
		}
		if len(seen) != n*(n-1) {
			t.Errorf("n=%d: %d links, want %d", n, len(seen), n*(n-1))
		}
		for l, c := range seen {
			if c != 1 || l.From == l.To || l.From < 0 || l.To >= n {
				t.Errorf("n=%d: link %v scheduled %d times", n, l, c)
			}
		}
		if s.Links() != n*(n-1) {
			t.Errorf("n=%d: Links() %d", n, s.Links())
		}
	}
}

func TestParsePairsAndSchedule(t *testing.T) {
	in := `# rails
0 1
1 -> 0
2,3   # one way
0 <-> 2
1 3 both
`
	links, err := ParsePairs(strings.NewReader(in), "pairs.txt", 4)
	if err != nil {
		t.Fatal(err)
	}
	want := "[{0 1} {1 0} {2 3} {0 2} {2 0} {1 3} {3 1}]"
	if got := fmt.Sprint(links); got != want {
		t.Errorf("links %s, want %s", got, want)
	}
	s := FromLinks(links)
	// {0,1} and {2,3} in round 1; {0,2} and {1,3} in round 2.
	if len(s) != 2 || len(s[0]) != 2 || len(s[1]) != 2 {
		t.Fatalf("schedule %+v", s)
	}
	if fmt.Sprint(s[0][0].Links) != "[{0 1} {1 0}]" {
		t.Errorf("first pair %+v", s[0][0])
	}
	for _, c := range []struct{ in, err string }{
		{"0 4", `"4" is not a rank of this mesh (0 to 3)`},
		{"1 1", "rank 1 with itself"},
		{"0 1\n0 1", "the link 0 -> 1 is given twice"},
		{"0 1 2", "want two ranks"},
		{"# nothing", "no link"},
		{"a b", `"a" is not a rank`},
	} {
		_, err := ParsePairs(strings.NewReader(c.in), "p", 4)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: %v, want %q", c.in, err, c.err)
		}
	}
}

func TestExpandHostlist(t *testing.T) {
	for in, want := range map[string]string{
		"node1":                    "[node1]",
		"node[1-3]":                "[node1 node2 node3]",
		"node[01-03,7],gpu-a":      "[node01 node02 node03 node7 gpu-a]",
		"rack[1-2]-n[1-2]":         "[rack1-n1 rack1-n2 rack2-n1 rack2-n2]",
		"a,b[09-10].example.org,c": "[a b09.example.org b10.example.org c]",
		"":                         "[]",
	} {
		got, err := ExpandHostlist(in)
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("%q: %v %v, want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"node[1-", "node]", "node[3-1]", "node[a-b]"} {
		if _, err := ExpandHostlist(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestDetect(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, c := range []struct {
		name        string
		env         func(string) string
		rank, size  int
		want        string // Launch as %+v, or the error
		coordinator string
	}{
		{"slurm", env("SLURM_PROCID", "2", "SLURM_NTASKS", "4", "SLURM_LOCALID", "1", "SLURM_STEP_NODELIST", "node[1-2]",
			"PMIX_RANK", "2"), -1, 0, "{Rank:2 Size:4 LocalRank:1 Launcher:slurm Coordinator:node1:19514}", "node1:19514"},
		{"openmpi", env("OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_RANK", "3", "PMIX_RANK", "3"),
			-1, 0, "{Rank:3 Size:4 LocalRank:3 Launcher:openmpi Coordinator:}", ""},
		{"pmi", env("PMI_RANK", "0", "PMI_SIZE", "2", "MPI_LOCALRANKID", "0"), -1, 0, "{Rank:0 Size:2 LocalRank:0 Launcher:pmi Coordinator:}", ""},
		{"pmix", env("PMIX_RANK", "1"), -1, 3, "{Rank:1 Size:3 LocalRank:0 Launcher:pmix Coordinator:}", ""},
		{"kubernetes", env("JOB_COMPLETION_INDEX", "5", "HOSTNAME", "mesh-5"), -1, 8, "{Rank:5 Size:8 LocalRank:0 Launcher:kubernetes Coordinator:}", ""},
		{"flags", env("SLURM_PROCID", "2", "SLURM_NTASKS", "4"), 1, 2, "{Rank:1 Size:2 LocalRank:0 Launcher:flags Coordinator:}", ""},
		{"k8s without size", env("JOB_COMPLETION_INDEX", "5"), -1, 0, "JOB_COMPLETION_INDEX=5 gives the rank; give the number of ranks with --ranks", ""},
		{"size disagrees", env("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "4"), -1, 3, "--ranks 3, but OMPI_COMM_WORLD_SIZE=4", ""},
		{"nothing", env(), -1, 0, "no rank: run under Slurm", ""},
		{"rank too big", env(), 4, 4, "rank 4 of 4: ranks go from 0 to 3", ""},
		{"one rank", env("SLURM_PROCID", "0", "SLURM_NTASKS", "1"), -1, 0, "a mesh needs at least 2 ranks, not 1", ""},
		{"garbage", env("SLURM_PROCID", "x", "SLURM_NTASKS", "2"), -1, 0, `SLURM_PROCID="x" is not a rank or a count`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := Detect(c.env, c.rank, c.size)
			got := fmt.Sprintf("%+v", l)
			if err != nil {
				if !errors.Is(err, ErrUsage) {
					t.Errorf("error %v does not wrap ErrUsage", err)
				}
				got = err.Error()
			}
			if !strings.Contains(got, c.want) {
				t.Errorf("got %s, want %s", got, c.want)
			}
			if err == nil {
				addr, err := CoordinatorAddr("", l)
				if c.coordinator == "" {
					if err == nil || !strings.Contains(err.Error(), "--coordinator HOST:PORT is needed") {
						t.Errorf("coordinator %q, %v: want an error asking for it", addr, err)
					}
				} else if addr != c.coordinator {
					t.Errorf("coordinator %q (%v), want %q", addr, err, c.coordinator)
				}
			}
		})
	}
	l := Launch{Rank: 1, Size: 2}
	for in, want := range map[string]string{"node1": "node1:19514", "node1:7000": "node1:7000", "10.0.0.1": "10.0.0.1:19514",
		"[fe80::1]:9": "[fe80::1]:9", "::1": "[::1]:19514"} {
		if got, err := CoordinatorAddr(in, l); got != want || err != nil {
			t.Errorf("CoordinatorAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"node1:x", "node1:0", ":7000"} {
		if _, err := CoordinatorAddr(bad, l); err == nil {
			t.Errorf("CoordinatorAddr(%q) accepted", bad)
		}
	}
}
