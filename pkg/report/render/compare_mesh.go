package render

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter/tw"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/compare"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// MeshCompareFormats are the output formats of a comparison of two meshes.
var MeshCompareFormats = []string{FormatTable, FormatMarkdown, FormatJSON, FormatCSV}

// MeshListMax is how many entries of a list (failed links, gate failures,
// ranks) the table and Markdown forms of a mesh comparison show; JSON and
// CSV hold them all.
const MeshListMax = 20

// meshComparisonJSON is the JSON form of a comparison of two meshes, as
// pkg/report/schema/compare-mesh-v1.json describes it.
type meshComparisonJSON struct {
	Schema string `json:"schema"`
	*compare.MeshComparison
	Gates *compare.MeshGateResult `json:"gates,omitempty"`
}

// meshCompareLegend says what the figures of a mesh comparison are.
const meshCompareLegend = "one value per link on each side: no significance test; a gate fails on a link's own change"

// WriteMeshComparison writes c in format (table, markdown, json or csv),
// with the verdict of its gates when gates is not nil.
//
// The table and Markdown forms say how links were matched, then one row
// per matrix compared (links measured on both sides and on one only, the
// medians over the links measured on both sides and their change), then
// per matrix its most changed links, then the ranks that moved, the links
// that failed on either side, the matrices on one side only, the
// warnings and the gates, each list cut at [MeshListMax].
//
// The JSON form is the MeshComparison with "schema" ([compare.MeshSchema])
// and "gates" fields. The CSV form is long: one row per link and figure of
// every matrix compared (test, connection, size_bytes, figure, unit,
// from_rank, from_host, to_rank, to_host, base, new, change, status;
// status is "compared", "only_base" or "only_new"; ranks are new's, base's
// for a link whose ranks are not in new).
func WriteMeshComparison(w io.Writer, format string, c *compare.MeshComparison, gates *compare.MeshGateResult) error {
	return WriteMeshComparisonWith(w, format, c, gates, Options{})
}

// WriteMeshComparisonWith is WriteMeshComparison laid out with opts: at a
// width, the table form's lines wrap and its tables split into blocks of
// columns that fit, each led by its key columns, as results tables do.
func WriteMeshComparisonWith(w io.Writer, format string, c *compare.MeshComparison, gates *compare.MeshGateResult, opts Options) error {
	if c == nil {
		return errors.New("report: write mesh comparison: nil comparison")
	}
	var out bytes.Buffer
	switch format {
	case FormatTable, FormatMarkdown:
		if err := meshCompareText(&out, c, gates, format == FormatMarkdown, opts.Width); err != nil {
			return err
		}
	case FormatJSON:
		b, err := json.MarshalIndent(meshComparisonJSON{compare.MeshSchema, c, gates}, "", "  ")
		if err != nil {
			return fmt.Errorf("report: write mesh comparison: %w", err)
		}
		out.Write(append(b, '\n'))
	case FormatCSV:
		cw := csv.NewWriter(w)
		if err := cw.Write(compare.MeshCSVHeader); err != nil {
			return fmt.Errorf("report: write mesh comparison: %w", err)
		}
		if err := c.EachCSVRow(cw.Write); err != nil {
			return fmt.Errorf("report: write mesh comparison: %w", err)
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			return fmt.Errorf("report: write mesh comparison: %w", err)
		}
		return nil
	default:
		return fmt.Errorf("report: unknown mesh comparison format %q (want %s)", format, strings.Join(MeshCompareFormats, ", "))
	}
	if _, err := w.Write(out.Bytes()); err != nil {
		return fmt.Errorf("report: write mesh comparison: %w", err)
	}
	return nil
}

// meshSideLine describes one side of a mesh comparison.
func meshSideLine(s *compare.MeshSide) string {
	parts := []string{cmp.Or(s.Tool.Name, "rdmabench") + " " + cmp.Or(s.Tool.Version, "devel")}
	if s.Tool.Commit != "" {
		parts[0] += " (" + s.Tool.Commit + ")"
	}
	if !s.Start.IsZero() {
		parts = append(parts, s.Start.UTC().Format(time.RFC3339))
	}
	parts = append(parts, fmt.Sprintf("mesh of %d ranks, %d links, %d failed", s.Ranks, s.Links, s.Failed))
	return textfmt.Clean(s.Name) + ": " + textfmt.Clean(strings.Join(parts, ", "))
}

