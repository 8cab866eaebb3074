package watch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/control"
)

// PeerSource is where an agent's peers come from, as --peers says it: a
// file (File), the addresses of a DNS name (DNS, NAME[:PORT]), the SRV
// records of a name (SRV, NAME) or the registrations of a registry (Mesh,
// HOST[:PORT]); one of them. Config.SetPeers makes it a Config's.
type PeerSource struct {
	File, DNS, SRV, Mesh string
}

// ParsePeerSource parses the peers' source of --peers: FILE,
// dns:NAME[:PORT], srv:NAME or mesh:HOST[:PORT]. A mistake is an error
// naming it (a name or host missing, or not one, a bad port), as New
// would.
func ParsePeerSource(s string) (PeerSource, error) {
	// The names are checked with the default port, the ports given with
	// them as they would be with any.
	if s == "" {
		return PeerSource{}, errors.New("--peers FILE, dns:NAME[:PORT], srv:NAME or mesh:HOST[:PORT] is required")
	}
	if name, ok := strings.CutPrefix(s, PeersSRVPrefix); ok {
		if _, err := ParsePeersSRV(name); err != nil {
			return PeerSource{}, fmt.Errorf("--peers %w", err)
		}
		return PeerSource{SRV: name}, nil
	}
	if name, ok := strings.CutPrefix(s, PeersDNSPrefix); ok {
		if _, _, err := ParsePeersDNS(name, control.DefaultPort); err != nil {
			return PeerSource{}, fmt.Errorf("--peers %w", err)
		}
		return PeerSource{DNS: name}, nil
	}
	if host, ok := strings.CutPrefix(s, PeersMeshPrefix); ok {
		if _, err := ParsePeersMesh(host, control.DefaultPort); err != nil {
			return PeerSource{}, fmt.Errorf("--peers %w", err)
		}
		return PeerSource{Mesh: host}, nil
	}
	return PeerSource{File: s}, nil
}

// String is the source as --peers says it: the file, dns:NAME, srv:NAME
// or mesh:HOST.
func (p PeerSource) String() string {
	switch {
	case p.Mesh != "":
		return PeersMeshPrefix + p.Mesh
	case p.SRV != "":
		return PeersSRVPrefix + p.SRV
	case p.DNS != "":
		return PeersDNSPrefix + p.DNS
	}
	return p.File
}

// SetPeers makes p the source of c's peers: PeersFile, PeersDNS,
// PeersSRV and PeersMesh are p's.
func (c *Config) SetPeers(p PeerSource) {
	c.PeersFile, c.PeersDNS, c.PeersSRV, c.PeersMesh = p.File, p.DNS, p.SRV, p.Mesh
}

// peers is c's source of peers.
func (c *Config) peers() PeerSource {
	return PeerSource{File: c.PeersFile, DNS: c.PeersDNS, SRV: c.PeersSRV, Mesh: c.PeersMesh}
}
