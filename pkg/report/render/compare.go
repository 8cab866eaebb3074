package render

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter/tw"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/compare"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// CompareFormats are the output formats of a comparison.
var CompareFormats = []string{FormatTable, FormatMarkdown, FormatJSON}

// WriteComparison writes c in format (table, markdown or json), with the
// verdict of its gates when gates is not nil.
//
// The table and Markdown forms have one row per figure of each test and
// size: each side's median over its runs with the 95% confidence interval
// ("±2%"; "±∞" with too few runs for one), the change of the medians with
// the U test's p-value and run counts, and "~" beside a change that is
// not significant, as benchstat prints it (but never in place of the
// change). Footnotes follow: rows with too few runs for a significance
// test, failed runs, tests on one side only, differences of environment
// and parameters, then the gates: each check that failed ("gate failed:
// ...", "limit failed (new): ..."), and each change beyond a threshold
// that does not fail it because it is noise.
//
// The JSON form is the Comparison itself with "schema"
// ([compare.Schema]) and "gates" fields.
func WriteComparison(w io.Writer, format string, c *compare.Comparison, gates *compare.GateResult) error {
	return WriteComparisonWith(w, format, c, gates, Options{})
}

// WriteComparisonWith is [WriteComparison] with the table laid out as
// opts say.
func WriteComparisonWith(w io.Writer, format string, c *compare.Comparison, gates *compare.GateResult, opts Options) error {
	if c == nil {
		return errors.New("report: write comparison: nil comparison")
	}
	var out bytes.Buffer
	switch format {
	case FormatTable:
		if err := compareTable(&out, c, gates, opts); err != nil {
			return err
		}
	case FormatMarkdown:
		compareMarkdown(&out, c, gates)
	case FormatJSON:
		b, err := json.MarshalIndent(comparisonJSON{compare.Schema, c, gates}, "", "  ")
		if err != nil {
			return fmt.Errorf("report: write comparison: %w", err)
		}
		out.Write(append(b, '\n'))
	default:
		return fmt.Errorf("report: unknown comparison format %q (want %s)", format, strings.Join(CompareFormats, ", "))
	}
	if _, err := w.Write(out.Bytes()); err != nil {
		return fmt.Errorf("report: write comparison: %w", err)
	}
	return nil
}

// comparisonJSON is the JSON form of a comparison, as
// pkg/report/schema/compare-v1.json describes it.
type comparisonJSON struct {
	Schema string `json:"schema"`
	*compare.Comparison
	Gates *compare.GateResult `json:"gates,omitempty"`
}

const compareLegend = "median of the runs ± 95%% confidence interval; delta of the medians, " +
	"~ if not significant (Mann-Whitney U, alpha %g)"

var compareLabels = []string{"test", "conn", "bytes", "figure", "base", "new", "delta", "U test"}

// compareCells returns the rows of the comparison table as cells, with
// their footnote references, and the footnotes.
func compareCells(c *compare.Comparison) (rows []row, notes []string) {
	noteNum := map[string]int{}
	ref := func(text string) string {
		n, ok := noteNum[text]
		if !ok {
			notes = append(notes, text)
			n = len(notes)
			noteNum[text] = n
		}
		return "[" + strconv.Itoa(n) + "]"
	}
	need := report.MinRunsForTest(c.Alpha)
	u := compareUnit(c)
	for _, r := range c.Rows {
		for i, fc := range r.Figures {
			cells := make([]string, 4, len(compareLabels))
			if i == 0 {
				cells[0], cells[1], cells[2] = textfmt.Clean(r.Test), cmp.Or(textfmt.Clean(r.Connection), "-"), strconv.Itoa(r.Size)
			}
			cells[3] = figureLabel(fc.Figure, u)
			cells = append(cells, spreadCell(fc.Figure, fc.Base, u), spreadCell(fc.Figure, fc.New, u), fc.Delta(), fc.Test())
			var refs []string
			if fc.TooFewRuns {
				refs = append(refs, ref(fmt.Sprintf("need at least %d runs on each side for a significance test (alpha %g): the change is not tested", need, c.Alpha)))
			}
			if fc.Base.N == 0 || fc.New.N == 0 {
				refs = append(refs, ref(fmt.Sprintf("%s: no measurement on one side", r.Key)))
			}
			for _, w := range fc.Warnings {
				refs = append(refs, ref(w))
			}
			if i == 0 {
				for _, n := range r.Notes {
					refs = append(refs, ref(r.Key.String()+": "+n))
				}
			}
			rows = append(rows, row{cells: cells, suffix: strings.Join(refs, "")})
		}
	}
	return rows, notes
}

