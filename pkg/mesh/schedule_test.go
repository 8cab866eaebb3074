package mesh

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
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

// checked is what checkSchedule found in a schedule of n ranks.
type checked struct {
	count  []int8  // count[from*n+to]: how often the link is scheduled
	peers  [][]int // each rank's partners, round after round
	rested [][]int // per round, the ranks not in it
}

// checkSchedule checks the rules of every schedule: no rank in two pairs
// of a round, every link of a pair between its two ranks, A and B apart,
// no empty round; and it counts the links.
func checkSchedule(t *testing.T, name string, n int, s Schedule) checked {
	t.Helper()
	c := checked{count: make([]int8, n*n), peers: make([][]int, n)}
	busy := make([]int, n) // the round+1 a rank was last in
	for r, round := range s {
		if len(round) == 0 {
			t.Fatalf("%s: round %d is empty", name, r)
		}
		for _, p := range round {
			if p.A == p.B || p.A < 0 || p.B < 0 || p.A >= n || p.B >= n {
				t.Fatalf("%s round %d: pair %+v", name, r, p)
			}
			for _, k := range []int{p.A, p.B} {
				if busy[k] == r+1 {
					t.Fatalf("%s round %d: rank %d in two pairs", name, r, k)
				}
				busy[k] = r + 1
			}
			c.peers[p.A] = append(c.peers[p.A], p.B)
			c.peers[p.B] = append(c.peers[p.B], p.A)
			if len(p.Links) == 0 {
				t.Fatalf("%s round %d: pair %+v has no link", name, r, p)
			}
			for _, l := range p.Links {
				if !(l.From == p.A && l.To == p.B) && !(l.From == p.B && l.To == p.A) {
					t.Fatalf("%s round %d: link %v in pair %d-%d", name, r, l, p.A, p.B)
				}
				c.count[l.From*n+l.To]++
			}
		}
		var rest []int
		for k := range n {
			if busy[k] != r+1 {
				rest = append(rest, k)
			}
		}
		c.rested = append(c.rested, rest)
	}
	return c
}

// rrRounds is the number of rounds of a round-robin of n.
func rrRounds(n int) int {
	switch {
	case n < 2:
		return 0
	case n%2 == 1:
		return n
	}
	return n - 1
}

func TestScheduleRoundRobinSizes(t *testing.T) {
	for n := 1; n <= 300; n++ {
		s := RoundRobin(n)
		c := checkSchedule(t, fmt.Sprint("round-robin ", n), n, s)
		if len(s) != rrRounds(n) {
			t.Errorf("n=%d: %d rounds, want %d", n, len(s), rrRounds(n))
		}
		for i, k := range c.count {
			if want := int8(1); i/n == i%n {
				want = 0
				if k != want {
					t.Fatalf("n=%d: link %d -> %d scheduled %d times", n, i/n, i%n, k)
				}
			} else if k != want {
				t.Fatalf("n=%d: link %d -> %d scheduled %d times", n, i/n, i%n, k)
			}
		}
	}
}

