//go:build linux && cgo

package verbs_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// cmPair builds two QPs of type typ on the test device, unconnected, and
// the address of the port's IPv4 RoCE v2 GID for rdma_cm.
func cmPair(t *testing.T, typ verbs.QPType) (*pair, netip.Addr) {
	t.Helper()
	o := defaults(typ)
	o.connect = false
	if typ == verbs.UD {
		o.qkey = verbs.CMUDPQKey
	}
	p := newPair(t, o)
	table, err := p.ctx.GIDTable(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range table {
		if ip, ok := verbs.IPOf(e.GID); ok && e.Type == verbs.GIDTypeRoCEv2 && ip.Is4() {
			return p, ip
		}
	}
	t.Skipf("no RoCE v2 IPv4 GID on %s: rdma_cm needs an IP address", p.ctx.Name())
	return nil, netip.Addr{}
}

// cmConnect connects p.b (listening) and p.a (dialling) with rdma_cm.
func cmConnect(t *testing.T, p *pair, ip netip.Addr, ps verbs.PortSpace) (server, client verbs.CMInfo) {
	t.Helper()
	l, err := verbs.ListenCM(ip, ps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, l) })
	if l.Addr().Port() == 0 || l.Addr().Addr() != ip {
		t.Fatalf("listening on %s", l.Addr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type accepted struct {
		infos []verbs.CMInfo
		err   error
	}
	done := make(chan accepted, 1)
	go func() {
		infos, err := l.Accept(ctx, []*verbs.QP{p.b.qp}, []verbs.Endpoint{p.a.qp.Endpoint()}, 20*time.Second)
		done <- accepted{infos, err}
	}()
	c, err := verbs.DialCM(ctx, p.a.qp, 0, ip, l.Addr(), p.b.qp.Endpoint(), 20*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { closeOK(t, c) })
	a := <-done
	if a.err != nil {
		t.Fatalf("accept: %v", a.err)
	}
	return a.infos[0], c.Info()
}

// TestCMConnectRC: two RC QPs connected by rdma_cm carry SENDs, WRITEs and
// READs; each side knows what rdma_cm chose.
func TestCMConnectRC(t *testing.T) {
	p, ip := cmPair(t, verbs.RC)
	srv, cli := cmConnect(t, p, ip, verbs.PortSpaceTCP)
	for _, info := range []verbs.CMInfo{srv, cli} {
		if info.PortSpace != verbs.PortSpaceTCP || !info.Local.IsValid() || !info.Remote.IsValid() || info.PathMTU == 0 {
			t.Fatalf("rdma_cm chose %+v", info)
		}
		if got, _ := verbs.IPOf(info.GID); got != ip {
			t.Fatalf("source GID %s, want the GID of %s", info.GID, ip)
		}
	}
	if cli.Remote.Port() == 0 || srv.Local.Port() != cli.Remote.Port() {
		t.Fatalf("client's remote %s, server's local %s", cli.Remote, srv.Local)
	}
	if !p.a.qp.Connected() || !p.b.qp.Connected() || p.a.qp.PathMTU() != cli.PathMTU {
		t.Fatalf("connected %v %v, path MTU %d", p.a.qp.Connected(), p.b.qp.Connected(), p.a.qp.PathMTU())
	}
	sendRecv(t, p, []int{1, 4096, 65537}, false, 0)
	p.a, p.b = p.b, p.a
	sendRecv(t, p, []int{1, 4096}, true, 0)
}

// TestCMConnectUD: a UD QP learns its peer's QP number and address from
// rdma_cm (RDMA_PS_UDP), the passive side from the request.
func TestCMConnectUD(t *testing.T) {
	p, ip := cmPair(t, verbs.UD)
	srv, cli := cmConnect(t, p, ip, verbs.PortSpaceUDP)
	if srv.PortSpace != verbs.PortSpaceUDP || cli.PortSpace != verbs.PortSpaceUDP {
		t.Fatalf("port spaces %v %v", srv.PortSpace, cli.PortSpace)
	}
	mtu := int(p.a.qp.PathMTU())
	sendRecv(t, p, []int{1, mtu}, false, 40)
	p.a, p.b = p.b, p.a
	sendRecv(t, p, []int{64}, false, 40)
}

// TestCMRefusals: nobody listening, an address of no RDMA device, UC.
func TestCMRefusals(t *testing.T) {
	p, ip := cmPair(t, verbs.RC)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := verbs.ListenCM(ip, verbs.PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().Port()
	closeOK(t, l)
	if _, err := verbs.DialCM(ctx, p.a.qp, 0, ip, netip.AddrPortFrom(ip, port), p.b.qp.Endpoint(), 3*time.Second); err == nil {
		t.Fatal("dial with nobody listening succeeded")
	} else {
		t.Logf("nobody listening: %v", err)
	}
	if _, err := verbs.ListenCM(netip.MustParseAddr("192.0.2.1"), verbs.PortSpaceTCP); err == nil {
		t.Fatal("listen on an address of no device succeeded")
	}
	if _, ok := verbs.PortSpaceFor(verbs.UC); ok {
		t.Fatal("UC has a port space")
	}
}
