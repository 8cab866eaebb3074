//go:build linux && cgo

package verbs_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// TestUDProbe runs a UD probe responder and two probers on one device:
// every ping-pong answered (the answers carry the prober's sequence number
// and cookie back), counted served by the responder with one address
// handle per source, a probe of a QPN where nothing answers given up at
// its deadline as ErrTimeout, and every object freed.
func TestUDProbe(t *testing.T) {
	dev := testutil.Device(t)
	testutil.NoLeaks(t)
	ctx, err := verbs.Open(dev)
	if err != nil {
		t.Fatalf("open %s: %v", dev, err)
	}
	t.Cleanup(func() { closeOK(t, ctx) })
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatalf("alloc pd: %v", err)
	}
	t.Cleanup(func() { closeOK(t, pd) })
	resp, err := pd.OpenUDProbe(verbs.UDProbeConfig{GIDIndex: -1})
	if err != nil {
		t.Fatalf("open responder: %v", err)
	}
	served := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		served <- resp.Serve()
	}()
	t.Cleanup(func() {
		resp.Stop()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("serve did not return within 5s of Stop")
		}
		closeOK(t, resp)
	})
	if _, err := pd.OpenUDProbe(verbs.UDProbeConfig{GIDIndex: -1, Size: 8}); err == nil {
		t.Fatal("a UD probe of 8-byte messages was opened; want it refused (at least 32)")
	}
	ep := resp.Endpoint()
	const n = 200
	for i, size := range []int{verbs.UDProbeMinSize, 512} {
		prober, err := pd.OpenUDProbe(verbs.UDProbeConfig{GIDIndex: -1, Size: size})
		if err != nil {
			t.Fatalf("open prober: %v", err)
		}
		addr, err := prober.Address(ep, 0, 0, 0)
		if err != nil {
			t.Fatalf("address: %v", err)
		}
		samples := make([]uint64, n)
		done, err := prober.Ping(addr, ep, samples, verbs.DefaultUDProbeSpin, time.Now().Add(10*time.Second))
		if err != nil || done != n {
			t.Fatalf("ping of %d-byte probes: %d of %d done: %v", size, done, n, err)
		}
		for j, s := range samples {
			if s == 0 {
				t.Fatalf("sample %d is 0 ns", j)
			}
		}
		if c := resp.Counters(); c.Served != uint64(n*(i+1)) || c.Bad != 0 || c.AddressHandles != 1 {
			t.Fatalf("responder counted %+v after %d probes from one GID, want %d served, none bad, 1 address handle", c, n*(i+1), n*(i+1))
		}
		if c := prober.Counters(); c.Bad != 0 || c.Late != 0 {
			t.Fatalf("prober counted %+v, want no bad or late answer", c)
		}
		// Nothing answers at another QPN: given up at the deadline.
		nobody := ep
		nobody.QPN = ep.QPN + 1000
		start := time.Now()
		done, err = prober.Ping(addr, nobody, samples[:3], time.Millisecond, start.Add(200*time.Millisecond))
		if !errors.Is(err, verbs.ErrTimeout) || done != 0 {
			t.Fatalf("a probe of QPN 0x%x where nothing listens: %d done, %v; want 0 and ErrTimeout", nobody.QPN, done, err)
		}
		if waited := time.Since(start); waited > 5*time.Second {
			t.Fatalf("a probe with a 200ms deadline returned after %v", waited)
		}
		closeOK(t, addr)
		closeOK(t, prober)
	}
}
