package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/internal/buildinfo"
	"github.com/rdmabench/rdmabench/pkg/control"
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
	postList, mtu, warmup, repeat, ctlPort                 int
	duration, interval, idle                               time.Duration
	durationSecs                                           float64
	all, bidir, events, loopback                           bool
	token, serverDev                                       string
	limP50, limP99, limP999, limMean, limMax               string
	limBW, limRate                                         string
	limits                                                 report.Limits
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
	fs.StringVarP(&f.output, "output", "o", "table", "output format: "+strings.Join(report.Formats, ", "))
	fs.StringVar(&f.outFile, "out", "", "also write the results document to FILE, atomically (format by extension: .txt table, .csv, .md, .bench gobench, else JSON)")
	fs.IntVar(&f.repeat, "repeat", 1, "run everything N times, in one document with the median and spread of each figure")
	fs.IntVarP(&f.ctlPort, "port", "p", control.DefaultPort, "the server's control port (with HOST)")
	fs.StringVar(&f.token, "token", "", "token the server requires (default $"+EnvToken+")")
	fs.StringVar(&f.serverDev, "server-dev", "", "device the server uses (default: its own -d, or its first device)")
	fs.StringVar(&f.limP50, "limit-p50", "", "exit 3 unless every latency p50 is at most this (e.g. 5us)")
	fs.StringVar(&f.limP99, "limit-p99", "", "exit 3 unless every latency p99 is at most this (e.g. 20us)")
	fs.StringVar(&f.limP999, "limit-p999", "", "exit 3 unless every latency p99.9 is at most this")
	fs.StringVar(&f.limMean, "limit-mean", "", "exit 3 unless every latency mean is at most this")
	fs.StringVar(&f.limMax, "limit-max", "", "exit 3 unless every latency max is at most this")
	fs.StringVar(&f.limBW, "limit-bw", "", "exit 3 unless every bandwidth is at least this (e.g. 90Gbps, 12GB/s)")
	fs.StringVar(&f.limRate, "limit-msg-rate", "", "exit 3 unless every message rate is at least this (e.g. 10M messages/s)")
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
	if err := report.CheckFormat(f.output); err != nil {
		return s, err
	}
	if f.repeat < 1 {
		return s, fmt.Errorf("--repeat %d must be at least 1", f.repeat)
	}
	if err := f.parseLimits(); err != nil {
		return s, err
	}
	s.ServerDevice = f.serverDev
	if f.baseline != "" && f.baseline != "tcp" {
		return s, fmt.Errorf("unknown baseline %q (want tcp)", f.baseline)
	}
	s.ApplyDefaults()
	return s, s.Validate()
}

