package watch

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

func TestParsePeers(t *testing.T) {
	good := `# the rack
node-a
node-b:19600   # another port
10.0.0.3
[fe80::1]:19515
::1
node-a        # twice: once
`
	got, err := ParsePeers([]byte(good), 19515)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"node-a:19515", "node-b:19600", "10.0.0.3:19515", "[fe80::1]:19515", "[::1]:19515"}
	if !slices.Equal(got, want) {
		t.Errorf("ParsePeers = %q, want %q", got, want)
	}
	if got, err := ParsePeers([]byte("\n# nothing\n"), 1); err != nil || len(got) != 0 {
		t.Errorf("empty file: %q, %v", got, err)
	}
	for _, tc := range []struct{ text, want string }{
		{"node-a\nnode b\n", "line 2: "},
		{"node-a:0\n", "port"},
		{"node-a:99999\n", "port"},
		{"node-a:http\n", "port"},
		{":19515\n", "no host"},
		{"node/a\n", "not a host name"},
		{"fe80::zz:1\n", "want host"},
		{"[fe80::zz]:1\n", "not an IPv6"},
		{strings.Repeat("x", 70000) + "\n", "too long"},
	} {
		_, err := ParsePeers([]byte(tc.text), 19515)
		var pe *PeersError
		if !errors.As(err, &pe) || pe.Kind != PeersParse || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePeers(%.30q) = %v, want a parse error with %q", tc.text, err, tc.want)
		}
	}
}

// testAgent is an agent probing tcp-lat, with no listener, whose peers
// file is in a temporary directory.
func testAgent(t *testing.T, maxPeers int) (*Agent, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "peers")
	a, err := New(Config{Host: "h", PeersFile: file, MaxPeers: maxPeers, Probe: probeRequest()})
	if err != nil {
		t.Fatal(err)
	}
	return a, file
}

func probeRequest() workloads.Request {
	return workloads.Request{Tests: []string{"tcp-lat"}, Spec: workloads.Spec{}}
}

func (a *Agent) peerAddrs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var s []string
	for _, p := range a.st.peers {
		s = append(s, p.addr)
	}
	return s
}

func (a *Agent) fileCounts() (errs [7]uint64, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.st.peersErrors, a.st.peersOK
}