// matchLine says how the links of c were matched.
func matchLine(c *compare.MeshComparison) string {
	moved := 0
	for _, r := range c.Ranks {
		if r.Rank >= 0 && r.BaseRank >= 0 {
			moved++
		}
	}
	switch {
	case c.MatchedBy == compare.MatchByHost:
		return fmt.Sprintf("by host name and device where every rank has one (ranks moved between the runs): %d ranks renumbered", moved)
	case moved > 0:
		return fmt.Sprintf("by rank; the host of %d ranks differs, and host names (with devices) do not identify every rank of both runs", moved)
	}
	return "by rank"
}

// linkCellText names a link for a table: "0 -> 2", with base's ranks where
// they differ.
func linkCellText(l *compare.LinkChange) string {
	s := fmt.Sprintf("%d -> %d", l.From, l.To)
	if l.BaseFrom != nil {
		s += fmt.Sprintf(" (base %d -> %d)", *l.BaseFrom, *l.BaseTo)
	}
	return s
}

func changeCell(ch *float64) string {
	if ch == nil {
		return "?"
	}
	return pct(*ch)
}

func medianCell(f report.Figure, v *float64, u textfmt.LatencyUnit) string {
	if v == nil {
		return "-"
	}
	return tableValue(f, *v, u)
}

// figureCell is a matrix's figure with its unit, as tables head it.
func figureCell(f report.Figure, u textfmt.LatencyUnit) string {
	if f.IsLatency() {
		return f.Label() + " " + u.Name
	}
	return f.Label()
}

// matrixChangeUnit is the latency unit of a compared matrix's rows: that
// of its medians on both sides.
func matrixChangeUnit(mc *compare.MatrixChange) textfmt.LatencyUnit {
	var vs []float64
	for _, v := range []*float64{mc.BaseMedian, mc.NewMedian} {
		if v != nil {
			vs = append(vs, *v)
		}
	}
	return textfmt.LatencyUnitOf(vs)
}

// capped returns at most MeshListMax lines of ls, and a last line saying
// how many more there are.
func capped(ls []string, more string) []string {
	if len(ls) <= MeshListMax {
		return ls
	}
	return append(ls[:MeshListMax:MeshListMax], fmt.Sprintf("... and %d more %s", len(ls)-MeshListMax, more))
}

func meshCompareText(b *bytes.Buffer, c *compare.MeshComparison, gates *compare.MeshGateResult, md bool, width int) error {
	t := textSheet{b: b, md: md, width: width}
	if md {
		b.WriteString("**rdmabench compare (mesh)**\n\n")
	}
	t.line("base", meshSideLine(&c.Base))
	t.line("new", meshSideLine(&c.New))
	t.line("links", "matched "+matchLine(c))
	t.line("values", meshCompareLegend)
	if len(c.Steps) > 0 {
		writeStepChanges(b, c.Steps, md, width)
	}
	if len(c.Matrices) == 0 && len(c.Steps) == 0 {
		b.WriteString("\nno matrix (test, size and figure) in common\n")
	} else if len(c.Matrices) > 0 {
		if err := t.matrixChanges(c.Matrices); err != nil {
			return err
		}
		for i := range c.Matrices {
			if err := t.topLinks(&c.Matrices[i]); err != nil {
				return err
			}
		}
	}
	t.notes(meshCompareNotes(c, gates))
	return nil
}

// textSheet writes lines and tables to b, as Markdown when md, else as
// text at width (0: any).
type textSheet struct {
	b     *bytes.Buffer
	md    bool
	width int
}

// line writes one "key value" line.
func (t textSheet) line(k, v string) {
	switch {
	case t.md:
		fmt.Fprintf(t.b, "- %s: %s\n", mdEscape(k), mdEscape(v))
	case t.width > 0:
		kvAt(t.b, k, v, t.width)
	default:
		kv(t.b, k, v)
	}
}

// grid writes a table of rows under its title and labels, after an empty
// line; in text, its title wrapped at the width.
func (t textSheet) grid(title string, rows []row, labels []string, aligns []tw.Align) error {
	b := t.b
	b.WriteByte('\n')
	if t.md {
		fmt.Fprintf(b, "**%s**\n\n", mdEscape(title))
		b.WriteString(mdLine(labels))
		seps := make([]string, len(aligns))
		for i, a := range aligns {
			seps[i] = "---:"
			if a == tw.AlignLeft {
				seps[i] = ":---"
			}
		}
		b.WriteString(mdLine(seps))
		for _, r := range rows {
			cs := make([]string, len(r.cells))
			for i, c := range r.cells {
				cs[i] = mdEscape(c)
			}
			b.WriteString(mdLine(cs))
		}
		return nil
	}
	var all []row
	if t.width > 0 {
		for _, l := range wrap(textfmt.Clean(title), t.width) {
			all = append(all, row{kind: rowTitle, text: l})
		}
	} else {
		all = append(all, row{kind: rowTitle, text: title})
	}
	all = append(append(all, row{cells: labels}, row{kind: rowRule}), rows...)
	lines, err := layoutFit(all, aligns, 2, t.width)
	if err != nil {
		return err
	}
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return nil
}

