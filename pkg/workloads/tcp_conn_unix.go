//go:build unix

package workloads

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// tcpConn is a connection as the TCP loops use it: a blocking duplicate of
// its descriptor, read and written with plain system calls on the loop's
// own thread, as a C benchmark would (Go's poller would hand every wake-up
// to another thread). SO_RCVTIMEO and SO_SNDTIMEO bound each call by the
// idle timeout; shutdown wakes a call blocked in another thread.
type tcpConn struct {
	c  *net.TCPConn
	fd int
}

// dupSocket duplicates c's socket descriptor, close-on-exec as Go's own
// descriptors are (a process this one starts must not keep the
// connection open).
func dupSocket(c *net.TCPConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, fmt.Errorf("dup: %w", derr)
	}
	return fd, nil
}

func newTCPConn(c *net.TCPConn, idle time.Duration) (*tcpConn, error) {
	fd, err := dupSocket(c)
	if err != nil {
		return nil, err
	}
	// The file status is the socket's: Go's descriptor turns blocking too,
	// and is not read or written again.
	tv := syscall.NsecToTimeval(idle.Nanoseconds())
	for _, err := range []error{syscall.SetNonblock(fd, false),
		syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv),
		syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv)} {
		if err != nil {
			syscall.Close(fd)
			return nil, err
		}
	}
	return &tcpConn{c: c, fd: fd}, nil
}

// sysErr maps what a call on the socket returned.
func sysErr(err error) error {
	if errors.Is(err, syscall.EAGAIN) {
		return fmt.Errorf("%w (%w)", os.ErrDeadlineExceeded, err)
	}
	return err
}

// write writes all of b.
func (c *tcpConn) write(b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(c.fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return sysErr(err)
		}
		b = b[n:]
	}
	return nil
}

// read reads what has arrived, up to len(b); 0 bytes is io.EOF.
func (c *tcpConn) read(b []byte) (int, error) {
	for {
		n, err := syscall.Read(c.fd, b)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, sysErr(err)
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// readFull reads exactly len(b) bytes.
func (c *tcpConn) readFull(b []byte) error {
	for got := 0; got < len(b); {
		n, err := c.read(b[got:])
		if err != nil {
			if got > 0 && err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		got += n
	}
	return nil
}

// Close shuts the connection down, which wakes a call blocked on it in
// another thread, and closes Go's descriptor. The duplicate stays open, so
// that its number cannot be reused under a loop still returning, until
// release.
func (c *tcpConn) Close() error {
	_ = syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
	return c.c.Close()
}

// release closes the duplicate, once no loop uses the connection.
func (c *tcpConn) release() { _ = syscall.Close(c.fd) }
