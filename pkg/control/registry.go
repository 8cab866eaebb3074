package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A registry is a test server that also keeps the registrations of
// agents (ServerOptions.Registry), so that agents find each other through
// it. An agent registers on a connection with the same handshake as a
// test (versions, then the token's proof) and gets every live
// registration back:
//
//	agent -> registry    {"type":"register","data":{"host":"node2","addr":"10.0.0.2:19515"}}
//	registry -> agent    {"type":"peers","data":{"self":"10.0.0.2:19515","expiry_ms":30000,"peers":[{"host":"node1","addr":"10.0.0.1:19515"},...]}}
//	                     or {"type":"error","code":"spec"|"limit","message":"..."} (the connection stays usable)
//
// as often as it likes, then bye. A registration lasts the registry's
// expiry after its last renewal (a register of the same address), then it
// is forgotten. The register frame is the mesh's (TypeRegister), its data
// an AgentRegistration; the peers frame is new in the same protocol
// version: a server without a registry (an older one too) answers a
// register with a "protocol" error, as it did before, and only a
// registry sends peers, only in answer to a register.

// DefaultRegistryExpiry is how long a registration lasts without renewal
// by default.
const DefaultRegistryExpiry = 30 * time.Second

// AgentRegistration is what an agent registers: the address its server
// serves tests on, and its host name (for logs).
type AgentRegistration struct {
	// Host is the agent's host name (or its --host label); at most 253
	// bytes of letters, digits, '-', '_' and '.'; may be empty.
	Host string `json:"host,omitempty"`
	// Addr is HOST:PORT. An empty or unspecified HOST (0.0.0.0, ::), as an
	// agent listening on every address has, is the address the registry
	// sees the registration come from.
	Addr string `json:"addr"`
}

// Registrations is a registry's answer to a registration.
type Registrations struct {
	// Self is the registrant's address as the registry recorded it.
	Self string `json:"self"`
	// ExpiryMS is how long a registration lasts without renewal, in ms.
	ExpiryMS int64 `json:"expiry_ms"`
	// Peers are every live registration, the registrant's too, sorted by
	// address.
	Peers []AgentRegistration `json:"peers"`
}

// ErrRegistryFull is a registration refused because the registry holds
// as many as it may (code "limit").
var ErrRegistryFull = errors.New("the registry is full")

// RegistrationError is a registration the registry refused as malformed
// (code "spec").
type RegistrationError struct{ Msg string }

func (e *RegistrationError) Error() string { return "bad registration: " + e.Msg }

// Registry keeps agents' registrations, at most Max, each for Expiry after
// its last renewal. Its methods are safe for concurrent use.
type Registry struct {
	max    int
	expiry time.Duration
	now    func() time.Time

	mu   sync.Mutex
	regs map[string]registered // by address
}

type registered struct {
	host  string
	until time.Time
}

// NewRegistry returns a registry of at most n registrations (at least
// 1), each forgotten expiry (DefaultRegistryExpiry when 0) after its last
// renewal.
func NewRegistry(n int, expiry time.Duration) *Registry {
	if expiry <= 0 {
		expiry = DefaultRegistryExpiry
	}
	return &Registry{max: max(n, 1), expiry: expiry, now: time.Now, regs: map[string]registered{}}
}

// Expiry is how long a registration lasts without renewal.
func (g *Registry) Expiry() time.Duration { return g.expiry }

// Len is the number of live registrations.
func (g *Registry) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.prune(g.now())
	return len(g.regs)
}

// registerOutcome is what a registration changed, for the server's log.
type registerOutcome struct {
	added   bool     // a new address
	expired []string // registrations forgotten meanwhile
	n       int      // live registrations
}

// Register records data (an AgentRegistration's JSON), which came from
// the connection's remote address from, and returns every live
// registration. A malformed one is a *RegistrationError; one more than
// the registry may hold, a LimitError wrapping ErrRegistryFull.
func (g *Registry) Register(data json.RawMessage, from string) (*Registrations, error) {
	a, _, err := g.register(data, from)
	return a, err
}

func (g *Registry) register(data json.RawMessage, from string) (*Registrations, registerOutcome, error) {
	r, err := ParseRegistration(data, from)
	if err != nil {
		return nil, registerOutcome{}, err
	}
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	out := registerOutcome{expired: g.prune(now)}
	if _, ok := g.regs[r.Addr]; !ok {
		if len(g.regs) >= g.max {
			return nil, out, LimitError{Err: fmt.Errorf("%w: %d registrations, its cap; %s is not registered", ErrRegistryFull, len(g.regs), r.Addr)}
		}
		out.added = true
	}
	g.regs[r.Addr] = registered{host: r.Host, until: now.Add(g.expiry)}
	ans := &Registrations{Self: r.Addr, ExpiryMS: g.expiry.Milliseconds(), Peers: make([]AgentRegistration, 0, len(g.regs))}
	for addr, reg := range g.regs {
		ans.Peers = append(ans.Peers, AgentRegistration{Host: reg.host, Addr: addr})
	}
	slices.SortFunc(ans.Peers, func(a, b AgentRegistration) int { return strings.Compare(a.Addr, b.Addr) })
	out.n = len(g.regs)
	return ans, out, nil
}

