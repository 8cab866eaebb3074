package watch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PeersDNSPrefix begins a --peers value that is a DNS name rather than a
// file: dns:NAME[:PORT].
const PeersDNSPrefix = "dns:"

// PeersSRVPrefix begins a --peers value that is the name of SRV records:
// srv:NAME.
const PeersSRVPrefix = "srv:"

// srvLookups bounds the address lookups of SRV targets in flight at once.
const srvLookups = 8

// dnsTimeout bounds one lookup of the peers' name.
const dnsTimeout = 5 * time.Second

// Resolver looks up the addresses of a name, and SRV records;
// *net.Resolver is one (net.DefaultResolver when Config.Resolver is nil).
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
	LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
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

// ParsePeersSRV checks the NAME of --peers srv:NAME: a DNS name (a
// Kubernetes headless Service's _PORTNAME._tcp.SVC[.NS.svc.cluster.local]),
// with no port: each record gives its own.
func ParsePeersSRV(s string) (string, error) {
	switch {
	case s == "":
		return "", errors.New("srv: no name (want srv:NAME, e.g. srv:_tests._tcp.rdmabench-agent)")
	case strings.Contains(s, ":"):
		return "", fmt.Errorf("srv:%s: a port: the SRV records give each peer's (want srv:NAME)", s)
	case !validHostname(strings.TrimSuffix(s, ".")):
		return "", fmt.Errorf("srv:%s: not a DNS name", s)
	}
	return s, nil
}

// lookupError is the *PeersError of a failed lookup: of kind not_found
// when the name has no record of the type asked, resolve otherwise.
func lookupError(err error) *PeersError {
	kind := PeersResolve
	var de *net.DNSError
	if errors.As(err, &de) && de.IsNotFound {
		kind = PeersNotFound
	}
	return &PeersError{Kind: kind, Err: err}
}

// resolveSRVPeers looks name's SRV records up, then each target's
// addresses, and returns every address with its record's port, as
// host:port, sorted, each once. The targets are looked up by their
// absolute names (no search domains), at most srvLookups at once. A
// target with no address (gone between the two lookups, or "." for no
// service) is left out; a name with no SRV record, or none of whose
// targets has an address, is a *PeersError of kind not_found; a lookup
// that failed otherwise, of the name or of a target, one of kind resolve
// (the last good set is kept rather than a part of it taken).
func resolveSRVPeers(ctx context.Context, r Resolver, name string) ([]string, error) {
	_, srvs, err := r.LookupSRV(ctx, "", "", name)
	if err != nil && len(srvs) == 0 {
		return nil, lookupError(err)
	}
	ports := map[string][]int{} // target to its records' ports
	var targets []string
	for _, s := range srvs {
		if s.Target == "." || s.Target == "" || s.Port == 0 {
			continue
		}
		t := dnsRooted(s.Target)
		if ports[t] == nil {
			targets = append(targets, t)
		}
		ports[t] = append(ports[t], int(s.Port))
	}
	addrs := make([][]net.IPAddr, len(targets))
	errs := make([]error, len(targets))
	sem := make(chan struct{}, srvLookups)
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			addrs[i], errs[i] = r.LookupIPAddr(ctx, t)
		})
	}
	wg.Wait()
	var out []string
	for i, t := range targets {
		if errs[i] != nil {
			if pe := lookupError(errs[i]); pe.Kind == PeersResolve {
				return nil, pe
			}
			continue
		}
		for _, ip := range addrs[i] {
			if ip.IP == nil {
				continue
			}
			for _, port := range ports[t] {
				out = append(out, net.JoinHostPort(ip.IP.String(), strconv.Itoa(port)))
			}
		}
	}
	if len(out) == 0 {
		return nil, &PeersError{Kind: PeersNotFound, Err: fmt.Errorf("lookup %s: no SRV target with an address", name)}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// dnsRooted is name with the final dot that makes it absolute.
func dnsRooted(name string) string {
	if strings.HasSuffix(name, ".") {
		return name
	}
	return name + "."
}

// resolvePeers looks name up and returns its addresses with port, as
// host:port, sorted (a DNS server may give them in any order), each once.
// A name with no address is a *PeersError of kind not_found, a lookup
// that failed otherwise one of kind resolve.
func resolvePeers(ctx context.Context, r Resolver, name string, port int) ([]string, error) {
	ips, err := r.LookupIPAddr(ctx, name)
	if err != nil {
		return nil, lookupError(err)
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

// source names the peers' source for the log: the file, dns:NAME,
// srv:NAME or mesh:HOST.
func (a *Agent) source() string { return a.cfg.peers().String() }
