package watch

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/remote"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// meshAgent starts an agent named name serving tcp-lat on a loopback
// port and taking its peers from the registry at registry ("": its own
// address, and it keeps the registry), with token; it returns the agent,
// its address and a function that stops it.
func meshAgent(t *testing.T, name, registry, token string) (*Agent, string, func()) {
	t.Helper()
	ln := listen(t)
	cfg := Config{Host: name, Serve: ln, PeersMesh: registry, Token: token, Probe: probeRequest(), Rate: 20,
		Reload: 100 * time.Millisecond, ProbeTimeout: 2 * time.Second, Log: &testLog{t: t, name: name},
		ServerOptions: control.ServerOptions{Token: token}}
	if registry == "" {
		cfg.PeersMesh, cfg.Registry, cfg.RegistryExpiry = ln.Addr().String(), true, time.Second
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a, ln.Addr().String(), runAgent(t, name, a)
}

// TestRunMesh: three agents find each other through the registry one of
// them keeps (itself registered too), each probing the two others over
// tcp-lat with the token; an agent that stops is forgotten by the others
// once its registration expires; a registry that cannot be reached is
// counted (kind unreachable) and the last good set kept.
func TestRunMesh(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	const token = "s3cret"
	r, raddr, stopR := meshAgent(t, "r", "", token)
	b, baddr, _ := meshAgent(t, "b", raddr, token)
	c, caddr, stopC := meshAgent(t, "c", raddr, token)
	waitPeersOf(t, "r", r, baddr, caddr)
	waitPeersOf(t, "b", b, raddr, caddr)
	waitPeersOf(t, "c", c, raddr, baddr)
	waitFor(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, p := range b.st.peers {
			if p.probes[resultIndex(ResultOK)] == 0 {
				return false
			}
		}
		return true
	}, func() string { return "b has not probed both its peers well" })

	var text bytes.Buffer
	if err := r.WriteMetrics(&text, FormatText); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), `rdmabench_agent_registrations{device="",host="r"} 3`+"\n") {
		t.Errorf("the registry's metrics:\n%s", text.String())
	}
	if p, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(p, "check", "metrics")
		cmd.Stdin = &text
		if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	}

	stopC() // stops renewing
	waitPeersOf(t, "r", r, baddr)
	waitPeersOf(t, "b", b, raddr)

	stopR()
	waitFor(t, func() bool { errs, ok := b.fileCounts(); return errs[5] > 0 && !ok },
		func() string {
			errs, ok := b.fileCounts()
			return fmt.Sprintf("b's peers errors %v (ok %v), want unreachable counted", errs, ok)
		})
	if got := b.peerAddrs(); !slices.Equal(got, []string{raddr}) {
		t.Errorf("b's peers after the registry went: %q, want the last good set", got)
	}
}

// TestMeshRefused: a registration the registry refuses (a wrong token, a
// bad address), or a server that keeps no registry, is kind refused, told
// by name, and the last good set kept; a registry that cannot be reached
// is kind unreachable.
func TestMeshRefused(t *testing.T) {
	_, raddr, _ := meshAgent(t, "r", "", "s3cret")
	plain := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- remote.Serve(ctx, plain, &workloads.Server{}, control.ServerOptions{}) }()
	t.Cleanup(func() { cancel(); <-served })
	for _, tc := range []struct {
		registry, token, advertise string
		kind                       int // index in peersKinds
		want                       string
	}{
		{raddr, "wrong", "127.0.0.1:7", 6, "authentication failed"},
		{raddr, "", "127.0.0.1:7", 6, "authentication failed"},
		{raddr, "s3cret", "127.0.0.1:0", 6, `bad registration: addr "127.0.0.1:0": port "0": want 1..65535`},
		{plain.Addr().String(), "", "127.0.0.1:7", 6, "start that agent with --registry"},
		{freeAddr(t), "", "127.0.0.1:7", 5, "connect to server"},
	} {
		var log testutil.SyncBuffer
		a, err := New(Config{Host: "h", PeersMesh: tc.registry, Token: tc.token, Advertise: tc.advertise, Probe: probeRequest(), Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		a.setPeers([]string{"10.0.0.1:19515"}, []byte("kept"))
		a.reload()
		a.reload() // told once
		errs, ok := a.fileCounts()
		if errs[tc.kind] != 2 || ok || !strings.Contains(log.String(), tc.want) || strings.Count(log.String(), "still probing the last good set, 1 peers") != 1 {
			t.Errorf("%+v: errors %v, ok %v, log:\n%s", tc, errs, ok, log.String())
		}
		if got := a.peerAddrs(); !slices.Equal(got, []string{"10.0.0.1:19515"}) {
			t.Errorf("%+v: peers %q, want the last good set", tc, got)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestNewRefusesMesh(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.PeersFile = "x" }, "not several"},
		{func(c *Config) { c.PeersMesh = "bad host" }, "--peers mesh:bad host: "},
		{func(c *Config) { c.PeersMesh = "r:0" }, "port"},
		{func(c *Config) { c.RegistryExpiry = time.Minute }, "--registry-expiry applies to --registry, which is off"},
		{func(c *Config) { c.Registry, c.RegistryExpiry = true, -time.Second }, "--registry-expiry -1s: want a duration above 0"},
		{func(c *Config) { c.Registry, c.RegistryExpiry = true, 9*time.Second }, "--registry-expiry 9s: want at least twice --reload (5s)"},
		{func(c *Config) { c.Advertise = "nohost" }, `the address registered "nohost": want HOST:PORT`},
	} {
		cfg := Config{PeersMesh: "r", Probe: probeRequest()}
		tc.mod(&cfg)
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: %v, want an error with %q", err, tc.want)
		}
	}
	if _, err := ParsePeersMesh("", 1); err == nil || !strings.Contains(err.Error(), "mesh: no host") {
		t.Errorf("ParsePeersMesh(\"\"): %v", err)
	}
}

// TestMeshExpiryTold: an agent renewing less often than half the
// registry's expiry is told so, once; its registration is one of the
// registry's.
func TestMeshExpiryTold(t *testing.T) {
	r, raddr, _ := meshAgent(t, "r", "", "")
	waitFor(t, func() bool { return r.registry.Len() == 1 }, func() string { return "the registry's agent did not register" })
	var log testutil.SyncBuffer
	a, err := New(Config{Host: "h", PeersMesh: raddr, Advertise: "127.0.0.1:7", Reload: time.Second, Probe: probeRequest(), Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	a.reload()
	a.reload()
	if n := strings.Count(log.String(), "forgets a registration 1s after its last renewal, and this agent renews it every 1s (--reload)"); n != 1 {
		t.Errorf("told %d times:\n%s", n, log.String())
	}
	if got := a.peerAddrs(); !slices.Contains(got, raddr) || slices.Contains(got, "127.0.0.1:7") {
		t.Errorf("peers %q: want the registry's agent, not itself", got)
	}
	if n := r.registry.Len(); n != 2 {
		t.Errorf("%d registrations, want 2", n)
	}
}