// alignDeltas pads the deltas without a "~" so that, right-aligned, their
// numbers line up with those beside one: "+50.38%  " over "+0.96% ~".
func alignDeltas(rows []row) {
	const col = 6
	marked := false
	for _, r := range rows {
		marked = marked || strings.HasSuffix(r.cells[col], " ~")
	}
	if !marked {
		return
	}
	for i := range rows {
		if !strings.HasSuffix(rows[i].cells[col], " ~") {
			rows[i].cells[col] += "  "
		}
	}
}

func spreadCell(f report.Figure, s report.Spread, u textfmt.LatencyUnit) string {
	if s.N == 0 {
		return "-"
	}
	return scaledValue(f, s.Median, u) + " " + s.PctRange()
}

// compareUnit is the latency unit of a comparison's table: that of the
// p50 medians of both sides.
func compareUnit(c *compare.Comparison) textfmt.LatencyUnit {
	var p50s []float64
	for _, r := range c.Rows {
		for _, fc := range r.Figures {
			if fc.Figure != report.FigP50 {
				continue
			}
			for _, s := range []report.Spread{fc.Base, fc.New} {
				if s.N > 0 {
					p50s = append(p50s, s.Median)
				}
			}
		}
	}
	return textfmt.LatencyUnitOf(p50s)
}

// compareTrailer returns the lines after the numbered footnotes: the
// interval note, tests on one side only, warnings, gates.
func compareTrailer(c *compare.Comparison, gates *compare.GateResult) []string {
	var lines []string
	unbounded := false
	for _, r := range c.Rows {
		for _, fc := range r.Figures {
			if (fc.Base.N > 0 && !fc.Base.Bounded()) || (fc.New.N > 0 && !fc.New.Bounded()) {
				unbounded = true
			}
		}
	}
	if unbounded {
		lines = append(lines, fmt.Sprintf("±∞: a %g%% confidence interval of the median needs at least %d runs", 100*c.Confidence, report.MinRunsForInterval))
	}
	lines = append(lines, onlyLines(c.OnlyBase, c.OnlyNew)...)
	for _, w := range c.Warnings {
		lines = append(lines, "warning: "+w)
	}
	if gates != nil && (len(gates.Gates) > 0 || gates.Failed()) {
		lines = append(lines, gatesLine(gates.Gates, gates.Failed(), gates.Count()))
		lines = append(lines, gates.FailedLines()...)
		lines = append(lines, gates.NotFailedLines()...)
	}
	return lines
}

// onlyLines list what one side of a comparison has and the other lacks
// (tests and sizes, or a mesh's matrices).
func onlyLines[T fmt.Stringer](base, new []T) []string {
	join := func(xs []T) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = x.String()
		}
		return strings.Join(s, ", ")
	}
	var lines []string
	if len(base) > 0 {
		lines = append(lines, "only in base: "+join(base))
	}
	if len(new) > 0 {
		lines = append(lines, "only in new: "+join(new))
	}
	return lines
}

// gatesLine says which gates ran and whether they passed.
func gatesLine(gates []string, failed bool, failures int) string {
	verdict := "passed"
	if failed {
		verdict = fmt.Sprintf("%d failed", failures)
	}
	if len(gates) == 0 {
		return "gates: " + verdict
	}
	return fmt.Sprintf("gates: %s: %s", strings.Join(gates, ", "), verdict)
}

