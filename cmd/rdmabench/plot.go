package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/rdmabench/rdmabench/internal/atomicfile"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/plot"
	"github.com/spf13/cobra"
)

func newPlotCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "plot FILE...",
		Short: "Plot saved results as one self-contained HTML page",
		Long: `Plot results documents saved with -o json or --out as one HTML page of SVG
charts, without a device: the latency percentile spectrum of each test and
size (decoded from its histogram; x = percentile on a 1/(1-p) axis), latency,
bandwidth and message rate against message size for tests run at several
sizes, p50 and p99, bandwidth and message rate per test for what no other
chart draws (a test run at one size: one dot per file, as compare reads
them), and bandwidth and latency per interval for duration-mode (-D) runs.
What cannot be drawn (a failed test, a missing histogram) is listed under
"Not plotted" with the reason.

A mesh document (rdmabench mesh --out fabric.json) is drawn as a heatmap
of each matrix: rows the client rank, columns the server rank, cells
coloured against the median of all links (red is worse: higher latency,
lower bandwidth), failed links hatched, each value in its cell's tooltip
(and written in it up to 16 ranks). A load pattern mesh (mesh --pattern)
is drawn as its steps: one dot per step and receiver (ranks filled, hosts
open) of the receivers' aggregate, its share of the nominal rate where
the devices say it, Jain's index, and the p50 and p99 of the probe under
the load.

Several files are overlaid, each in its own colour (base against new, as
compare reads them); mesh documents among them add their heatmaps. The
page needs no network and runs no script. "-" reads a document from
standard input; -o - writes the page to standard output.`,
		Example: `  rdmabench plot results.json -o results.html
  rdmabench plot base.json new.json -o compare.html
  rdmabench plot fabric.json -o fabric.html`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("plot: name at least one results file (or - for standard input)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError{errors.New("plot: -o needs a file name (or - for standard output)")}
			}
			srcs := make([]report.Source, 0, len(args))
			for _, path := range args {
				doc, err := readDocument(cmd, path)
				if err != nil {
					return fmt.Errorf("plot: %w", err)
				}
				if path == "-" {
					path = "standard input"
				}
				srcs = append(srcs, report.Source{Name: path, Doc: doc})
			}
			write := func(w io.Writer) error { return plot.Write(w, srcs) }
			if out == "-" {
				return write(cmd.OutOrStdout())
			}
			if err := atomicfile.Write(out, write); err != nil {
				return fmt.Errorf("plot: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "plot: wrote %s\n", out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "plot.html", "the HTML file to write (- for standard output)")
	return cmd
}
