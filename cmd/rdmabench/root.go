package main

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/rdmabench/rdmabench/internal/buildinfo"
	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/report/render"
	"github.com/rdmabench/rdmabench/pkg/verbs"
	"github.com/rdmabench/rdmabench/pkg/workloads"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	exitGate  = 3
)

// usageError marks a command-line mistake (exit status 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// gateError marks a failed performance gate (exit status 3).
type gateError struct{ err error }

func (e gateError) Error() string { return e.err.Error() }
func (e gateError) Unwrap() error { return e.err }

// exitCode maps an error to the exit status. A test refused for its
// size (more than a limit, the host or the device allows) is a usage
// error, whether this host or the server refused it; so is a format the
// documents given have no rendering in (report -o openmetrics of a mesh).
func exitCode(err error) int {
	var u usageError
	var g gateError
	var se *control.ServerError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &u), errors.Is(err, workloads.ErrOverLimit), errors.Is(err, render.ErrFormat):
		return exitUsage
	case errors.As(err, &se) && (se.Code == control.CodeSpec || se.Code == control.CodeLimit):
		return exitUsage
	case errors.As(err, &g):
		return exitGate
	}
	return exitError
}

// run is the whole program: it parses args, runs the command, and returns
// its error; main only maps that to an exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := newRoot(stdout, stderr, args)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && (cmd == root || cmd.Name() == cobra.ShellCompRequestCmd) && !errors.As(err, new(usageError)) {
		// The root runs nothing (it prints help or the version), and
		// cobra's hidden completion command only prints completions: an
		// error of theirs not a flag's (a usage error already) is cobra's,
		// untyped: an argument that names no command, or no command line to
		// complete (the completion command, added by Execute, has not had
		// its Args made ours by usageArgs).
		return usageError{err}
	}
	return err
}

// errorText is how the program says err on stderr: "rdmabench: " and the
// error, then, where this host has no RDMA device at all, how to make one
// (said once, however many tests failed for it).
func errorText(err error) string {
	s := "rdmabench: " + err.Error() + "\n"
	if errors.Is(err, verbs.ErrNoDevices) {
		s += "hint: " + verbs.NoDeviceHelp + "\n"
	}
	return s
}

// sayFlagError is how a flag's bad value is said: as pflag says it
// ("invalid argument "4Q" for "-s, --size" flag: ..."), but for errors
// that say the flag and its value themselves, and what to write instead.
func sayFlagError(err error) error {
	var ive *pflag.InvalidValueError
	var sr *workloads.SizeRangeError
	if errors.As(err, &ive) && errors.As(err, &sr) {
		name := "--" + ive.GetFlag().Name
		if sh := ive.GetFlag().Shorthand; sh != "" {
			name = "-" + sh
		}
		return errors.New(sr.Say(name))
	}
	return err
}

// usageArgs makes the errors of every Args validator of cmd and its
// subcommands usage errors: cobra's own (cobra.NoArgs,
// cobra.MaximumNArgs, those of its completion commands) are untyped.
func usageArgs(cmd *cobra.Command) {
	if valid := cmd.Args; valid != nil {
		cmd.Args = func(cmd *cobra.Command, args []string) error {
			err := valid(cmd, args)
			if err == nil || errors.As(err, new(usageError)) {
				return err
			}
			return usageError{err}
		}
	}
	for _, sub := range cmd.Commands() {
		usageArgs(sub)
	}
}

func newRoot(stdout, stderr io.Writer, args []string) *cobra.Command {
	root := &cobra.Command{
		Use:   "rdmabench",
		Short: "RDMA latency and bandwidth, measured the way perftest does, with full distributions",
		Long: `rdmabench measures RDMA write, read, send and atomic latency and bandwidth
between two hosts (or on one, over the device's loopback), next to a TCP
baseline measured the same way. Latency is reported as a full distribution
(HdrHistogram); results print as a table or as one JSON document.`,
		Example: `  rdmabench devices
  rdmabench write-lat -d rxe0 -s 2..4K
  rdmabench serve                # on node-b, then on node-a:
  rdmabench suite node-b --out run.json`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	// --version prints what the version command prints (cobra's flag,
	// declared here so that it has no -v shorthand).
	root.Version = buildinfo.Version
	root.Flags().Bool("version", false, "print the version, as the version command does")
	root.SetVersionTemplate(strings.ReplaceAll(versionText(buildinfo.Get()), "{{", "{{`{{`}}"))
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		// Every error of pflag's is a usage error; one that a flag does not
		// exist (*pflag.NotExistError) may be a flag of other commands', or
		// perftest's.
		var ne *pflag.NotExistError
		if errors.As(err, &ne) {
			long, short := ne.GetSpecifiedName(), ""
			if ne.GetSpecifiedShortnames() != "" { // a letter, in a group such as -aF
				long, short = "", long
			}
			if why := notApplicable(cmd.Name(), long, short); why != nil {
				return usageError{why}
			}
			if hint := perftestHint(cmd, long, short); hint != nil {
				return usageError{hint}
			}
		}
		return usageError{sayFlagError(err)}
	})
	root.AddCommand(newVersionCmd(), newDevicesCmd(), newServeCmd(), newAgentCmd(), newSuiteCmd(args))
	root.AddCommand(newReportCmd(), newCompareCmd())
	root.AddCommand(newPlotCmd(), newMeshCmd(args), newManCmd())
	for _, t := range workloads.Tests {
		root.AddCommand(newTestCmd(t, args))
	}
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	cobraExamples(root)
	registerCompletions(root)
	useWrappedHelp(root)
	usageArgs(root)
	return root
}
