package render

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// MeshFormats are the formats a mesh document renders in.
var MeshFormats = []string{FormatTable, FormatMarkdown, FormatCSV, FormatJSON}

// errMeshFormat refuses a format a mesh document has no rendering in.
func errMeshFormat(format string) error {
	return formatError{fmt.Sprintf("report: a mesh document renders as %s, not %s", strings.Join(MeshFormats, ", "), format)}
}

// writeMesh writes a mesh document in format.
func writeMesh(w io.Writer, format string, doc *report.Document) error {
	return writeMeshWith(w, format, doc, Options{})
}

// writeMeshWith is writeMesh with the table laid out as opts say.
func writeMeshWith(w io.Writer, format string, doc *report.Document, opts Options) error {
	switch format {
	case FormatTable:
		return writeMeshText(w, doc, false, opts)
	case FormatMarkdown:
		return writeMeshText(w, doc, true, Options{})
	case FormatCSV:
		if m := doc.Mesh; m.Pattern != nil {
			return writeMeshStepsCSV(w, []report.Source{{Doc: doc}}, false)
		}
		return writeMeshCSV(w, []report.Source{{Doc: doc}}, false)
	case FormatJSON:
		return report.WriteJSON(w, doc)
	}
	return errMeshFormat(format)
}

// writeMeshText writes a mesh document for a terminal (or as Markdown):
// the run's facts and its ranks, then per test, size and figure the N×N
// matrix (rows: the rank that ran the client end; columns: its server),
// then the failed links and the links that failed a gate.
//
// At a width (opts.Width) a matrix or a table too wide for it is split
// into blocks of columns, each repeating the first column (the row's
// rank or host), and text lines wrap.
func writeMeshText(w io.Writer, doc *report.Document, md bool, opts Options) error {
	m := doc.Mesh
	var b bytes.Buffer
	at := opts.wrapAt(headerWrap)
	line := func(k, v string) {
		if md {
			fmt.Fprintf(&b, "- **%s**: %s\n", mdEscape(k), mdEscape(v))
		} else {
			kvAt(&b, k, v, at)
		}
	}
	t := doc.Tool
	title := fmt.Sprintf("%s %s mesh", cmp.Or(t.Name, "rdmabench"), cmp.Or(t.Version, "devel"))
	if md {
		fmt.Fprintf(&b, "### %s\n\n", mdEscape(title))
	} else {
		b.WriteString(textfmt.Clean(title) + "\n")
	}
	if len(doc.Command) > 0 {
		line("command", strings.Join(doc.Command, " "))
	}
	if !doc.Start.IsZero() {
		s := doc.Start.UTC().Format(time.RFC3339)
		if !doc.End.IsZero() && !doc.End.Before(doc.Start) {
			s += ", took " + doc.End.Sub(doc.Start).Round(100*time.Millisecond).String()
		}
		line("start", s)
	}
	failed := m.FailedLinks()
	rounds := "rounds"
	if m.Rounds == 1 {
		rounds = "round"
	}
	if m.Pattern != nil {
		line("mesh", fmt.Sprintf("%s (%s), coordinator %s", m.Shape(), cmp.Or(m.Launcher, "?"), m.Coordinator))
		line("pattern", patternLine(m.Pattern, len(m.Steps)))
	} else {
		line("mesh", fmt.Sprintf("%s (%s), coordinator %s, %s schedule: %d %s, %d links, %d measured, %d failed",
			m.Shape(), cmp.Or(m.Launcher, "?"), m.Coordinator, cmp.Or(m.Schedule, "?"), m.Rounds, rounds, m.LinkTotal(),
			m.LinkTotal()-len(failed), len(failed)))
	}
	line("tests", strings.Join(m.Tests, ", "))
	if m.Duplex {
		line("duplex", meshDuplexLine)
	}
	if m.HostLevel {
		line("lanes", meshHostLevelLine)
	}
	if p := paramsLine(&doc.Params); p != "" {
		line("asked", p)
	}
	if m.Topology != nil {
		line("topology", topologyLine(m.Topology))
	}
	if m.Blame != nil {
		line("blame", blameLine(m.Blame))
	}
	agg := m.ShowsAggregate()
	if agg {
		// Too many ranks to list: the count, and the ranks not ok.
		line("ranks", aggregateRanksLine(m))
	}
	for _, r := range m.Ranks {
		if !agg || r.State != report.RankOK {
			line(fmt.Sprintf("rank %d", r.Rank), rankLine(&r))
		}
	}
	if agg {
		writeAggregateText(&b, m, md, opts.Width)
	}
	writeStepsText(&b, m, md, opts.Width)
	for _, mx := range m.Matrices {
		if agg {
			break
		}
		b.WriteByte('\n')
		what := mx.Figure.Name()
		if mx.Figure.IsLatency() {
			what += " latency"
		}
		u := matrixUnit(&mx)
		head := fmt.Sprintf("%s: %s (%s), %s", mx.Key(), what, meshTableUnit(mx.Figure, u), mx.Between())
		if mx.Median != nil {
			head += fmt.Sprintf("; %s %s", linksMedianWords(matrixLinks(&mx)), formatIn(mx.Figure, *mx.Median, u))
		}
		if md {
			fmt.Fprintf(&b, "**%s**\n\n", mdEscape(head))
			writeMatrixMarkdown(&b, &mx, u)
		} else {
			b.WriteString(textfmt.Clean(head) + "\n")
			writeMatrixText(&b, &mx, u, opts.Width)
		}
	}
	var notes []string
	for _, l := range failed {
		notes = append(notes, fmt.Sprintf("link %d %s %d failed: %s", l.From, l.Arrow(), l.To, l.Error))
	}
	for _, f := range m.Failures {
		notes = append(notes, fmt.Sprintf("%s failed: %s", f.Kind, f.Message))
	}
	for _, v := range m.Verdicts {
		notes = append(notes, fmt.Sprintf("%s %s: %s", v.Kind, v.Subject, v.Message))
	}
	for _, st := range m.Steps {
		if st.Error != "" {
			notes = append(notes, fmt.Sprintf("step %d: %s", st.Step, st.Error))
		}
		for _, wn := range st.Warnings {
			notes = append(notes, fmt.Sprintf("step %d: %s", st.Step, wn))
		}
	}
	for _, f := range m.StepFailures {
		notes = append(notes, fmt.Sprintf("%s gate failed: %s", f.Gate, f.Message))
	}
	for _, l := range m.Links {
		for _, wn := range l.Warnings {
			notes = append(notes, fmt.Sprintf("link %d %s %d: %s", l.From, l.Arrow(), l.To, wn))
		}
	}
	notes = append(notes, doc.Warnings...)
	if stop := doc.Stopped(); stop != "" {
		notes = append(notes, "error: "+stop+" (the mesh stopped; the links measured before it are kept)")
	}
	if doc.Partial {
		notes = append(notes, "partial: the mesh was still running when this was written")
	}
	if len(notes) > 0 {
		b.WriteByte('\n')
		for _, n := range notes {
			if md {
				fmt.Fprintf(&b, "- %s\n", mdEscape(n))
			} else {
				b.WriteString(textfmt.Clean(n) + "\n")
			}
		}
	}
	if _, err := w.Write(FitLines(b.Bytes(), opts.Width)); err != nil {
		return fmt.Errorf("report: write mesh: %w", err)
	}
	return nil
}

