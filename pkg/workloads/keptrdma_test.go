package workloads

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
)

// TestKeptRDMA runs a kept session of each RDMA latency test on one
// device, both ends in this process (the server's through the path
// `rdmabench serve` takes): set up once, then bursts of the test's loop
// on the same QPs, every sample a round trip; the session ends when the
// client closes it, and every verbs object of both ends is freed.
// read-lat's and atomic-lat's bursts are not announced: the server's end
// runs no loop.
func TestKeptRDMA(t *testing.T) {
	dev := testutil.Device(t)
	testutil.NoLeaks(t)
	srv := &Server{Device: dev}
	target := Target{Remote: pipeRemote{srv: srv}, Host: "127.0.0.1"}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	for _, tc := range []struct {
		test string
		size int
	}{{"write-lat", 64}, {"send-lat", 64}, {"read-lat", 64}, {"atomic-lat", 8}} {
		spec := Spec{Test: tc.test, Connection: "RC", Sizes: []int{tc.size}, Iterations: 10}
		spec.Device = dev
		k, err := OpenKept(ctx, target, spec)
		if err != nil {
			t.Fatalf("open a kept %s session: %v", tc.test, err)
		}
		samples := make([]uint64, 10)
		for b := range 5 {
			clear(samples)
			if err := k.Burst(time.Now().Add(20*time.Second), samples); err != nil {
				t.Fatalf("%s: burst %d: %v", tc.test, b, err)
			}
			for i, s := range samples {
				if s == 0 {
					t.Fatalf("%s: burst %d: sample %d is 0 ns", tc.test, b, i)
				}
			}
		}
		if err := k.Close(ctx); err != nil {
			t.Fatalf("%s: close: %v (the server's end)", tc.test, err)
		}
	}

}

// TestKeptRefused: a spec that no kept session runs is refused by name
// before anything is set up (no device needed): over UC, with a data
// check, with -e, a bandwidth test. Each latency test names its own
// feature, a bandwidth test none.
func TestKeptRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	target := Target{Remote: pipeRemote{srv: &Server{}}, Host: "127.0.0.1"}
	spec := Spec{Test: "write-lat", Connection: "RC", Sizes: []int{64}, Iterations: 10}
	for _, tc := range []struct {
		edit func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Connection = "UC" }, "a kept write-lat session runs over RC, not UC"},
		{func(s *Spec) { s.Test = "read-lat"; s.CheckData = true }, "no data check"},
		{func(s *Spec) { s.Test = "send-lat"; s.Events = true }, "polled (no -e)"},
		{func(s *Spec) { s.Test = "write-bw" }, "a kept probe session is a latency test"},
	} {
		s := spec
		tc.edit(&s)
		if _, err := OpenKept(ctx, target, s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", s, err, tc.want)
		}
	}
	for test, want := range map[string]string{"tcp-lat": KeptFeature, "write-lat": "kept-write-lat", "read-lat": "kept-read-lat",
		"send-lat": "kept-send-lat", "atomic-lat": "kept-atomic-lat", "write-bw": "", "tcp-bw": ""} {
		if got := KeptFeatureOf(test); got != want {
			t.Errorf("KeptFeatureOf(%s) = %q, want %q", test, got, want)
		}
	}
}