// parseLimits fills f.limits from the --limit-* flags.
func (f *benchFlags) parseLimits() error {
	for _, d := range []struct {
		flag, v string
		dst     *time.Duration
	}{{"limit-p50", f.limP50, &f.limits.P50}, {"limit-p99", f.limP99, &f.limits.P99}, {"limit-p999", f.limP999, &f.limits.P999},
		{"limit-mean", f.limMean, &f.limits.Mean}, {"limit-max", f.limMax, &f.limits.Max}} {
		if d.v == "" {
			continue
		}
		v, err := report.ParseLimitDuration(d.v)
		if err != nil {
			return fmt.Errorf("--%s: %w", d.flag, err)
		}
		*d.dst = v
	}
	if f.limBW != "" {
		v, err := report.ParseBandwidth(f.limBW)
		if err != nil {
			return fmt.Errorf("--limit-bw: %w", err)
		}
		f.limits.MinGbps = v
	}
	if f.limRate != "" {
		v, err := report.ParseRate(f.limRate)
		if err != nil {
			return fmt.Errorf("--limit-msg-rate: %w", err)
		}
		f.limits.MinMsgRate = v
	}
	return nil
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

// runBench runs specs one after another (--repeat times), collecting every
// result in one document: in this process with no HOST, else against the
// server at HOST. A failed test records its error and the run goes on with
// the next; the document is written whatever happens, and the first error
// is returned. Then --limit-* are checked (exit status 3).
func runBench(ctx context.Context, cmd *cobra.Command, f *benchFlags, args []string, specs []workloads.Spec) error {
	stderr := cmd.ErrOrStderr()
	doc := newDocument(specs)
	if f.repeat > 1 {
		doc.Params.Repeat = f.repeat
	}
	var client *control.Client
	var host string
	if len(args) == 1 && !f.loopback {
		host = args[0]
		addr := host
		if _, _, err := net.SplitHostPort(addr); err != nil {
			addr = net.JoinHostPort(host, strconv.Itoa(f.ctlPort))
		} else {
			host, _, _ = net.SplitHostPort(addr)
		}
		token := f.token
		if token == "" {
			token = os.Getenv(EnvToken)
		}
		c, err := control.Dial(ctx, addr, control.ClientOptions{Token: token})
		if err != nil {
			return err
		}
		defer c.Close()
		client = c
		doc.Params.Server = args[0]
		if v := c.Server().Version; v != buildinfo.Version {
			doc.Warnings = append(doc.Warnings, fmt.Sprintf("the server runs rdmabench %s, this client %s (same protocol %d)",
				v, buildinfo.Version, buildinfo.ProtocolVersion))
		}
	} else {
		doc.Params.Loopback = true
	}
	var firstErr error
	prog := newProgress(stderr, f, specs)
	defer prog.finish()
	opt := workloads.Options{Progress: prog.callback(), PeerHost: host}
	for rep := 1; rep <= f.repeat; rep++ {
		for _, s := range specs {
			if ctx.Err() != nil {
				break
			}
			label := 0 // the run number, shown only when runs repeat
			if f.repeat > 1 {
				label = rep
			}
			prog.start(label, s)
			var res *workloads.EndResult
			var err error
			if client == nil {
				res, err = workloads.RunLoopback(ctx, s, opt)
			} else {
				res, err = runRemote(ctx, client, s, opt)
			}
			done := 0
			if res != nil {
				done = len(res.Results)
				if err != nil && done > 0 {
					done-- // the failed size was not counted as done
				}
			}
			prog.skip(len(s.Sizes) - done)
			if res != nil {
				for _, r := range res.Results {
					if f.repeat > 1 {
						r.Run = rep
					}
					doc.Results = append(doc.Results, r)
				}
				if doc.Hosts.Local.Hostname == "" || (doc.Hosts.Local.Device == nil && res.Host.Device != nil) {
					doc.Hosts.Local = res.Host
				}
				if client != nil && res.Peer != nil && (doc.Hosts.Remote == nil || doc.Hosts.Remote.Device == nil) {
					doc.Hosts.Remote = res.Peer
				}
			}
			if err != nil {
				err = fmt.Errorf("%s: %w", s.Test, err)
				if res == nil || len(res.Results) == 0 || res.Results[len(res.Results)-1].Error == "" {
					failed := report.Result{Test: s.Test, Connection: s.Connection, Size: s.Sizes[0], Error: err.Error()}
					if f.repeat > 1 {
						failed.Run = rep
					}
					doc.Results = append(doc.Results, failed)
				}
				fmt.Fprintln(stderr, "rdmabench:", err)
				if firstErr == nil {
					firstErr = err
				}
			}
		}
	}
	prog.finish()
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
	if f.repeat > 1 {
		doc.Summaries = report.Summarize(doc)
	}
	doc.End = time.Now().UTC()
	if err := writeDocument(cmd.OutOrStdout(), f, doc); err != nil {
		return err
	}
	if firstErr != nil {
		return reported{firstErr}
	}
	if fails := report.CheckLimits(doc, f.limits); len(fails) > 0 && f.limits != (report.Limits{}) {
		for _, lf := range fails {
			fmt.Fprintln(stderr, "limit failed:", lf.String())
		}
		return reported{gateError{fmt.Errorf("%d limit check(s) failed", len(fails))}}
	}
	return nil
}

// runRemote runs the client end of s against the server behind c.
func runRemote(ctx context.Context, c *control.Client, s workloads.Spec, opt workloads.Options) (*workloads.EndResult, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	sess, err := c.Run(ctx, s.Test, raw)
	if err != nil {
		return nil, err
	}
	// A server that dies mid-test must stop this end's timed loops at once,
	// not at their idle timeout.
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-sess.Lost():
			cancel(fmt.Errorf("lost the server mid-test: %w", sess.LostErr()))
		case <-tctx.Done():
		}
	}()
	res, rerr := workloads.Run(tctx, s, workloads.Client, workloads.NewLink(sess), opt)
	if cause := context.Cause(tctx); rerr != nil && ctx.Err() == nil && cause != nil && cause != context.Canceled {
		return res, cause
	}
	ferr := sess.Finish(ctx)
	var pe *workloads.PeerError
	switch {
	case rerr != nil && errors.As(rerr, &pe) && ferr != nil:
		return res, ferr // the server's own account of what went wrong
	case rerr != nil:
		return res, rerr
	}
	return res, ferr
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
	doc.Clocks = map[string]report.Clock{"loops": {Source: c.Source, ResolutionNs: c.ResolutionNs, ReportedResolutionNs: c.ReportedResolutionNs, ReadCostNs: c.ReadCostNs}}
	s := specs[0]
	doc.Params = report.Params{Device: s.Device, Port: s.Port, GIDIndex: s.GIDIndex, Connection: s.Connection, MTU: s.MTU,
		Sizes: s.Sizes, TxDepth: s.TxDepth, RxDepth: s.RxDepth, QPs: s.QPs, CQMod: s.CQMod, PostList: s.PostList,
		Events: s.Events, Bidirectional: s.Bidirectional, AtomicType: s.AtomicType, Iterations: s.Iterations,
		DurationS: s.Duration.Seconds()}
	if s.Inline >= 0 {
		doc.Params.Inline = &s.Inline
	}
	if len(specs) > 1 {
		// A suite: per-test values differ; each result carries its own.
		doc.Params.Connection, doc.Params.Sizes, doc.Params.TxDepth, doc.Params.RxDepth, doc.Params.CQMod = "", nil, 0, 0, 0
		doc.Params.AtomicType = ""
	}
	return doc
}

// writeDocument prints the document to w in the -o format, and writes it
// to --out (atomically) in the format its extension names.
func writeDocument(w io.Writer, f *benchFlags, doc *report.Document) error {
	if err := report.Write(w, f.output, doc); err != nil {
		return err
	}
	if f.outFile != "" {
		format := report.FormatForPath(f.outFile)
		if err := report.WriteFileAtomic(f.outFile, func(w io.Writer) error { return report.Write(w, format, doc) }); err != nil {
			return fmt.Errorf("write %s: %w", f.outFile, err)
		}
	}
	return nil
}