func write(t *testing.T, file, text string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReload: peers that appear or vanish are picked up; a file that
// cannot be read or parsed is counted by kind and the last good set kept;
// too many peers keeps the first.
func TestReload(t *testing.T) {
	a, file := testAgent(t, 3)
	a.reload()
	if errs, ok := a.fileCounts(); errs[0] != 1 || ok || len(a.peerAddrs()) != 0 {
		t.Fatalf("missing file: errors %v ok %v peers %q", errs, ok, a.peerAddrs())
	}
	write(t, file, "a\nb\n")
	a.reload()
	if got := a.peerAddrs(); !slices.Equal(got, []string{"a:19515", "b:19515"}) {
		t.Fatalf("peers %q", got)
	}
	a.mu.Lock()
	a.byAddr["a:19515"].stats.probes[0] = 7 // a's state survives a reload that keeps it
	a.mu.Unlock()
	write(t, file, "c\na\n")
	a.reload()
	if got := a.peerAddrs(); !slices.Equal(got, []string{"c:19515", "a:19515"}) {
		t.Fatalf("peers after the change %q", got)
	}
	if a.byAddr["a:19515"].stats.probes[0] != 7 || a.byAddr["b:19515"] != nil {
		t.Error("a kept peer lost its state, or a removed one was kept")
	}
	write(t, file, "c\nnot a host\n")
	a.reload()
	a.reload() // the same bad file: counted once
	if errs, ok := a.fileCounts(); errs[1] != 1 || ok {
		t.Errorf("bad file: errors %v ok %v", errs, ok)
	}
	if got := a.peerAddrs(); !slices.Equal(got, []string{"c:19515", "a:19515"}) {
		t.Errorf("bad file: peers %q, want the last good set", got)
	}
	os.Remove(file)
	a.reload()
	if errs, _ := a.fileCounts(); errs[0] != 2 || len(a.peerAddrs()) != 2 {
		t.Errorf("removed file: errors %v, peers %q", errs, a.peerAddrs())
	}
	write(t, file, "a\nb\nc\nd\ne\n")
	a.reload()
	if errs, ok := a.fileCounts(); errs[2] != 1 || ok || len(a.peerAddrs()) != 3 {
		t.Errorf("too many: errors %v ok %v peers %q", errs, ok, a.peerAddrs())
	}
	write(t, file, "a\n")
	a.reload()
	if _, ok := a.fileCounts(); !ok || len(a.peerAddrs()) != 1 {
		t.Errorf("good again: ok %v, peers %q", ok, a.peerAddrs())
	}
}

// TestSelfLeftOut: this agent's own address in the peers file is not a
// peer.
func TestSelfLeftOut(t *testing.T) {
	a, file := testAgent(t, 0)
	a.cfg.Self = []string{"me:19515"}
	write(t, file, "me\nyou\n")
	a.reload()
	if got := a.peerAddrs(); !slices.Equal(got, []string{"you:19515"}) {
		t.Errorf("peers %q", got)
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.PeersFile = "" }, "no peers file or name"},
		{func(c *Config) { c.PeersDNS = "x" }, "not several"},
		{func(c *Config) { c.PeersFile, c.PeersDNS, c.PeersSRV = "", "x", "_t._tcp.x" }, "not several"},
		{func(c *Config) { c.PeersFile, c.PeersSRV = "", "_t._tcp.x:19515" }, "--peers srv:_t._tcp.x:19515: a port"},
		{func(c *Config) { c.PeersFile, c.PeersDNS = "", "bad name" }, "--peers dns:bad name: "},
		{func(c *Config) { c.PeersFile, c.PeersDNS = "", "agents:0" }, "port"},
		{func(c *Config) { c.Probe.Tests = []string{"tcp-bw"} }, "latency test"},
		{func(c *Config) { c.Probe.Spec.Sizes = []int{2, 4} }, "one message size"},
		{func(c *Config) { c.Probe.Spec.TxDepth = 4 }, "tx-depth"},
		{func(c *Config) { c.BW.Test = "tcp-lat" }, `--bw-probe "tcp-lat": want a bandwidth test`},
		{func(c *Config) { c.BW.Test = "write-bw" }, "--bw-probe write-bw and --probe tcp-lat: both RDMA tests or both TCP ones"},
		{func(c *Config) { c.BW = BWProbe{Test: "tcp-bw", Share: 0.6} }, "--bw-share 60%: want a share above 0%, at most 50%"},
		{func(c *Config) { c.BW = BWProbe{Test: "tcp-bw", Duration: time.Millisecond} }, "--bw-duration 1ms: want at least 100ms"},
	} {
		cfg := Config{PeersFile: "p", Probe: probeRequest()}
		tc.mod(&cfg)
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: %v, want an error with %q", err, tc.want)
		}
	}
}

// TestProbeLog: a peer's first failure is told, and again when the kind
// of its failures changes, not while it fails the same way.
func TestProbeLog(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: connect
	a, file := testAgent(t, 0)
	var log testutil.SyncBuffer
	a.cfg.Log = &log
	a.cfg.ProbeTimeout = 5 * time.Second
	write(t, file, addr+"\n")
	a.reload()
	probe := func() {
		t.Helper()
		p := a.nextPeer(&a.cursor, &a.st.skipped)
		if p == nil {
			t.Fatal("no peer to probe")
		}
		a.probe(context.Background(), p, false, nil)
	}
	probe()
	probe()
	if ln, err = net.Listen("tcp", addr); err != nil {
		t.Skipf("the port is taken again: %v", err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("HTTP/1.0 400 Bad Request\r\n\r\nnot the control protocol\n"))
			c.Close()
		}
	}()
	probe()
	probe()
	got := log.String()
	if n := strings.Count(got, "probe "+addr+": connect: "); n != 1 {
		t.Errorf("connect told %d times, want once:\n%s", n, got)
	}
	if n := strings.Count(got, "probe "+addr+": protocol: "); n != 1 {
		t.Errorf("protocol told %d times, want once:\n%s", n, got)
	}
}
