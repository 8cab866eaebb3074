//go:build unix

package main

import (
	"os"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// TestServeStatsOnSIGUSR1: SIGUSR1 makes the server log its process stats.
func TestServeStatsOnSIGUSR1(t *testing.T) {
	_, log := startServer(t)
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`rdmabench serve: stats goroutines=\d+ fds=\d+ rss_kib=\d+ verbs_objects=0\n`)
	for i := 0; i < 200 && !re.MatchString(log.String()); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !re.MatchString(log.String()) {
		t.Fatalf("no stats line in the log:\n%s", log.String())
	}
}
