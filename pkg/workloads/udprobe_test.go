package workloads

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// TestUDProbeLearnAndPing runs two hosts' UD probes on one device: each
// learns the other's endpoint through its server (the spec a client
// sends, as an agent does), pings it, and is answered; a server without a
// UD probe refuses by name; a peer that went away is a timeout at the
// deadline, not a hang; every object is freed.
func TestUDProbeLearnAndPing(t *testing.T) {
	dev := testutil.Device(t)
	testutil.NoLeaks(t)
	spec := UDProbeSpec()
	spec.Device = dev
	spec.Sizes = []int{64}
	a, err := OpenUDProbe(spec, 2)
	if err != nil {
		t.Fatalf("open a: %v", err)
	}
	defer func() {
		if err := a.Close(); err != nil {
			t.Errorf("close a: %v", err)
		}
	}()
	b, err := OpenUDProbe(spec, 2)
	if err != nil {
		t.Fatalf("open b: %v", err)
	}
	defer b.Close() // closed below; again is nothing
	ctx := context.Background()
	ep, err := LearnUDProbe(ctx, Target{Remote: pipeRemote{srv: &Server{UDProbe: b}}, Host: "b"})
	if err != nil {
		t.Fatalf("learn b's endpoint: %v", err)
	}
	if ep != b.Endpoint() {
		t.Fatalf("learnt %+v, want b's %+v", ep, b.Endpoint())
	}
	if _, err := LearnUDProbe(ctx, Target{Remote: pipeRemote{srv: &Server{}}, Host: "c"}); !errors.Is(err, ErrNoUDProbe) {
		t.Fatalf("a server without a UD probe: %v, want ErrNoUDProbe", err)
	}
	peer, err := a.Peer(ep)
	if err != nil {
		t.Fatalf("peer: %v", err)
	}
	defer peer.Close()
	samples := make([]uint64, 50)
	for range 3 {
		if err := a.Ping(ctx, peer, samples, nil, time.Now().Add(10*time.Second)); err != nil {
			t.Fatalf("ping: %v", err)
		}
	}
	for i, s := range samples {
		if s == 0 {
			t.Fatalf("sample %d is 0", i)
		}
	}
	if c := b.Counters(); c.Served != 150 || c.Bad != 0 {
		t.Fatalf("b counted %+v, want 150 served, none bad", c)
	}
	// b goes away: a's probe of it times out at its deadline.
	if err := b.Close(); err != nil {
		t.Fatalf("close b: %v", err)
	}
	start := time.Now()
	err = a.Ping(ctx, peer, samples[:2], nil, start.Add(300*time.Millisecond))
	if !errors.Is(err, verbs.ErrTimeout) {
		t.Fatalf("a probe of a closed peer: %v, want verbs.ErrTimeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("a probe with a 300ms deadline took %v", d)
	}
}
