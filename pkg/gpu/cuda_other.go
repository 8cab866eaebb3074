//go:build !linux || !cgo

package gpu

import "fmt"

// Device is a GPU; this build has none.
type Device struct{}

// Memory is GPU memory; this build has none.
type Memory struct{}

// Open fails: GPU memory needs Linux and cgo (dlopen of the driver).
func Open(string, string) (*Device, error) {
	return nil, fmt.Errorf("%w: this build has no GPU support (GPU memory needs Linux and cgo, to load %s)", ErrNoGPU, Library)
}

// Close does nothing.
func (*Device) Close() error { return nil }
