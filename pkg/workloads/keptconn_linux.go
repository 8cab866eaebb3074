package workloads

import (
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// keptDirect is how long a kept session's end waits for its peer on its own
// thread before it waits in Go's poller: longer than a ping-pong within a
// burst, short enough that the runtime, which cannot stop a goroutine in
// such a wait (a stop of the world waits for it), waits little.
const keptDirect = time.Millisecond

// keptDirectWaits counts the goroutines in a direct wait (keptConn.wait)
// now, in this process. Such a goroutine holds a processor (a P) while
// its thread sleeps, and Go's scheduler cannot hand that P to another
// goroutine: at most GOMAXPROCS-1 wait so, and the others wait in the
// poller, so that one P is always left for the rest of the process
// (a kept session's server end, a control connection) and none waits
// keptDirect for it.
var keptDirectWaits atomic.Int32

// keptConn is a kept session's connection, read and written with direct
// system calls (syscall.RawSyscall): its goroutine keeps its thread and
// processor, and a ping-pong costs a send, a ppoll that sleeps until the
// answer and a recv, with one wake-up of this thread. Through Go's poller
// each read would park the goroutine, wait in epoll on another thread and
// hand the wake-up back, and each system call after an idle moment wakes
// the runtime's monitor (sysmon), which then polls every 20us while the
// process works; a goroutine in a direct call does neither.
//
// The socket is a duplicate of the connection's, non-blocking, and Go's
// descriptor is closed, so that Go's poller is not woken at each message
// either. A wait longer than keptDirect (the gap between bursts, a slow
// peer) goes on in Go's poller, where the goroutine holds nothing: the
// socket is in an epoll set of its own, one-shot, armed for that wait
// only, and Go's poller watches that set.
type keptConn struct {
	fd int
	// The direct wait's arguments, in the connection so that no wait
	// allocates: the socket, keptDirect, and the timeout of this wait.
	pfd        unix.PollFd
	direct, ts unix.Timespec
	maxDirect  int32 // GOMAXPROCS-1 when the connection was made
	// The poller's wait: ep is the socket's epoll set (Go's poller
	// watches it through epf), ready the test of it that rc.Read calls.
	ep    int
	epf   *os.File
	rc    syscall.RawConn
	ev    [1]unix.EpollEvent
	ready func(uintptr) bool
	mu    sync.Mutex // Close and release
	gone  bool       // released: fd may be another file's
}

// newKeptConn takes c over: c is closed, the socket kept.
func newKeptConn(c *net.TCPConn) (*keptConn, error) {
	fd, err := dupSocket(c)
	if err != nil {
		return nil, err
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		_ = syscall.Close(fd)
		return nil, err
	}
	// Disarmed until a wait arms it.
	if err = unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLONESHOT, Fd: int32(fd)}); err == nil {
		err = unix.SetNonblock(ep, true)
	}
	if err != nil {
		_ = syscall.Close(ep)
		_ = syscall.Close(fd)
		return nil, err
	}
	k := &keptConn{fd: fd, pfd: unix.PollFd{Fd: int32(fd)}, direct: unix.NsecToTimespec(int64(keptDirect)), ep: ep,
		maxDirect: int32(runtime.GOMAXPROCS(0) - 1)}
	k.epf = os.NewFile(uintptr(ep), "kept session epoll") // non-blocking: in Go's poller
	if k.rc, err = k.epf.SyscallConn(); err != nil {
		_ = k.epf.Close()
		_ = syscall.Close(fd)
		return nil, err
	}
	k.ready = func(uintptr) bool {
		n, _, e := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(k.ep), uintptr(unsafe.Pointer(&k.ev[0])), 1, 0, 0, 0)
		return n > 0 || (e != 0 && e != syscall.EINTR && e != syscall.EAGAIN)
	}
	// Go's descriptor leaves its poller as it closes; the socket stays
	// open through the duplicate (non-blocking, as Go made it).
	_ = c.Close()
	return k, nil
}

// rawIO is one recvfrom or sendto of b that never blocks.
func rawIO(trap uintptr, fd int, b []byte) (int, syscall.Errno) {
	flags := unix.MSG_DONTWAIT
	if trap == unix.SYS_SENDTO {
		flags |= unix.MSG_NOSIGNAL // EPIPE, not SIGPIPE
	}
	n, _, e := syscall.RawSyscall6(trap, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(flags), 0, 0)
	return int(n), e
}

