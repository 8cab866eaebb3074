// Command ratiostat prints, for rounds of interleaved runs, the median of
// the per-round ratios of one tool's figures to another's with its 95%
// confidence interval (golang.org/x/perf/benchmath, as benchstat). It
// reads lines "ROW ROUND TOOL FIGURE..." (whitespace-separated; other lines
// are skipped) and prints a markdown table for each pair of tools named on
// the command line as A/B.
//
// Usage: go run ./internal/tools/ratiostat FILE A/B [A/B...]
package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: ratiostat FILE A/B [A/B...]")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "ratiostat:", err)
		os.Exit(1)
	}
	if err := write(os.Stdout, parse(string(data)), os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "ratiostat:", err)
		os.Exit(1)
	}
}

// runs holds, per row and round, each tool's figures.
type runs struct {
	rows  []string
	figs  map[string]map[string]map[string][]float64 // row -> round -> tool -> figures
	width int                                        // figures per line, at most
}

func parse(text string) *runs {
	r := &runs{figs: map[string]map[string]map[string][]float64{}}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		var vals []float64
		for _, x := range f[3:] {
			v, err := strconv.ParseFloat(x, 64)
			if err != nil {
				vals = nil
				break
			}
			vals = append(vals, v)
		}
		if vals == nil {
			continue
		}
		row, round, tool := f[0], f[1], f[2]
		if r.figs[row] == nil {
			r.figs[row] = map[string]map[string][]float64{}
			r.rows = append(r.rows, row)
		}
		if r.figs[row][round] == nil {
			r.figs[row][round] = map[string][]float64{}
		}
		r.figs[row][round][tool] = vals
		r.width = max(r.width, len(vals))
	}
	return r
}

// ratios returns, for row, the per-round ratios of figure i of a to b.
func (r *runs) ratios(row, a, b string, i int) []float64 {
	var out []float64
	for _, tools := range r.figs[row] {
		x, y := tools[a], tools[b]
		if i < len(x) && i < len(y) && y[i] != 0 {
			out = append(out, x[i]/y[i])
		}
	}
	return out
}

func write(w io.Writer, r *runs, pairs []string) error {
	for _, p := range pairs {
		a, b, ok := strings.Cut(p, "/")
		if !ok {
			return fmt.Errorf("%q is not A/B", p)
		}
		fmt.Fprintf(w, "\n%s / %s: the median of the per-round ratios with its 95%% confidence interval\n\n| row | rounds |", a, b)
		for i := range r.width {
			fmt.Fprintf(w, " figure %d |", i+1)
		}
		fmt.Fprint(w, "\n|---|---:|"+strings.Repeat("---|", r.width)+"\n")
		for _, row := range r.rows {
			n := len(r.ratios(row, a, b, 0))
			if n == 0 {
				continue
			}
			fmt.Fprintf(w, "| %s | %d |", row, n)
			for i := range r.width {
				fmt.Fprintf(w, " %s |", spread(report.SpreadOf(r.ratios(row, a, b, i))))
			}
			fmt.Fprintln(w)
		}
	}
	return nil
}

func spread(s report.Spread) string {
	if s.N == 0 {
		return "-"
	}
	if !s.Bounded() {
		return fmt.Sprintf("%.3f (too few for an interval)", s.Median)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f]", s.Median, *s.Lo, *s.Hi)
}
