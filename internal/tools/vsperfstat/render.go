package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// agreeMark follows a ratio whose interval contains 1 or lies within the
// agreement band.
const agreeMark = "✓"

// render prints the latency, bandwidth and settings tables of rows.
func render(w io.Writer, rows []rowSummary) error {
	bw := bufio.NewWriter(w)
	var lat, band []rowSummary
	for _, r := range rows {
		if r.Latency() {
			lat = append(lat, r)
		} else {
			band = append(band, r)
		}
	}
	ratioNote := fmt.Sprintf("Each ratio is rdmabench / perftest: the median of the per-pair ratios "+
		"with its %.0f%% confidence interval in brackets. %s: the interval contains 1.00 or lies within %.2f..%.2f. "+
		"The tools' own figures are the medians over the same pairs.", 100*confidence, agreeMark, bandLo, bandHi)
	if len(lat) > 0 {
		fmt.Fprintln(bw, "Latency, µs (write and send: half the round trip; read and atomic: the whole round trip); > 1: rdmabench reports more time.", ratioNote)
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, "| test | bytes | topology | pairs | min ratio | p50 ratio | perftest t_min | rdmabench min | perftest t_typical | rdmabench p50 | settings |")
		fmt.Fprintln(bw, "|---|---:|---|---:|---|---|---:|---:|---:|---:|---|")
		for _, r := range lat {
			mn, p50 := r.Figs[figMin], r.Figs[figP50]
			fmt.Fprintf(bw, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				r.Test, r.Size, r.Topology, pairsCell(r.Pairs, r.Complete, r.Failed),
				ratioCell(mn.Ratio), ratioCell(p50.Ratio),
				fixed(mn.PT, 2), fixed(mn.RB, 2), fixed(p50.PT, 2), fixed(p50.RB, 2), matchCell(r.Mismatch))
		}
		fmt.Fprintln(bw)
	}
	if len(band) > 0 {
		fmt.Fprintln(bw, "Bandwidth, sender side, payload bytes: MiB/s (perftest's MB/sec is 2^20 B/s) and millions of messages/s; < 1: rdmabench reports less.", ratioNote)
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, "| test | bytes | topology | pairs | MiB/s ratio | Mmsg/s ratio | perftest MiB/s | rdmabench MiB/s | perftest Mpps | rdmabench Mmsg/s | settings |")
		fmt.Fprintln(bw, "|---|---:|---|---:|---|---|---:|---:|---:|---:|---|")
		for _, r := range band {
			b, m := r.Figs[figMiB], r.Figs[figMsg]
			fmt.Fprintf(bw, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				r.Test, r.Size, r.Topology, pairsCell(r.Pairs, r.Complete, r.Failed),
				ratioCell(b.Ratio), ratioCell(m.Ratio),
				fixed(b.PT, 2), fixed(b.RB, 2), sig(m.PT), sig(m.RB), matchCell(r.Mismatch))
		}
		fmt.Fprintln(bw)
	}
	if len(rows) > 0 {
		renderSettings(bw, rows)
	}
	return bw.Flush()
}

// renderSettings prints each row's settings, perftest / rdmabench.
func renderSettings(w io.Writer, rows []rowSummary) {
	var maps []map[string]string
	for _, r := range rows {
		maps = append(maps, r.PT, r.RB)
	}
	keys := keysOf(maps...)
	fmt.Fprintln(w, "Settings each tool reported, perftest / rdmabench (\"-\": not reported or not applicable),"+
		" and the flags added to rdmabench's command line to match perftest's.")
	fmt.Fprintln(w)
	head := []string{"test", "bytes", "topology"}
	for _, k := range keys {
		head = append(head, titleOf(k))
	}
	head = append(head, "rdmabench flags added", "settings")
	fmt.Fprintln(w, "| "+strings.Join(head, " | ")+" |")
	fmt.Fprintln(w, "|---|---:|---|"+strings.Repeat("---|", len(keys)+2))
	for _, r := range rows {
		cells := []string{r.Test, strconv.Itoa(r.Size), r.Topology}
		for _, k := range keys {
			cells = append(cells, orDash(r.PT[k])+" / "+orDash(r.RB[k]))
		}
		flags := r.Flags
		if flags == "" {
			flags = "none"
		}
		cells = append(cells, "`"+flags+"`", matchCell(r.Mismatch))
		fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
	}
	fmt.Fprintln(w)
}

// renderTime prints the time-to-an-answer table.
func renderTime(w io.Writer, s timeSummary) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "Time to an answer: wall time of `rdmabench suite` against a shell loop of the 8 perftest pairs"+
		" (server and client each) at the same iteration counts; < 1: rdmabench answers sooner."+
		" The ratio is the median of the per-pair ratios with its %.0f%% confidence interval.\n\n", 100*confidence)
	fmt.Fprintln(bw, "| pairs | rdmabench suite, s | perftest loop, s | ratio |")
	fmt.Fprintln(bw, "|---:|---:|---:|---|")
	fmt.Fprintf(bw, "| %s | %s | %s | %s |\n", pairsCell(s.Pairs, s.Complete, s.Failed),
		fixed(s.RB, 2), fixed(s.PT, 2), ratioCell(s.Ratio))
	return bw.Flush()
}

func pairsCell(asked, complete, failed int) string {
	if complete == asked && failed == 0 {
		return strconv.Itoa(complete)
	}
	runs := "runs"
	if failed == 1 {
		runs = "run"
	}
	return fmt.Sprintf("%d of %d (%d %s failed)", complete, asked, failed, runs)
}

// ratioCell is "1.004 [0.991, 1.019] ✓".
func ratioCell(s stat) string {
	if s.N == 0 {
		return "-"
	}
	if !s.Bounded() {
		return fmt.Sprintf("%.3f (too few pairs for an interval)", s.Center)
	}
	c := fmt.Sprintf("%.3f [%.3f, %.3f]", s.Center, s.Lo, s.Hi)
	if s.Agrees() {
		c += " " + agreeMark
	}
	return c
}

func matchCell(mismatch []string) string {
	if len(mismatch) == 0 {
		return "matched"
	}
	return "**not matched**: " + strings.Join(mismatch, "; ")
}

func fixed(v float64, prec int) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// sig prints a small rate with 4 significant digits.
func sig(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
