//go:build unix

package workloads

import (
	"fmt"
	"net"
	"strings"
	"syscall"
)

// socketBuffers reads c's SO_SNDBUF and SO_RCVBUF as the kernel set them
// (0 where they cannot be read).
func socketBuffers(c *net.TCPConn) (snd, rcv int) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, 0
	}
	_ = raw.Control(func(fd uintptr) {
		snd, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
		rcv, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
	})
	return snd, rcv
}

// tclassControl is a Dialer's or ListenConfig's Control that sets the
// traffic class of a socket's packets before it connects or listens, so
// that the handshake carries it too: IP_TOS (which an IPv6 socket uses for
// IPv4 peers, as mapped addresses), and IPV6_TCLASS on an IPv6 socket.
func tclassControl(tc int) func(network, address string, c syscall.RawConn) error {
	return func(network, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_TOS, tc)
			if serr == nil && strings.HasSuffix(network, "6") {
				serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IPV6, syscall.IPV6_TCLASS, tc)
			}
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("set IP_TOS %d: %w", tc, serr)
		}
		return nil
	}
}

// readTClass reads back the traffic class of c's packets as the kernel
// set it (-1 when it cannot be read): IP_TOS toward an IPv4 peer,
// IPV6_TCLASS toward an IPv6 one.
func readTClass(c *net.TCPConn) int {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1
	}
	level, opt := syscall.IPPROTO_IP, syscall.IP_TOS
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok && a.IP.To4() == nil {
		level, opt = syscall.IPPROTO_IPV6, syscall.IPV6_TCLASS
	}
	v := -1
	_ = raw.Control(func(fd uintptr) {
		if x, err := syscall.GetsockoptInt(int(fd), level, opt); err == nil {
			v = x & 0xff
		}
	})
	return v
}
