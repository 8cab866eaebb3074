package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/compare"
	"github.com/rdmabench/rdmabench/pkg/report/render"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newCompareCmd() *cobra.Command {
	f := &compareFlags{}
	cmd := &cobra.Command{
		Use:   "compare BASE NEW",
		Short: "Compare two results documents; exit status 3 when a gate fails",
		Long: `Compare two results documents (saved with -o json or --out), per test,
connection and size found in both, as benchstat does: for the p50 and p99
latency, or the bandwidth and message rate, each side's median over its
runs with a 95% confidence interval, the change of the medians, and a
Mann-Whitney U test: "~" beside a change that is not significant. Run the
tests with --repeat (at least 4 runs on each side for a significance test,
6 for a confidence interval); a document of one run gives one value, too
few for a test ("untested"). Every difference in what ran is footnoted:
tool version, host name, kernel, CPU, device, firmware, MTU, link layer,
GID type, each parameter (cores --cpu and --server-cpu, memory, inline,
queue depths ...) and each result's effective settings, clock and
pinning; tests found on one side only and tests that failed are listed.

Two mesh documents (rdmabench mesh --out) are compared link by link: per
matrix (test, connection, size and figure) found in both, the links
measured on both sides, the change of the matrix's median over them, and
its --top most changed links (either way); links measured on one side
only, links that failed on either side, and ranks that moved are listed.
Links are matched by rank, or, when a rank's host differs and host names
(with devices) identify every rank of both runs, by host, as the output
says. Each link has one value per side, so there is no significance test:
a gate fails on a link's own change (a link twice as slow fails
--max-p50-regression 10%), naming the link; --limit-bw applies to every
link of NEW. -o csv writes one row per link and figure. A link that
failed in NEW makes the exit status 1, as it made the mesh's. A mesh
document against a single run's is refused.

Gates make compare a CI check, and they fail closed: the exit status is
3, naming each reason, when a figure got worse than a gate allows and the
change is significant, or the runs are too few for a significance test
(the gate then judges the change alone, and says so; with
--require-significance such a change does not fail it); when a test
failed in NEW, or BASE has a test NEW lacks, or NEW's run stopped early;
when a gate has nothing to compare (no test, size or matrix in common).
A change beyond a gate that the U test finds to be noise does not fail
it; the output says so. Without gates, or when every gate passes, the
exit status is 0. The failed checks are listed with the output (stdout);
the error on stderr counts them, and lists them too unless stdout and
stderr are the same terminal, pipe or file.`,
		Example: `  rdmabench suite --repeat 5 -o json --out new.json
  rdmabench compare base.json new.json --max-regression 5%
  rdmabench compare base.json new.json --max-p99-regression 10% \
    --min-bw-ratio 0.95 -o markdown
  rdmabench compare base-mesh.json new-mesh.json --max-p50-regression 10% \
    --top 20
  rdmabench compare base-mesh.json new-mesh.json -o csv > links.csv`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageError{fmt.Errorf("compare: want two results files, BASE and NEW; got %d", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			gates, err := f.gates()
			if err != nil {
				return usageError{err}
			}
			var docs [2]*report.Document
			for i, path := range args {
				doc, err := readDocument(cmd, path)
				if err != nil {
					return fmt.Errorf("compare: %w", err)
				}
				docs[i] = doc
			}
			if docs[0].IsMesh() || docs[1].IsMesh() {
				if cmd.Flags().Changed("require-significance") && docs[0].IsMesh() && docs[1].IsMesh() {
					return usageError{errors.New("compare: --require-significance does not apply to two mesh documents: each link has one value per side, so there is no significance test")}
				}
				return compareMeshes(cmd, args, docs, f.output, f.top, gates, f.limits)
			}
			return f.compareRuns(cmd, args, docs, gates)
		},
	}
	f.add(cmd.Flags())
	return cmd
}

// compareFlags are compare's flags.
type compareFlags struct {
	output                        string
	alpha                         float64
	maxReg, maxP50, maxP99, maxBW percentFlag
	minBWRatio                    ratioFlag
	limits                        report.Limits
	top                           int
	requireSignificance           bool
}

// add declares the flags.
func (f *compareFlags) add(fs *pflag.FlagSet) {
	fs.StringVarP(&f.output, "output", "o", render.FormatTable, "output format: "+strings.Join(render.CompareFormats, ", ")+
		"; for two meshes also csv (one row per link and figure)")
	fs.Float64Var(&f.alpha, "alpha", report.Alpha, "significance level of the Mann-Whitney U test (single runs)")
	fs.IntVar(&f.top, "top", compare.DefaultMeshTop, "two meshes: how many of each matrix's most changed links to list (0: none)")
	fs.Var(&f.maxReg, "max-regression", "fail when any figure got worse by more than this (latency up, bandwidth down), significantly or with too few runs to test, e.g. 5%")
	fs.Var(&f.maxP50, "max-p50-regression", "fail when the p50 latency rose by more than this (as --max-regression)")
	fs.Var(&f.maxP99, "max-p99-regression", "fail when the p99 latency rose by more than this (as --max-regression)")
	fs.Var(&f.maxBW, "max-bw-regression", "fail when the bandwidth fell by more than this (as --max-regression)")
	fs.Var(&f.minBWRatio, "min-bw-ratio", "fail when NEW/BASE bandwidth is below this ratio (as --max-regression), e.g. 0.95")
	fs.BoolVar(&f.requireSignificance, "require-significance", false, "single runs: fail a gate only on a change the U test finds significant; with too few runs for a test (as one run a side, every command's default) a change beyond the gate then passes, where by default the gate judges the change alone")
	fs.Var(&bwLimit{&f.limits}, "limit-bw", "fail when a NEW bandwidth (the median of its runs) is below this, e.g. 90Gbps, or this share of the link's nominal rate for RDMA, e.g. 90%link")
}

// gates checks the flags and returns the gates they ask for.
func (f *compareFlags) gates() (compare.Gates, error) {
	if !slices.Contains(render.CompareFormats, f.output) && !slices.Contains(render.MeshCompareFormats, f.output) {
		return nil, fmt.Errorf("compare: unknown output format %q (want %s; %s for two meshes)", f.output,
			strings.Join(render.CompareFormats, ", "), strings.Join(render.MeshCompareFormats, ", "))
	}
	if f.top < 0 {
		return nil, fmt.Errorf("compare: --top %d: want 0 or more links", f.top)
	}
	if f.alpha <= 0 || f.alpha >= 1 {
		return nil, fmt.Errorf("compare: --alpha %g must be between 0 and 1", f.alpha)
	}
	var gates compare.Gates
	pctGate := func(flag string, p *percentFlag, figs ...report.Figure) {
		if p.set {
			gates = append(gates, compare.MaxRegressionGate("--"+flag+" "+p.String(), p.v, figs...))
		}
	}
	pctGate("max-regression", &f.maxReg)
	pctGate("max-p50-regression", &f.maxP50, report.FigP50)
	pctGate("max-p99-regression", &f.maxP99, report.FigP99)
	pctGate("max-bw-regression", &f.maxBW, report.FigGbps)
	if f.minBWRatio.set {
		gates = append(gates, compare.MinRatioGate("--min-bw-ratio "+f.minBWRatio.String(), f.minBWRatio.v, report.FigGbps))
	}
	return gates, nil
}

// compareRuns is compare of two single runs' documents: per test,
// connection and size, the gates (failing closed), --limit-bw on NEW's
// medians.
func (f *compareFlags) compareRuns(cmd *cobra.Command, args []string, docs [2]*report.Document, gates compare.Gates) error {
	if cmd.Flags().Changed("top") {
		return usageError{errors.New("compare: --top applies to two mesh documents, not to single runs")}
	}
	if !slices.Contains(render.CompareFormats, f.output) {
		return usageError{fmt.Errorf("compare: -o %s applies to two mesh documents; for single runs want %s", f.output, strings.Join(render.CompareFormats, ", "))}
	}
	if f.requireSignificance && len(gates) == 0 {
		return usageError{errors.New("compare: --require-significance applies to the gates on changes (--max-regression, --max-p50-regression, --max-p99-regression, --max-bw-regression, --min-bw-ratio); none was given")}
	}
	c := compare.Compare(docs[0], docs[1], compare.Options{BaseName: args[0], NewName: args[1], Alpha: f.alpha})
	var verdict *compare.GateResult
	if len(gates) > 0 || !f.limits.IsZero() {
		verdict = c.CheckGatesWith(gates, compare.GateOptions{RequireSignificance: f.requireSignificance})
		bw := bwLimit{&f.limits}
		verdict.AddLimits("--limit-bw "+bw.String(), docs[1], f.limits)
	}
	if err := render.WriteComparisonWith(cmd.OutOrStdout(), f.output, c, verdict, tableOptions(cmd)); err != nil {
		return err
	}
	if verdict.Failed() {
		return gateError{gateFailures(cmd, fmt.Sprintf("%d gate check(s) failed", verdict.Count()), verdict.FailedLines())}
	}
	return nil
}

// gateFailures is the error of checks that failed: what says how many,
// then each line of lines, unless stdout, where the output listed them,
// is where stderr goes too (one terminal, pipe or file): then once is
// enough. A CI log that keeps stderr alone still sees each failure.
func gateFailures(cmd *cobra.Command, what string, lines []string) error {
	if sameDestination(cmd.OutOrStdout(), cmd.ErrOrStderr()) {
		return fmt.Errorf("compare: %s (listed above)", what)
	}
	if len(lines) > maxStderrLinks {
		lines = append(lines[:maxStderrLinks:maxStderrLinks], fmt.Sprintf("... and %d more (-o json lists them all)", len(lines)-maxStderrLinks))
	}
	return fmt.Errorf("compare: %s\n%s", what, strings.Join(lines, "\n"))
}

// sameDestination reports whether stdout and stderr write to one place:
// the same writer, or files (a terminal, a pipe, a file) that are one.
func sameDestination(stdout, stderr io.Writer) bool {
	fo, ok1 := stdout.(*os.File)
	fe, ok2 := stderr.(*os.File)
	if !ok1 || !ok2 {
		return false
	}
	if fo == fe {
		return true
	}
	so, err1 := fo.Stat()
	se, err2 := fe.Stat()
	return err1 == nil && err2 == nil && os.SameFile(so, se)
}

// maxStderrLinks is how many failed links and gate failures a mesh
// comparison names on stderr; -o json and -o csv hold them all.
const maxStderrLinks = 100

// compareMeshes is compare of two mesh documents: link by link, the gates
// on each link's own change, --limit-bw on every link of NEW. A link that
// failed in NEW is an error (exit status 1, as the mesh's was); otherwise
// a gate that failed makes it 3.
func compareMeshes(cmd *cobra.Command, args []string, docs [2]*report.Document, output string, top int,
	gates compare.Gates, limits report.Limits) error {
	if !docs[0].IsMesh() || !docs[1].IsMesh() {
		return usageError{errors.New("compare: " + compare.MixedKinds(docs[0], docs[1], args[0], args[1]))}
	}
	if cmd.Flags().Changed("alpha") {
		return usageError{errors.New("compare: --alpha does not apply to two mesh documents: each link has one value per side, so there is no significance test")}
	}
	if top == 0 {
		top = -1 // none
	}
	c, err := compare.CompareMesh(docs[0], docs[1], compare.MeshOptions{BaseName: args[0], NewName: args[1], Top: top})
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	var verdict *compare.MeshGateResult
	if len(gates) > 0 || !limits.IsZero() {
		verdict = c.CheckGates(gates)
		bw := bwLimit{&limits}
		c.AddLimits(verdict, "--limit-bw "+bw.String(), limits)
	}
	if err := render.WriteMeshComparisonWith(cmd.OutOrStdout(), output, c, verdict, tableOptions(cmd)); err != nil {
		return err
	}
	var lines []string
	for _, l := range c.FailedNew {
		lines = append(lines, fmt.Sprintf("link failed (new): %d -> %d: %s", l.From, l.To, l.Error))
	}
	lines = append(lines, verdict.FailedLines()...)
	checks := verdict.Count()
	switch {
	case len(c.FailedNew) > 0:
		what := fmt.Sprintf("%d of %d links failed in NEW", len(c.FailedNew), c.New.Links)
		if checks > 0 {
			what += fmt.Sprintf(", and %d gate check(s) failed", checks)
		}
		return gateFailures(cmd, what, lines)
	case checks > 0:
		return gateError{gateFailures(cmd, fmt.Sprintf("%d gate check(s) failed", checks), lines)}
	}
	return nil
}
