//go:build !unix

package workloads

import (
	"errors"
	"net"
	"syscall"
)

// socketBuffers cannot read the socket buffers on this system.
func socketBuffers(*net.TCPConn) (snd, rcv int) { return 0, 0 }

// tclassControl cannot set the traffic class on this system.
func tclassControl(int) func(network, address string, c syscall.RawConn) error {
	return func(string, string, syscall.RawConn) error {
		return errors.New("setting IP_TOS is not supported on this system")
	}
}

// readTClass cannot read the traffic class on this system.
func readTClass(*net.TCPConn) int { return -1 }
