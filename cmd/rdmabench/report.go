package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/render"
	"github.com/spf13/cobra"
)

func newReportCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "report FILE...",
		Short: "Render saved results documents in any output format (-o)",
		Long: `Render results documents saved with -o json or --out, without a device.

Several files are shown together: a table or Markdown section per file,
headed by its name; one CSV table with a first column "source"; a JSON
array of the documents, each unchanged; Go benchmark lines one file after
another, so that benchstat pools the runs of all of them; one
github-action-benchmark array, each name starting with its file's; one
OpenMetrics exposition, each sample labelled source="FILE". "-" reads a
document from standard input.

A file of another schema version, a truncated or hand-broken file is an
error naming the file and what is wrong with it (exit status 1); a format
the files have no rendering in (a mesh document renders as table,
markdown, csv and json) is a usage error (exit status 2).`,
		Example: `  rdmabench report results.json
  rdmabench report base.json new.json -o csv > results.csv
  rdmabench report runs.json -o gobench > new.txt && benchstat old.txt new.txt
  rdmabench report runs.json -o github-action-benchmark-latency > latency.json
  rdmabench report runs.json -o openmetrics > rdmabench.prom`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("report: name at least one results file (or - for standard input)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := render.CheckFormat(output); err != nil {
				return usageError{fmt.Errorf("report: %w", err)}
			}
			srcs := make([]report.Source, 0, len(args))
			for _, path := range args {
				doc, err := readDocument(cmd, path)
				if err != nil {
					return fmt.Errorf("report: %w", err)
				}
				if path == "-" {
					path = "standard input"
				}
				srcs = append(srcs, report.Source{Name: path, Doc: doc})
			}
			return render.WriteSourcesWith(cmd.OutOrStdout(), output, srcs, tableOptions(cmd))
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", render.FormatTable, "output format: "+strings.Join(render.Formats, ", "))
	return cmd
}

// readDocument reads the results document at path, or on standard input
// for "-"; errors name the file.
func readDocument(cmd *cobra.Command, path string) (*report.Document, error) {
	if path == "-" {
		return report.ReadNamed(cmd.InOrStdin(), "standard input")
	}
	return report.ReadFile(path)
}
