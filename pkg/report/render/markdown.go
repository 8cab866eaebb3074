package render

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// WriteMarkdown writes doc as GitHub-flavoured Markdown, for a pull-request
// comment or a job summary: a short list of the run's facts (tool, command,
// hosts and devices, parameters), then the same tables as [WriteTable] (a
// latency and a bandwidth table wherever the kind of result changes; for
// repeated runs, medians with their confidence intervals under them), then
// the footnotes. Cells are escaped so that no value breaks the table.
func WriteMarkdown(w io.Writer, doc *report.Document) error {
	if doc == nil {
		return errors.New("report: write markdown: nil document")
	}
	var out bytes.Buffer
	mdHeader(&out, doc)

	var notes *footnotes
	var rows []row
	if doc.Repeated() {
		notes = newSummaryFootnotes(doc)
		rows = buildSummaryRows(doc, doc.Summarize(), notes)
	} else {
		notes = newFootnotes(doc)
		rows = buildRows(doc, notes)
	}
	if len(doc.Results) == 0 {
		out.WriteString("\nno results\n")
	}
	mdRows(&out, rows)
	if items := mdTableNotes(doc); len(items) > 0 {
		out.WriteByte('\n')
		for _, it := range items {
			indent := ""
			if strings.HasPrefix(it, "  ") {
				indent = "  "
			}
			fmt.Fprintf(&out, "%s- %s\n", indent, mdEscape(strings.TrimSpace(it)))
		}
	}
	if lines := settingsLines(doc); len(lines) > 0 {
		out.WriteString("\n**Ran with** (as the device or the socket took it)\n\n")
		for _, l := range lines {
			fmt.Fprintf(&out, "- %s\n", mdEscape(l))
		}
	}

	var foot bytes.Buffer
	notes.write(&foot, doc)
	if lines := strings.Split(strings.TrimSpace(foot.String()), "\n"); foot.Len() > 0 {
		out.WriteByte('\n')
		for _, l := range lines {
			fmt.Fprintf(&out, "- %s\n", mdEscape(l))
		}
	}
	if _, err := w.Write(out.Bytes()); err != nil {
		return fmt.Errorf("report: write markdown: %w", err)
	}
	return nil
}

// mdHeader writes the facts of the run as a list.
func mdHeader(b *bytes.Buffer, doc *report.Document) {
	t := doc.Tool
	title := "**" + mdEscape(cmp.Or(t.Name, "rdmabench")+" "+cmp.Or(t.Version, "devel")) + "**"
	if t.Commit != "" {
		title += " (commit " + mdEscape(t.Commit) + ")"
	}
	if !doc.Start.IsZero() {
		title += " · " + doc.Start.UTC().Format(time.RFC3339)
		if !doc.End.IsZero() && !doc.End.Before(doc.Start) {
			title += ", took " + doc.End.Sub(doc.Start).Round(100*time.Millisecond).String()
		}
	}
	b.WriteString(title + "\n\n")
	item := func(k, v string) { fmt.Fprintf(b, "- %s: %s\n", k, v) }
	if len(doc.Command) > 0 {
		item("command", mdCode(strings.Join(doc.Command, " ")))
	}
	host := func(key string, h *report.Host) {
		s := mdEscape(cmp.Or(h.Hostname, "(unknown host)"))
		if d := h.Device; d != nil {
			dev, gid := deviceLines(d)
			s += ", " + mdEscape(dev) + ", " + mdEscape(gid)
		}
		item(key, s)
	}
	host("local", &doc.Hosts.Local)
	if doc.Hosts.Remote != nil {
		host("remote", doc.Hosts.Remote)
	} else {
		item("remote", "none (loopback)")
	}
	if p := paramsLine(&doc.Params); p != "" {
		item("asked", mdEscape(p))
	}
	if doc.Repeated() {
		item("runs", fmt.Sprintf("%d; tables show the median of the runs", doc.Runs()))
	}
}

// mdRows turns the rows of the terminal table into Markdown tables: each
// title starts a table whose header is the label row after it.
func mdRows(b *bytes.Buffer, rows []row) {
	cols := 0
	for i := 0; i < len(rows); i++ {
		r := rows[i]
		switch r.kind {
		case rowBlank, rowRule:
			continue
		case rowTitle:
			fmt.Fprintf(b, "\n**%s**\n\n", mdEscape(r.text))
			if i+1 < len(rows) && rows[i+1].kind == rowCells {
				i++
				labels := rows[i].cells
				cols = len(labels)
				b.WriteString(mdLine(labels))
				seps := make([]string, cols)
				for j := range seps {
					seps[j] = "---:"
					if j == colTest || j == colConn || j == colKind {
						seps[j] = ":---"
					}
				}
				b.WriteString(mdLine(seps))
			}
			continue
		}
		cells := make([]string, cols)
		for j := 0; j < cols && j < len(r.cells); j++ {
			cells[j] = mdEscape(strings.TrimSpace(r.cells[j]))
		}
		if r.kind == rowError {
			at := min(len(r.cells)-1, cols-1)
			if at >= 0 {
				cells[at] = "**" + mdEscape(r.text) + "**"
			}
		}
		if r.suffix != "" && cols > 0 {
			cells[0] += " " + r.suffix
		}
		b.WriteString(mdLine(cells))
	}
}

func mdLine(cells []string) string {
	return "| " + strings.Join(cells, " | ") + " |\n"
}

// mdEscape makes s safe inside a Markdown table cell or list item: control
// characters become spaces; pipes, backslashes, emphasis and HTML markers
// are escaped.
func mdEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "|", `\|`, "*", `\*`, "_", `\_`, "<", "&lt;", ">", "&gt;", "`", "\\`")
	return r.Replace(textfmt.Clean(s))
}

// mdCode writes s as inline code, with a fence longer than any run of
// backticks in it.
func mdCode(s string) string {
	s = strings.ReplaceAll(textfmt.Clean(s), "|", `\|`)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}
