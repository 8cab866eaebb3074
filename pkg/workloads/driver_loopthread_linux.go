//go:build linux

package workloads

import (
	"runtime"
	"time"
	"unsafe"

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
// goes too), pinned to the cores of p (nil or no cores: not pinned), and
// returns the CPU time that thread used, the wall time it took and the
// cores it was seen on.
func onLoopThread(p *placement, f func()) cpuSpan {
	done := make(chan cpuSpan, 1)
	go runOnLoopThread(p, f, done)
	return <-done
}

// runOnLoopThread is onLoopThread's goroutine, never on the process's main
// thread: Go does not end that thread when a goroutine locked to it
// returns (it parks it for good), so its copy of the descriptor table,
// and every file open when it was made (the device contexts of the tests
// running then, their connections, the listeners), would stay open for
// the life of the process; and /proc/PID/fd, the process's table as the
// kernel shows it, is the main thread's, which would show that copy.
func runOnLoopThread(p *placement, f func(), done chan<- cpuSpan) {
	// Never unlocked on a loop thread: the thread exits when this
	// goroutine returns.
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// The main thread, held by this goroutine meanwhile, so that the
		// one started here runs on another.
		moved := make(chan cpuSpan, 1)
		go runOnLoopThread(p, f, moved)
		done <- <-moved
		runtime.UnlockOSThread()
		return
	}
	if privateFiles == "yes" {
		_ = unix.Unshare(unix.CLONE_FILES) // without it the loop only runs a little slower
	}
	var pinErr error
	if p != nil && len(p.cpus) > 0 {
		var set unix.CPUSet
		for _, c := range p.cpus {
			set.Set(c)
		}
		pinErr = unix.SchedSetaffinity(0, &set) // 0: this thread
	}
	var r0, r1 unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &r0)
	t0 := time.Now()
	c0 := currentCPU()
	f()
	c1 := currentCPU()
	wall := time.Since(t0)
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &r1)
	done <- cpuSpan{
		user:   time.Duration(unix.TimevalToNsec(r1.Utime) - unix.TimevalToNsec(r0.Utime)),
		sys:    time.Duration(unix.TimevalToNsec(r1.Stime) - unix.TimevalToNsec(r0.Stime)),
		wall:   wall,
		cores:  mergeCores(cpuSet(c0), cpuSet(c1)),
		pinErr: pinErr,
	}
}

// currentCPU is the core this thread runs on now (getcpu), or -1.
func currentCPU() int {
	var cpu, node uint32
	if _, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), uintptr(unsafe.Pointer(&node)), 0); e != 0 {
		return -1
	}
	return int(cpu)
}

func cpuSet(c int) []int {
	if c < 0 {
		return nil
	}
	return []int{c}
}

// allowedCPUs are the cores this process may run on (sched_getaffinity).
func allowedCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var out []int
	for c := 0; c < maxCPU && c < len(set)*64; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}
