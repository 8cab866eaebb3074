package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/spf13/cobra"
)

func newCompareCmd() *cobra.Command {
	var (
		output                        string
		alpha                         float64
		maxReg, maxP50, maxP99, maxBW percentFlag
		minBWRatio                    ratioFlag
		limits                        report.Limits
	)
	cmd := &cobra.Command{
		Use:   "compare BASE NEW",
		Short: "Compare two results documents; exit status 3 when a gate fails",
		Long: `Compare two results documents (saved with -o json or --out), per test,
connection and size found in both, as benchstat does: for the p50 and p99
latency, or the bandwidth and message rate, each side's median over its
runs with a 95% confidence interval, the change of the medians, and a
Mann-Whitney U test: "~" where the difference is not significant. Run the
tests with --repeat (at least 4 runs on each side for a significance test,
6 for a confidence interval); a document of one run gives one value, and
no change is significant. Differences of device, firmware, MTU, link
layer, GID type, kernel, CPU, parameters or tool version are footnoted;
tests found on one side only are listed.

Gates make compare a CI check: it exits with status 3, listing the failing
rows, when a figure got significantly worse than a gate allows. A change
beyond a gate that is not significant (noise, or too few runs) does not
fail it; the output says so. Without gates, or when every gate passes,
the exit status is 0.`,
		Example: `  rdmabench suite --repeat 5 -o json --out new.json
  rdmabench compare base.json new.json --max-regression 5%
  rdmabench compare base.json new.json --max-p99-regression 10% --min-bw-ratio 0.95 -o markdown`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageError{fmt.Errorf("compare: want two results files, BASE and NEW; got %d", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(report.CompareFormats, output) {
				return usageError{fmt.Errorf("compare: unknown output format %q (want %s)", output, strings.Join(report.CompareFormats, ", "))}
			}
			if alpha <= 0 || alpha >= 1 {
				return usageError{fmt.Errorf("compare: --alpha %g must be between 0 and 1", alpha)}
			}
			var docs [2]*report.Document
			for i, path := range args {
				doc, err := readDocument(cmd, path)
				if err != nil {
					return fmt.Errorf("compare: %w", err)
				}
				docs[i] = doc
			}
			c := report.Compare(docs[0], docs[1], report.CompareOptions{BaseName: args[0], NewName: args[1], Alpha: alpha})

			var gates report.Gates
			pctGate := func(flag string, p *percentFlag, figs ...report.Figure) {
				if p.set {
					gates = append(gates, report.MaxRegressionGate("--"+flag+" "+p.String(), p.v, figs...))
				}
			}
			pctGate("max-regression", &maxReg)
			pctGate("max-p50-regression", &maxP50, report.FigP50)
			pctGate("max-p99-regression", &maxP99, report.FigP99)
			pctGate("max-bw-regression", &maxBW, report.FigGbps)
			if minBWRatio.set {
				gates = append(gates, report.MinRatioGate("--min-bw-ratio "+minBWRatio.String(), minBWRatio.v, report.FigGbps))
			}
			var verdict *report.GateResult
			if len(gates) > 0 || !limits.IsZero() {
				verdict = c.CheckGates(gates)
				bw := bwLimit{&limits}
				verdict.AddLimits("--limit-bw "+bw.String(), docs[1], limits)
			}
			if err := report.WriteComparison(cmd.OutOrStdout(), output, c, verdict); err != nil {
				return err
			}
			if verdict.Failed() {
				var lines []string
				for _, f := range verdict.Failures {
					lines = append(lines, f.String())
				}
				for _, f := range verdict.Limits {
					lines = append(lines, "limit failed (new): "+f.String())
				}
				return gateError{fmt.Errorf("compare: %d gate check(s) failed\n%s", len(lines), strings.Join(lines, "\n"))}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&output, "output", "o", report.FormatTable, "output format: "+strings.Join(report.CompareFormats, ", "))
	fs.Float64Var(&alpha, "alpha", report.Alpha, "significance level of the Mann-Whitney U test")
	fs.Var(&maxReg, "max-regression", "fail when any figure got significantly worse by more than this (latency up, bandwidth down), e.g. 5%")
	fs.Var(&maxP50, "max-p50-regression", "fail when the p50 latency rose significantly by more than this")
	fs.Var(&maxP99, "max-p99-regression", "fail when the p99 latency rose significantly by more than this")
	fs.Var(&maxBW, "max-bw-regression", "fail when the bandwidth fell significantly by more than this")
	fs.Var(&minBWRatio, "min-bw-ratio", "fail when NEW/BASE bandwidth is significantly below this ratio, e.g. 0.95")
	fs.Var(&bwLimit{&limits}, "limit-bw", "fail when a NEW bandwidth (the median of its runs) is below this, e.g. 90Gbps, or this share of the link's nominal rate for RDMA, e.g. 90%link")
	return cmd
}
