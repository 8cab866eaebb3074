package watch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/verbs"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// The UD probe (Config.UD, --probe ud-lat), as R-Pingmesh probes: this
// agent's UD probe (workloads.UDProbe) answers every peer's probes on one
// UD QP and probes its peers from MaxInflight others, through an address
// handle per peer. A peer's responder (its QPN, Q_Key and GID) is learnt
// once, from its server over the control protocol, whose connection is
// then closed; a probe is then a burst of -n SEND ping-pongs, one cgo
// call, its samples added to the peer's histogram. Where both ends' NICs
// stamp completions, each ping-pong's network time (the NICs' stamps less
// the peer's delay) goes to a second histogram. A probe that fails
// (a timeout: an answer lost, or a peer gone or restarted with another
// QPN) forgets the peer's responder, learnt again at its next probe. A
// lost answer is never waited for beyond --probe-timeout.

// ErrNoUDProbe is the error of a peer whose server has no UD probe (an
// older rdmabench, `rdmabench serve`, or an agent with another probe).
var ErrNoUDProbe = errors.New("has no UD probe")

// openUD opens this host's UD probe on the probe's device.
func (a *Agent) openUD() error {
	spec := a.run.Specs()[0]
	u, err := workloads.OpenUDProbe(spec, a.cfg.MaxInflight)
	if err != nil {
		return fmt.Errorf("the UD probe on %s: %w", orFirst(spec.Device), err)
	}
	stamped := u.Stamps() != verbs.StampsNone
	a.mu.Lock()
	a.ud = u
	a.st.udOn = true
	a.st.nicTimestamps = u.NICTimestamps()
	a.st.stamped = stamped
	a.mu.Unlock()
	ts := "has no completion timestamps: each probe records the host's round trip alone"
	switch {
	case stamped:
		ts = fmt.Sprintf("stamps completions with its own clock (%s): each probe records the network's time (both NICs' stamps less the peer's delay) beside the host's round trip, of the peers whose NICs stamp too", u.Stamps())
	case u.NICTimestamps():
		ts = "stamps completions with its own clock, but its CQs could not be made to: each probe records the host's round trip alone"
	}
	ep := u.Endpoint()
	a.logf("ud probe: answering on %s qpn 0x%x (gid %s, q_key 0x%x), probing from %d QPs; %s %s",
		u.Device(), ep.QPN, ep.GID, ep.QKey, a.cfg.MaxInflight, u.Device(), ts)
	return nil
}

func orFirst(dev string) string {
	if dev == "" {
		return "the first device"
	}
	return dev
}

// closeUD frees the peers' address handles and closes the UD probe, once
// every probe and the server have ended.
func (a *Agent) closeUD() {
	a.mu.Lock()
	u := a.ud
	a.readUD()
	a.ud = nil
	for _, p := range a.byAddr {
		_ = p.ud.Close()
		p.ud = nil
	}
	a.mu.Unlock()
	if err := u.Close(); err != nil {
		a.logf("ud probe: %v", err)
	}
}

// readUD copies the UD probe's counters into the state (a.mu held), and
// logs once that its responder stopped, if it did: the peers' probes of
// this host then time out, and name it.
func (a *Agent) readUD() {
	if a.ud == nil {
		return
	}
	a.st.ud = a.ud.Counters()
	if err := a.ud.Err(); err != nil && !a.udStopTold {
		a.udStopTold = true
		a.logf("ud probe: the responder stopped answering: %v", err)
	}
}

// probeUD runs one UD probe of p, learning its responder first when it
// has none, and records it.
func (a *Agent) probeUD(ctx context.Context, p *peer) {
	a.mu.Lock()
	up, addr, samples, net := p.ud, p.stats.addr, p.samples, p.net
	p.ud = nil
	stamped := a.st.stamped
	a.mu.Unlock()
	if samples == nil {
		samples = make([]uint64, max(a.run.Specs()[0].Iterations, 1))
	}
	if stamped && net == nil {
		net = make([]uint64, len(samples))
	}
	deadline := time.Now().Add(a.cfg.ProbeTimeout)
	pctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var err error
	if up == nil {
		up, err = a.learnUD(pctx, addr)
	}
	if err == nil {
		if err = a.ud.Ping(pctx, up, samples, net, deadline); err != nil {
			// Lost, or gone, or restarted with another QPN: learn again.
			_ = up.Close()
			up = nil
		}
	}
	if ctx.Err() != nil { // shutting down: not the peer's fault
		_ = up.Close()
		a.mu.Lock()
		a.probeDone(p)
		a.mu.Unlock()
		return
	}
	a.mu.Lock()
	a.probeDone(p)
	p.net = net
	if err == nil {
		p.stats.addNetNs(net)
	}
	result, was := a.recordBurst(p, samples, err)
	if p.gone {
		// Removed from the set while this probe was in flight: free what
		// it holds, the bandwidth probe's connection too.
		_ = up.Close()
		a.release(p)
	} else {
		p.ud = up
	}
	a.readUD()
	a.mu.Unlock()
	a.logResult("probe", addr, err, result, was)
}

// learnUD asks addr's server for its UD probe's responder and makes the
// address handle toward it, trying again a few times while the server is
// busy.
func (a *Agent) learnUD(ctx context.Context, addr string) (*workloads.UDPeer, error) {
	c, err := a.dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if !c.Has(workloads.UDProbeFeature) {
		return nil, fmt.Errorf("peer %s (rdmabench %s) %w: an older rdmabench, `rdmabench serve`, or an agent with another --probe",
			addr, c.Version(), ErrNoUDProbe)
	}
	for try := 0; ; try++ {
		ep, err := workloads.LearnUDProbe(ctx, c.Target())
		if err == nil {
			return a.ud.Peer(ep)
		}
		if !errors.Is(err, control.ErrBusy) || try >= busyRetries {
			return nil, fmt.Errorf("peer %s's UD probe: %w", addr, err)
		}
		t := time.NewTimer(time.Duration(2+rand.IntN(10*(try+1))) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("peer %s's UD probe: %w", addr, err)
		case <-t.C:
		}
	}
}
