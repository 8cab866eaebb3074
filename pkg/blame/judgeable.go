package blame

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// DefaultNoisy is the most spread, as a share of the figure, of a fleet
// judged when Options.FleetCheck is set and MaxSpread is not: past it a
// link is as likely half or twice the median as at it, and no limit
// means anything.
const DefaultNoisy = 1.0

// minFleetRanks is the fewest ranks of a fleet said to be too noisy or
// split to judge.
const minFleetRanks = 3

// splitGap is the least ratio between two clusters of the figures for a
// fleet to be split in two.
const splitGap = 2.0

// cluster is the figures' split in two, when they are.
type cluster struct {
	slow, fast       int     // links in each cluster
	slowMed, fastMed float64 // their median figures
	slowAt           float64 // x at and past which a link is in the slow cluster
}

// clusters finds two clusters of the figures of ls: a gap between
// consecutive figures (in the order of worse) of at least splitGap and
// past a bad link's distance from its baseline, each side with at least 2
// links and a quarter of them. The widest such gap wins.
func (b *Verdicts) clusters(ls []judged) (cluster, bool) {
	n := len(ls)
	xs := make([]float64, n)
	for i, l := range ls {
		xs[i] = l.x
	}
	slices.Sort(xs)
	least := max(2, (n+3)/4)
	bestK, bestGap := -1, max(math.Log(splitGap), b.Options.Multiplier*b.Spread)
	for k := least; k <= n-least; k++ {
		if g := xs[k] - xs[k-1]; g >= bestGap {
			bestK, bestGap = k, g
		}
	}
	if bestK < 0 {
		return cluster{}, false
	}
	return cluster{fast: bestK, slow: n - bestK, fastMed: b.value(median(xs[:bestK])), slowMed: b.value(median(xs[bestK:])),
		slowAt: xs[bestK]}, true
}

// unjudgeable says why the fleet cannot be judged, or "": too noisy (its
// spread past Noisy, when MaxSpread does not bound it), split in two
// clusters that no rank, switch or slow round explains, or any verdict on
// a fleet whose caller knows the figures measure something else
// (Input.Crowded). A fleet of fewer than minFleetRanks ranks is never
// said to be: of 2, no link can stand out whatever the noise.
func (b *Verdicts) unjudgeable(ls []judged, rawSpread float64, crowded string) string {
	ranks := map[int]bool{}
	for _, l := range ls {
		ranks[l.From], ranks[l.To] = true, true
	}
	if len(ranks) < minFleetRanks {
		return ""
	}
	pct := func(s float64) string { return strconv.FormatFloat(100*math.Expm1(s), 'f', 0, 64) + "%" }
	why := ""
	switch c, split := b.clusters(ls); {
	case b.Options.MaxSpread == 0 && rawSpread > math.Log1p(b.Options.Noisy):
		why = fmt.Sprintf("too noisy: the spread of its links is %s, past %s (--blame-max-spread judges it anyway)",
			pct(rawSpread), pct(math.Log1p(b.Options.Noisy)))
	case split && !b.explains(ls, c):
		why = fmt.Sprintf("split in two: %d links at about %s and %d at about %s (%s×), that no rank, switch or round explains",
			c.fast, b.format(c.fastMed), c.slow, b.format(c.slowMed), ratio(math.Max(c.slowMed/c.fastMed, c.fastMed/c.slowMed)))
	case crowded != "" && len(b.Ranks)+len(b.Links)+len(b.Switches) > 0:
		why = "its verdicts would blame figures that measure the hosts' CPUs"
	}
	if why == "" {
		return ""
	}
	if crowded != "" {
		why += "; likely cause: " + crowded
	}
	return why
}

// explains says whether the verdicts explain the slow cluster c: most of
// its links have an end at fault, cross a switch at fault, or ran in a
// round slow as a whole.
func (b *Verdicts) explains(ls []judged, c cluster) bool {
	ranks := map[int]bool{}
	for _, v := range b.Ranks {
		ranks[v.Rank] = true
	}
	rounds := map[int]bool{}
	for _, v := range b.Rounds {
		rounds[v.Round] = true
	}
	links := map[Link]bool{}
	for _, v := range b.Switches {
		for _, l := range v.Links {
			links[l] = true
		}
	}
	slow, unexplained := 0, 0
	for _, l := range ls {
		if l.x < c.slowAt {
			continue
		}
		slow++
		if !ranks[l.From] && !ranks[l.To] && !rounds[l.Round] && !links[Link{l.From, l.To}] {
			unexplained++
		}
	}
	return 2*unexplained <= slow
}

// fmtValue formats a figure in messages that do not know its unit.
func fmtValue(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