// Every rank meets K distinct peers in K rounds, both directions; when
// the size is odd one rank (a different one each time) rests per round.
func TestSampleSchedule(t *testing.T) {
	for n := 1; n <= 300; n++ {
		ks := []int{1, 2, 3, 15}
		if n <= 40 || n%50 <= 1 || n >= 298 {
			ks = append(ks, n-1, n, n+7)
		}
		for _, k := range ks {
			if k < 1 {
				continue
			}
			name := fmt.Sprintf("sample n=%d k=%d", n, k)
			s := Sample(n, k, uint64(n*1000+k))
			c := checkSchedule(t, name, n, s)
			rounds := min(k, rrRounds(n))
			if len(s) != rounds {
				t.Fatalf("%s: %d rounds, want %d", name, len(s), rounds)
			}
			for _, round := range s {
				for _, p := range round {
					if len(p.Links) != 2 || c.count[p.A*n+p.B] != 1 || c.count[p.B*n+p.A] != 1 {
						t.Fatalf("%s: pair %+v: %d and %d times", name, p, c.count[p.A*n+p.B], c.count[p.B*n+p.A])
					}
				}
			}
			if rounds == rrRounds(n) && s.Links() != n*(n-1) {
				t.Fatalf("%s: every round, but %d links", name, s.Links())
			}
			restedOnce := map[int]bool{}
			for r, rest := range c.rested {
				if len(rest) != n%2 {
					t.Fatalf("%s round %d: ranks %v rest", name, r, rest)
				}
				for _, k := range rest {
					if restedOnce[k] {
						t.Fatalf("%s: rank %d rests twice", name, k)
					}
					restedOnce[k] = true
				}
			}
			for rank, peers := range c.peers {
				want := rounds
				if restedOnce[rank] {
					want--
				}
				if len(peers) != want || len(peers) != len(slices.Compact(slices.Sorted(slices.Values(peers)))) {
					t.Fatalf("%s: rank %d meets %v, want %d distinct peers", name, rank, peers, want)
				}
			}
		}
	}
	if a, b := Sample(64, 5, 1), Sample(64, 5, 1); !reflect.DeepEqual(a, b) {
		t.Error("the same seed gave two schedules")
	}
	if a, b := Sample(64, 5, 1), Sample(64, 5, 2); reflect.DeepEqual(a, b) {
		t.Error("two seeds gave the same schedule")
	}
	// The seed's schedule stays the same from release to release.
	if got := fmt.Sprint(Sample(6, 2, 42)); got != sample6 {
		t.Errorf("Sample(6, 2, 42) = %s, want %s", got, sample6)
	}
}

const sample6 = "[[{0 1 [{0 1} {1 0}] <nil>} {2 5 [{2 5} {5 2}] <nil>} {3 4 [{3 4} {4 3}] <nil>}] [{0 4 [{4 0} {0 4}] <nil>} {1 5 [{5 1} {1 5}] <nil>} {2 3 [{3 2} {2 3}] <nil>}]]"

// layout places ranks on hosts: nics[h] are host h's rails; the ranks are
// numbered in a shuffled order, as a launcher may number them.
func layout(t *testing.T, rng *rand.Rand, nics [][]int) (Layout, []int, []int) {
	t.Helper()
	var host, rail []int
	for h, rails := range nics {
		for _, r := range rails {
			host, rail = append(host, h), append(rail, r)
		}
	}
	rng.Shuffle(len(host), func(i, j int) {
		host[i], host[j] = host[j], host[i]
		rail[i], rail[j] = rail[j], rail[i]
	})
	names := make([]string, len(host))
	for i, h := range host {
		names[i] = fmt.Sprintf("node%d", h)
	}
	l, err := NewLayout(names, rail)
	if err != nil {
		t.Fatal(err)
	}
	return l, host, rail
}

// checkRails checks a schedule over hosts: links only between NICs of one
// rail on two hosts, a host in at most one host pair per round, the rails
// of a host pair in one round and grouped by Together. It returns the host
// pairs of each round.
func checkRails(t *testing.T, name string, l Layout, s Schedule) [][]HostPair {
	t.Helper()
	var out [][]HostPair
	seen := map[HostPair]int{}
	for r, round := range s {
		hostBusy := map[int]HostPair{}
		var pairs []HostPair
		for _, g := range Together(round) {
			hp := *g[0].Hosts
			if _, ok := seen[hp]; ok {
				t.Fatalf("%s: host pair %v in rounds %d and %d", name, hp, seen[hp], r)
			}
			seen[hp] = r
			pairs = append(pairs, hp)
			rails := map[int]bool{}
			for _, p := range g {
				if *p.Hosts != hp {
					t.Fatalf("%s round %d: %+v grouped with %v", name, r, p, hp)
				}
				if l.Host[p.A] != hp.A || l.Host[p.B] != hp.B || l.Rail[p.A] != l.Rail[p.B] {
					t.Fatalf("%s round %d: pair %d-%d (hosts %d %d, rails %d %d) in host pair %v", name, r, p.A, p.B,
						l.Host[p.A], l.Host[p.B], l.Rail[p.A], l.Rail[p.B], hp)
				}
				if rails[l.Rail[p.A]] {
					t.Fatalf("%s round %d: rail %d twice in %v", name, r, l.Rail[p.A], hp)
				}
				rails[l.Rail[p.A]] = true
				// Every rail sends the same way first.
				if (p.Links[0].From == p.A) != (g[0].Links[0].From == g[0].A) {
					t.Fatalf("%s round %d: rails of %v start in both directions", name, r, hp)
				}
			}
			for _, h := range []int{hp.A, hp.B} {
				if o, ok := hostBusy[h]; ok {
					t.Fatalf("%s round %d: host %d in %v and %v", name, r, h, o, hp)
				}
				hostBusy[h] = hp
			}
		}
		out = append(out, pairs)
	}
	return out
}

