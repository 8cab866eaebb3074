//go:build unix

package workloads

import (
	"net"
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
