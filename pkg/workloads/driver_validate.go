package workloads

// The validation pass of a size (--validate), as the driver runs it: the
// phases the two ends exchange, around the runner's dataCheck.

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// checkStart is the client's first message of the pass: the seed.
type checkStart struct {
	Seed uint64 `json:"seed"`
}

// validate runs size i's validation pass (see the top of driver_check.go) and
// returns its outcome, both ends' checks merged. A difference found is a
// *ValidationError; a failure of the pass itself (an operation that
// failed, a peer that stopped answering) is returned as such.
func (d *driver) validate(ctx context.Context, i, size int, chk dataCheck, peerSent uint64) (*report.Validation, error) {
	mine := report.Validation{Rounds: checkRounds}
	var first *report.Mismatch
	keep := func(m *report.Mismatch) {
		if m != nil && first == nil {
			first = m
		}
	}
	n, m := chk.counters(peerSent)
	mine.Counters = n
	keep(m)

	var start, peerStart checkStart
	if d.role == clientEnd {
		start.Seed = rand.Uint64()
	}
	if err := d.link.Exchange(ctx, phase("check", i), start, &peerStart); err != nil {
		return nil, err
	}
	seed := start.Seed
	if d.role == serverEnd {
		seed = peerStart.Seed
	}
	groups := d.spec.checkGroups(size)
	for di, dir := range d.spec.checkDirs() {
		for r := 0; r < checkRounds; r++ {
			for g, qps := range groups {
				k := checkKey{seed: seed, dir: dir, di: di, round: r}
				ph := fmt.Sprintf("check/%d/%d/%d/%d", i, di, r, g)
				chk.fill(k, qps)
				if err := d.link.Exchange(ctx, ph+"/filled", nil, nil); err != nil {
					return nil, err
				}
				if err := chk.move(ctx, k, qps); err != nil {
					return nil, d.told(ctx, ph+"/moved", fmt.Errorf("validation pass: %w", err))
				}
				if err := d.link.Exchange(ctx, ph+"/moved", nil, nil); err != nil {
					return nil, err
				}
				tally, m, err := chk.check(ctx, k, qps)
				if err != nil {
					return nil, d.told(ctx, fmt.Sprintf("check/%d/next", i), fmt.Errorf("validation pass: %w", err))
				}
				mine.Messages += tally.messages
				mine.Bytes += tally.bytes
				keep(m)
			}
		}
	}
	chk.reset()
	mine.Mismatch = first
	mine.OK = first == nil
	var peer report.Validation
	if err := d.link.Exchange(ctx, phase("checked", i), mine, &peer); err != nil {
		return nil, err
	}
	v := mine
	v.Messages += peer.Messages
	v.Bytes += peer.Bytes
	v.Counters += peer.Counters
	if d.spec.earlier(peer.Mismatch, v.Mismatch) {
		v.Mismatch = peer.Mismatch
	}
	v.OK = v.Mismatch == nil
	if v.Mismatch != nil {
		return &v, &ValidationError{*v.Mismatch}
	}
	return &v, nil
}
