//go:build !linux

package workloads

import (
	"runtime"
	"time"
)

// onLoopThread runs f on an OS thread of its own. CPU time per thread is
// not measured on this system.
func onLoopThread(f func()) cpuSpan {
	done := make(chan cpuSpan, 1)
	go func() {
		runtime.LockOSThread()
		t0 := time.Now()
		f()
		done <- cpuSpan{wall: time.Since(t0)}
	}()
	return <-done
}
