package watch

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/rdmabench/rdmabench/internal/testutil"
)

// srvZone is a zone with SRV records too: a name's records (target and
// port each), or SERVFAIL for its SRV queries. Other queries are the
// zone's.
type srvZone struct {
	*zone
	mu      sync.Mutex
	records map[string][]*dns.SRV // FQDN to records
	failing map[string]bool
}

func newSRVZone() *srvZone {
	return &srvZone{zone: newZone(), records: map[string][]*dns.SRV{}, failing: map[string]bool{}}
}

// setSRV gives name the records "target:port" (none: NXDOMAIN).
func (z *srvZone) setSRV(name string, records ...string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	fq := dns.Fqdn(name)
	delete(z.failing, fq)
	delete(z.records, fq)
	for _, r := range records {
		target, port, _ := strings.Cut(r, ":")
		p, _ := strconv.ParseUint(port, 10, 16)
		z.records[fq] = append(z.records[fq], &dns.SRV{
			Hdr:    dns.RR_Header{Name: fq, Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: 5},
			Target: dns.Fqdn(target), Port: uint16(p), Priority: 0, Weight: 10})
	}
}

func (z *srvZone) failSRV(name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.failing[dns.Fqdn(name)] = true
}

func (z *srvZone) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	q := req.Question[0]
	if q.Qtype != dns.TypeSRV {
		z.zone.ServeDNS(w, req)
		return
	}
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	z.mu.Lock()
	defer z.mu.Unlock()
	rs, ok := z.records[strings.ToLower(q.Name)]
	switch {
	case z.failing[strings.ToLower(q.Name)]:
		m.Rcode = dns.RcodeServerFailure
	case !ok:
		m.Rcode = dns.RcodeNameError
	}
	for _, r := range rs {
		m.Answer = append(m.Answer, r)
	}
	_ = w.WriteMsg(m)
}

