package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/internal/atomicfile"
	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/quantity"
	"github.com/rdmabench/rdmabench/pkg/remote"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/render"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
	"github.com/rdmabench/rdmabench/pkg/settings"
	"github.com/rdmabench/rdmabench/pkg/verbs"
	"github.com/rdmabench/rdmabench/pkg/workloads"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// benchFlags are the flags of the test commands and the suite. The flags
// that choose a test's settings write straight into spec.
type benchFlags struct {
	spec     workloads.Spec
	all      bool
	output   string
	outFile  string
	repeat   int
	ctlPort  int
	token    string
	loopback bool
	baseline bool
	stream   bool
	maxMem   uint64
	limits   report.Limits
	dscp     *int // --dscp: merged into spec.Path
	load     workloads.LoadSpec
}

// benchFlag defines one flag. A flag that sets a knob is registered only on
// the commands of the tests the knob applies to; a limit only on those of
// the tests that have its figure.
type benchFlag struct {
	knob   string           // the workloads.Knob it sets, or ""
	metric workloads.Metric // a limit's: latency or bandwidth; "" for other flags
	add    func(fs *pflag.FlagSet, f *benchFlags)
}

// testFlags are the flags of the tests: each knob's, from the knob table
// (workloads.Knobs), then benchFlagDefs.
var testFlags = append(knobFlags(), benchFlagDefs...)

func knobFlags() []benchFlag {
	defs := make([]benchFlag, len(workloads.Knobs))
	for i, k := range workloads.Knobs {
		defs[i] = benchFlag{knob: k.Key, add: func(fs *pflag.FlagSet, f *benchFlags) { addKnobFlag(fs, f, k) }}
	}
	return defs
}

// addKnobFlag adds knob k's flag to fs, setting f.spec (or f.load), as
// the flag type of its kind.
func addKnobFlag(fs *pflag.FlagSet, f *benchFlags, k workloads.Knob) {
	k.DefineFlag(flagDefiner{fs}, &f.spec, &f.load)
}

// flagDefiner defines the knobs' flags in a flag set: each kind of value
// with its flag type (flags.go).
type flagDefiner struct{ fs *pflag.FlagSet }

func (d flagDefiner) String(k workloads.Knob, p *string) {
	d.fs.StringVarP(p, k.Key, k.Short, "", k.Help)
}
func (d flagDefiner) Bool(k workloads.Knob, p *bool) { d.fs.BoolVarP(p, k.Key, k.Short, false, k.Help) }
func (d flagDefiner) Count(k workloads.Knob, p *int) {
	d.fs.VarP(positiveInt(p), k.Key, k.Short, k.Help)
}
func (d flagDefiner) Optional(k workloads.Knob, p **int) {
	d.fs.VarP(optInt{p, k.Range.Min, k.Range.Max}, k.Key, k.Short, k.Help)
}
func (d flagDefiner) Mem(k workloads.Knob, p *string) { d.fs.VarP(memKind(p), k.Key, k.Short, k.Help) }
func (d flagDefiner) Rate(k workloads.Knob, gbps, msgs *float64) {
	d.fs.VarP(rateLimitFlag{gbps, msgs}, k.Key, k.Short, k.Help)
}
func (d flagDefiner) Limiter(k workloads.Knob, p *string) {
	d.fs.VarP(limiter(p), k.Key, k.Short, k.Help)
}
func (d flagDefiner) BandwidthTest(k workloads.Knob, p *string) {
	d.fs.VarP(loadTest(p), k.Key, k.Short, k.Help)
}
func (d flagDefiner) Size(k workloads.Knob, p *int) { d.fs.VarP(oneSize(p), k.Key, k.Short, k.Help) }

