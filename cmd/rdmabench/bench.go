package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/internal/buildinfo"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/verbs"
	"github.com/rdmabench/rdmabench/pkg/workloads"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// benchFlags are the flags every test command and the suite share. Letters
// follow perftest's where it has one.
type benchFlags struct {
	device, conn, sizes, atomic, output, outFile, baseline string
	port, gid, iters, txDepth, rxDepth, qps, inline, cqMod int
	postList, mtu, warmup                                  int
	duration, interval, idle                               time.Duration
	durationSecs                                           float64
	all, bidir, events, loopback                           bool
}

func (f *benchFlags) register(fs *pflag.FlagSet, suite bool) {
	fs.StringVarP(&f.device, "ib-dev", "d", "", "RDMA device (default: the first one)")
	fs.IntVarP(&f.port, "ib-port", "i", 1, "device port")
	fs.IntVarP(&f.gid, "gid-index", "x", -1, "GID index (default: chosen automatically, see `rdmabench devices`)")
	fs.StringVarP(&f.sizes, "size", "s", "", "message sizes: a list and/or ranges of powers of two, e.g. 2,64,4K or 2..8M")
	fs.BoolVarP(&f.all, "all", "a", false, "every power of two from 2 B to 8 MiB")
	fs.IntVarP(&f.iters, "iters", "n", 0, "measured iterations per size (default 1000 for latency, 5000 for bandwidth, fewer for large sizes)")
	fs.IntVar(&f.warmup, "warmup", -1, "warm-up iterations per size, excluded from the results (default: a tenth of the iterations, 10..1000)")
	fs.Float64VarP(&f.durationSecs, "duration", "D", 0, "run each size for this many seconds instead of -n, reporting every interval")
	fs.DurationVar(&f.interval, "interval", time.Second, "interval length in duration mode")
	fs.IntVarP(&f.txDepth, "tx-depth", "t", 0, "send queue depth / outstanding work requests per QP (default 128 for bandwidth, 1 for latency)")
	fs.IntVarP(&f.rxDepth, "rx-depth", "r", 0, "receive queue depth (default 512 for bandwidth, 16 for latency)")
	fs.IntVarP(&f.inline, "inline-size", "I", -1, "inline data size (default 220 for write/send latency, else 0)")
	fs.IntVarP(&f.cqMod, "cq-mod", "Q", 0, "signal one send in this many (default 100 for bandwidth, 64 for latency)")
	fs.IntVarP(&f.mtu, "mtu", "m", 0, "path MTU: 256..4096 (default: the port's active MTU)")
	fs.BoolVarP(&f.events, "events", "e", false, "wait for completion events instead of busy polling")
	fs.DurationVar(&f.idle, "idle-timeout", workloads.DefaultIdleTimeout, "give up when the peer makes no progress for this long")
	fs.BoolVar(&f.loopback, "loopback", false, "run both ends in this process on the local device (the default when no HOST is given)")
	fs.StringVarP(&f.output, "output", "o", "table", "output format: table or json")
	fs.StringVar(&f.outFile, "out", "", "also write the results document to FILE (atomically), as JSON unless FILE ends in .txt")
	if suite {
		return
	}
	fs.StringVarP(&f.conn, "connection", "c", "", "connection type: RC, UC or UD (default RC)")
	fs.IntVarP(&f.qps, "qp", "q", 0, "number of QPs (bandwidth tests)")
	fs.IntVarP(&f.postList, "post-list", "l", 0, "work requests per post call (bandwidth tests)")
	fs.BoolVarP(&f.bidir, "bidirectional", "b", false, "both ends send at once (bandwidth tests)")
	fs.StringVarP(&f.atomic, "atomic_type", "A", "", "atomic operation: FETCH_AND_ADD or CMP_AND_SWAP")
	fs.StringVar(&f.baseline, "baseline", "", "add the matching TCP test at the same sizes (\"tcp\")")
}

