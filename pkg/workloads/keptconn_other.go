//go:build !linux

package workloads

import (
	"io"
	"net"
	"time"
)

// keptConn is a kept session's connection, through Go's poller, each call
// by the deadline given (zero: none).
type keptConn struct {
	c    *net.TCPConn
	slow func() // called before each read: every wait is the poller's (Kept.OnSlow)
}

func newKeptConn(c *net.TCPConn) (*keptConn, error) { return &keptConn{c: c}, nil }

func (k *keptConn) readFull(b []byte, deadline time.Time, _ bool) error {
	if k.slow != nil {
		k.slow()
	}
	_ = k.c.SetReadDeadline(deadline)
	_, err := io.ReadFull(k.c, b)
	return err
}

func (k *keptConn) write(b []byte, deadline time.Time) error {
	_ = k.c.SetWriteDeadline(deadline)
	_, err := k.c.Write(b)
	return err
}

// Close closes the connection, which wakes any call blocked on it.
func (k *keptConn) Close() error { return k.c.Close() }

func (k *keptConn) release() {}
