package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// registryServer serves an echo test server keeping reg on a loopback
// port, with token.
func registryServer(t *testing.T, reg *Registry, token string) *testServer {
	t.Helper()
	opt := serverOpts()
	opt.Registry, opt.Token = reg, token
	return startServer(t, newEcho(), opt)
}

func addrsOf(ans *Registrations) []string {
	var out []string
	for _, p := range ans.Peers {
		out = append(out, p.Addr)
	}
	return out
}

// TestRegistry: agents register over the protocol and each gets every live
// registration back, its own address as the registry recorded it (the
// connection's host for an unspecified one); a registration not renewed
// is forgotten after the expiry; the server still runs tests.
func TestRegistry(t *testing.T) {
	noLeaks(t)
	reg := NewRegistry(8, time.Minute)
	now := time.Unix(1000, 0)
	reg.now = func() time.Time { return now }
	ts := registryServer(t, reg, "s3cret")
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	opt := clientOpts()
	opt.Token = "s3cret"
	a, err := Register(ctx, ts.addr, opt, AgentRegistration{Host: "node-a", Addr: "10.0.0.1:19515"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Self != "10.0.0.1:19515" || a.ExpiryMS != 60000 || !slices.Equal(addrsOf(a), []string{"10.0.0.1:19515"}) {
		t.Fatalf("first registration's answer %+v", a)
	}
	b, err := Register(ctx, ts.addr, opt, AgentRegistration{Host: "node-b", Addr: "[::]:19600"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Self != "127.0.0.1:19600" || !slices.Equal(addrsOf(b), []string{"10.0.0.1:19515", "127.0.0.1:19600"}) {
		t.Fatalf("second registration's answer %+v", b)
	}
	if b.Peers[0].Host != "node-a" || b.Peers[1].Host != "node-b" {
		t.Errorf("hosts %+v", b.Peers)
	}
	// a renews, b does not: b is forgotten.
	now = now.Add(40 * time.Second)
	if _, err := Register(ctx, ts.addr, opt, AgentRegistration{Host: "node-a", Addr: "10.0.0.1:19515"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(30 * time.Second)
	a, err = Register(ctx, ts.addr, opt, AgentRegistration{Host: "node-a", Addr: "10.0.0.1:19515"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(addrsOf(a), []string{"10.0.0.1:19515"}) || reg.Len() != 1 {
		t.Fatalf("after b's expiry: %+v", a)
	}
	waitLog(t, ts, "registration 127.0.0.1:19600 expired")
	goodClient(t, ts.addr, opt)
}

// TestRegistryRefusals: a malformed registration is refused by name (code
// "spec"), one over the cap is refused "limit" while renewals go on, a
// wrong token "auth", and a server without a registry says so.
func TestRegistryRefusals(t *testing.T) {
	noLeaks(t)
	reg := NewRegistry(2, time.Minute)
	ts := registryServer(t, reg, "s3cret")
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	opt := clientOpts()
	opt.Token = "s3cret"
	for _, tc := range []struct {
		r    AgentRegistration
		want string
	}{
		{AgentRegistration{Host: "h"}, "bad registration: no addr"},
		{AgentRegistration{Addr: "10.0.0.1"}, "want HOST:PORT"},
		{AgentRegistration{Addr: "10.0.0.1:0"}, "want 1..65535"},
		{AgentRegistration{Addr: "bad host:1"}, "is not a host name or address"},
		{AgentRegistration{Host: "a b", Addr: "10.0.0.1:1"}, "want a host name"},
	} {
		_, err := Register(ctx, ts.addr, opt, tc.r)
		var se *ServerError
		if !errors.As(err, &se) || se.Code != CodeSpec || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a spec error with %q", tc.r, err, tc.want)
		}
	}
	// Not an agent's registration at all: a mesh rank's, raw.
	r := dialRaw(t, ts.addr)
	r.handshake("s3cret")
	r.write(&Message{Type: TypeRegister, Data: json.RawMessage(`[1,2]`)})
	if msg := r.expectError(CodeSpec); !strings.Contains(msg, "not a JSON object") {
		t.Errorf("an array registered: %q", msg)
	}
	r.write(&Message{Type: TypeRegister, Data: json.RawMessage(`{"addr":"10.0.0.9:1"}`)}) // the connection stays usable
	r.expect(TypePeers)
	r.write(&Message{Type: TypeBye})

	if _, err := Register(ctx, ts.addr, opt, AgentRegistration{Addr: "10.0.0.1:1"}); err != nil { // the second of 2
		t.Fatal(err)
	}
	_, err := Register(ctx, ts.addr, opt, AgentRegistration{Addr: "10.0.0.3:1"})
	var se *ServerError
	if !errors.As(err, &se) || se.Code != CodeLimit || !strings.Contains(err.Error(), "the registry is full") {
		t.Errorf("over the cap: %v", err)
	}
	if _, err := Register(ctx, ts.addr, opt, AgentRegistration{Addr: "10.0.0.1:1"}); err != nil {
		t.Errorf("a renewal at the cap: %v", err)
	}

	bad := clientOpts()
	bad.Token = "wrong"
	if _, err := Register(ctx, ts.addr, bad, AgentRegistration{Addr: "10.0.0.4:1"}); !errors.Is(err, ErrAuth) {
		t.Errorf("wrong token: %v", err)
	}
	if reg.Len() != 2 {
		t.Errorf("%d registrations, want 2", reg.Len())
	}

	plain := startServer(t, newEcho(), serverOpts())
	_, err = Register(ctx, plain.addr, clientOpts(), AgentRegistration{Addr: "10.0.0.1:1"})
	if !errors.As(err, &se) || se.Code != CodeProtocol || !strings.Contains(err.Error(), "keeps no registry") || !strings.Contains(err.Error(), "--registry") {
		t.Errorf("a server without a registry: %v", err)
	}
}

// FuzzParseRegistration: any data is a registration or a
// *RegistrationError, never a panic; a good one's address is HOST:PORT
// and parses again as itself.
func FuzzParseRegistration(f *testing.F) {
	f.Add([]byte(`{"host":"node-a","addr":"10.0.0.1:19515"}`), "10.0.0.1:4000")
	f.Add([]byte(`{"addr":":19515"}`), "[fd00::1]:4000")
	f.Add([]byte(`{"addr":"[::]:1"}`), "junk")
	f.Add([]byte(`{"rank":3}`), "10.0.0.1:1")
	f.Fuzz(func(t *testing.T, data []byte, from string) {
		r, err := ParseRegistration(data, from)
		if err != nil {
			var re *RegistrationError
			if !errors.As(err, &re) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		b, _ := json.Marshal(r)
		r2, err := ParseRegistration(b, "")
		if err != nil || r2 != r {
			t.Fatalf("%+v does not parse again as itself: %+v, %v", r, r2, err)
		}
	})
}

// BenchmarkRegister: one agent's renewal (a connection, the handshake
// with a token, register, the answer, bye) at a registry of 1024.
func BenchmarkRegister(b *testing.B) {
	reg := NewRegistry(1024, time.Hour)
	for i := range 1023 {
		if _, err := reg.Register(json.RawMessage(fmt.Sprintf(`{"host":"node%d","addr":"10.0.%d.%d:19515"}`, i, i/250, i%250+1)), "10.0.0.1:1"); err != nil {
			b.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer(newEcho(), ServerOptions{Token: "s3cret", Registry: reg}).Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	opt := ClientOptions{Token: "s3cret"}
	b.ResetTimer()
	for range b.N {
		ans, err := Register(ctx, ln.Addr().String(), opt, AgentRegistration{Host: "me", Addr: "10.9.9.9:19515"})
		if err != nil || len(ans.Peers) != 1024 {
			b.Fatal(err)
		}
	}
}
