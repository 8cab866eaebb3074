//go:build !linux || !cgo

package verbs

import (
	"fmt"
	"sync"
	"time"
)

// Supported reports whether this build has libibverbs.
const Supported = false

// errNoVerbs is what every device call returns in this build.
var errNoVerbs = fmt.Errorf("%w: built without libibverbs (RDMA needs Linux and cgo; rebuild with CGO_ENABLED=1 and libibverbs-dev installed)", ErrNotSupported)

// NoDeviceHelp says how to get an RDMA device.
const NoDeviceHelp = "rebuild rdmabench on Linux with cgo and libibverbs"

// DeviceNames returns an error wrapping ErrNotSupported in this build.
func DeviceNames() ([]string, error) { return nil, errNoVerbs }

// Devices returns an error wrapping ErrNotSupported in this build.
func Devices() ([]DeviceInfo, error) { return nil, errNoVerbs }

// CQ is a completion queue; this build cannot create one.
type CQ struct{}

var clockOnce struct {
	sync.Once
	info ClockInfo
}

// Clock describes the clock this build times with: Go's monotonic clock,
// measured once.
func Clock() ClockInfo {
	clockOnce.Do(func() { clockOnce.info = measureGoClock() })
	return clockOnce.info
}

func measureGoClock() ClockInfo {
	var best time.Duration = time.Hour
	for i := 0; i < 20000; i++ {
		a := time.Now()
		b := time.Now()
		for b.Sub(a) == 0 {
			b = time.Now()
		}
		best = min(best, b.Sub(a))
	}
	const n = 1000000
	t0 := time.Now()
	for i := 0; i < n; i++ {
		_ = time.Now()
	}
	cost := float64(time.Since(t0).Nanoseconds()) / n
	return ClockInfo{Source: "Go time.Now (monotonic)", ResolutionNs: float64(best.Nanoseconds()), ReadCostNs: cost}
}