// spec builds the Spec of test from the flags.
func (f *benchFlags) spec(test string) (workloads.Spec, error) {
	s := workloads.Spec{Test: test, Connection: strings.ToUpper(f.conn), Iterations: f.iters, Warmup: f.warmup,
		TxDepth: f.txDepth, RxDepth: f.rxDepth, QPs: f.qps, Inline: f.inline, CQMod: f.cqMod, PostList: f.postList,
		Events: f.events, Bidirectional: f.bidir, AtomicType: strings.ToUpper(f.atomic), MTU: f.mtu, GIDIndex: f.gid,
		Device: f.device, Port: f.port, IdleTimeout: f.idle, Interval: f.interval}
	if f.durationSecs < 0 {
		return s, fmt.Errorf("duration %gs must not be negative", f.durationSecs)
	}
	s.Duration = time.Duration(f.durationSecs * float64(time.Second))
	switch {
	case f.all && f.sizes != "":
		return s, errors.New("-a and -s are exclusive")
	case f.all:
		s.Sizes = workloads.AllSizes()
	case f.sizes != "":
		sz, err := workloads.ParseSizes(f.sizes)
		if err != nil {
			return s, err
		}
		s.Sizes = sz
	}
	if f.iters < 0 {
		return s, fmt.Errorf("iterations %d must be positive", f.iters)
	}
	if f.output != "table" && f.output != "json" {
		return s, fmt.Errorf("unknown output format %q (want table or json)", f.output)
	}
	if f.baseline != "" && f.baseline != "tcp" {
		return s, fmt.Errorf("unknown baseline %q (want tcp)", f.baseline)
	}
	s.ApplyDefaults()
	return s, s.Validate()
}

// tcpBaseline returns the TCP test that matches s, at the same sizes.
func tcpBaseline(s workloads.Spec) workloads.Spec {
	name := "tcp-lat"
	if s.Info().Metric == workloads.Bandwidth {
		name = "tcp-bw"
	}
	b := workloads.Spec{Test: name, Sizes: s.Sizes, Iterations: s.Iterations, Warmup: s.Warmup, Duration: s.Duration,
		Interval: s.Interval, Bidirectional: s.Bidirectional, IdleTimeout: s.IdleTimeout, Inline: -1, GIDIndex: -1}
	b.ApplyDefaults()
	return b
}

func newTestCmd(info workloads.TestInfo) *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   info.Name + " [HOST]",
		Short: info.Summary,
		Long: info.Summary + `.

With no HOST (or --loopback), both ends run in this process on the local
device: one command measures a single host (Soft-RoCE, or a NIC in loopback).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := f.spec(info.Name)
			if err != nil {
				return usageError{fmt.Errorf("%s: %w", info.Name, err)}
			}
			specs := []workloads.Spec{s}
			if f.baseline == "tcp" && info.IsRDMA() {
				specs = append(specs, tcpBaseline(s))
			}
			return runBench(cmd.Context(), cmd, f, args, specs)
		},
	}
	f.register(cmd.Flags(), false)
	return cmd
}

func newSuiteCmd() *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "suite [HOST]",
		Short: "Run every RDMA test and the TCP baseline, in one report",
		Long: `Run all eight RDMA tests (write, read, send and atomic; latency and
bandwidth) and the two TCP tests, in one report: latency at 2 B (atomics at
8 B), bandwidth at 64 KiB, each TCP row beside the RDMA rows of its kind.
-s changes the sizes of every test but the atomics.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var specs []workloads.Spec
			for _, name := range suiteOrder {
				info, _ := workloads.LookupTest(name)
				s, err := f.spec(name)
				if err == nil && info.Op == workloads.OpAtomic && (f.sizes != "" || f.all) {
					s.Sizes = []int{8}
					err = s.Validate()
				}
				if err != nil {
					return usageError{fmt.Errorf("suite: %s: %w", name, err)}
				}
				specs = append(specs, s)
			}
			return runBench(cmd.Context(), cmd, f, args, specs)
		},
	}
	f.register(cmd.Flags(), true)
	return cmd
}

// suiteOrder groups latency and bandwidth, each ending with its TCP row.
var suiteOrder = []string{"write-lat", "read-lat", "send-lat", "atomic-lat", "tcp-lat",
	"write-bw", "read-bw", "send-bw", "atomic-bw", "tcp-bw"}

