package watch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Errors of the peers' source, by kind: the kind is the label of
// rdmabench_agent_peers_errors_total.
const (
	PeersRead     = "read"      // the file cannot be read
	PeersParse    = "parse"     // a line is not host[:port]
	PeersTooMany  = "too_many"  // more peers than the cap: the first ones are kept
	PeersNotFound = "not_found" // the DNS name has no address (NXDOMAIN, or no A/AAAA record; no SRV record, or no target with an address)
	PeersResolve  = "resolve"   // the DNS lookup failed (no server answered in time, SERVFAIL, ...)
	// and PeersUnreachable, PeersRefused of a registry (registry.go).
)

// PeersError is a peers source that could not be used (Kind read, parse,
// not_found, resolve, unreachable or refused) or was used in part
// (too_many). File names a peers file, DNS a name (NAME[:PORT] of --peers
// dns:), SRV the name of SRV records (of --peers srv:), Mesh a registry
// (HOST[:PORT] of --peers mesh:).
type PeersError struct {
	Kind string
	File string
	DNS  string
	SRV  string
	Mesh string
	Line int // 1-based; 0 when not about one line
	Err  error
}

func (e *PeersError) Error() string {
	src := "peers file " + e.File
	if e.DNS != "" {
		src = "peers dns:" + e.DNS
	}
	if e.SRV != "" {
		src = "peers srv:" + e.SRV
	}
	if e.Mesh != "" {
		src = "peers mesh:" + e.Mesh
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s: line %d: %v", src, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", src, e.Err)
}

func (e *PeersError) Unwrap() error { return e.Err }

// ParsePeers parses a peers file: one peer a line, as host, host:port,
// [v6]:port or a bare IPv6 address; the port defaults to defaultPort. A
// '#' starts a comment, to the end of its line; blank lines are skipped,
// and so is a peer given twice. Peers keep the file's order, written
// host:port (net.JoinHostPort). The first bad line is an error
// (*PeersError of kind parse) naming it; nothing of the file is used then.
func ParsePeers(data []byte, defaultPort int) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 64*1024)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		addr, err := parsePeer(line, defaultPort)
		if err != nil {
			return nil, &PeersError{Kind: PeersParse, Line: n, Err: err}
		}
		if !seen[addr] {
			seen[addr] = true
			out = append(out, addr)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &PeersError{Kind: PeersParse, Line: n + 1, Err: err}
	}
	return out, nil
}

// parsePeer is one line's peer, as host:port.
func parsePeer(s string, defaultPort int) (string, error) {
	if strings.ContainsAny(s, " \t") {
		return "", fmt.Errorf("%q: want one host[:port] a line", s)
	}
	host, port := s, strconv.Itoa(defaultPort)
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	} else if strings.Contains(s, ":") && net.ParseIP(s) == nil {
		return "", fmt.Errorf("%q: want host, host:port or [ipv6]:port", s)
	}
	if host == "" {
		return "", fmt.Errorf("%q: no host", s)
	}
	if strings.Contains(host, ":") && net.ParseIP(host) == nil {
		return "", fmt.Errorf("%q: %q is not an IPv6 address", s, host)
	}
	if !strings.Contains(host, ":") && !validHostname(host) {
		return "", fmt.Errorf("%q: %q is not a host name or address", s, host)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("%q: port %q: want 1..65535", s, port)
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// validHostname accepts DNS names (letters, digits, '-', '_', '.') and
// IPv4 addresses.
func validHostname(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
		default:
			return false
		}
	}
	return !strings.HasPrefix(h, ".") && !strings.HasPrefix(h, "-")
}

// errTooMany is the error of a peers source with more peers than the cap.
func errTooMany(file, dns string, n, limit int) *PeersError {
	return &PeersError{Kind: PeersTooMany, File: file, DNS: dns,
		Err: fmt.Errorf("%d peers, more than the cap of %d (--max-peers): the first %d are probed", n, limit, limit)}
}

// peersKind is the kind of a peers error, for the metrics.
func peersKind(err error) string {
	var pe *PeersError
	if errors.As(err, &pe) {
		return pe.Kind
	}
	return PeersRead
}

// nonEmpty counts the strings that are not empty.
func nonEmpty(ss ...string) int {
	n := 0
	for _, s := range ss {
		if s != "" {
			n++
		}
	}
	return n
}
