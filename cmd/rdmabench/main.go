// Command rdmabench measures RDMA latency and bandwidth (write, read, send,
// atomic) the way perftest does, beside a TCP baseline, and reports full
// latency distributions as tables or JSON.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var done reported
	if err != nil && !errors.As(err, &done) {
		fmt.Fprintln(os.Stderr, "rdmabench:", err)
	}
	os.Exit(exitCode(err))
}