// runBench runs specs one after another, collecting every result in one
// document. A failed test records its error and the run goes on with the
// next; the document is written whatever happens, and the first error is
// returned.
func runBench(ctx context.Context, cmd *cobra.Command, f *benchFlags, args []string, specs []workloads.Spec) error {
	if len(args) == 1 && !f.loopback {
		return usageError{fmt.Errorf("running against a server (HOST %q) is not available in this version; omit HOST to measure this host over the device's loopback", args[0])}
	}
	doc := newDocument(specs)
	doc.Params.Loopback = true
	stderr := cmd.ErrOrStderr()
	var firstErr error
	for _, s := range specs {
		if ctx.Err() != nil {
			break
		}
		res, err := workloads.RunLoopback(ctx, s, workloads.Options{})
		if res != nil {
			doc.Results = append(doc.Results, res.Results...)
			if doc.Hosts.Local.Hostname == "" || (doc.Hosts.Local.Device == nil && res.Host.Device != nil) {
				doc.Hosts.Local = res.Host
			}
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", s.Test, err)
			if res == nil || len(res.Results) == 0 || res.Results[len(res.Results)-1].Error == "" {
				failed := report.Result{Test: s.Test, Connection: s.Connection, Size: s.Sizes[0], Error: err.Error()}
				doc.Results = append(doc.Results, failed)
			}
			fmt.Fprintln(stderr, "rdmabench:", err)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if doc.Hosts.Local.Hostname == "" {
		doc.Hosts.Local = workloads.LocalHost()
	}
	if ctx.Err() != nil {
		doc.Error = "interrupted: " + context.Cause(ctx).Error()
		if firstErr == nil {
			firstErr = ctx.Err()
		}
	} else if firstErr != nil {
		doc.Error = firstErr.Error()
	}
	doc.End = time.Now().UTC()
	if err := writeDocument(cmd.OutOrStdout(), f, doc); err != nil {
		return err
	}
	if firstErr != nil {
		return reported{firstErr}
	}
	return nil
}

// reported wraps an error already printed: main exits 1 without repeating it.
type reported struct{ err error }

func (e reported) Error() string { return e.err.Error() }
func (e reported) Unwrap() error { return e.err }

func newDocument(specs []workloads.Spec) *report.Document {
	doc := report.NewDocument()
	bi := buildinfo.Get()
	doc.Tool = report.Tool{Name: bi.Name, Version: bi.Version, Commit: bi.Commit, GoVersion: bi.GoVersion, Verbs: bi.Verbs}
	doc.Command = append([]string{"rdmabench"}, os.Args[1:]...)
	doc.Start = time.Now().UTC()
	c := verbs.Clock()
	doc.Clock = &report.Clock{Source: c.Source, ResolutionNs: c.ResolutionNs, ReportedResolutionNs: c.ReportedResolutionNs, ReadCostNs: c.ReadCostNs}
	s := specs[0]
	doc.Params = report.Params{Device: s.Device, Port: s.Port, GIDIndex: s.GIDIndex, Connection: s.Connection, MTU: s.MTU,
		Sizes: s.Sizes, TxDepth: s.TxDepth, RxDepth: s.RxDepth, QPs: s.QPs, CQMod: s.CQMod, PostList: s.PostList,
		Events: s.Events, Bidirectional: s.Bidirectional, AtomicType: s.AtomicType, Iterations: s.Iterations,
		DurationS: s.Duration.Seconds(), Warmup: max(s.Warmup, 0)}
	if s.Inline >= 0 {
		doc.Params.Inline = s.Inline
	}
	if len(specs) > 1 {
		// A suite: per-test values differ; each result carries its own.
		doc.Params.Connection, doc.Params.Sizes, doc.Params.TxDepth, doc.Params.RxDepth, doc.Params.CQMod = "", nil, 0, 0, 0
		doc.Params.AtomicType = ""
	}
	return doc
}

// writeDocument prints the document to w in the -o format, and writes it
// to --out (atomically).
func writeDocument(w io.Writer, f *benchFlags, doc *report.Document) error {
	render := func(format string) func(io.Writer) error {
		return func(w io.Writer) error {
			if format == "json" {
				return report.WriteJSON(w, doc)
			}
			return report.WriteTable(w, doc)
		}
	}
	if err := render(f.output)(w); err != nil {
		return err
	}
	if f.outFile != "" {
		format := "json"
		if strings.EqualFold(filepath.Ext(f.outFile), ".txt") {
			format = "table"
		}
		if err := report.WriteFileAtomic(f.outFile, render(format)); err != nil {
			return fmt.Errorf("write %s: %w", f.outFile, err)
		}
	}
	return nil
}
