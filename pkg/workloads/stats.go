package workloads

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// ProcessStats are what a long-running server holds: what must come back
// to its starting level after each test (a soak test compares them).
type ProcessStats struct {
	Goroutines int
	// FDs is the number of open file descriptors (-1 where /proc cannot
	// tell).
	FDs int
	// RSSKiB is the resident memory (-1 where /proc cannot tell).
	RSSKiB int64
	// VerbsObjects is how many verbs objects (device contexts, PDs, MRs,
	// CQs, QPs, loops) are open.
	VerbsObjects int
}

// Stats returns this process's ProcessStats.
func Stats() ProcessStats {
	st := ProcessStats{Goroutines: runtime.NumGoroutine(), FDs: -1, RSSKiB: -1, VerbsObjects: len(verbs.OpenObjects())}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		st.FDs = len(fds) - 1 // the descriptor that read the folder
	}
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				if kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
					st.RSSKiB = kib
				}
			}
		}
	}
	return st
}

// String is the stats as key=value pairs, for a log line.
func (s ProcessStats) String() string {
	return fmt.Sprintf("goroutines=%d fds=%d rss_kib=%d verbs_objects=%d", s.Goroutines, s.FDs, s.RSSKiB, s.VerbsObjects)
}