// notes writes each note on a line of its own, after an empty line.
func (t textSheet) notes(notes []string) {
	if len(notes) > 0 {
		t.b.WriteByte('\n')
	}
	for _, n := range notes {
		if t.md {
			fmt.Fprintf(t.b, "- %s\n", mdEscape(n))
		} else {
			t.b.WriteString(textfmt.Clean(n) + "\n")
		}
	}
}

// matrixChanges is the table of the matrices in common: their links on
// both sides and on one, and the change of their medians.
func (t textSheet) matrixChanges(ms []compare.MatrixChange) error {
	var rows []row
	for i := range ms {
		mc := &ms[i]
		u := matrixChangeUnit(mc)
		rows = append(rows, row{cells: []string{mc.Key.String(), figureCell(mc.Figure, u), strconv.Itoa(mc.Links),
			strconv.Itoa(mc.OnlyBase), strconv.Itoa(mc.OnlyNew), medianCell(mc.Figure, mc.BaseMedian, u),
			medianCell(mc.Figure, mc.NewMedian, u), changeCell(mc.Change)}})
	}
	return t.grid("per matrix: links measured on both sides, on one only, and the change of the median over the links measured on both",
		rows, []string{"matrix", "figure", "links", "only base", "only new", "base median", "new median", "change"},
		[]tw.Align{tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight})
}

// topLinks is the table of a matrix's most changed links, with their hosts
// when any has one; none when it has none.
func (t textSheet) topLinks(mc *compare.MatrixChange) error {
	if len(mc.Top) == 0 {
		return nil
	}
	hosts := false
	for _, l := range mc.Top {
		hosts = hosts || l.FromHost != "" || l.ToHost != ""
	}
	labels := []string{"link", "base", "new", "change"}
	aligns := []tw.Align{tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight}
	if hosts {
		labels = []string{"link", "hosts", "base", "new", "change"}
		aligns = []tw.Align{tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight}
	}
	u := matrixChangeUnit(mc)
	var rows []row
	for _, l := range mc.Top {
		cells := []string{linkCellText(&l)}
		if hosts {
			cells = append(cells, cmp.Or(l.FromHost, "?")+" -> "+cmp.Or(l.ToHost, "?"))
		}
		cells = append(cells, tableValue(mc.Figure, l.Base, u), tableValue(mc.Figure, l.New, u), changeCell(l.Change))
		rows = append(rows, row{cells: cells})
	}
	title := fmt.Sprintf("%s %s: most changed links, either way (%d of %d)", mc.Key, figureCell(mc.Figure, u), len(mc.Top), mc.Links)
	return t.grid(title, rows, labels, aligns)
}

// meshCompareNotes are the comparison's notes: the ranks, the links that
// failed on either side, those on one side only, the warnings, and the
// gates, each list capped.
func meshCompareNotes(c *compare.MeshComparison, gates *compare.MeshGateResult) []string {
	var notes []string
	var ranks []string
	for _, r := range c.Ranks {
		ranks = append(ranks, r.String())
	}
	notes = append(notes, capped(ranks, "ranks (-o json lists them all)")...)
	for _, s := range []struct {
		name  string
		links []compare.FailedLink
	}{{"base", c.FailedBase}, {"new", c.FailedNew}} {
		var ls []string
		for _, l := range s.links {
			ls = append(ls, fmt.Sprintf("link failed (%s): %d -> %d: %s", s.name, l.From, l.To, l.Error))
		}
		notes = append(notes, capped(ls, "links failed in "+s.name+" (-o json lists them all)")...)
	}
	notes = append(notes, onlyLines(c.OnlyBase, c.OnlyNew)...)
	for _, w := range c.Warnings {
		notes = append(notes, "warning: "+w)
	}
	if gates != nil && (len(gates.Gates) > 0 || gates.Failed()) {
		notes = append(notes, gatesLine(gates.Gates, gates.Failed(), gates.Count()))
		notes = append(notes, capped(gates.FailedLines(), "gate failures (-o json or -o csv lists every link)")...)
	}
	return notes
}
