package watch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/pkg/control"
)

// PeersMeshPrefix begins a --peers value that is a registry rather than
// a file: mesh:HOST[:PORT], an agent started with --registry.
const PeersMeshPrefix = "mesh:"

// Errors of a registry, by kind (rdmabench_agent_peers_errors_total's).
const (
	PeersUnreachable = "unreachable" // the registry could not be reached, or did not answer as one
	PeersRefused     = "refused"     // the registry refused the registration: its token, a full registry, not a registry
)

// registryTimeout bounds one registration: the connection, its
// handshake and the answer.
const registryTimeout = 5 * time.Second

// ParsePeersMesh parses the HOST[:PORT] of --peers mesh:HOST[:PORT]: the
// registry's host and the port it serves tests on (defaultPort when
// none), as host:port.
func ParsePeersMesh(s string, defaultPort int) (string, error) {
	if s == "" {
		return "", errors.New("mesh: no host (want mesh:HOST or mesh:HOST:PORT, an agent started with --registry)")
	}
	addr, err := parsePeer(s, defaultPort)
	if err != nil {
		return "", fmt.Errorf("mesh:%s: %w", s, err)
	}
	return addr, nil
}

// RegistryExpiry is how long the registry this agent keeps forgets a
// registration after its last renewal (0 without one).
func (a *Agent) RegistryExpiry() time.Duration {
	if a.registry == nil {
		return 0
	}
	return a.registry.Expiry()
}

// isRegistryKind reports whether kind is that of a registry that failed,
// told once while it lasts rather than at every reload.
func isRegistryKind(kind string) bool { return kind == PeersUnreachable || kind == PeersRefused }

// registration is what this agent registers: its host name and the
// address it serves tests on (Advertise, else its listener's; an
// unspecified host is the address the registry sees it from).
func (a *Agent) registration() control.AgentRegistration {
	r := control.AgentRegistration{Host: a.cfg.Host, Addr: a.cfg.Advertise}
	if r.Addr == "" && a.cfg.Serve != nil {
		r.Addr = a.cfg.Serve.Addr().String()
	}
	if !validHostname(r.Host) {
		r.Host = ""
	}
	return r
}

// reloadMesh registers with the registry, which renews the registration,
// and applies the registrations it answers with, this agent's own left
// out, when they changed. A registry that cannot be reached is kind
// unreachable, one that refuses kind refused: the last good set is kept.
func (a *Agent) reloadMesh(parent context.Context) {
	ctx, cancel := context.WithTimeout(parent, registryTimeout)
	ans, err := control.Register(ctx, a.meshAddr, control.ClientOptions{Token: a.cfg.Token, Timeout: registryTimeout}, a.registration())
	cancel()
	if err != nil {
		if parent.Err() != nil {
			return // shutting down
		}
		kind := PeersUnreachable
		var se *control.ServerError
		var ve *control.VersionError
		if errors.As(err, &se) || errors.As(err, &ve) {
			kind = PeersRefused
		}
		a.peersError(&PeersError{Kind: kind, Mesh: a.cfg.PeersMesh, Err: err})
		return
	}
	if exp := time.Duration(ans.ExpiryMS) * time.Millisecond; exp > 0 && a.cfg.Reload*2 > exp && !a.expiryTold {
		a.expiryTold = true
		a.logf("peers: %s forgets a registration %v after its last renewal, and this agent renews it every %v (--reload): it may be forgotten between two; want --reload at most half of that",
			a.source(), exp, a.cfg.Reload)
	}
	addrs := make([]string, 0, len(ans.Peers))
	for i, p := range ans.Peers {
		addr, err := parsePeer(p.Addr, a.cfg.DefaultPort)
		if err != nil {
			a.peersError(&PeersError{Kind: PeersParse, Mesh: a.cfg.PeersMesh,
				Err: fmt.Errorf("registration %d of %d: %w", i+1, len(ans.Peers), err)})
			a.mu.Lock()
			a.lastFile = nil
			a.mu.Unlock()
			return
		}
		if addr != ans.Self {
			addrs = append(addrs, addr)
		}
	}
	key := []byte(strings.Join(addrs, "\n"))
	a.mu.Lock()
	same := a.lastFile != nil && string(key) == string(a.lastFile)
	a.mu.Unlock()
	if !same {
		a.apply(addrs, key)
	}
}

// checkMesh checks the mesh: source and the registry of cfg.
func checkMesh(cfg *Config) (string, error) {
	if cfg.RegistryExpiry < 0 {
		return "", fmt.Errorf("--registry-expiry %v: want a duration above 0", cfg.RegistryExpiry)
	}
	if cfg.RegistryExpiry > 0 && !cfg.Registry {
		return "", errors.New("--registry-expiry applies to --registry, which is off")
	}
	if cfg.Registry {
		if cfg.RegistryExpiry == 0 {
			cfg.RegistryExpiry = control.DefaultRegistryExpiry
		}
		if cfg.RegistryExpiry < 2*cfg.Reload {
			return "", fmt.Errorf("--registry-expiry %v: want at least twice --reload (%v), how often agents renew their registrations", cfg.RegistryExpiry, cfg.Reload)
		}
	}
	if cfg.PeersMesh == "" {
		return "", nil
	}
	addr, err := ParsePeersMesh(cfg.PeersMesh, cfg.DefaultPort)
	if err != nil {
		return "", fmt.Errorf("--peers %w", err)
	}
	if cfg.Advertise != "" {
		if _, _, err := net.SplitHostPort(cfg.Advertise); err != nil {
			return "", fmt.Errorf("the address registered %q: want HOST:PORT", cfg.Advertise)
		}
	}
	return addr, nil
}