func TestRailAligned(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for hosts := 1; hosts <= 40; hosts++ {
		for _, rails := range []int{1, 2, 8} {
			for _, holes := range []bool{false, true} {
				nics := make([][]int, hosts)
				for h := range nics {
					for r := range rails {
						if !holes || rng.IntN(5) > 0 {
							nics[h] = append(nics[h], r)
						}
					}
				}
				name := fmt.Sprintf("rails hosts=%d rails=%d holes=%v", hosts, rails, holes)
				l, host, rail := layout(t, rng, nics)
				n := len(host)
				s := RailAligned(l)
				c := checkSchedule(t, name, n, s)
				checkRails(t, name, l, s)
				if !holes && len(s) != rrRounds(hosts) {
					t.Fatalf("%s: %d rounds, want %d", name, len(s), rrRounds(hosts))
				}
				if len(s) > rrRounds(hosts) {
					t.Fatalf("%s: %d rounds, more than the hosts' round-robin", name, len(s))
				}
				for i, cnt := range c.count {
					from, to := i/n, i%n
					want := int8(0)
					if host[from] != host[to] && rail[from] == rail[to] {
						want = 1
					}
					if cnt != want {
						t.Fatalf("%s: link %d -> %d (hosts %d %d, rails %d %d) %d times, want %d", name, from, to,
							host[from], host[to], rail[from], rail[to], cnt, want)
					}
				}
			}
		}
	}
	// 1024 hosts of 8 NICs: 1023 rounds of 512 host pairs, 4096 rank pairs each.
	nics := make([][]int, 1024)
	for h := range nics {
		nics[h] = []int{0, 1, 2, 3, 4, 5, 6, 7}
	}
	l, _, _ := layout(t, rng, nics)
	s := RailAligned(l)
	if len(s) != 1023 || len(s[0]) != 4096 || s.Links() != 8*1024*1023 || len(Together(s[0])) != 512 {
		t.Errorf("1024 x 8: %d rounds, %d pairs in the first, %d links", len(s), len(s[0]), s.Links())
	}
}

// With rails, the sample is over the hosts, on every rail.
func TestRailSample(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for hosts := 1; hosts <= 41; hosts++ {
		for _, k := range []int{1, 2, 15} {
			nics := make([][]int, hosts)
			for h := range nics {
				nics[h] = []int{0, 1, 2, 3}
			}
			name := fmt.Sprintf("rail sample hosts=%d k=%d", hosts, k)
			l, host, _ := layout(t, rng, nics)
			s := OnRails(SampleHosts(l.Hosts(), k, 7), l)
			c := checkSchedule(t, name, len(host), s)
			hp := checkRails(t, name, l, s)
			if len(s) != min(k, rrRounds(hosts)) {
				t.Fatalf("%s: %d rounds", name, len(s))
			}
			for r, pairs := range hp {
				if len(pairs) != hosts/2 || len(s[r]) != 4*(hosts/2) {
					t.Fatalf("%s round %d: %d host pairs, %d pairs", name, r, len(pairs), len(s[r]))
				}
			}
			for rank, peers := range c.peers {
				for _, p := range peers {
					if host[p] == host[rank] {
						t.Fatalf("%s: rank %d meets %d on its own host", name, rank, p)
					}
				}
			}
		}
	}
}

