//go:build linux

package workloads

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// privateFiles gives each loop thread its own copy of the file descriptor
// table (unshare(CLONE_FILES)). In a process of one thread the kernel
// looks a descriptor up without taking a reference on its file; in a Go
// process, which always has several threads, every system call on a
// descriptor pays for that reference, and Soft-RoCE rings its doorbell
// with a write() on the verbs device for every post. A thread with a
// table of its own pays nothing more than a one-thread program such as
// perftest. Set at link time ("-X ...workloads.privateFiles=no") to
// measure the difference.
var privateFiles = "yes"

// onLoopThread runs f on an OS thread of its own, which ends with it (so
// the copy of the descriptor table, which holds the device's file open,
// goes too), and returns the CPU time that thread used and the wall time
// it took.
func onLoopThread(f func()) cpuSpan {
	done := make(chan cpuSpan, 1)
	go func() {
		// Never unlocked: the thread exits when this goroutine returns.
		runtime.LockOSThread()
		if privateFiles == "yes" {
			_ = unix.Unshare(unix.CLONE_FILES) // without it the loop only runs a little slower
		}
		var r0, r1 unix.Rusage
		_ = unix.Getrusage(unix.RUSAGE_THREAD, &r0)
		t0 := time.Now()
		f()
		wall := time.Since(t0)
		_ = unix.Getrusage(unix.RUSAGE_THREAD, &r1)
		done <- cpuSpan{
			user: time.Duration(unix.TimevalToNsec(r1.Utime) - unix.TimevalToNsec(r0.Utime)),
			sys:  time.Duration(unix.TimevalToNsec(r1.Stime) - unix.TimevalToNsec(r0.Stime)),
			wall: wall,
		}
	}()
	return <-done
}
