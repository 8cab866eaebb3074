//go:build linux && cgo

package workloads

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmabench/rdmabench/pkg/settings"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// UDProbe is this host's UD probe: the device, a PD, the responder QP
// (answering on a thread of its own from OpenUDProbe to Close) and a pool
// of prober QPs, one probe in flight on each.
type UDProbe struct {
	dev     *verbs.Context
	pd      *verbs.PD
	resp    *verbs.UDProbe
	probers chan *verbs.UDProbe
	cfg     verbs.UDProbeConfig // the probers'
	mu      sync.Mutex          // all
	all     []*verbs.UDProbe    // the probers
	served  chan error
	path    settings.PathValues // the address handles' traffic class, hop limit and SL
	nicTS   bool
	stamps  verbs.Stamps // the probers'
	// late and bad add up the probers' counters, read after each probe.
	late, bad atomic.Uint64
	// failed is why the responder stopped before Close (Err).
	failed atomic.Pointer[error]
}

// UDPeer is a peer of the UD probe: its responder's endpoint and an
// address handle toward it.
type UDPeer struct {
	ep   verbs.Endpoint
	addr *verbs.UDAddress
}

// Endpoint is the peer's responder.
func (p *UDPeer) Endpoint() verbs.Endpoint { return p.ep }

// OpenUDProbe opens the UD probe on spec's device and port (the agent's
// probe: send-lat over UD, its GID index, path and message size) with
// probers QPs to probe from, and starts answering.
func OpenUDProbe(spec Spec, probers int) (*UDProbe, error) {
	if len(spec.Sizes) != 1 {
		return nil, errors.New("a UD probe is one message size")
	}
	dev, err := verbs.Open(spec.Device)
	if err != nil {
		return nil, err
	}
	u := &UDProbe{dev: dev, probers: make(chan *verbs.UDProbe, max(probers, 1))}
	fail := func(err error) (*UDProbe, error) {
		u.closeQPs()
		return nil, err
	}
	port, err := dev.QueryPort(max(spec.Port, 1))
	if err != nil {
		return fail(err)
	}
	if port.State != verbs.PortActive {
		return fail(fmt.Errorf("port %d of %s is %s, not ACTIVE (check the link and `rdma link`)", max(spec.Port, 1), dev.Name(), port.State))
	}
	if u.nicTS, _, err = dev.CompletionTimestamps(); err != nil {
		u.nicTS = false
	}
	if u.pd, err = dev.AllocPD(); err != nil {
		return fail(err)
	}
	gidIndex := -1
	if spec.GIDIndex != nil {
		gidIndex = *spec.GIDIndex
	}
	cfg := verbs.UDProbeConfig{Port: spec.Port, GIDIndex: gidIndex}
	if u.resp, err = u.pd.OpenUDProbe(cfg); err != nil {
		return fail(err)
	}
	cfg.Size = spec.Sizes[0]
	u.cfg = cfg
	for range cap(u.probers) {
		q, err := u.pd.OpenUDProbe(cfg)
		if err != nil {
			return fail(err)
		}
		u.all = append(u.all, q)
		u.probers <- q
	}
	u.stamps = u.all[0].Stamps()
	u.path = spec.Path.Values()
	u.served = make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := u.resp.Serve()
		if err != nil {
			u.failed.Store(&err)
		}
		u.served <- err
	}()
	return u, nil
}

// Err is why the responder stopped answering before Close (a device
// error), nil while it answers.
func (u *UDProbe) Err() error {
	if p := u.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Endpoint is this host's responder, which peers probe.
func (u *UDProbe) Endpoint() verbs.Endpoint { return u.resp.Endpoint() }

// Device is the probe's device.
func (u *UDProbe) Device() string { return u.dev.Name() }

// NICTimestamps tells whether the device stamps completions with its own
// clock (ibv_query_device_ex).
func (u *UDProbe) NICTimestamps() bool { return u.nicTS }

// Stamps tells which clock stamps the probe's completions
// (verbs.StampsNone where the device has none, or its QPs could not be
// made to): with one, Ping measures the network's time beside the host's
// round trip, and the responder answers stamped probers with its delay.
func (u *UDProbe) Stamps() verbs.Stamps { return u.stamps }

// Peer makes the address handle toward a peer's responder.
func (u *UDProbe) Peer(ep verbs.Endpoint) (*UDPeer, error) {
	a, err := u.resp.Address(ep, u.path.TClass, u.path.HopLimit, u.path.SL) // any QP of the PD's serves
	if err != nil {
		return nil, err
	}
	return &UDPeer{ep: ep, addr: a}, nil
}

// Close frees the peer's address handle.
func (p *UDPeer) Close() error {
	if p == nil {
		return nil
	}
	return p.addr.Close()
}

// Ping runs len(samples) ping-pongs with p on a free prober, waiting for
// one until ctx ends; each sample is half a round trip in ns (rtt_half).
// With net (as long as samples; nil: none) and Stamps, net[i] is half the
// network's round trip, from the NICs' stamps (verbs.UDProbe.Ping), 0
// where a stamp or p's delay is missing. An error (verbs.ErrTimeout:
// deadline passed with an answer missing) leaves samples partly written.
func (u *UDProbe) Ping(ctx context.Context, p *UDPeer, samples, net []uint64, deadline time.Time) error {
	var q *verbs.UDProbe
	select {
	case q = <-u.probers:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	before := q.Counters()
	_, err := q.Ping(p.addr, p.ep, samples, net, verbs.DefaultUDProbeSpin, deadline)
	after := q.Counters()
	u.late.Add(after.Late - before.Late)
	u.bad.Add(after.Bad - before.Bad)
	if err != nil && !errors.Is(err, verbs.ErrTimeout) {
		q = u.renew(q) // a failed work request may have left its QP in error
	}
	u.probers <- q
	if err != nil {
		return fmt.Errorf("ud probe of qpn 0x%x at %s: %w", p.ep.QPN, p.ep.GID, err)
	}
	for i := range samples {
		samples[i] /= 2
	}
	for i := range net {
		net[i] /= 2
	}
	return nil
}

// renew replaces prober q by a new one, or keeps it when none can be
// opened.
func (u *UDProbe) renew(q *verbs.UDProbe) *verbs.UDProbe {
	nq, err := u.pd.OpenUDProbe(u.cfg)
	if err != nil {
		return q
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for i := range u.all {
		if u.all[i] == q {
			u.all[i] = nq
		}
	}
	_ = q.Close()
	return nq
}

// Counters are the probe's counters: the probes its responder answered,
// the messages that were no probe of ours, the answers that came after
// their probe was given up.
func (u *UDProbe) Counters() UDProbeCounters {
	c := u.resp.Counters()
	return UDProbeCounters{Served: c.Served, Bad: c.Bad + u.bad.Load(), Late: u.late.Load()}
}

// Close stops answering and frees every verbs object. No Ping may be in
// flight.
func (u *UDProbe) Close() error {
	var err error
	if u.served != nil {
		u.resp.Stop()
		err = <-u.served
		u.served = nil
	}
	u.closeQPs()
	return err
}

func (u *UDProbe) closeQPs() {
	u.mu.Lock()
	for _, q := range u.all {
		_ = q.Close()
	}
	u.all = nil
	u.mu.Unlock()
	_ = u.resp.Close()
	u.resp = nil
	if u.pd != nil {
		_ = u.pd.Close()
		u.pd = nil
	}
	if u.dev != nil {
		_ = u.dev.Close()
		u.dev = nil
	}
}
