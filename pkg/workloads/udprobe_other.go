//go:build !linux || !cgo

package workloads

import (
	"context"
	"time"

	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// UDProbe is this host's UD probe; this build cannot open one.
type UDProbe struct{}

// UDPeer is a peer of the UD probe.
type UDPeer struct{}

// OpenUDProbe returns an error wrapping verbs.ErrNotSupported in this build.
func OpenUDProbe(Spec, int) (*UDProbe, error) {
	_, err := verbs.Devices()
	return nil, err
}

// Endpoint is the zero Endpoint in this build.
func (u *UDProbe) Endpoint() verbs.Endpoint { return verbs.Endpoint{} }

// Device is "" in this build.
func (u *UDProbe) Device() string { return "" }

// NICTimestamps is false in this build.
func (u *UDProbe) NICTimestamps() bool { return false }

// Stamps is verbs.StampsNone in this build.
func (u *UDProbe) Stamps() verbs.Stamps { return verbs.StampsNone }

// Peer returns an error wrapping verbs.ErrNotSupported in this build.
func (u *UDProbe) Peer(verbs.Endpoint) (*UDPeer, error) {
	_, err := verbs.Devices()
	return nil, err
}

// Endpoint is the zero Endpoint in this build.
func (p *UDPeer) Endpoint() verbs.Endpoint { return verbs.Endpoint{} }

// Close does nothing in this build.
func (p *UDPeer) Close() error { return nil }

// Ping returns an error wrapping verbs.ErrNotSupported in this build.
func (u *UDProbe) Ping(context.Context, *UDPeer, []uint64, []uint64, time.Time) error {
	_, err := verbs.Devices()
	return err
}

// Err is nil in this build.
func (u *UDProbe) Err() error { return nil }

// Counters are zero in this build.
func (u *UDProbe) Counters() UDProbeCounters { return UDProbeCounters{} }

// Close does nothing in this build.
func (u *UDProbe) Close() error { return nil }