// prune forgets the registrations expired at now and returns their
// addresses.
func (g *Registry) prune(now time.Time) []string {
	var gone []string
	for addr, reg := range g.regs {
		if !now.Before(reg.until) {
			delete(g.regs, addr)
			gone = append(gone, addr)
		}
	}
	slices.Sort(gone)
	return gone
}

// ParseRegistration decodes and checks a registration's data, which came
// from the remote address from (HOST:PORT; used for an empty or
// unspecified host), and returns it with its address as host:port. Its
// errors are *RegistrationError.
func ParseRegistration(data json.RawMessage, from string) (AgentRegistration, error) {
	var r AgentRegistration
	if t := strings.TrimLeft(string(data), " \t\r\n"); t == "" || t[0] != '{' {
		return r, &RegistrationError{Msg: "not a JSON object"}
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, &RegistrationError{Msg: err.Error()}
	}
	if len(r.Host) > 253 || !hostChars(r.Host) {
		return r, &RegistrationError{Msg: fmt.Sprintf("host %.80q: want a host name", r.Host)}
	}
	if r.Addr == "" {
		return r, &RegistrationError{Msg: "no addr (want the HOST:PORT the agent serves tests on; is this an agent's registration?)"}
	}
	host, port, err := net.SplitHostPort(r.Addr)
	if err != nil {
		return r, &RegistrationError{Msg: fmt.Sprintf("addr %.80q: want HOST:PORT", r.Addr)}
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return r, &RegistrationError{Msg: fmt.Sprintf("addr %.80q: port %.10q: want 1..65535", r.Addr, port)}
	}
	port = strconv.Itoa(p)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if host, _, err = net.SplitHostPort(from); err != nil || net.ParseIP(host) == nil || net.ParseIP(host).IsUnspecified() {
			return r, &RegistrationError{Msg: fmt.Sprintf("addr %q: no host, and the connection's address %q has none", r.Addr, from)}
		}
	} else if ip == nil && (strings.Contains(host, ":") || !hostChars(host) || len(host) > 253) {
		return r, &RegistrationError{Msg: fmt.Sprintf("addr %.80q: %.80q is not a host name or address", r.Addr, host)}
	}
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String() // one spelling of each address
	}
	r.Addr = net.JoinHostPort(host, port)
	return r, nil
}

// hostChars tells whether s has only the bytes of a host name.
func hostChars(s string) bool {
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.', c == '_':
		default:
			return false
		}
	}
	return !strings.HasPrefix(s, "-") && !strings.HasPrefix(s, ".")
}

// register answers a register frame on a test server with a registry.
func (c *serverConn) register(m *Message) {
	ans, out, err := c.s.opt.Registry.register(m.Data, c.addr)
	for _, a := range out.expired {
		c.s.logf("registration %s expired", a)
	}
	if err != nil {
		code := CodeSpec
		if errors.Is(err, ErrRegistryFull) {
			code = CodeLimit
		}
		c.s.logf("%s register refused %s: %v", c.addr, code, err)
		c.send(&Message{Type: TypeError, Code: code, Msg: err.Error()})
		return
	}
	if out.added {
		c.s.logf("%s registered %s (%s), %d registrations", c.addr, ans.Self, orDash(ansHost(ans)), out.n)
	}
	b, err := json.Marshal(ans)
	if err == nil {
		err = c.p.write(context.Background(), &Message{Type: TypePeers, Data: b})
	}
	if errors.Is(err, ErrFrameTooLarge) {
		c.send(&Message{Type: TypeError, Code: CodeLimit, Msg: fmt.Sprintf("%d registrations do not fit in a frame: %v", len(ans.Peers), err)})
	}
}

// ansHost is the registrant's host name in its answer.
func ansHost(a *Registrations) string {
	for _, p := range a.Peers {
		if p.Addr == a.Self {
			return p.Host
		}
	}
	return ""
}

// Register registers r with the registry at addr (a test server with a
// Registry: an agent started with --registry) over one connection, with
// the token in opt when the registry requires one, and returns every live
// registration. A refusal is a *ServerError: code "spec" for a malformed
// registration, "limit" for a full registry, "protocol" for a server that
// keeps no registry, "auth" for a wrong or missing token.
func Register(ctx context.Context, addr string, opt ClientOptions, r AgentRegistration) (*Registrations, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("register: %w", err)
	}
	c, err := Dial(ctx, addr, opt)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.p.write(ctx, &Message{Type: TypeRegister, Data: data}); err != nil {
		c.breakWith(err)
		return nil, while(err, "registering")
	}
	wait := 2 * c.opt.Timeout
	wctx, cancel := context.WithTimeoutCause(ctx, wait, &silentError{name: c.p.name, d: wait, answer: "register"})
	m, err := c.p.next(wctx)
	cancel()
	if err != nil {
		c.breakWith(err)
		return nil, while(err, "waiting for the registry's answer")
	}
	switch m.Type {
	case TypePeers:
		var ans Registrations
		if err := json.Unmarshal(m.Data, &ans); err != nil {
			err = fmt.Errorf("%w: registry %s answered peers that do not decode: %v", ErrBadFrame, addr, err)
			c.breakWith(err)
			return nil, err
		}
		return &ans, nil
	case TypeError:
		se := c.serverError(m)
		if se.Code == CodeProtocol {
			se.Msg += " (does it keep a registry? start that agent with --registry)"
		}
		c.breakWith(se)
		return nil, se
	}
	return nil, c.unexpected(m, "the registry's answer")
}
