package watch

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// The latency probes' pacing. The probe slots come from a slotClock, one
// in each period (1/rate) at a random time within it; --max-inflight
// probers share them, one at a time waiting for
// the next slot (the one holding the lead) and running its probe itself.
// A probe that turns slow (a kept burst whose answer is late, a session to
// set up, a whole test) hands the lead on before it waits, so that the
// next slot finds another prober; a fast one, the common case, keeps it,
// and a slot costs one wake-up of one thread and no hand-over between
// goroutines. Slots that come while every prober is busy are counted
// skipped by the next one taken.

// slotClock gives the probe slots.
type slotClock interface {
	// wait waits for the next slot and returns how many came since the
	// last wait returned: 1, or more when some came while no prober waited
	// (those were dropped). It returns ctx's error once ctx ends.
	wait(ctx context.Context) (int, error)
	stop()
}

// newSlotClock gives a slot in every period (slotSchedule) until ctx
// ends: through a timerfd in Go's poller where the system has one, a
// time.Timer elsewhere.
func newSlotClock(ctx context.Context, period time.Duration) slotClock {
	if c, err := newTimerfdClock(ctx, period); err == nil {
		return c
	}
	return &timerClock{t: time.NewTimer(time.Hour), s: newSlotSchedule(period)}
}

// slotSchedule places the slots: slot k at a random time within its
// period, [k, k+1) periods from the start. Agents started together (a
// fleet's rollout) then do not probe in step: two whose slots coincided
// would find each other serving a probe at every slot of their own.
type slotSchedule struct {
	period time.Duration
	start  time.Time
	k      int64 // the next slot's period
	rnd    *rand.Rand
}

func newSlotSchedule(period time.Duration) *slotSchedule {
	return &slotSchedule{period: period, start: time.Now(), rnd: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

// next returns the next slot's time (from start) for a wait at now (from
// start), and how many slots were dropped before it: those of the periods
// that ended before a prober waited. A slot late within its own period is
// taken late, not dropped.
func (s *slotSchedule) next(now time.Duration) (at time.Duration, dropped int) {
	if passed := int64(now / s.period); passed > s.k {
		dropped = int(passed - s.k)
		s.k = passed
	}
	at = time.Duration(s.k)*s.period + time.Duration(s.rnd.Int64N(int64(s.period)))
	s.k++
	return at, dropped
}

// timerClock is a slotClock on a time.Timer. A slot wakes the runtime's
// timer thread, which makes the waiting prober ready and wakes another
// thread to run it: two wake-ups a slot, where a timerfd's is one.
type timerClock struct {
	t *time.Timer
	s *slotSchedule
}

func (c *timerClock) wait(ctx context.Context) (int, error) {
	now := time.Since(c.s.start)
	at, dropped := c.s.next(now)
	c.t.Reset(at - now)
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-c.t.C:
		return 1 + dropped, nil
	}
}

func (c *timerClock) stop() { c.t.Stop() }

// runProber runs one prober until ctx ends: while it holds the lead, it
// waits for each slot and runs its latency probe (and starts a bandwidth
// probe that was due, with startBW), and otherwise waits for the lead. It
// returns the slot clock's error, nil when ctx ended.
func (a *Agent) runProber(ctx context.Context, pr *prober, slots slotClock, startBW func(*peer)) error {
	for pr.take(ctx) {
		for pr.leads {
			n, err := slots.wait(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("probe slots: %w", err)
			}
			p, bw := a.takeSlot(n - 1)
			startBW(bw)
			if p != nil {
				a.probe(ctx, p, false, pr.handOn)
			}
		}
	}
	return nil
}

// prober is one of the probers' hold of the lead: the channel holds the
// lead while no prober does.
type prober struct {
	lead  chan struct{}
	leads bool
	// handOn is handOnLead, made once: a probe's hook (Kept.OnSlow)
	// allocates nothing.
	handOn func()
}

func newProber(lead chan struct{}) *prober {
	pr := &prober{lead: lead}
	pr.handOn = pr.handOnLead
	return pr
}

// take waits for the lead, false when ctx ends first.
func (pr *prober) take(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-pr.lead:
		pr.leads = true
		return true
	}
}

// handOnLead gives the lead back for another prober to take, when this
// one holds it.
func (pr *prober) handOnLead() {
	if pr.leads {
		pr.leads = false
		pr.lead <- struct{}{}
	}
}
