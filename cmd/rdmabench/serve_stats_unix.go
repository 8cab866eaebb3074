//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// logStatsOnSignal prints a line of the server's process stats on log at
// each SIGUSR1 until ctx ends (`kill -USR1 PID`, as scripts/soak.sh does).
func logStatsOnSignal(ctx context.Context, log io.Writer) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	go func() {
		defer signal.Stop(sigs)
		for {
			select {
			case <-sigs:
				fmt.Fprintf(log, "rdmabench serve: stats %s\n", workloads.Stats())
			case <-ctx.Done():
				return
			}
		}
	}()
}
