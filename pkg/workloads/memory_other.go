//go:build !linux

package workloads

func memAvailable() (uint64, bool)      { return 0, false }
func lockedMemoryLimit() (uint64, bool) { return 0, false }
