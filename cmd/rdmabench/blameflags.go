package main

import (
	"fmt"
	"math"

	"github.com/spf13/pflag"

	"github.com/rdmabench/rdmabench/pkg/blame"
)

// blameFlags are blame's thresholds, as mesh and agent take them.
type blameFlags struct {
	multiplier           float64
	minSpread, maxSpread percentFlag
}

// blameFlagNames are the flags blameFlags declares.
var blameFlagNames = []string{"blame-multiplier", "blame-min-spread", "blame-max-spread"}

// add declares the flags; what says what a link or peer is judged by there
// ("a link", "a peer").
func (b *blameFlags) add(fs *pflag.FlagSet, what string) {
	fs.Float64Var(&b.multiplier, "blame-multiplier", blame.DefaultMultiplier, "with blame, "+what+" is bad when its figure is worse than the fleet median by more than this many spreads (the fleet's own robust spread, at least 2%: with 5, at least 1.10 times); lower it where the figures are noisy")
	fs.Var(&b.minSpread, "blame-min-spread", "with blame, the least spread the fleet is judged by, as a share of a figure (default 2%): raise it where figures differ by more than a fabric's noise, as on emulated hosts")
	fs.Var(&b.maxSpread, "blame-max-spread", "with blame, the most spread the fleet is judged by (default: none): a fleet noisier than that does not excuse "+what+" past the multiplier times it; as much as --blame-min-spread fixes the limit (100% both and the multiplier 4: bad past 16 times the fleet median)")
}

// options are the thresholds, checked; cmd names the command in errors.
func (b *blameFlags) options(cmd string) (blame.Options, error) {
	if !(b.multiplier > 0) || math.IsInf(b.multiplier, 0) {
		return blame.Options{}, fmt.Errorf("%s: --blame-multiplier %v: want a number above 0", cmd, b.multiplier)
	}
	if b.minSpread.set && b.minSpread.v <= 0 {
		return blame.Options{}, fmt.Errorf("%s: --blame-min-spread %s: want a share above 0%%", cmd, b.minSpread.String())
	}
	if b.maxSpread.set {
		least := percentFlag{v: blame.DefaultMinSpread, set: true}
		if b.minSpread.set {
			least = b.minSpread
		}
		if b.maxSpread.v < least.v {
			return blame.Options{}, fmt.Errorf("%s: --blame-max-spread %s: want at least the least spread, %s", cmd, b.maxSpread.String(), least.String())
		}
	}
	return blame.Options{Multiplier: b.multiplier, MinSpread: b.minSpread.v, MaxSpread: b.maxSpread.v}, nil
}