// benchFlagDefs are the tests' flags that are not a knob's. They keep
// perftest's letters where it has one.
var benchFlagDefs = []benchFlag{
	{add: func(fs *pflag.FlagSet, f *benchFlags) {
		fs.VarP((*sizesFlag)(&f.spec.Sizes), "size", "s", "message sizes: a list and/or ranges of powers of two, e.g. 2,64,4K or 2..8M")
		fs.BoolVarP(&f.all, "all", "a", false, "every power of two from 2 B to 8 MiB")
		fs.VarP(positiveInt(&f.spec.Iterations), settings.Iterations.Key, settings.Iterations.Short, settings.Iterations.Help)
		fs.Var(optCount{&f.spec.Warmup}, settings.Warmup.Key, settings.Warmup.Help)
		fs.VarP(seconds(&f.spec.Duration), settings.Duration.Key, settings.Duration.Short, settings.Duration.Help)
		fs.Var(positiveDuration(&f.spec.Interval), "interval", "interval length in duration mode (default 1s)")
		fs.Var(fraction(&f.spec.Precision), settings.Precision.Key, settings.Precision.Help)
		fs.Var(positiveDuration(&f.spec.PrecisionCap), settings.PrecisionCap.Key, settings.PrecisionCap.Help)
	}},
	// --dscp is another way to say its setting's, merged into it
	// (settings.MergeDSCP).
	{knob: settings.DSCP.Of.Key, add: func(fs *pflag.FlagSet, f *benchFlags) {
		fs.Var(optInt{&f.dscp, settings.DSCP.Range.Min, settings.DSCP.Range.Max}, settings.DSCP.Key, settings.DSCP.Help)
	}},
	{add: func(fs *pflag.FlagSet, f *benchFlags) {
		fs.Var(positiveDuration(&f.spec.IdleTimeout), "idle-timeout", "give up when the peer makes no progress for this long (default 10s)")
		fs.Var(byteSize(&f.maxMem), "max-mem", "refuse tests whose ends would take more memory than this on this host, e.g. 4G (always: more than it has)")
		fs.BoolVar(&f.spec.CPUUtil, "cpu-util", false, "record the CPU time (user and system) of each end's loops, per size")
		fs.Var((*cpuListFlag)(&f.spec.CPUs), settings.CPUs.Key, settings.CPUs.Help)
		fs.Var((*cpuListFlag)(&f.spec.ServerCPUs), settings.ServerCPUs.Key, settings.ServerCPUs.Help)
		fs.BoolVar(&f.loopback, "loopback", false, "run both ends in this process on the local device (the default when no HOST is given)")
		fs.IntVarP(&f.ctlPort, "port", "p", control.DefaultPort, "the server's control port (with HOST)")
		fs.StringVar(&f.token, "token", "", "token the server requires (default $"+EnvToken+")")
		fs.VarP(outputFormat(&f.output), "output", "o", "output format: "+strings.Join(render.Formats, ", "))
		fs.StringVar(&f.outFile, "out", "", "also write the results document to FILE, atomically, after each measurement (format by extension: .txt table, .csv, .md, .bench gobench, .prom openmetrics, else JSON)")
		fs.BoolVar(&f.stream, "json-stream", false, "print newline-delimited JSON events as the run goes (start, test, interval, result, end) instead of -o")
		fs.Var(positiveInt(&f.repeat), settings.Repeat.Key, settings.Repeat.Help)
	}},
	{metric: workloads.Latency, add: func(fs *pflag.FlagSet, f *benchFlags) {
		fs.Var(latencyLimit(&f.limits.P50), "limit-p50", "exit 3 unless every latency p50 is at most this (e.g. 5us)")
		fs.Var(latencyLimit(&f.limits.P99), "limit-p99", "exit 3 unless every latency p99 is at most this (e.g. 20us)")
		fs.Var(latencyLimit(&f.limits.P999), "limit-p999", "exit 3 unless every latency p99.9 is at most this")
		fs.Var(latencyLimit(&f.limits.Mean), "limit-mean", "exit 3 unless every latency mean is at most this")
		fs.Var(latencyLimit(&f.limits.Max), "limit-max", "exit 3 unless every latency max is at most this")
	}},
	{metric: workloads.Bandwidth, add: func(fs *pflag.FlagSet, f *benchFlags) {
		fs.Var(&bwLimit{&f.limits}, "limit-bw", "exit 3 unless every bandwidth is at least this (e.g. 90Gbps, 12GB/s), or this share of the link's nominal rate for RDMA (e.g. 90%link)")
		fs.Var(rateLimit(&f.limits.MinMsgRate, quantity.ParseRate), "limit-msg-rate", "exit 3 unless every message rate is at least this (e.g. 10M messages/s)")
	}},
}

