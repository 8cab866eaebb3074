//go:build unix

package watch

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/remote"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// BenchmarkProbe is one tcp-lat probe (-n 10) over a kept control
// connection to a test server in this process: both ends' cost, wall
// (ns/op) and CPU (cpu-ms/op), as `go test -run X -bench Probe -benchtime
// 300x ./pkg/watch` measures it on one host (loopback).
func BenchmarkProbe(b *testing.B) {
	ln := listen(&testing.T{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = remote.Serve(ctx, ln, &workloads.Server{}, control.ServerOptions{}) }()
	a, err := New(Config{PeersFile: "unused", Probe: probeRequest()})
	if err != nil {
		b.Fatal(err)
	}
	var c *remote.Client
	before := cpuTime()
	b.ResetTimer()
	for range b.N {
		var err error
		if _, c, err = a.probeOnce(ctx, a.run, ln.Addr().String(), c); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-before).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
	if c != nil {
		c.Close()
	}
}

// cpuTime is this process's CPU time, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