// blameLine says what blame judged a mesh by: its multiplier and spread,
// and per figure the ratio to the fleet median past which a link was bad.
func blameLine(b *report.MeshBlame) string {
	pct := func(v float64) string { return strconv.FormatFloat(100*v, 'g', 4, 64) + "%" }
	s := "multiplier " + strconv.FormatFloat(b.Multiplier, 'g', -1, 64) + ", spread at least " + pct(b.MinSpread)
	if b.MaxSpread > 0 {
		s += ", at most " + pct(b.MaxSpread)
	}
	for _, f := range b.Figures {
		if f.Links == 0 {
			continue
		}
		k := report.Key{Test: f.Test, Connection: f.Connection, Size: f.Size}
		if f.Unjudged != "" {
			s += fmt.Sprintf("; %s %s: not judged, the fleet cannot be: %s", k, f.Figure.Name(), f.Unjudged)
			continue
		}
		side := "above"
		if !f.Figure.IsLatency() {
			side = "below"
		}
		s += fmt.Sprintf("; %s %s: bad %s %s× the fleet median of %s (the median of the ranks' medians; spread %s)", k, f.Figure.Name(), side,
			strconv.FormatFloat(f.Limit, 'g', 3, 64), f.Figure.FormatAll(f.FleetMedian)[0], pct(f.Spread))
	}
	return s
}