func TestRailLayout(t *testing.T) {
	l, err := NewLayout([]string{"a", "a", "", "b", "b"}, []int{0, 1, 0, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(l.Host, l.Rail, l.Hostnames, l.Hosts()) != "[0 0 -1 1 1] [0 1 0 1 0] [a b] 2" {
		t.Errorf("layout %+v", l)
	}
	s := RailAligned(l)
	// One round: a's rails 0 and 1 against b's; rank 2 (host unknown) left out.
	want := "[[{0 4 [{0 4} {4 0}] 0x} {1 3 [{1 3} {3 1}] 0x}]]"
	if got := strings.ReplaceAll(fmt.Sprint(s), fmt.Sprintf("%p", s[0][0].Hosts), "0x"); got != want {
		t.Errorf("schedule %s, want %s", got, want)
	}
	if g := Together(s[0]); len(g) != 1 || len(g[0]) != 2 {
		t.Errorf("together %v", g)
	}
	if g := Together(RoundRobin(4)[0]); len(g) != 2 || len(g[0]) != 1 {
		t.Errorf("round-robin pairs together %v", g)
	}
	_, err = NewLayout([]string{"a", "b", "a"}, []int{0, 0, 0})
	if err == nil || !strings.Contains(err.Error(), "ranks 0 and 2 both run on a with local rank 0") {
		t.Errorf("two ranks on one rail: %v", err)
	}
}

// Retest packs suspects into few disjoint rounds: at least D (the most
// pairs of a rank), at most 2D-1.
func TestScheduleRetest(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 2; n <= 300; n += 1 + n/10 {
		for _, m := range []int{1, 3, n, 5 * n} {
			var links []Link
			seen := map[Link]bool{}
			for range m {
				l := Link{rng.IntN(n), rng.IntN(n)}
				if l.From != l.To && !seen[l] {
					seen[l] = true
					links = append(links, l)
				}
			}
			if len(links) == 0 {
				continue
			}
			name := fmt.Sprintf("retest n=%d links=%d", n, len(links))
			s := Retest(links)
			c := checkSchedule(t, name, n, s)
			for i, cnt := range c.count {
				if want := seen[Link{i / n, i % n}]; (cnt == 1) != want || cnt > 1 {
					t.Fatalf("%s: link %d -> %d %d times, wanted %v", name, i/n, i%n, cnt, want)
				}
			}
			d := 0
			for _, p := range c.peers {
				d = max(d, len(p))
			}
			if len(s) < d || len(s) > 2*d-1 {
				t.Fatalf("%s: %d rounds for at most %d pairs a rank", name, len(s), d)
			}
		}
	}
	// A slow rank's links and a few others: as many rounds as its peers.
	links := []Link{{0, 1}, {2, 0}, {0, 3}, {3, 0}, {4, 5}, {1, 2}, {6, 7}}
	s := Retest(links)
	if len(s) != 3 || s.Links() != len(links) {
		t.Errorf("retest %+v", s)
	}
	if len(Retest(nil)) != 0 {
		t.Error("no suspects, yet rounds")
	}
}

// The coordinator's choice, from the options and the ranks as they
// registered.
func TestSchedulePick(t *testing.T) {
	ranks := func(hosts ...string) []report.MeshRank {
		var out []report.MeshRank
		local := map[string]int{}
		for i, h := range hosts {
			rk := report.MeshRank{Rank: i, State: report.RankOK, LocalRank: local[h], Host: &report.Host{Hostname: h}}
			if h == "" {
				rk.State, rk.Host = report.RankUnregistered, nil
			}
			local[h]++
			out = append(out, rk)
		}
		return out
	}
	eight := ranks("a", "a", "b", "b", "c", "c", "d", "d")
	for _, c := range []struct {
		name   string
		cfg    Config
		ranks  []report.MeshRank
		kind   string
		rounds int
		links  int
		sample string
	}{
		{"round-robin", Config{}, eight, KindRoundRobin, 7, 56, "<nil>"},
		{"pairs", Config{Links: []Link{{0, 1}}, Schedule: ScheduleOptions{Rails: true}}, eight, KindPairsFile, 1, 1, "<nil>"},
		{"sample", Config{Schedule: ScheduleOptions{Sample: 3, Seed: 9}}, eight, KindSample, 3, 24, "&{3 9}"},
		{"rails", Config{Schedule: ScheduleOptions{Rails: true}}, eight, KindRailAligned, 3, 24, "<nil>"},
		{"rails sample", Config{Schedule: ScheduleOptions{Rails: true, Sample: 2, Seed: 1}}, eight, KindRailSample, 2, 16, "&{2 1}"},
		// Rank 3 never registered: its host is unknown, and it is left out.
		{"rails unregistered", Config{Schedule: ScheduleOptions{Rails: true}}, ranks("a", "a", "b", "", "c", "c"), KindRailAligned, 3, 8, "<nil>"},
	} {
		s, kind, sample, err := pickSchedule(&c.cfg, c.ranks)
		if err != nil || kind != c.kind || len(s) != c.rounds || s.Links() != c.links || fmt.Sprint(sample) != c.sample {
			t.Errorf("%s: %s, %d rounds, %d links, sample %v, %v", c.name, kind, len(s), s.Links(), sample, err)
		}
	}
	one := ranks("a", "a")
	one[1].LocalRank = 0
	if _, _, _, err := pickSchedule(&Config{Schedule: ScheduleOptions{Rails: true}}, one); err == nil ||
		!strings.Contains(err.Error(), "--rails: ranks 0 and 1 both run on a with local rank 0") {
		t.Errorf("two ranks on one rail: %v", err)
	}
}

// A duplex schedule runs each pair of the schedule once: every unordered
// pair exactly once, half the links, the same rounds, and in a
// round-robin the client end alternating as the rank that sent first did.
func TestScheduleDuplex(t *testing.T) {
	eight := func() Layout {
		l, err := NewLayout([]string{"a", "a", "b", "b", "c", "c", "d", "d"}, []int{0, 1, 0, 1, 0, 1, 0, 1})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, c := range []struct {
		name string
		n    int
		s    Schedule
	}{
		{"round-robin 2", 2, RoundRobin(2)},
		{"round-robin 7", 7, RoundRobin(7)},
		{"round-robin 64", 64, RoundRobin(64)},
		{"sample", 16, Sample(16, 5, 3)},
		{"rails", 8, RailAligned(eight())},
		{"retest", 6, Retest([]Link{{0, 1}, {1, 0}, {2, 3}, {4, 2}})},
	} {
		d := c.s.Duplex()
		pairs := 0
		for _, round := range c.s {
			pairs += len(round)
		}
		if len(d) != len(c.s) || d.Links() != pairs || (c.name != "retest" && 2*d.Links() != c.s.Links()) {
			t.Errorf("%s: %d rounds, %d links; the schedule %d rounds, %d pairs, %d links", c.name, len(d), d.Links(), len(c.s), pairs, c.s.Links())
		}
		seen := map[[2]int]int{}
		for r, round := range d {
			busy := map[int]bool{}
			for i, p := range round {
				if len(p.Links) != 1 || busy[p.A] || busy[p.B] {
					t.Fatalf("%s: round %d pair %+v", c.name, r, p)
				}
				busy[p.A], busy[p.B] = true, true
				l := p.Links[0]
				if l != c.s[r][i].Links[0] || p.Hosts != c.s[r][i].Hosts {
					t.Errorf("%s: round %d pair %d runs %v, the schedule's first link %v", c.name, r, i, l, c.s[r][i].Links[0])
				}
				seen[[2]int{min(l.From, l.To), max(l.From, l.To)}]++
			}
		}
		for k, cnt := range seen {
			if cnt != 1 {
				t.Errorf("%s: pair %v %d times", c.name, k, cnt)
			}
		}
		if strings.HasPrefix(c.name, "round-robin") && len(seen) != c.n*(c.n-1)/2 {
			t.Errorf("%s: %d pairs, want %d", c.name, len(seen), c.n*(c.n-1)/2)
		}
	}
	// In a round-robin the rank that initiates alternates: of rank 0's
	// pairs, as many start at it as at its peer (within one).
	from0 := 0
	for _, round := range RoundRobin(16).Duplex() {
		for _, p := range round {
			if p.Links[0].From == 0 {
				from0++
			}
		}
	}
	if from0 < 7 || from0 > 8 {
		t.Errorf("rank 0 initiates %d of its 15 duplex links", from0)
	}
}

// Host-level ranks must list as many devices: a link pairs them one by
// one. Ranks that never registered do not count.
func TestSameLanes(t *testing.T) {
	rk := func(r int, host string, lanes ...string) report.MeshRank {
		return report.MeshRank{Rank: r, State: report.RankOK, Host: &report.Host{Hostname: host}, Lanes: lanes}
	}
	ok := []report.MeshRank{rk(0, "a", "x", "y"), {Rank: 1, State: report.RankUnregistered}, rk(2, "c", "p", "q")}
	if err := sameLanes(ok); err != nil {
		t.Errorf("same counts: %v", err)
	}
	bad := append(ok, rk(3, "d", "x"))
	if err := sameLanes(bad); err == nil || err.Error() != "--host-level: rank 0 (a) lists 2 devices (x,y), rank 3 (d) 1 (x): a link pairs the two hosts' devices one by one, so every rank needs as many (-d)" {
		t.Errorf("different counts: %v", err)
	}
}

// A duplex mesh's ping-pong is judged once a pair: the first of its two
// cells, the direction the link ran.
func TestOnePerPair(t *testing.T) {
	in := []report.LinkValue{{From: 0, To: 1, Value: 5}, {From: 1, To: 0, Value: 5}, {From: 3, To: 2, Value: 7},
		{From: 2, To: 3, Value: 7}, {From: 0, To: 2, Value: 1}}
	got := onePerPair(in)
	if fmt.Sprint(got) != "[{0 1 0 5} {3 2 0 7} {0 2 0 1}]" || len(in) != 5 || in[1].From != 1 {
		t.Errorf("onePerPair %v (input now %v)", got, in)
	}
}

// A host-level mesh runs one rank per host: a rank its launcher says is
// not the first of its host refuses to start, and rank 0 refuses two
// ranks registered from one host, but for ranks started by hand.
func TestHostLevelOneRankPerHost(t *testing.T) {
	_, err := Run(context.Background(), Config{Launch: Launch{Rank: 1, Size: 4, LocalRank: 1, Launcher: LauncherSlurm},
		HostLevel: true, Devices: []string{"mlx5_0", "mlx5_1"}})
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "slurm says this rank is local rank 1 of its host") {
		t.Errorf("local rank 1: %v", err)
	}
	on := func(rank int, host string) report.MeshRank {
		return report.MeshRank{Rank: rank, State: report.RankOK, Host: &report.Host{Hostname: host}}
	}
	ranks := []report.MeshRank{on(0, "node1"), on(1, "node2"), on(2, "node1")}
	if err := oneRankPerHost(ranks, LauncherOpenMPI); err == nil || !strings.Contains(err.Error(), "ranks 0 and 2 both run on node1") {
		t.Errorf("two ranks on node1: %v", err)
	}
	if err := oneRankPerHost(ranks, LauncherFlags); err != nil {
		t.Errorf("by hand: %v", err)
	}
	if err := oneRankPerHost(ranks[:2], LauncherSlurm); err != nil {
		t.Errorf("a rank per host: %v", err)
	}
}
