//go:build linux && cgo

package workloads

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// With -R, rdma_cm sets up the QPs' connections: the server listens on the
// address of its port, tells it to the client at "setup" (with its QPs'
// endpoints and buffers, as without -R), and accepts one connection per
// QP; the client connects each of its QPs, the request naming which of the
// server's it is for. The control connection still carries the spec, the
// buffers' keys and the results.

// cmQKey is the Q_Key UD QPs are made with: rdma_cm's with -R.
func cmQKey(s *Spec) uint32 {
	if s.RDMACM && s.Connection == "UD" {
		return verbs.CMUDPQKey
	}
	return 0 // the default
}

// cmOpen finds the address rdma_cm uses on this end (the IP of the QPs'
// GID, else of its network interface) and, on the server, listens there;
// it returns the listening address for the client.
func (e *rdmaRunner) cmOpen(netdev string) (string, error) {
	gid := e.qps[0].GIDChoice()
	ip, ok := verbs.IPOf(gid.GID)
	if !ok {
		ip, ok = interfaceIP(netdev)
	}
	if !ok {
		return "", fmt.Errorf("rdma_cm (-R) needs an IP address on %s port %d (its GID %s is not one, and its network interface %q has none)",
			e.dev.Name(), e.spec.Port, gid.GID, netdev)
	}
	e.cmIP = ip
	if e.role != serverEnd {
		return "", nil
	}
	ps, _ := verbs.PortSpaceFor(e.qps[0].Type())
	l, err := verbs.ListenCM(ip, ps)
	if err != nil {
		return "", err
	}
	e.cmListener = l
	return l.Addr().String(), nil
}

// interfaceIP is the first IPv4 address of the network interface name (a
// global IPv6 one if it has none).
func interfaceIP(name string) (netip.Addr, bool) {
	ifc, err := net.InterfaceByName(name)
	if name == "" || err != nil {
		return netip.Addr{}, false
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return netip.Addr{}, false
	}
	var v6 netip.Addr
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		switch ip = ip.Unmap(); {
		case !ok:
		case ip.Is4():
			return ip, true
		case !ip.IsLinkLocalUnicast() && !v6.IsValid():
			v6 = ip
		}
	}
	return v6, v6.IsValid()
}

// cmConnect connects every QP with rdma_cm: the server accepts the
// client's requests, the client makes them.
func (e *rdmaRunner) cmConnect(ctx context.Context, peer rdmaSetup) error {
	remote := make([]verbs.Endpoint, len(peer.QPs))
	for i, p := range peer.QPs {
		remote[i] = p.Endpoint
	}
	timeout := e.spec.IdleTimeout
	if e.role == serverEnd {
		infos, err := e.cmListener.Accept(ctx, e.qps, remote, timeout)
		if err != nil {
			return err
		}
		e.cmInfo = &infos[0]
		return nil
	}
	dst, err := netip.ParseAddrPort(peer.CM)
	if err != nil {
		return fmt.Errorf("the server gave no rdma_cm address (%q): is it an older rdmabench? %w", peer.CM, err)
	}
	for i, q := range e.qps {
		c, err := verbs.DialCM(ctx, q, i, e.cmIP, dst, remote[i], timeout)
		if err != nil {
			return fmt.Errorf("connect qp %d: %w", i, err)
		}
		e.cmConns = append(e.cmConns, c)
		if i == 0 {
			info := c.Info()
			e.cmInfo = &info
		}
	}
	return nil
}

// cmReport is what rdma_cm chose, for a result (nil without -R).
func (e *rdmaRunner) cmReport() *report.RDMACM {
	c := e.cmInfo
	if c == nil {
		return nil
	}
	r := &report.RDMACM{PortSpace: c.PortSpace.String(), GID: c.GID.String(), GIDIndex: c.GIDIndex,
		ClientAddr: c.Local.String(), ServerAddr: c.Remote.String()}
	if e.role == serverEnd {
		r.ClientAddr, r.ServerAddr = c.Remote.String(), c.Local.String()
	}
	return r
}

// cmClose disconnects and frees what rdma_cm holds (before the QPs).
func (e *rdmaRunner) cmClose() {
	for _, c := range e.cmConns {
		c.Close()
	}
	e.cmConns = nil
	e.cmListener.Close()
	e.cmListener = nil
}
