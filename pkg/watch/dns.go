package watch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"
)

// PeersDNSPrefix begins a --peers value that is a DNS name rather than a
// file: dns:NAME[:PORT].
const PeersDNSPrefix = "dns:"

// dnsTimeout bounds one lookup of the peers' name.
const dnsTimeout = 5 * time.Second

// Resolver looks up the addresses of a name; *net.Resolver is one
// (net.DefaultResolver when Config.Resolver is nil).
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// ParsePeersDNS parses the NAME[:PORT] of --peers dns:NAME[:PORT]: a host
// name, and the port its addresses serve tests on (defaultPort when
// none).
func ParsePeersDNS(s string, defaultPort int) (name string, port int, err error) {
	if s == "" {
		return "", 0, errors.New("dns: no name (want dns:NAME or dns:NAME:PORT)")
	}
	addr, err := parsePeer(s, defaultPort)
	if err != nil {
		return "", 0, fmt.Errorf("dns:%s: %w", s, err)
	}
	h, p, _ := net.SplitHostPort(addr)
	port, _ = strconv.Atoi(p)
	return h, port, nil
}

// resolvePeers looks name up and returns its addresses with port, as
// host:port, sorted (a DNS server may give them in any order), each once.
// A name with no address is a *PeersError of kind not_found, a lookup
// that failed otherwise one of kind resolve.
func resolvePeers(ctx context.Context, r Resolver, name string, port int) ([]string, error) {
	ips, err := r.LookupIPAddr(ctx, name)
	if err != nil {
		kind := PeersResolve
		var de *net.DNSError
		if errors.As(err, &de) && de.IsNotFound {
			kind = PeersNotFound
		}
		return nil, &PeersError{Kind: kind, Err: err}
	}
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		if ip.IP == nil {
			continue
		}
		out = append(out, net.JoinHostPort(ip.IP.String(), strconv.Itoa(port)))
	}
	if len(out) == 0 {
		return nil, &PeersError{Kind: PeersNotFound, Err: fmt.Errorf("lookup %s: no address", name)}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// isLookupKind reports whether kind is that of a failed lookup or read,
// told once while it lasts rather than at every reload.
func isLookupKind(kind string) bool {
	return kind == PeersRead || kind == PeersNotFound || kind == PeersResolve
}

// peersSource names the peers' source for the log: the file, or dns:NAME.
func (a *Agent) peersSource() string {
	if a.cfg.PeersDNS != "" {
		return PeersDNSPrefix + a.cfg.PeersDNS
	}
	return a.cfg.PeersFile
}
