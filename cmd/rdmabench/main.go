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
	ctx, stop := interruptible()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var done reported
	if err != nil && !errors.As(err, &done) {
		fmt.Fprint(os.Stderr, errorText(err))
	}
	code := exitCode(err)
	var sig interrupted
	if err != nil && errors.As(context.Cause(ctx), &sig) {
		code = sig.exitCode()
	}
	os.Exit(code)
}

// interrupted is why a run stopped early: a signal. SIGINT, SIGTERM and
// SIGHUP stop a run alike: the results measured are kept, written and
// printed, and the exit status is the shell's for the signal (130, 143,
// 129). A second signal ends the process at once.
type interrupted struct{ sig syscall.Signal }

func (i interrupted) Error() string { return "interrupted (" + signalName(i.sig) + ")" }

func (i interrupted) exitCode() int { return 128 + int(i.sig) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return s.String()
}

// interruptible returns a context cancelled, with an interrupted cause,
// by the first SIGINT, SIGTERM or SIGHUP.
func interruptible() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs) // the next one takes the default action
			cancel(interrupted{s.(syscall.Signal)})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel(nil)
	}
}
