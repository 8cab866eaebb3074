package watch

import (
	"context"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/rdmabench/rdmabench/internal/testutil"
)

// zone is an in-process DNS server's data: the A and AAAA records of
// names, and names answered SERVFAIL. A name not in it is NXDOMAIN.
type zone struct {
	mu      sync.Mutex
	addrs   map[string][]string // FQDN to addresses
	failing map[string]bool
}

func (z *zone) set(name string, addrs ...string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	fq := dns.Fqdn(name)
	delete(z.failing, fq)
	if addrs == nil {
		delete(z.addrs, fq)
		return
	}
	z.addrs[fq] = addrs
}

func (z *zone) fail(name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.failing[dns.Fqdn(name)] = true
}

func (z *zone) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	z.mu.Lock()
	defer z.mu.Unlock()
	q := req.Question[0]
	addrs, ok := z.addrs[strings.ToLower(q.Name)]
	switch {
	case z.failing[strings.ToLower(q.Name)]:
		m.Rcode = dns.RcodeServerFailure
	case !ok:
		m.Rcode = dns.RcodeNameError
	}
	for _, s := range addrs {
		ip := net.ParseIP(s)
		hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Ttl: 5}
		switch {
		case q.Qtype == dns.TypeA && ip.To4() != nil:
			hdr.Rrtype = dns.TypeA
			m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: ip})
		case q.Qtype == dns.TypeAAAA && ip.To4() == nil:
			hdr.Rrtype = dns.TypeAAAA
			m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: ip})
		}
	}
	_ = w.WriteMsg(m)
}

// dnsServer starts a DNS server for z (a *zone) on a loopback UDP port
// and returns a resolver that asks it, and only it.
func dnsServer(t *testing.T, z dns.Handler) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: z, NotifyStartedFunc: func() { close(started) }}
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	addr := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

func newZone() *zone { return &zone{addrs: map[string][]string{}, failing: map[string]bool{}} }

// TestReloadDNS: peers from a DNS name with many addresses (a headless
// Service's), looked up at each reload from a real DNS server in this
// process: addresses that appear or vanish are picked up, the others keep
// their state; a name that does not resolve, or whose lookup fails, is
// counted by kind and told once in the log, and the last good set kept.
func TestReloadDNS(t *testing.T) {
	const name = "rdmabench-agent.rdma.test"
	z := newZone()
	var log testutil.SyncBuffer
	a, err := New(Config{Host: "h", PeersDNS: name, Resolver: dnsServer(t, z), Probe: probeRequest(), Log: &log, MaxPeers: 3})
	if err != nil {
		t.Fatal(err)
	}
	z.set(name, "10.0.0.2", "10.0.0.1", "fd00::1")
	a.reload()
	if got := a.peerAddrs(); !slices.Equal(got, []string{"10.0.0.1:19515", "10.0.0.2:19515", "[fd00::1]:19515"}) {
		t.Fatalf("peers %q", got)
	}
	if _, ok := a.fileCounts(); !ok {
		t.Error("not ok after a good lookup")
	}
	a.mu.Lock()
	a.byAddr["10.0.0.2:19515"].stats.probes[0] = 7 // kept across a lookup that keeps it
	a.mu.Unlock()

	z.set(name, "10.0.0.3", "10.0.0.2")
	a.reload()
	if got := a.peerAddrs(); !slices.Equal(got, []string{"10.0.0.2:19515", "10.0.0.3:19515"}) {
		t.Fatalf("peers after the change %q", got)
	}
	if a.byAddr["10.0.0.2:19515"].stats.probes[0] != 7 || a.byAddr["10.0.0.1:19515"] != nil {
		t.Error("a kept peer lost its state, or a removed one was kept")
	}

	z.set(name) // NXDOMAIN: the Service is gone
	a.reload()
	a.reload()
	errs, ok := a.fileCounts()
	if errs[3] != 2 || ok || len(a.peerAddrs()) != 2 {
		t.Errorf("not found: errors %v ok %v peers %q, want 2 not_found and the last good set", errs, ok, a.peerAddrs())
	}
	if n := strings.Count(log.String(), "(kind not_found)"); n != 1 || !strings.Contains(log.String(), "peers dns:"+name+": ") {
		t.Errorf("not found told %d times, want once, naming the name:\n%s", n, log.String())
	}

	z.fail(name) // SERVFAIL
	a.reload()
	if errs, ok := a.fileCounts(); errs[4] == 0 || ok {
		t.Errorf("lookup failing: errors %v ok %v", errs, ok)
	}
	if !strings.Contains(log.String(), "(kind resolve)") {
		t.Errorf("a failing lookup not told:\n%s", log.String())
	}

	z.set(name, "10.0.0.2", "10.0.0.3")
	a.reload()
	if _, ok := a.fileCounts(); !ok || len(a.peerAddrs()) != 2 {
		t.Errorf("resolving again: ok %v peers %q", ok, a.peerAddrs())
	}
	if !strings.Contains(log.String(), "peers: dns:"+name+" usable again") {
		t.Errorf("the recovery not told:\n%s", log.String())
	}

	z.set(name, "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4")
	a.reload()
	if errs, ok := a.fileCounts(); errs[2] != 1 || ok || len(a.peerAddrs()) != 3 {
		t.Errorf("too many: errors %v ok %v peers %q", errs, ok, a.peerAddrs())
	}
}