// topologyLine names the topology's file and its switches, each with
// what is under it: "topology.conf: leaf1 (4 nodes), leaf2 (4 nodes),
// spine (leaf1, leaf2)".
func topologyLine(t *report.MeshTopology) string {
	parts := make([]string, len(t.Switches))
	for i, s := range t.Switches {
		var under []string
		if len(s.Switches) > 0 {
			under = append(under, strings.Join(s.Switches, ", "))
		}
		if n := len(s.Nodes); n == 1 {
			under = append(under, "1 node")
		} else if n > 1 {
			under = append(under, fmt.Sprintf("%d nodes", n))
		}
		parts[i] = s.Name
		if len(under) > 0 {
			parts[i] += " (" + strings.Join(under, "; ") + ")"
		}
	}
	return t.File + ": " + strings.Join(parts, ", ")
}

// matrixLinks counts the links of mx with a figure: its cells with a
// value off the diagonal, a duplex ping-pong's pair once (its figure is in
// both cells).
func matrixLinks(mx *report.Matrix) int {
	n := 0
	for i, row := range mx.Values {
		for j, v := range row {
			if v != nil && i != j {
				n++
			}
		}
	}
	if mx.Duplex == report.DuplexPingPong {
		n /= 2
	}
	return n
}

// linksMedianWords names the median of a matrix, or of an aggregate: the
// median of its n links' figures (not blame's fleet median, the median
// of the ranks' medians).
func linksMedianWords(n int) string {
	if n == 1 {
		return "median of the 1 link"
	}
	return fmt.Sprintf("median of the %d links", n)
}

// rankLine describes a rank: its host, server address, device and GID.
func rankLine(r *report.MeshRank) string {
	var parts []string
	if r.Host != nil && r.Host.Hostname != "" {
		parts = append(parts, r.Host.Hostname)
	}
	if r.Addr != "" {
		parts = append(parts, r.Addr)
	}
	if r.Host != nil && r.Host.Device != nil {
		d := r.Host.Device
		s := fmt.Sprintf("%s port %d", d.Name, d.Port)
		if d.GID != "" {
			s += fmt.Sprintf(" GID %s (index %d)", d.GID, d.GIDIndex)
		}
		parts = append(parts, s)
	} else if len(r.Devices) > 0 {
		var names []string
		for _, d := range r.Devices {
			names = append(names, d.Name)
		}
		parts = append(parts, "devices "+strings.Join(names, ","))
	}
	s := strings.Join(parts, ", ")
	if r.State != report.RankOK {
		s = strings.TrimPrefix(s+"; "+r.State, "; ")
		if r.Error != "" {
			s += ": " + r.Error
		}
	}
	return s
}

// writeMatrixText writes mx as aligned columns, in blocks of columns
// that each fit width (0: one block).
func writeMatrixText(b *bytes.Buffer, mx *report.Matrix, u textfmt.LatencyUnit, width int) {
	n := len(mx.Values)
	cells := make([][]string, n+1)
	cells[0] = append(cells[0], "from\\to")
	for j := range n {
		cells[0] = append(cells[0], strconv.Itoa(j))
	}
	for i, row := range mx.Values {
		cells[i+1] = append(cells[i+1], strconv.Itoa(i))
		for j := range n {
			var v *float64
			if j < len(row) {
				v = row[j]
			}
			if i == j {
				cells[i+1] = append(cells[i+1], "")
			} else {
				cells[i+1] = append(cells[i+1], meshCell(mx.Figure, v, u))
			}
		}
	}
	colw := make([]int, n+1)
	for _, r := range cells {
		for j, c := range r {
			colw[j] = max(colw[j], len(c))
		}
	}
	for g, cols := range columnBlocks(colw, width) {
		if g > 0 {
			b.WriteByte('\n')
		}
		for _, r := range cells {
			for _, j := range cols {
				if j == 0 {
					fmt.Fprintf(b, "%-*s", colw[j], r[j])
				} else {
					fmt.Fprintf(b, "  %*s", colw[j], r[j])
				}
			}
			b.WriteByte('\n')
		}
	}
}

