//go:build !unix

package workloads

import (
	"io"
	"net"
	"time"
)

// tcpConn is a connection as the TCP loops use it, each call bounded by the
// idle timeout.
type tcpConn struct {
	c    *net.TCPConn
	idle time.Duration
}

func newTCPConn(c *net.TCPConn, idle time.Duration) (*tcpConn, error) {
	return &tcpConn{c: c, idle: idle}, nil
}

func (c *tcpConn) write(b []byte) error {
	_ = c.c.SetWriteDeadline(time.Now().Add(c.idle))
	_, err := c.c.Write(b)
	return err
}

func (c *tcpConn) read(b []byte) (int, error) {
	_ = c.c.SetReadDeadline(time.Now().Add(c.idle))
	return c.c.Read(b)
}

func (c *tcpConn) readFull(b []byte) error {
	_ = c.c.SetReadDeadline(time.Now().Add(c.idle))
	_, err := io.ReadFull(c.c, b)
	return err
}

// Close closes the connection, which wakes any call blocked on it.
func (c *tcpConn) Close() error { return c.c.Close() }

func (c *tcpConn) release() {}
