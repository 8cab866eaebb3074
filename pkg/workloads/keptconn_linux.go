package workloads

import (
	"errors"
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

// keptDirectWaits counts the goroutines in a direct wait (recvDirect)
// now, in this process. Such a goroutine holds a processor (a P) while
// its thread sleeps, and Go's scheduler cannot hand that P to another
// goroutine: at most GOMAXPROCS-1 wait so, and the others wait in the
// poller, so that one P is always left for the rest of the process
// (a kept session's server end, a control connection) and none waits
// keptDirect for it.
var keptDirectWaits atomic.Int32

// keptConn is a kept session's connection, read and written with direct
// system calls (syscall.RawSyscall): its goroutine keeps its thread and
// processor, and a ping-pong costs a send and a recv that sleeps until
// the answer, with one wake-up of this thread. Through Go's poller each
// read would park the goroutine, wait in epoll on another thread and hand
// the wake-up back, and each system call after an idle moment wakes the
// runtime's monitor (sysmon), which then polls every 20us while the
// process works; a goroutine in a direct call does neither.
//
// The socket is a duplicate of the connection's, and Go's descriptor is
// closed, so that Go's poller is not woken at each message either. It is
// blocking, a recv's wait bounded by keptDirect (SO_RCVTIMEO), and every
// other call says MSG_DONTWAIT. A wait longer than keptDirect (the gap
// between bursts, a slow peer) goes on in Go's poller, where the
// goroutine holds nothing: the socket is in an epoll set of its own,
// one-shot, armed for that wait only, and Go's poller watches that set.
type keptConn struct {
	fd        int
	maxDirect int32 // GOMAXPROCS-1 when the connection was made
	// The poller's wait: ep is the socket's epoll set (Go's poller
	// watches it through epf), ready the test of it that rc.Read calls.
	ep    int
	epf   *os.File
	rc    syscall.RawConn
	ev    [1]unix.EpollEvent
	ready func(uintptr) bool
	mu    sync.Mutex // Close and release
	gone  bool       // released: fd may be another file's
	// slow, when not nil, is called before each wait in Go's poller
	// (pollerWait: no answer within keptDirect, no direct wait free, or a
	// full send buffer): Kept.OnSlow.
	slow func()
}

// newKeptConn takes c over: c is closed, the socket kept.
func newKeptConn(c *net.TCPConn) (*keptConn, error) {
	fd, err := dupSocket(c)
	if err != nil {
		return nil, err
	}
	// Go's descriptor of the socket turns blocking too, and is closed
	// below without another use.
	tv := unix.NsecToTimeval(int64(keptDirect))
	if err := errors.Join(unix.SetNonblock(fd, false), unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)); err != nil {
		_ = syscall.Close(fd)
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
	k := &keptConn{fd: fd, ep: ep, maxDirect: int32(runtime.GOMAXPROCS(0) - 1)}
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
	// open through the duplicate.
	_ = c.Close()
	return k, nil
}

// rawIO is one recvfrom or sendto of b, with flags (MSG_DONTWAIT: it
// does not block; without, a recv blocks up to the socket's SO_RCVTIMEO).
func rawIO(trap uintptr, fd int, b []byte, flags int) (int, syscall.Errno) {
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
		n, e := k.recvDirect(b[got:], deadline, direct)
		if e == syscall.EAGAIN || e == syscall.EINTR {
			// No direct wait, none answered within keptDirect, or a signal
			// (the runtime may be waiting to stop this goroutine): wait
			// where the goroutine can be stopped.
			if err := k.pollerWait(unix.POLLIN, deadline); err != nil {
				return err
			}
			n, e = rawIO(unix.SYS_RECVFROM, k.fd, b[got:], unix.MSG_DONTWAIT)
		}
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

// recvDirect is one recv into b that waits on this thread, at most
// keptDirect (the socket's SO_RCVTIMEO): one system call and one wake-up
// for the answer. It waits so only when direct, when the deadline is
// further than keptDirect (a nearer one is the poller's to keep exactly)
// and when fewer than maxDirect goroutines do; otherwise, and when no
// answer came, it says EAGAIN.
func (k *keptConn) recvDirect(b []byte, deadline time.Time, direct bool) (int, syscall.Errno) {
	if !direct || (!deadline.IsZero() && time.Until(deadline) <= keptDirect) {
		return 0, syscall.EAGAIN
	}
	if keptDirectWaits.Add(1) > k.maxDirect {
		keptDirectWaits.Add(-1)
		return 0, syscall.EAGAIN
	}
	n, e := rawIO(unix.SYS_RECVFROM, k.fd, b, 0)
	keptDirectWaits.Add(-1)
	return n, e
}

// write writes all of b, by deadline (zero: none).
func (k *keptConn) write(b []byte, deadline time.Time) error {
	for len(b) > 0 {
		n, e := rawIO(unix.SYS_SENDTO, k.fd, b, unix.MSG_DONTWAIT)
		switch {
		case e == syscall.EAGAIN || e == syscall.EINTR:
			// The socket's buffer is full (a peer that does not read):
			// not a ping-pong's wait.
			if err := k.pollerWait(unix.POLLOUT, deadline); err != nil {
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

// pollerWait waits in Go's poller: the socket's epoll set armed for
// events, once, Go's poller waiting for the set, after k.slow (when set)
// is told. Nothing here allocates, and every system call is direct.
func (k *keptConn) pollerWait(events int16, deadline time.Time) error {
	if k.slow != nil {
		k.slow()
	}
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