func writeMatrixMarkdown(b *bytes.Buffer, mx *report.Matrix, u textfmt.LatencyUnit) {
	n := len(mx.Values)
	b.WriteString("| from \\ to |")
	for j := range n {
		fmt.Fprintf(b, " %d |", j)
	}
	b.WriteString("\n|---|")
	for range n {
		b.WriteString("---:|")
	}
	b.WriteByte('\n')
	for i, row := range mx.Values {
		fmt.Fprintf(b, "| **%d** |", i)
		for j := range n {
			var v *float64
			if j < len(row) {
				v = row[j]
			}
			c := meshCell(mx.Figure, v, u)
			if i == j {
				c = ""
			}
			fmt.Fprintf(b, " %s |", c)
		}
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
}

// MeshCSVHeader is the header of a mesh document's CSV form: long form, one
// row per link, test, size and figure.
var MeshCSVHeader = []string{"test", "connection", "size_bytes", "figure", "unit", "from_rank", "from_host",
	"to_rank", "to_host", "value", "round", "error"}

// writeMeshCSV writes the matrices of mesh documents in long form: one row
// per matrix cell off the diagonal (a link that failed has an empty value
// and its error), with a first column "source" when withSource.
func writeMeshCSV(w io.Writer, srcs []report.Source, withSource bool) error {
	t := newSourcedCSV(w, MeshCSVHeader, withSource)
	for _, src := range srcs {
		m := src.Doc.Mesh
		host := m.Hostname
		links := map[[2]int]*report.MeshLink{}
		for i := range m.Links {
			l := &m.Links[i]
			links[[2]int{l.From, l.To}] = l
			if l.Duplex {
				links[[2]int{l.To, l.From}] = l
			}
		}
		for _, mx := range m.Matrices {
			for i, row := range mx.Values {
				for j, v := range row {
					if i == j {
						continue
					}
					l := links[[2]int{i, j}]
					if l == nil && v == nil {
						continue // not scheduled
					}
					val, round, errMsg := "", "", ""
					if v != nil {
						val = strconv.FormatFloat(*v, 'f', -1, 64)
					}
					if l != nil {
						round = strconv.Itoa(l.Round)
						if v == nil {
							errMsg = l.Failure()
						}
					}
					t.row(src.Name, []string{mx.Test, mx.Connection, strconv.Itoa(mx.Size), string(mx.Figure), mx.Unit,
						strconv.Itoa(i), host(i), strconv.Itoa(j), host(j), val, round, errMsg})
				}
			}
		}
		if len(m.Matrices) == 0 && m.Aggregate != nil {
			// Past the rank matrices: a row per host pair (the median of
			// its links, the ranks empty), then the failed links.
			a := m.Aggregate
			for _, f := range a.Figures {
				for i, row := range f.HostMedian {
					for j, v := range row {
						if v == nil || i >= len(a.Hosts) || j >= len(a.Hosts) {
							continue
						}
						t.row(src.Name, []string{f.Test, f.Connection, strconv.Itoa(f.Size), string(f.Figure), f.Unit,
							"", a.Hosts[i], "", a.Hosts[j], strconv.FormatFloat(*v, 'f', -1, 64), "", ""})
					}
				}
			}
		}
		if len(m.Matrices) == 0 {
			// Nothing measured at all, or no rank matrices: the failed
			// links still show.
			for _, l := range m.Links {
				t.row(src.Name, []string{"", "", "", "", "", strconv.Itoa(l.From), host(l.From), strconv.Itoa(l.To), host(l.To), "",
					strconv.Itoa(l.Round), l.Failure()})
			}
		}
	}
	return t.end()
}

// meshDuplexLine is what a duplex mesh's table says of it.
const meshDuplexLine = "each pair ran once: a ping-pong's figure in both cells of the pair, a bandwidth test bidirectional, each direction in its own cell"

// meshHostLevelLine is what a host-level mesh's table says of it.
const meshHostLevelLine = "ranks are hosts: each link ran on every device of both at once, paired one by one (the ranks' lanes); a cell is their sum, each device's figures are in the link stream"

// meshCell writes v of f for a matrix cell: a latency in u (the
// matrix's), µs with two decimals; Gbit/s with two or four decimals.
func meshCell(f report.Figure, v *float64, u textfmt.LatencyUnit) string {
	if v == nil {
		return "-"
	}
	x := *v
	if f.IsLatency() {
		if u != textfmt.UnitUs && !math.IsNaN(x) && !math.IsInf(x, 0) {
			return u.Cell(x)
		}
		x /= 1e3
	}
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return fmt.Sprint(x)
	case x != 0 && math.Abs(x) < 0.1:
		return fmt.Sprintf("%.4f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// meshTableUnit is the unit of a matrix's cells as tables show them: a
// latency in u.
func meshTableUnit(f report.Figure, u textfmt.LatencyUnit) string {
	if f.IsLatency() {
		return u.Name
	}
	return f.Unit()
}

// matrixUnit is the latency unit of a matrix's table: that of its cells.
func matrixUnit(mx *report.Matrix) textfmt.LatencyUnit {
	var vs []float64
	for i, row := range mx.Values {
		for j, v := range row {
			if v != nil && i != j {
				vs = append(vs, *v)
			}
		}
	}
	return textfmt.LatencyUnitOf(vs)
}