// readFull reads exactly len(b) bytes, by deadline (zero: none); direct
// false: its wait is in Go's poller from the start (the peer is not
// expected to answer soon).
func (k *keptConn) readFull(b []byte, deadline time.Time, direct bool) error {
	for got := 0; got < len(b); {
		if err := k.wait(unix.POLLIN, deadline, direct); err != nil {
			return err
		}
		n, e := rawIO(unix.SYS_RECVFROM, k.fd, b[got:])
		switch {
		case e == syscall.EAGAIN || e == syscall.EINTR:
		case e != 0:
			return e
		case n == 0 && got > 0:
			return io.ErrUnexpectedEOF
		case n == 0:
			return io.EOF
		}
		got += max(n, 0)
	}
	return nil
}

// write writes all of b, by deadline (zero: none).
func (k *keptConn) write(b []byte, deadline time.Time) error {
	for len(b) > 0 {
		n, e := rawIO(unix.SYS_SENDTO, k.fd, b)
		switch {
		case e == syscall.EAGAIN || e == syscall.EINTR:
			if err := k.wait(unix.POLLOUT, deadline, true); err != nil {
				return err
			}
			continue
		case e != 0:
			return e
		}
		b = b[n:]
	}
	return nil
}

// wait waits until the socket is ready for events (or has an error or
// was shut down): on this thread up to keptDirect (when direct, and fewer
// than maxDirect goroutines wait so), then in Go's poller, by deadline
// (zero: none).
func (k *keptConn) wait(events int16, deadline time.Time, direct bool) error {
	if !direct || keptDirectWaits.Add(1) > k.maxDirect {
		if direct {
			keptDirectWaits.Add(-1)
		}
		return k.pollerWait(events, deadline)
	}
	done, err := k.directWait(events, deadline)
	keptDirectWaits.Add(-1)
	if done {
		return err
	}
	// No answer within keptDirect, or a signal (the runtime may be waiting
	// to stop this goroutine): wait where the goroutine can be stopped.
	return k.pollerWait(events, deadline)
}

// directWait is wait's wait on this thread: done false when it ended
// without the socket ready nor an error (keptDirect passed, a signal).
func (k *keptConn) directWait(events int16, deadline time.Time) (done bool, err error) {
	k.ts = k.direct // ppoll leaves in it the time it did not wait
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return true, os.ErrDeadlineExceeded
		}
		if d < keptDirect {
			k.ts = unix.NsecToTimespec(int64(d))
		}
	}
	k.pfd.Events = events
	n, _, e := syscall.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&k.pfd)), 1, uintptr(unsafe.Pointer(&k.ts)), 0, 0, 0)
	switch {
	case e == 0 && n > 0:
		return true, nil
	case e != 0 && e != syscall.EINTR:
		return true, e
	}
	return false, nil
}

// pollerWait waits in Go's poller: the socket's epoll set armed for
// events, once, Go's poller waiting for the set. Nothing here allocates,
// and every system call is direct.
func (k *keptConn) pollerWait(events int16, deadline time.Time) error {
	ev := unix.EpollEvent{Events: uint32(events) | unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: int32(k.fd)}
	if _, _, e := syscall.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(k.ep), unix.EPOLL_CTL_MOD, uintptr(k.fd), uintptr(unsafe.Pointer(&ev)), 0, 0); e != 0 {
		return e
	}
	// The set is readable when the socket is ready, for writing too.
	if err := k.epf.SetReadDeadline(deadline); err != nil {
		return err
	}
	return k.rc.Read(k.ready)
}

// Close shuts the connection down, which ends a wait on it in another
// goroutine; the descriptor stays open until release, so that its number
// cannot be another file's under a loop still returning.
func (k *keptConn) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gone {
		return nil
	}
	return syscall.Shutdown(k.fd, syscall.SHUT_RDWR)
}

// release closes the descriptor, once no loop uses the connection.
func (k *keptConn) release() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.gone {
		k.gone = true
		_ = k.epf.Close()
		_ = syscall.Close(k.fd)
	}
}
