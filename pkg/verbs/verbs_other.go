//go:build !linux || !cgo

package verbs

import "fmt"

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
