//go:build unix

package workloads

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The loops' duplicate of a connection's descriptor is close-on-exec, as
// Go's own are: a process started meanwhile does not keep the connection.
func TestTCPConnCloseOnExec(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			time.Sleep(time.Second)
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := newTCPConn(nc.(*net.TCPConn), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.release()
	defer c.Close()
	flags, err := unix.FcntlInt(uintptr(c.fd), unix.F_GETFD, 0)
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("the duplicate descriptor %d is not close-on-exec (flags %#x)", c.fd, flags)
	}
}
