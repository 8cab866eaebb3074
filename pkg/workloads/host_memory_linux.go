//go:build linux

package workloads

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// memAvailable reads MemAvailable from /proc/meminfo.
func memAvailable() (uint64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// lockedMemoryLimit is RLIMIT_MEMLOCK, where it binds: not unlimited, and
// the process cannot lock memory beyond it (CAP_IPC_LOCK, which root has).
func lockedMemoryLimit() (uint64, bool) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY || os.Geteuid() == 0 {
		return 0, false
	}
	return rl.Cur, true
}

// freeHugePages reads the free huge pages of size page bytes, and the file
// it read them from.
func freeHugePages(page uint64) (uint64, string, error) {
	path := fmt.Sprintf("/sys/kernel/mm/hugepages/hugepages-%dkB/free_hugepages", page>>10)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, path, err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n, path, err
}