// register adds to fs the flags of a command running tests.
func (f *benchFlags) register(fs *pflag.FlagSet, tests []workloads.TestInfo) {
	f.output = render.FormatTable
	for _, d := range testFlags {
		if d.appliesToAny(tests) {
			d.add(fs, f)
		}
	}
	if len(tests) == 1 && tests[0].IsRDMA() {
		fs.Var(baseline(&f.baseline), "baseline", "add the matching TCP test at the same sizes (\"tcp\")")
	}
	sayTCP(fs, tests)
}

// sayTCP makes the help of the flags that the RDMA and TCP tests share
// speak of what they do for tests: a TCP test has no device, so its loop
// threads are not pinned unless --cpu says where, its loopback is this
// host's loopback interface, and its bandwidth has no link rate.
func sayTCP(fs *pflag.FlagSet, tests []workloads.TestInfo) {
	rdma, tcp := false, false
	for _, t := range tests {
		rdma, tcp = rdma || t.IsRDMA(), tcp || !t.IsRDMA()
	}
	usage := func(name, text string) {
		if fl := fs.Lookup(name); fl != nil {
			fl.Usage = text
		}
	}
	switch {
	case rdma && tcp:
		usage("cpu", "pin each end's loop threads to these cores, e.g. 0-3,8 (default: for RDMA tests the cores of the device's NUMA node; TCP tests are not pinned)")
	case tcp:
		usage("cpu", "pin each end's loop threads to these cores, e.g. 0-3,8 (default: not pinned, on any core this process may use)")
		usage("loopback", "run both ends in this process, over this host's loopback interface, 127.0.0.1 (the default when no HOST is given)")
		usage("limit-bw", "exit 3 unless every bandwidth is at least this, e.g. 9Gbps or 1GB/s (a share of the link, 90%link, is for RDMA tests)")
	}
}

func (d benchFlag) appliesToAny(tests []workloads.TestInfo) bool {
	for _, t := range tests {
		k, ok := workloads.LookupKnob(d.knob)
		if (d.knob == "" || (ok && k.AppliesTo(t))) && (d.metric == "" || d.metric == t.Metric) {
			return true
		}
	}
	return false
}

// notApplicable explains a flag command cmd does not have, its long name
// or its letter (short), that is a flag of other tests: which tests it
// applies to. It returns nil for a flag no command has.
func notApplicable(cmd string, long, short string) error {
	all := pflag.NewFlagSet("all", pflag.ContinueOnError)
	var f benchFlags
	defs := map[string]benchFlag{}
	for _, d := range testFlags {
		before := map[string]bool{}
		all.VisitAll(func(fl *pflag.Flag) { before[fl.Name] = true })
		d.add(all, &f)
		all.VisitAll(func(fl *pflag.Flag) {
			if !before[fl.Name] {
				defs[fl.Name] = d
			}
		})
	}
	fl := all.Lookup(long)
	if len(short) == 1 { // ShorthandLookup panics for more (a letter not ASCII)
		fl = all.ShorthandLookup(short)
	}
	if fl == nil {
		return nil
	}
	d := defs[fl.Name]
	if k, ok := workloads.LookupKnob(d.knob); ok {
		return k.NotFor(cmd)
	}
	if d.metric != "" {
		return fmt.Errorf("--%s does not apply to %s: it is for %s tests", fl.Name, cmd, d.metric)
	}
	return nil
}

