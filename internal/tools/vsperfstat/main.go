// Command vsperfstat turns the raw figures of scripts/vs-perftest.sh into
// markdown tables: for each row (test, size, topology) and figure, the
// median of the per-pair ratios rdmabench / perftest with its 95%
// confidence interval, each tool's median figure, and both tools' settings
// side by side.
//
// Usage:
//
//	go run ./internal/tools/vsperfstat results.tsv
//	go run ./internal/tools/vsperfstat -time time.tsv
//
// results.tsv has a header line and one line per run:
//
//	test size topology pair pos tool status min_us p50_us mibps mpps settings flags log
//
// pair 0 is the row's unmeasured first round (settings and warm-up) and is
// left out; pairs 1..N are the interleaved pairs. status is "ok" or
// "fail"; a figure the tool did not report is "-". settings is a comma
// separated list of key=value (see settingKeys). flags are the flags the
// script added to rdmabench's command line to match perftest's settings.
//
// time.tsv (time to an answer, -time) has a header line and one line per
// run of either whole sequence:
//
//	pair pos tool status wall_s log
//
// The statistics are golang.org/x/perf/benchmath's, as benchstat's: the
// sample median with a distribution-free confidence interval from order
// statistics (bounded from 6 pairs on at 95%).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

func main() {
	err := run(os.Args[1:], os.Stdout)
	var u usageError
	switch {
	case errors.As(err, &u):
		fmt.Fprintln(os.Stderr, "vsperfstat:", err)
		fmt.Fprintln(os.Stderr, "usage: vsperfstat [-time] FILE")
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "vsperfstat:", err)
		os.Exit(1)
	}
}

type usageError struct{ error }

// run reads the file named in args (- for standard input) and prints its
// tables to stdout.
func run(args []string, stdout io.Writer) error {
	timeMode := false
	if len(args) > 0 && args[0] == "-time" {
		timeMode, args = true, args[1:]
	}
	if len(args) != 1 {
		return usageError{errors.New("want one file")}
	}
	in := os.Stdin
	if args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	if timeMode {
		runs, err := parseTimes(in)
		if err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		return renderTime(stdout, summarizeTime(runs))
	}
	runs, err := parseRuns(in)
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	return render(stdout, summarize(runs))
}
