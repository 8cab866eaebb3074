//go:build !linux

package workloads

import (
	"runtime"
	"time"
)

// onLoopThread runs f on an OS thread of its own. CPU time per thread is
// not measured on this system, and the thread is not pinned.
func onLoopThread(_ *placement, f func()) cpuSpan {
	done := make(chan cpuSpan, 1)
	go func() {
		runtime.LockOSThread()
		t0 := time.Now()
		f()
		done <- cpuSpan{wall: time.Since(t0)}
	}()
	return <-done
}

// allowedCPUs are the cores this process may run on: every one, as far as
// this system says.
func allowedCPUs() []int {
	out := make([]int, runtime.NumCPU())
	for i := range out {
		out[i] = i
	}
	return out
}
