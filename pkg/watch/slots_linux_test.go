package watch

import (
	"context"
	"testing"
	"time"
)

// TestTimerfdWaitAllocs: waiting for a slot allocates nothing (a timerfd
// clock, as every agent on Linux has).
func TestTimerfdWaitAllocs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := newTimerfdClock(ctx, time.Millisecond)
	if err != nil {
		t.Skipf("timerfd: %v", err)
	}
	defer c.stop()
	var clock slotClock = c
	if n := testing.AllocsPerRun(50, func() {
		if _, err := clock.wait(ctx); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a wait for a slot allocated %.1f times, want 0", n)
	}
}
