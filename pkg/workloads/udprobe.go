package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// The UD probe (rdmabench agent --probe ud-lat), as R-Pingmesh probes: each
// agent opens one UD QP that answers every peer's probes, and a few UD QPs
// that probe its peers through address handles, one probe in flight on
// each (OpenUDProbe). No test runs per probe: a prober learns a peer's
// endpoint (QPN, Q_Key, GID) once through the control protocol
// (LearnUDProbe), then each probe is a burst of SEND ping-pongs to it, one
// cgo call. A probe's samples are half its round trips (rtt_half, as
// send-lat's), timed by CLOCK_MONOTONIC on the host; where the device
// stamps completions with its own clock, a probe also measures the
// network's time from both ends' stamps (UDProbe.Stamps).

// UDProbeFeature is the feature a server's hello names when it has a UD
// probe to tell clients of (Server.UDProbe).
const UDProbeFeature = "ud-probe"

// UDProbeTest is the probe's name (rdmabench agent --probe ud-lat): a
// send-lat over UD on the agents' UD probe QPs.
const UDProbeTest = "ud-lat"

// udProbe tells whether s asks for the server's UD probe endpoint.
func (s *Spec) udProbe() bool { return s.Keep && s.Test == "send-lat" && s.Connection == "UD" }

// UDProbeSpec is the spec that asks a server for its UD probe's endpoint:
// a kept send-lat over UD on the probe's device (the server's own).
func UDProbeSpec() Spec {
	return Spec{Test: "send-lat", Connection: "UD", Sizes: []int{verbs.UDProbeMinSize}, Keep: true}
}

// ErrNoUDProbe is the error of a server that has no UD probe (`rdmabench
// serve`, or an agent with another probe).
var ErrNoUDProbe = errors.New("this server has no UD probe (an agent started with --probe ud-lat has one)")

// sendUDProbe is the server end of a UD probe endpoint's request: it sends
// the endpoint and ends.
func (t *ServerTest) sendUDProbe(ctx context.Context, tr Transport) error {
	u := t.srv.UDProbe
	if u == nil {
		return ErrNoUDProbe
	}
	body, err := json.Marshal(u.Endpoint())
	if err != nil {
		return err
	}
	return tr.Send(ctx, body)
}

// LearnUDProbe asks target's server (which names UDProbeFeature in its
// hello: the caller checks) for its UD probe's endpoint.
func LearnUDProbe(ctx context.Context, target Target) (verbs.Endpoint, error) {
	if target.Remote == nil {
		return verbs.Endpoint{}, errors.New("a UD probe's endpoint is learnt from a server")
	}
	spec := UDProbeSpec()
	if err := spec.Normalize(); err != nil {
		return verbs.Endpoint{}, err
	}
	raw, err := json.Marshal(&spec)
	if err != nil {
		return verbs.Endpoint{}, err
	}
	rt, err := target.Remote.Start(ctx, spec.Test, raw)
	if err != nil {
		return verbs.Endpoint{}, err
	}
	body, err := rt.Recv(ctx)
	// The server's error, when it has one, says why nothing came.
	if ferr := rt.Finish(ctx); ferr != nil {
		err = ferr
	}
	if err != nil {
		return verbs.Endpoint{}, err
	}
	var ep verbs.Endpoint
	if err := json.Unmarshal(body, &ep); err != nil {
		return verbs.Endpoint{}, fmt.Errorf("the server's UD probe endpoint: %w", err)
	}
	if ep.QPN == 0 || ep.GID.IsZero() {
		return verbs.Endpoint{}, fmt.Errorf("the server's UD probe endpoint has no QPN or GID: %+v", ep)
	}
	return ep, nil
}

// UDProbeCounters are what this host's UD probe counted since it opened.
type UDProbeCounters struct {
	// Served is the peers' probes its responder answered.
	Served uint64
	// Bad is the messages that were no probe, or no answer, of ours.
	Bad uint64
	// Late is the answers that came after their probe was given up.
	Late uint64
}
