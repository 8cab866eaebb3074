package watch

import (
	"context"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// timerfdClock is a slotClock on a timerfd read through Go's poller: the
// thread that the poller wakes runs the waiting prober itself, and no
// runtime timer is armed (whose wake-ups would rouse the runtime's
// monitor too). Each wait sets the timer to its slot's time, with a
// direct system call (no allocation, no wake-up of the runtime's monitor).
type timerfdClock struct {
	f    *os.File
	s    *slotSchedule
	base time.Duration // CLOCK_MONOTONIC at s.start
	buf  [8]byte
	// set sets the timer to spec through rc.Control (the descriptor
	// cannot be closed meanwhile), read reads its count of expirations
	// into buf through rc.Read (Go's poller waits while it says false),
	// each with a direct system call, its error in err: made once, they
	// allocate nothing. A call through the syscall package would wake the
	// runtime's monitor, which would then poll every 20us while the probe
	// runs.
	rc   syscall.RawConn
	set  func(fd uintptr)
	read func(fd uintptr) bool
	spec unix.ItimerSpec
	err  syscall.Errno
	// stopFn ends the closing of f at ctx's end, which ends a wait.
	stopFn func() bool
}

func newTimerfdClock(ctx context.Context, period time.Duration) (*timerfdClock, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	c := &timerfdClock{f: os.NewFile(uintptr(fd), "probe slots"), s: newSlotSchedule(period), base: time.Duration(ts.Nano())}
	if c.rc, err = c.f.SyscallConn(); err != nil {
		_ = c.f.Close()
		return nil, err
	}
	c.set = func(fd uintptr) {
		_, _, c.err = syscall.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, unix.TFD_TIMER_ABSTIME,
			uintptr(unsafe.Pointer(&c.spec)), 0, 0, 0)
	}
	c.read = func(fd uintptr) bool {
		_, _, c.err = syscall.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&c.buf[0])), uintptr(len(c.buf)))
		return c.err != syscall.EAGAIN && c.err != syscall.EINTR
	}
	c.stopFn = context.AfterFunc(ctx, func() { _ = c.f.Close() })
	return c, nil
}

func (c *timerfdClock) wait(ctx context.Context) (int, error) {
	at, dropped := c.s.next(time.Since(c.s.start))
	// An absolute time already past expires at once.
	c.spec.Value = unix.NsecToTimespec(int64(c.base + at))
	err := c.rc.Control(c.set)
	if err == nil && c.err == 0 {
		err = c.rc.Read(c.read)
	}
	if err == nil && c.err != 0 {
		err = c.err
	}
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, err
	}
	return 1 + dropped, nil
}

func (c *timerfdClock) stop() {
	c.stopFn()
	_ = c.f.Close()
}