// request is the Request of tests, from the flags.
func (f *benchFlags) request(tests []string, suite bool, args []string) workloads.Request {
	spec := f.spec
	if f.all {
		spec.Sizes = workloads.AllSizes()
	}
	if f.load != (workloads.LoadSpec{}) {
		l := f.load
		spec.Load = &l
	}
	return workloads.Request{Tests: tests, Spec: spec, Suite: suite, Baseline: f.baseline, Repeat: f.repeat,
		MaxMem: f.maxMem, Command: append([]string{"rdmabench"}, args...)}
}

func newTestCmd(info workloads.TestInfo, args []string) *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:     info.Name + " [HOST]",
		Short:   info.Summary,
		Long:    info.Summary + ".\n\n" + loopbackHelp(info),
		Example: testExample(info),
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, hosts []string) error {
			return f.run(cmd, f.request([]string{info.Name}, false, args), hosts)
		},
	}
	f.register(cmd.Flags(), []workloads.TestInfo{info})
	return cmd
}

// loopbackHelp says what a test does with no HOST.
func loopbackHelp(info workloads.TestInfo) string {
	if !info.IsRDMA() {
		return `With no HOST (or --loopback), both ends run in this process, over this
host's loopback interface (127.0.0.1): one command measures this host's TCP
stack.`
	}
	return `With no HOST (or --loopback), both ends run in this process on the local
device: one command measures a single host (Soft-RoCE, or a NIC in loopback).`
}

// The suite's own default: each test until its headline figure is known
// to ±5%, at most half a second. On a NIC a test gets there in its first
// 6 rounds (0.3 s); on an emulated device the cap says when to stop, and
// each result says how precise it got.
const (
	suitePrecision    = 0.05
	suitePrecisionCap = 500 * time.Millisecond
)

// suiteOrder are the suite's tests, in the order it runs them (the
// table's: latency and bandwidth, each ending with its TCP row).
var suiteOrder = workloads.TestNames(workloads.SuiteTests())

