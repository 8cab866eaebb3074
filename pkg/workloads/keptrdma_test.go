package workloads

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
)

// TestKeptWriteLat runs a kept write-lat session on one device, both ends
// in this process (the server's through the path `rdmabench serve`
// takes): set up once, then bursts of the write ping-pong on the same
// QPs, every sample a round trip; the session ends when the client closes
// it, and every verbs object of both ends is freed. A kept write-lat over
// UC, or with a data check, is refused by name.
func TestKeptWriteLat(t *testing.T) {
	dev := testutil.Device(t)
	testutil.NoLeaks(t)
	srv := &Server{Device: dev}
	target := Target{Remote: pipeRemote{srv: srv}, Host: "127.0.0.1"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	spec := Spec{Test: "write-lat", Connection: "RC", Sizes: []int{64}, Iterations: 10}
	spec.Device = dev
	k, err := OpenKept(ctx, target, spec)
	if err != nil {
		t.Fatalf("open a kept write-lat session: %v", err)
	}
	samples := make([]uint64, 10)
	for b := range 5 {
		clear(samples)
		if err := k.Burst(time.Now().Add(20*time.Second), samples); err != nil {
			t.Fatalf("burst %d: %v", b, err)
		}
		for i, s := range samples {
			if s == 0 {
				t.Fatalf("burst %d: sample %d is 0 ns", b, i)
			}
		}
	}
	if err := k.Close(ctx); err != nil {
		t.Fatalf("close: %v (the server's end)", err)
	}

	for _, tc := range []struct {
		edit func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Connection = "UC" }, "a kept write-lat session runs over RC, not UC"},
		{func(s *Spec) { s.CheckData = true }, "no data check"},
	} {
		s := spec
		tc.edit(&s)
		if _, err := OpenKept(ctx, target, s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", s, err, tc.want)
		}
	}
}
