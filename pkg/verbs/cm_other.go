//go:build !linux || !cgo

package verbs

import "net/netip"

// CMListener listens for rdma_cm connection requests; this build cannot.
type CMListener struct{}

// ListenCM returns an error wrapping ErrNotSupported in this build.
func ListenCM(netip.Addr, PortSpace) (*CMListener, error) { return nil, errNoVerbs }

// Close does nothing in this build.
func (*CMListener) Close() error { return nil }
