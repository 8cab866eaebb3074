// Package gpu gives tests buffers in GPU memory: the CUDA driver library
// (libcuda.so.1) loaded at run time with dlopen, so that one binary serves
// hosts with and without GPUs; the GPU chosen by index, by PCI bus id, or
// as the one nearest the NIC (sysfs); memory from cuMemAlloc, exported as
// a dma-buf (cuMemGetHandleForAddressRange) where the driver can.
package gpu

import (
	"errors"
	"os"
)

// Library is the CUDA driver library's name, as the NVIDIA driver installs it.
const Library = "libcuda.so.1"

// EnvLibrary names another library to load instead of Library: the tests'
// stand-in (testdata/standin_cuda.c). Not for users.
const EnvLibrary = "RDMABENCH_CUDA_LIBRARY"

// ErrNoGPU is wrapped by every error saying that this host cannot give GPU
// memory: no library, no GPU, a build without cgo.
var ErrNoGPU = errors.New("no GPU memory")

// ErrNoExport is wrapped when the driver cannot export a dma-buf of the
// memory; the caller may register the device pointer instead
// (nvidia-peermem).
var ErrNoExport = errors.New("no dma-buf export")

func libraryPath() string {
	if p := os.Getenv(EnvLibrary); p != "" {
		return p
	}
	return Library
}

// Info describes the GPU a Device is.
type Info struct {
	Index         int
	PCIBusID      string
	Name          string
	Chosen        string
	Library       string
	DriverVersion int
	// DmabufSupported is CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED.
	DmabufSupported bool
}
