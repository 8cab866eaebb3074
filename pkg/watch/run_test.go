package watch

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// runAgent runs a until the test ends, or until the stop it returns is
// called (at most once in effect), failing t when Run fails or does not
// return within 15 s of it.
func runAgent(t *testing.T, name string, a *Agent) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agent %s: %v", name, err)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("agent %s did not stop", name)
		}
	}
	t.Cleanup(stop)
	return stop
}

// waitFor waits until cond holds, failing t with what() after 30 s.
func waitFor(t *testing.T, cond func() bool, what func() string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what())
		}
	}
}

// waitPeersOf waits until agent a (named name in the failure) probes the
// peers want, in any order.
func waitPeersOf(t *testing.T, name string, a *Agent, want ...string) {
	t.Helper()
	slices.Sort(want)
	waitFor(t, func() bool { return slices.Equal(a.peerAddrs(), want) },
		func() string {
			return name + ": peers " + strings.Join(a.peerAddrs(), ",") + ", want " + strings.Join(want, ",")
		})
}
