package mesh

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/blame"
)

// scheduleInput is a synthetic mesh's figures: every link of s around
// base, with log-normal noise of 3%, times slow(link) for a latency,
// divided by it for a bandwidth.
func scheduleInput(s Schedule, n int, base float64, latency bool, seed uint64, slow func(Link) float64) blame.Input {
	rng := rand.New(rand.NewPCG(seed, 99))
	in := blame.Input{Figure: "p50", HigherIsWorse: latency}
	if !latency {
		in.Figure = "write-bw Gbit/s"
	}
	for r := range n {
		in.Names = append(in.Names, blame.RankName{Host: fmt.Sprintf("node%d", r/4), Device: fmt.Sprintf("mlx5_%d", r%4)})
	}
	for r, round := range s {
		for _, p := range round {
			for _, l := range p.Links {
				v := base * math.Exp(0.03*rng.NormFloat64())
				if latency {
					v *= slow(l)
				} else {
					v /= slow(l)
				}
				in.Links = append(in.Links, blame.LinkFigure{From: l.From, To: l.To, Round: r + 1, Value: v})
			}
		}
	}
	return in
}

func verdicts(b blame.Verdicts) string {
	return fmt.Sprintf("ranks %+v links %+v rounds %+v", b.Ranks, b.Links, b.Rounds)
}

// Blame over the mesh's own schedules: a slow host of a rail-aligned mesh
// is its ranks, not its rounds, and a sample's slow rank is blamed with
// the few peers it met.
func TestBlameSchedules(t *testing.T) {
	// 4 hosts x 8 rails, rail-aligned, one host slow on every NIC: its 8
	// ranks are blamed; the rounds it is in are not slow as a whole, though
	// half of their links are its.
	var hosts []string
	var rails []int
	for h := range 4 {
		for r := range 8 {
			hosts, rails = append(hosts, fmt.Sprintf("node%d", h)), append(rails, r)
		}
	}
	l, err := NewLayout(hosts, rails)
	if err != nil {
		t.Fatal(err)
	}
	b := blame.Judge(scheduleInput(RailAligned(l), 32, 90, false, 6, func(k Link) float64 {
		if l.Host[k.From] == 2 || l.Host[k.To] == 2 {
			return 2.5
		}
		return 1
	}), blame.Options{})
	if len(b.Ranks) != 8 || len(b.Links) != 0 || len(b.Rounds) != 0 {
		t.Errorf("a slow host: %s", verdicts(b))
	}
	for _, v := range b.Ranks {
		if l.Host[v.Rank] != 2 || v.BadPeers != 3 || v.Peers != 3 {
			t.Errorf("a slow host: %+v", v)
		}
	}

	// A sample of K=6 rounds of 64 ranks: the slow rank meets 6 peers,
	// all bad.
	b = blame.Judge(scheduleInput(Sample(64, 6, 1), 64, 5000, true, 7, func(k Link) float64 {
		if k.From == 40 || k.To == 40 {
			return 2.5
		}
		return 1
	}), blame.Options{})
	if len(b.Ranks) != 1 || b.Ranks[0].Rank != 40 || b.Ranks[0].Peers != 6 || len(b.Links) != 0 {
		t.Errorf("a sample: %s", verdicts(b))
	}
}

// A slow rank's and a slow link's suspects are retested in rounds of
// their own: one per retested link of the rank, the link in one of them.
func TestBlameRetestSchedule(t *testing.T) {
	n := 16
	b := blame.Judge(scheduleInput(RoundRobin(n), n, 5000, true, 3, func(k Link) float64 {
		v := 1.0
		if k.From == 5 || k.To == 5 {
			v *= 2.5
		}
		if k == (Link{3, 9}) {
			v *= 3
		}
		return v
	}), blame.Options{})
	if len(b.Ranks) != 1 || len(b.Links) != 1 || b.Bad() != 2 {
		t.Fatalf("%s", verdicts(b))
	}
	var sus []Link
	for _, l := range b.Suspects() {
		sus = append(sus, Link(l))
	}
	s := Retest(sus)
	if len(sus) != 1+blame.DefaultRetestPerRank || s.Links() != len(sus) || len(s) != blame.DefaultRetestPerRank {
		t.Errorf("suspects %v, retest schedule %+v", sus, s)
	}
}
