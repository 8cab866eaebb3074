//go:build !unix

package workloads

import "net"

// socketBuffers cannot read the socket buffers on this system.
func socketBuffers(*net.TCPConn) (snd, rcv int) { return 0, 0 }
