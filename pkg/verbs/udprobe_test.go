//go:build linux && cgo

package verbs_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// TestUDProbe runs a UD probe responder and two probers on one device:
// every ping-pong answered (the answers carry the prober's sequence number
// and cookie back), counted served by the responder with one address
// handle per source, a probe of a QPN where nothing answers given up at
// its deadline as ErrTimeout, and every object freed.
func TestUDProbe(t *testing.T) {
	_, pd := openPD(t)
	resp, err := pd.OpenUDProbe(verbs.UDProbeConfig{GIDIndex: -1})
	if err != nil {
		t.Fatalf("open responder: %v", err)
	}
	serveUD(t, resp)
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
		done, err := prober.Ping(addr, ep, samples, nil, verbs.DefaultUDProbeSpin, time.Now().Add(10*time.Second))
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
		done, err = prober.Ping(addr, nobody, samples[:3], nil, time.Millisecond, start.Add(200*time.Millisecond))
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

// serveUD serves q's probes on a thread of its own until the test ends,
// then stops it (its Serve must return within 5 s, without an error) and
// closes it.
func serveUD(t *testing.T, q *verbs.UDProbe) {
	served := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		served <- q.Serve()
	}()
	t.Cleanup(func() {
		q.Stop()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("serve did not return within 5s of Stop")
		}
		closeOK(t, q)
	})
}

// TestUDProbeStamps runs the exchange of completion stamps between a
// stamped prober and responder, with the host's clock standing in for
// the NICs' (Soft-RoCE stamps none): every ping-pong of a stamped pair
// has its network time (above 0, at most the host's round trip, which
// holds it) and one delay sent for it; a prober that stamps none, or asks
// for no network times, gets no delay; a stamped prober of a responder
// that stamps none has no network times (it does not wait for a delay,
// 50 ms a ping-pong: the test logs how long its ping-pongs took).
// The device's own QPs stamp as it says it does. What the host's clock
// cannot stand for, the NIC's stamps themselves, is verified nowhere
// here.
func TestUDProbeStamps(t *testing.T) {
	ctx, pd := openPD(t)
	stamped := verbs.UDProbeConfig{GIDIndex: -1}
	verbs.HostStamps(&stamped)
	open := func(cfg verbs.UDProbeConfig, serve bool) *verbs.UDProbe {
		q, err := pd.OpenUDProbe(cfg)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		if serve {
			serveUD(t, q)
		} else {
			t.Cleanup(func() { closeOK(t, q) })
		}
		return q
	}
	plain := verbs.UDProbeConfig{GIDIndex: -1}
	nicTS, _, err := ctx.CompletionTimestamps()
	if err != nil {
		t.Fatalf("completion timestamps: %v", err)
	}
	if got := open(plain, false).Stamps(); (got != verbs.StampsNone) != nicTS {
		t.Fatalf("%s's QP stamps %q; the device says it stamps: %v", ctx.Name(), got, nicTS)
	}
	resp, plainResp := open(stamped, true), open(plain, true)
	if resp.Stamps() != verbs.StampsHost {
		t.Fatalf("a host-stamped QP says %q", resp.Stamps())
	}
	const n = 100
	ping := func(q *verbs.UDProbe, to *verbs.UDProbe, withNet bool) (samples, net []uint64) {
		t.Helper()
		addr, err := q.Address(to.Endpoint(), 0, 0, 0)
		if err != nil {
			t.Fatalf("address: %v", err)
		}
		defer closeOK(t, addr)
		samples = make([]uint64, n)
		if withNet {
			net = make([]uint64, n)
		}
		start := time.Now()
		if done, err := q.Ping(addr, to.Endpoint(), samples, net, verbs.DefaultUDProbeSpin, start.Add(20*time.Second)); err != nil || done != n {
			t.Fatalf("ping: %d of %d done: %v", done, n, err)
		}
		return samples, net
	}

	prober := open(stamped, false)
	samples, net := ping(prober, resp, true)
	for i := range n {
		if net[i] == 0 || net[i] > samples[i] {
			t.Fatalf("ping-pong %d: network time %d ns, round trip %d ns; want 0 < network <= round trip (responder %+v, prober %+v)",
				i, net[i], samples[i], resp.Counters(), prober.Counters())
		}
	}
	if c := resp.Counters(); c.Served != n || c.Delays != n || c.Bad != 0 {
		t.Fatalf("the stamped responder counted %+v, want %d served and as many delays, none bad", c, n)
	}
	if c := prober.Counters(); c.Stamped != n || c.Bad != 0 || c.Late != 0 {
		t.Fatalf("the stamped prober counted %+v, want %d stamped, none bad or late", c, n)
	}

	// Network times not asked for, or a prober that stamps none: the
	// responder sends no delay.
	ping(prober, resp, false)
	_, net = ping(open(plain, false), resp, true)
	if c := resp.Counters(); c.Served != 3*n || c.Delays != n || c.Bad != 0 {
		t.Fatalf("the stamped responder counted %+v after probes that asked for no delay, want %d served, %d delays", c, 3*n, n)
	}
	for i, v := range net {
		if v != 0 {
			t.Fatalf("ping-pong %d of a prober that stamps none: network time %d", i, v)
		}
	}

	// A responder that stamps none: no network time, and no wait for one.
	start := time.Now()
	_, net = ping(prober, plainResp, true)
	for i, v := range net {
		if v != 0 {
			t.Fatalf("ping-pong %d to a responder that stamps none: network time %d", i, v)
		}
	}
	if c := plainResp.Counters(); c.Served != n || c.Delays != 0 {
		t.Fatalf("the responder that stamps none counted %+v, want %d served, no delay", c, n)
	}
	t.Logf("%d ping-pongs to a responder that stamps none: %v", n, time.Since(start))
}

// TestStampsNs converts stamps: the NIC's cycles by its clock's rate,
// across the wrap of its mask; ns as they are; a later stamp first is 0.
func TestStampsNs(t *testing.T) {
	for _, c := range []struct {
		s               verbs.Stamps
		mask, khz, a, b uint64
		want            uint64
	}{
		{verbs.StampsNICCycles, 1<<32 - 1, 1_000_000, 0xffff_ff00, 0x100, 0x200}, // 1 GHz, across the wrap
		{verbs.StampsNICCycles, 1<<64 - 1, 156_250, 1000, 1000 + 156_250, 1e6},   // 156.25 MHz: 1 ms
		{verbs.StampsNICCycles, 1<<64 - 1, 0, 1, 2, 0},                           // no rate: none
		{verbs.StampsNICNs, 0, 0, 5000, 7500, 2500},                              // ns
		{verbs.StampsNICNs, 0, 0, 7500, 5000, 0},                                 // out of order
		{verbs.StampsHost, 0, 0, 1e9, 1e9 + 42, 42},
	} {
		if got := verbs.StampsNs(c.s, c.mask, c.khz, c.a, c.b); got != c.want {
			t.Errorf("%s (mask %#x, %d kHz) from %d to %d: %d ns, want %d", c.s, c.mask, c.khz, c.a, c.b, got, c.want)
		}
	}
}
