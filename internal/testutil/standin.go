package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// BuildCUDAStandIn compiles the stand-in CUDA driver library
// (testdata/standin_cuda.c, beside this file) with gcc into dir and returns
// its path, for gpu.EnvLibrary. It is for tests: its "GPU memory" is host
// memory; it proves the plumbing, never a GPU.
func BuildCUDAStandIn(dir string) (string, error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("cannot find the stand-in's source")
	}
	src := filepath.Join(filepath.Dir(self), "testdata", "standin_cuda.c")
	out := filepath.Join(dir, "libcuda-standin.so")
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	cmd := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", out, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", cc, src, err, b)
	}
	return out, nil
}