func newSuiteCmd(args []string) *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "suite [HOST]",
		Short: "Run every RDMA test and the TCP baseline, in one report",
		Long: `Run all eight RDMA tests (write, read, send and atomic; latency and
bandwidth) and the two TCP tests, in one report: latency at 2 B (atomics at
8 B), bandwidth at 64 KiB, each TCP row beside the RDMA rows of its kind.
-s changes the sizes of every test but the atomics; a setting that applies
to some tests only (such as -q) is used by those.

Unless -n, -D or --precision says otherwise, each test runs in rounds of
50 ms until its p50 (latency) or bandwidth is known to ±5% at 95%
confidence, for at most 0.5 s (--precision-cap): a quick answer that says how
precise it is.`,
		Example: `  # on this host's first device, over its loopback
  rdmabench suite
  # against rdmabench serve on node-b, the document kept in run.json
  rdmabench suite node-b -d mlx5_0 --out run.json
  # six runs, each figure's median and spread, compared with an older file
  rdmabench suite node-b --repeat 6 --out new.json
  rdmabench compare base.json new.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, hosts []string) error {
			req := f.request(suiteOrder, true, args)
			if fs := cmd.Flags(); !fs.Changed("precision") && !fs.Changed("iters") && !fs.Changed("duration") {
				req.Spec.Precision = suitePrecision
				if !fs.Changed("precision-cap") {
					req.Spec.PrecisionCap = suitePrecisionCap
				}
			}
			return f.run(cmd, req, hosts)
		},
	}
	f.register(cmd.Flags(), workloads.SuiteTests())
	return cmd
}

// sizeEnds refuses flags that say when each size ends given together (-n
// a count, -D a duration, --precision a precision reached: one of them
// would be ignored), and those that apply to one of them without it
// (--interval to -D, --precision-cap to --precision). defaultPrecision:
// the command runs --precision unless -n or -D is given (suite, mesh).
func sizeEnds(fs *pflag.FlagSet, defaultPrecision bool) error {
	changed := func(name string) bool { fl := fs.Lookup(name); return fl != nil && fl.Changed }
	n, d, p := changed("iters"), changed("duration"), changed("precision")
	switch {
	case n && d:
		return errors.New("-n and -D both given: -D runs for a duration, -n a count; choose one")
	case n && p:
		return errors.New("-n and --precision both given: --precision runs until a figure is that precise, -n a count; choose one")
	case d && p:
		return errors.New("-D and --precision both given: -D runs for a duration, --precision until a figure is that precise; choose one")
	case changed("interval") && !d:
		return errors.New("--interval applies to -D (duration mode), which is not given")
	case changed("precision-cap") && !p && (!defaultPrecision || n || d):
		if defaultPrecision {
			return fmt.Errorf("--precision-cap applies to --precision, the default that %s turns off", map[bool]string{true: "-n", false: "-D"}[n])
		}
		return errors.New("--precision-cap applies to --precision, which is not given")
	}
	return nil
}

// linkLimit refuses --limit-bw N%link where none of tests is an RDMA
// bandwidth test: the limit is a share of an RDMA link's nominal rate,
// which a TCP stream has not. Where some are (suite, --baseline tcp), it
// holds those and not tcp-bw.
func linkLimit(l report.Limits, cmd string, tests []string) error {
	if l.MinLinkFraction <= 0 {
		return nil
	}
	for _, name := range tests {
		if t, ok := workloads.LookupTest(name); ok && t.IsRDMA() && t.Metric == workloads.Bandwidth {
			return nil
		}
	}
	bw := bwLimit{&l}
	return fmt.Errorf("%s: --limit-bw %s is a share of an RDMA link's nominal rate, and a TCP test has none: give a bandwidth instead, e.g. --limit-bw 20Gbps",
		cmd, bw.String())
}

// run plans req, runs it against the server at hosts[0] (or in this
// process), prints the document and checks the limits.
func (f *benchFlags) run(cmd *cobra.Command, req workloads.Request, hosts []string) error {
	if f.all && len(f.spec.Sizes) > 0 {
		return usageError{fmt.Errorf("%s: -a and -s are exclusive", cmd.Name())}
	}
	if err := sizeEnds(cmd.Flags(), req.Suite); err != nil {
		return usageError{err}
	}
	if err := linkLimit(f.limits, cmd.Name(), req.Tests); err != nil {
		return usageError{err}
	}
	if err := settings.MergeDSCP(&req.Spec.Path, f.dscp); err != nil {
		return usageError{fmt.Errorf("%s: %w", cmd.Name(), err)}
	}
	stderr := cmd.ErrOrStderr()
	prog := newProgress(stderr, f)
	req.Progress = prog.callback()
	var events *eventStream
	if f.stream {
		events = &eventStream{w: cmd.OutOrStdout()}
		req.Progress, prog = events.progress, nil
	}
	if f.outFile != "" {
		req.Checkpoint = func(doc *report.Document) error { return f.writeFile(doc) }
	}
	plan, err := workloads.NewPlan(req)
	if err != nil {
		if req.Suite {
			err = fmt.Errorf("suite: %w", err)
		}
		return usageError{err}
	}
	prog.start(plan.Steps(), plan.Specs())
	defer prog.finish()
	var target workloads.Target
	if len(hosts) == 1 && !f.loopback {
		c, err := f.dial(cmd.Context(), hosts[0])
		if err != nil {
			return err
		}
		defer c.Close()
		target = c.Target()
	}
	doc, runErr := plan.Execute(cmd.Context(), target)
	prog.finish()
	if doc == nil {
		return usageError{fmt.Errorf("%s: %w", cmd.Name(), runErr)} // refused before it ran
	}
	if runErr != nil && events == nil && f.output == render.FormatTable && !measuredAny(doc) {
		// Nothing was measured: the table would only say the errors again
		// (in its rows and footnotes); they are said once, on stderr.
		// --out still keeps the document with the errors.
		fmt.Fprint(stderr, runErrorText(doc, runErr))
		if f.outFile != "" {
			if err := f.writeFile(doc); err != nil {
				return err
			}
		}
		return reported{runErr}
	}
	if runErr != nil {
		fmt.Fprint(stderr, runErrorText(doc, runErr))
	}
	if events != nil {
		err = events.write(report.Event{Event: report.EventEnd, Document: doc})
	} else {
		err = render.WriteWith(cmd.OutOrStdout(), f.output, doc, tableOptions(cmd))
	}
	if err != nil {
		return err
	}
	if f.outFile != "" {
		if err := f.writeFile(doc); err != nil {
			return err
		}
	}
	if runErr != nil {
		return reported{runErr}
	}
	if fails := doc.CheckLimits(f.limits); len(fails) > 0 && !f.limits.IsZero() {
		for _, lf := range fails {
			fmt.Fprintln(stderr, "limit failed:", lf.String())
		}
		return reported{gateError{fmt.Errorf("%d limit check(s) failed", len(fails))}}
	}
	return nil
}

// runErrorText is how stderr says what went wrong in the run of doc,
// runErr being the first error: each cause once, with the tests it failed
// ("rdmabench: write-lat, read-lat, ...: no RDMA device found: ..."; one
// test's failure as the run returned it), then why the run stopped, if it
// did before its end, and how to make an RDMA device where there is none.
// A failed test did not stop the others: nothing says it did.
func runErrorText(doc *report.Document, runErr error) string {
	var b strings.Builder
	fails := render.Failures(doc)
	if len(fails) == 1 && len(fails[0].Results) == 1 {
		b.WriteString("rdmabench: " + runErr.Error() + "\n")
	} else {
		for _, fl := range fails {
			b.WriteString("rdmabench: " + fl.Where(doc) + ": " + textfmt.Clean(fl.Cause) + "\n")
		}
	}
	if stop := doc.Stopped(); stop != "" && !slices.ContainsFunc(fails, func(fl render.Failure) bool { return fl.Cause == stop }) {
		b.WriteString("rdmabench: the run stopped: " + textfmt.Clean(stop) + "; the results before it are kept\n")
	}
	if b.Len() == 0 {
		return errorText(runErr)
	}
	if errors.Is(runErr, verbs.ErrNoDevices) {
		b.WriteString("hint: " + verbs.NoDeviceHelp + "\n")
	}
	return b.String()
}

// measuredAny reports whether a result of doc measured something (has no
// error).
func measuredAny(doc *report.Document) bool {
	for i := range doc.Results {
		if doc.Results[i].Error == "" {
			return true
		}
	}
	return false
}

// dial connects to the server at HOST[:PORT].
func (f *benchFlags) dial(ctx context.Context, hostArg string) (*remote.Client, error) {
	addr := hostArg
	if _, _, err := net.SplitHostPort(hostArg); err != nil {
		addr = net.JoinHostPort(hostArg, strconv.Itoa(f.ctlPort))
	}
	return remote.Dial(ctx, addr, remote.Token(f.token))
}

// writeFile writes doc to --out, atomically, in the format its extension
// names.
func (f *benchFlags) writeFile(doc *report.Document) error {
	format := render.FormatForPath(f.outFile)
	if err := atomicfile.Write(f.outFile, func(w io.Writer) error { return render.Write(w, format, doc) }); err != nil {
		return fmt.Errorf("write %s: %w", f.outFile, err)
	}
	return nil
}

// eventStream prints a run's progress as report.Events (--json-stream).
type eventStream struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (s *eventStream) progress(p workloads.Progress) {
	e := report.Event{Run: p.Run, Test: p.Test, Size: p.Size}
	switch {
	case p.Begin != nil:
		e.Event, e.Document = report.EventStart, p.Begin
	case p.Start:
		e.Event = report.EventTest
	case p.Interval != nil:
		e.Event, e.Interval = report.EventInterval, p.Interval
	case p.Result != nil:
		e.Event, e.Result = report.EventResult, p.Result
	default:
		return
	}
	_ = s.write(e)
}

// write writes one event; after a failed write, it writes nothing more.
func (s *eventStream) write(e report.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = report.WriteEvent(s.w, e)
	}
	return s.err
}

// reported wraps an error already printed: main exits 1 without repeating it.
type reported struct{ err error }

func (e reported) Error() string { return e.err.Error() }
func (e reported) Unwrap() error { return e.err }
