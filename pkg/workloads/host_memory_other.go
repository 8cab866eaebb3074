//go:build !linux

package workloads

import "errors"

func memAvailable() (uint64, bool)      { return 0, false }
func lockedMemoryLimit() (uint64, bool) { return 0, false }

func freeHugePages(uint64) (uint64, string, error) {
	return 0, "", errors.New("huge pages are Linux's")
}