// sideLine describes one side of a comparison.
func sideLine(s *compare.Side) string {
	parts := []string{cmp.Or(s.Tool.Name, "rdmabench") + " " + cmp.Or(s.Tool.Version, "devel")}
	if s.Tool.Commit != "" {
		parts[0] += " (" + s.Tool.Commit + ")"
	}
	if !s.Start.IsZero() {
		parts = append(parts, s.Start.UTC().Format(time.RFC3339))
	}
	runs := "1 run"
	if s.Runs != 1 {
		runs = fmt.Sprintf("%d runs", s.Runs)
	}
	parts = append(parts, runs)
	hosts := cmp.Or(s.Hosts.Local.Hostname, "(unknown host)")
	if s.Hosts.Remote != nil {
		hosts += " -> " + cmp.Or(s.Hosts.Remote.Hostname, "(unknown host)")
	} else {
		hosts += " (loopback)"
	}
	parts = append(parts, hosts)
	if d := s.Hosts.Local.Device; d != nil {
		dev := cmp.Or(d.Name, "(unknown device)")
		var facts []string
		if d.LinkLayer != "" {
			facts = append(facts, d.LinkLayer)
		}
		if d.ActiveMTU > 0 {
			facts = append(facts, fmt.Sprintf("MTU %d", d.ActiveMTU))
		}
		if d.Firmware != "" {
			facts = append(facts, "fw "+d.Firmware)
		}
		if len(facts) > 0 {
			dev += " (" + strings.Join(facts, ", ") + ")"
		}
		parts = append(parts, dev)
	}
	return textfmt.Clean(s.Name) + ": " + textfmt.Clean(strings.Join(parts, ", "))
}

func compareTable(b *bytes.Buffer, c *compare.Comparison, gates *compare.GateResult, opts Options) error {
	start := b.Len()
	at := opts.wrapAt(headerWrap)
	kvAt(b, "base", sideLine(&c.Base), at)
	kvAt(b, "new", sideLine(&c.New), at)
	b.WriteByte('\n')
	if len(c.Rows) == 0 {
		b.WriteString("no test and size in common\n")
	} else {
		cells, notes := compareCells(c)
		alignDeltas(cells)
		rows := []row{
			{kind: rowTitle, text: fmt.Sprintf(compareLegend, c.Alpha)},
			{cells: compareLabels},
			{kind: rowRule},
		}
		rows = append(rows, cells...)
		aligns := []tw.Align{tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft}
		lines, err := layoutFit(rows, aligns, 4, opts.Width)
		if err != nil {
			return err
		}
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
		if len(notes) > 0 {
			b.WriteByte('\n')
		}
		for i, n := range notes {
			fmt.Fprintf(b, "[%d] %s\n", i+1, textfmt.Clean(n))
		}
	}
	if trailer := compareTrailer(c, gates); len(trailer) > 0 {
		b.WriteByte('\n')
		for _, l := range trailer {
			b.WriteString(textfmt.Clean(l) + "\n")
		}
	}
	if opts.Width > 0 {
		fitted := FitLines(slices.Clone(b.Bytes()[start:]), opts.Width)
		b.Truncate(start)
		b.Write(fitted)
	}
	return nil
}

func compareMarkdown(b *bytes.Buffer, c *compare.Comparison, gates *compare.GateResult) {
	b.WriteString("**rdmabench compare**\n\n")
	fmt.Fprintf(b, "- base: %s\n", mdEscape(sideLine(&c.Base)))
	fmt.Fprintf(b, "- new: %s\n", mdEscape(sideLine(&c.New)))
	b.WriteByte('\n')
	var notes []string
	if len(c.Rows) == 0 {
		b.WriteString("no test and size in common\n")
	} else {
		var cells []row
		cells, notes = compareCells(c)
		b.WriteString(mdEscape(fmt.Sprintf(compareLegend, c.Alpha)) + "\n\n")
		b.WriteString(mdLine(compareLabels))
		b.WriteString(mdLine([]string{":---", ":---", "---:", ":---", "---:", "---:", "---:", ":---"}))
		for _, r := range cells {
			cs := make([]string, len(r.cells))
			for i, c := range r.cells {
				cs[i] = mdEscape(c)
			}
			if r.suffix != "" {
				cs[len(cs)-1] += " " + r.suffix
			}
			if !strings.HasSuffix(cs[6], "~") && cs[6] != "-" && cs[6] != "?" {
				cs[6] = "**" + cs[6] + "**"
			}
			b.WriteString(mdLine(cs))
		}
	}
	lines := make([]string, 0, len(notes))
	for i, n := range notes {
		lines = append(lines, fmt.Sprintf("[%d] %s", i+1, n))
	}
	lines = append(lines, compareTrailer(c, gates)...)
	if len(lines) > 0 {
		b.WriteByte('\n')
	}
	for _, l := range lines {
		fmt.Fprintf(b, "- %s\n", mdEscape(l))
	}
}