// TestReloadSRV: peers from the SRV records of a name (a Kubernetes
// headless Service's _PORTNAME._tcp.SVC), looked up at each reload from a
// real DNS server in this process: every address of each target with its
// record's port; records that appear or vanish are picked up, the others
// keep their state; a target with no address is left out; a name with no
// record, or whose lookup (or a target's) fails, is counted by kind and
// told once in the log, and the last good set kept.
func TestReloadSRV(t *testing.T) {
	const name = "_tests._tcp.rdmabench-agent.rdma.test"
	z := newSRVZone()
	z.set("a.rdma.test", "10.0.0.1")
	z.set("b.rdma.test", "10.0.0.2")
	z.set("c.rdma.test", "10.0.0.3", "fd00::3")
	z.set("d.rdma.test", "10.0.0.4")
	z.set("self.rdma.test", "10.0.0.9")
	var log testutil.SyncBuffer
	a, err := New(Config{Host: "h", PeersSRV: name, Resolver: dnsServer(t, z), Probe: probeRequest(), Log: &log, MaxPeers: 4,
		Self: []string{"10.0.0.9:19515"}})
	if err != nil {
		t.Fatal(err)
	}
	z.setSRV(name, "a.rdma.test:19515", "b.rdma.test:19600", "c.rdma.test:19515", "self.rdma.test:19515")
	a.reload()
	if got := a.peerAddrs(); !slices.Equal(got, []string{"10.0.0.1:19515", "10.0.0.2:19600", "10.0.0.3:19515", "[fd00::3]:19515"}) {
		t.Fatalf("peers %q", got)
	}
	if _, ok := a.fileCounts(); !ok {
		t.Error("not ok after a good lookup")
	}
	a.mu.Lock()
	a.byAddr["10.0.0.1:19515"].stats.probes[0] = 7 // kept across a lookup that keeps it
	a.mu.Unlock()

	// b's record gone, d's new, and one whose target has no address
	// (gone between the two lookups): left out, the rest used.
	z.setSRV(name, "a.rdma.test:19515", "c.rdma.test:19515", "d.rdma.test:19700", "gone.rdma.test:19515")
	a.reload()
	if got := a.peerAddrs(); !slices.Equal(got, []string{"10.0.0.1:19515", "10.0.0.3:19515", "10.0.0.4:19700", "[fd00::3]:19515"}) {
		t.Fatalf("peers after the change %q", got)
	}
	if a.byAddr["10.0.0.1:19515"].stats.probes[0] != 7 || a.byAddr["10.0.0.2:19600"] != nil {
		t.Error("a kept peer lost its state, or a removed one was kept")
	}
	if _, ok := a.fileCounts(); !ok {
		t.Error("not ok with one target without an address")
	}

	z.setSRV(name) // NXDOMAIN: the Service is gone
	a.reload()
	a.reload()
	errs, ok := a.fileCounts()
	if errs[3] != 2 || ok || len(a.peerAddrs()) != 4 {
		t.Errorf("not found: errors %v ok %v peers %q, want 2 not_found and the last good set", errs, ok, a.peerAddrs())
	}
	if n := strings.Count(log.String(), "(kind not_found)"); n != 1 || !strings.Contains(log.String(), "peers srv:"+name+": ") {
		t.Errorf("not found told %d times, want once, naming the name:\n%s", n, log.String())
	}

	z.setSRV(name, "gone.rdma.test:19515", ".:0") // no target with an address
	a.reload()
	if errs, _ := a.fileCounts(); errs[3] != 3 || len(a.peerAddrs()) != 4 {
		t.Errorf("no target with an address: errors %v peers %q, want 3 not_found and the last good set", errs, a.peerAddrs())
	}

	z.failSRV(name) // SERVFAIL
	a.reload()
	if errs, ok := a.fileCounts(); errs[4] != 1 || ok || len(a.peerAddrs()) != 4 {
		t.Errorf("lookup failing: errors %v ok %v peers %q", errs, ok, a.peerAddrs())
	}
	if !strings.Contains(log.String(), "(kind resolve)") {
		t.Errorf("a failing lookup not told:\n%s", log.String())
	}

	z.setSRV(name, "a.rdma.test:19515", "b.rdma.test:19600")
	a.reload()
	if _, ok := a.fileCounts(); !ok || !slices.Equal(a.peerAddrs(), []string{"10.0.0.1:19515", "10.0.0.2:19600"}) {
		t.Errorf("resolving again: ok %v peers %q", ok, a.peerAddrs())
	}
	if !strings.Contains(log.String(), "peers: srv:"+name+" usable again") {
		t.Errorf("the recovery not told:\n%s", log.String())
	}

	// A target whose lookup fails: the whole lookup is resolve, and the
	// last good set kept whole rather than a part of it.
	z.fail("b.rdma.test")
	a.reload()
	if errs, ok := a.fileCounts(); errs[4] != 2 || ok || len(a.peerAddrs()) != 2 {
		t.Errorf("a target's lookup failing: errors %v ok %v peers %q", errs, ok, a.peerAddrs())
	}
	z.set("b.rdma.test", "10.0.0.2")

	z.setSRV(name, "a.rdma.test:19515", "b.rdma.test:19515", "c.rdma.test:19515", "d.rdma.test:19515", "d.rdma.test:19516")
	a.reload()
	if errs, ok := a.fileCounts(); errs[2] != 1 || ok || len(a.peerAddrs()) != 4 {
		t.Errorf("too many: errors %v ok %v peers %q", errs, ok, a.peerAddrs())
	}
	if !strings.Contains(log.String(), "peers srv:"+name+": 6 peers, more than the cap of 4") {
		t.Errorf("too many not told, naming the name:\n%s", log.String())
	}
}

func TestParsePeersSRV(t *testing.T) {
	for _, in := range []string{"_tests._tcp.rdmabench-agent", "_tests._tcp.rdmabench-agent.monitoring.svc.cluster.local."} {
		if got, err := ParsePeersSRV(in); err != nil || got != in {
			t.Errorf("ParsePeersSRV(%q) = %q, %v", in, got, err)
		}
	}
	for in, want := range map[string]string{
		"":                         "no name",
		"_tests._tcp.agents:19515": "the SRV records give each peer's",
		"a b":                      "not a DNS name",
		"/etc/peers":               "not a DNS name",
	} {
		if _, err := ParsePeersSRV(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePeersSRV(%q): %v, want %q", in, err, want)
		}
	}
}

// TestRunSRV: a running agent picks up the records its SRV name gains and
// loses, with no restart.
func TestRunSRV(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	const name = "_tests._tcp.agents.rdma.test"
	z := newSRVZone()
	z.set("a.rdma.test", "127.0.0.1")
	z.set("b.rdma.test", "127.0.0.2")
	z.setSRV(name, "a.rdma.test:1", "b.rdma.test:2")
	a, err := New(Config{Host: "h", PeersSRV: name, Resolver: dnsServer(t, z), Probe: probeRequest(),
		Reload: 20 * time.Millisecond, Rate: 5})
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, "h", a)
	waitPeers := func(want ...string) { t.Helper(); waitPeersOf(t, "h", a, want...) }
	waitPeers("127.0.0.1:1", "127.0.0.2:2")
	z.setSRV(name, "b.rdma.test:2", "a.rdma.test:3")
	waitPeers("127.0.0.1:3", "127.0.0.2:2")
}
