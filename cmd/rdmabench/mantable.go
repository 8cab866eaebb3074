package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// The tables of the help texts in the man pages. A help text lays a table
// out as two columns for the terminal (mesh's schedule):
//
//	  --rails     ranks are NICs (the local rank picks the NIC): NIC i of each
//	              host only against NIC i of the others
//	  --host-level
//	              ranks are hosts
//
// a term indented by two spaces, its description at a column of its own,
// continued at that column, or below a term too long for its column.
// Markdown (which cobra's pages are made from) reads those lines as one
// paragraph, and man breaks them mid-column; so each such table becomes a
// tbl(1) table in the page, its descriptions filled to man's width.

// helpTable is one table of a help text: its rows, a term and its
// description (continuation lines joined).
type helpTable [][2]string

// helpTables returns text with each table of it replaced by a paragraph
// of its own holding only mark(i), i counting the tables from 0, and the
// tables. Indented lines that do not keep to the layout are left as they
// are.
func helpTables(text string, mark func(int) string) (string, []helpTable) {
	lines := strings.Split(text, "\n")
	var out []string
	var tables []helpTable
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && indent(lines[j]) >= 2 {
			j++
		}
		if j == i {
			out = append(out, lines[i])
			i++
			continue
		}
		if t, ok := parseHelpTable(lines[i:j]); ok {
			out = append(out, "", mark(len(tables)), "")
			tables = append(tables, t)
		} else {
			out = append(out, lines[i:j]...)
		}
		i = j
	}
	return strings.Join(out, "\n"), tables
}

// indent is the number of spaces line starts with; a blank line has none.
func indent(line string) int {
	n := len(line) - len(strings.TrimLeft(line, " "))
	if n == len(line) {
		return 0
	}
	return n
}

// parseHelpTable reads lines, all indented, as a table: each row starts
// with a term indented by two spaces; its description starts after two
// spaces or more on the term's line, or alone on the next line, at one
// column for every row; its continuation lines are indented to that
// column. Fewer than two rows is no table.
func parseHelpTable(lines []string) (helpTable, bool) {
	var t helpTable
	col := 0
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if indent(line) != 2 {
			return nil, false
		}
		term, desc, c := strings.TrimSpace(line), "", 0
		if k := strings.Index(line[2:], "  "); k >= 0 {
			term = line[2 : 2+k]
			desc = strings.TrimSpace(line[2+k:])
			c = 2 + k + indent(line[2+k:])
		} else if i+1 < len(lines) && indent(lines[i+1]) > 2 {
			i++
			c = indent(lines[i])
			desc = strings.TrimSpace(lines[i])
		}
		if desc == "" || (col != 0 && c != col) {
			return nil, false
		}
		col = c
		for i+1 < len(lines) && indent(lines[i+1]) > 2 {
			if indent(lines[i+1]) != col {
				return nil, false
			}
			i++
			desc += " " + strings.TrimSpace(lines[i])
		}
		t = append(t, [2]string{term, desc})
	}
	return t, len(t) >= 2
}

// roff is t as a tbl(1) table: the terms in a column as wide as the
// widest, the descriptions filled in the rest of the line. nokeep: a
// table is no block kept on one page, which would leave blank lines in
// the middle of it where man's page would have ended.
func (t helpTable) roff() string {
	var b strings.Builder
	b.WriteString(".TS\nnokeep;\nl lx.\n")
	for _, r := range t {
		fmt.Fprintf(&b, "T{\n%s\nT}\tT{\n%s\nT}\n", roffText(r[0]), roffText(r[1]))
	}
	b.WriteString(".TE\n")
	return b.String()
}

// roffText is s as text of a roff line: backslashes escaped, and a leading
// dot or quote, which would start a request, made text.
func roffText(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// tablePreprocessor is the first line of a page that has tables: it tells
// man to run tbl on it.
const tablePreprocessor = `'\" t`

// genManTables takes the tables out of the help texts of root and its
// commands for gen, which writes their pages into dir, then puts each
// table into its command's page as a tbl table. The help texts are as
// they were once it returns.
func genManTables(root *cobra.Command, dir string, gen func() error) error {
	type withTables struct {
		cmd    *cobra.Command
		long   string
		tables []helpTable
	}
	mark := func(i int) string { return fmt.Sprintf("rdmabenchhelptable%d", i) }
	var cmds []withTables
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if text, tables := helpTables(c.Long, mark); len(tables) > 0 {
			cmds = append(cmds, withTables{c, c.Long, tables})
			c.Long = text
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	err := gen()
	for _, w := range cmds {
		w.cmd.Long = w.long
	}
	if err != nil {
		return err
	}
	for _, w := range cmds {
		if !w.cmd.IsAvailableCommand() || w.cmd.IsAdditionalHelpTopicCommand() {
			continue
		}
		path := filepath.Join(dir, strings.ReplaceAll(w.cmd.CommandPath(), " ", "-")+".1")
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		page := string(b)
		for i, t := range w.tables {
			m := "\n" + mark(i) + "\n"
			if !strings.Contains(page, m) {
				return fmt.Errorf("%s: table %d of the help not found in the page", path, i+1)
			}
			page = strings.Replace(page, m, "\n"+t.roff(), 1)
		}
		if !strings.HasPrefix(page, tablePreprocessor+"\n") {
			page = tablePreprocessor + "\n" + page
		}
		if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
			return err
		}
	}
	return nil
}