// TestReloadDNSPortAndSelf: dns:NAME:PORT gives its addresses that port,
// and this agent's own address is left out.
func TestReloadDNSPortAndSelf(t *testing.T) {
	z := newZone()
	z.set("agents.rdma.test", "10.0.0.1", "10.0.0.9")
	a, err := New(Config{Host: "h", PeersDNS: "agents.rdma.test:19600", Resolver: dnsServer(t, z), Probe: probeRequest(),
		Self: []string{"10.0.0.9:19600"}})
	if err != nil {
		t.Fatal(err)
	}
	a.reload()
	if got := a.peerAddrs(); !slices.Equal(got, []string{"10.0.0.1:19600"}) {
		t.Errorf("peers %q", got)
	}
}

func TestParsePeersDNS(t *testing.T) {
	for _, tc := range []struct {
		in   string
		name string
		port int
	}{
		{"rdmabench-agent", "rdmabench-agent", 19515},
		{"rdmabench-agent.monitoring.svc.cluster.local:19600", "rdmabench-agent.monitoring.svc.cluster.local", 19600},
	} {
		name, port, err := ParsePeersDNS(tc.in, 19515)
		if err != nil || name != tc.name || port != tc.port {
			t.Errorf("ParsePeersDNS(%q) = %q, %d, %v", tc.in, name, port, err)
		}
	}
	for _, in := range []string{"", "a b", "agents:0", "agents:x", "/etc/peers"} {
		if _, _, err := ParsePeersDNS(in, 19515); err == nil {
			t.Errorf("ParsePeersDNS(%q): no error", in)
		}
	}
}

// TestRunDNS: a running agent picks up the addresses its name gains and
// loses, with no restart.
func TestRunDNS(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	z := newZone()
	z.set("agents.rdma.test", "127.0.0.1", "127.0.0.2")
	a, err := New(Config{Host: "h", PeersDNS: "agents.rdma.test:1", Resolver: dnsServer(t, z), Probe: probeRequest(),
		Reload: 20 * time.Millisecond, Rate: 5})
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, "h", a)
	waitPeers := func(want ...string) { t.Helper(); waitPeersOf(t, "h", a, want...) }
	waitPeers("127.0.0.1:1", "127.0.0.2:1")
	z.set("agents.rdma.test", "127.0.0.2", "127.0.0.3")
	waitPeers("127.0.0.2:1", "127.0.0.3:1")
}
