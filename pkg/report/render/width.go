package render

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter/tw"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// Options say how the table forms are laid out.
type Options struct {
	// Width is the most runes a line of a table may take, the terminal's
	// width; 0 for no limit (into a pipe), where the layout is the same
	// whatever the terminal. At a width, a table too wide for it is split
	// into stacked tables that each repeat the key columns (test,
	// connection, size, ...) with as many figure columns as fit, as
	// benchstat splits its tables; text lines wrap at spaces.
	Width int
}

// wrapAt is the width text wraps at: def, or the width when narrower.
func (o Options) wrapAt(def int) int {
	if o.Width > 0 && o.Width < def {
		return o.Width
	}
	return def
}

// kvAt is kv wrapped at width instead of headerWrap.
func kvAt(b *bytes.Buffer, k, v string, width int) {
	for i, l := range wrap(textfmt.Clean(v), width-keyWidth) {
		if i > 0 {
			k = ""
		}
		b.WriteString(padTo(k, keyWidth) + l + "\n")
	}
}

func padTo(s string, n int) string {
	if c := utf8.RuneCountInString(s); c < n {
		return s + strings.Repeat(" ", n-c)
	}
	return s
}

// layoutFit is layoutGridWrap within width runes (0: no limit): a section
// (the rows between blank rows) too wide for it is split into stacked
// tables, each with the first keys columns and as many of the others as
// fit. A section's title is written once, above its first table; error
// texts and footnote references stay with the first; an error row that
// has key cells keeps them in the others.
func layoutFit(rows []row, aligns []tw.Align, keys, width int) ([]string, error) {
	lines, err := layoutGridWrap(rows, aligns, 0)
	if err != nil || width <= 0 || fitsRows(lines, rows, width) {
		if err == nil && width > 0 {
			return layoutGridWrap(rows, aligns, width)
		}
		return lines, err
	}
	return bySection(rows, func(sec []row) ([]string, error) { return splitSection(sec, aligns, keys, width) })
}

// bySection lays out each section of rows (the rows between blank rows)
// with lay, a blank line between them.
func bySection(rows []row, lay func([]row) ([]string, error)) ([]string, error) {
	var out []string
	start := 0
	for i := 0; i <= len(rows); i++ {
		if i < len(rows) && rows[i].kind != rowBlank {
			continue
		}
		if i > start {
			ls, err := lay(rows[start:i])
			if err != nil {
				return nil, err
			}
			out = append(out, ls...)
		}
		if i < len(rows) {
			out = append(out, "")
		}
		start = i + 1
	}
	return out, nil
}

// fits reports whether no line is wider than width, titles aside (they
// wrap as text).
func fits(lines []string, width int) bool {
	for _, l := range lines {
		if utf8.RuneCountInString(l) > width {
			return false
		}
	}
	return true
}

// splitSection lays out one section within width.
func splitSection(rows []row, aligns []tw.Align, keys, width int) ([]string, error) {
	lines, err := layoutGridWrap(rows, aligns, width)
	if err != nil {
		return nil, err
	}
	colw := make([]int, len(aligns))
	suffix := 0
	for _, r := range rows {
		cells := r.cells
		switch r.kind {
		case rowCells:
		case rowError:
			cells = cells[:max(len(cells)-1, 0)]
		default:
			continue
		}
		for i, c := range cells {
			colw[i] = max(colw[i], utf8.RuneCountInString(c))
		}
		if r.suffix != "" {
			suffix = max(suffix, 2+utf8.RuneCountInString(r.suffix))
		}
	}
	if fitsRows(lines, rows, width) {
		return lines, nil
	}
	keyW := 0
	for i := 0; i < keys && i < len(colw); i++ {
		keyW += colw[i] + 2
	}
	var groups [][]int
	var cur []int
	curW := keyW
	for c := keys; c < len(colw); c++ {
		if colw[c] == 0 {
			continue // empty in this section
		}
		budget := width
		if len(groups) == 0 {
			budget -= suffix
		}
		if len(cur) > 0 && curW+colw[c] > budget {
			groups = append(groups, cur)
			cur, curW = nil, keyW
		}
		cur = append(cur, c)
		curW += colw[c] + 2
	}
	if len(cur) > 0 || len(groups) == 0 {
		groups = append(groups, cur)
	}
	var out []string
	for g, cols := range groups {
		sub := make([]row, 0, len(rows))
		subAligns := append(append([]tw.Align(nil), aligns[:keys]...), pick(aligns, cols)...)
		for _, r := range rows {
			switch r.kind {
			case rowTitle:
				if g == 0 {
					sub = append(sub, r)
				}
			case rowRule:
				sub = append(sub, r)
			case rowError:
				if g == 0 {
					sub = append(sub, r)
					continue
				}
				kc := r.cells[:max(len(r.cells)-1, 0)]
				if strings.Join(kc, "") != "" {
					sub = append(sub, row{cells: kc})
				}
			case rowCells:
				nr := row{cells: append(append([]string(nil), cellsAt(r.cells, 0, keys)...), pickCells(r.cells, cols)...)}
				if g == 0 {
					nr.suffix = r.suffix
				}
				sub = append(sub, nr)
			default:
				sub = append(sub, r)
			}
		}
		ls, err := layoutGridWrap(sub, subAligns, width)
		if err != nil {
			return nil, err
		}
		if g > 0 {
			out = append(out, "")
		}
		out = append(out, ls...)
	}
	return out, nil
}

// fitsRows is fits for the lines of cell rows only.
func fitsRows(lines []string, rows []row, width int) bool {
	if len(lines) != len(rows) {
		return fits(lines, width) // error texts wrapped: they fit by construction
	}
	for i, l := range lines {
		if rows[i].kind == rowCells && utf8.RuneCountInString(l) > width {
			return false
		}
	}
	return true
}

func cellsAt(cells []string, from, to int) []string {
	out := make([]string, to-from)
	for i := from; i < to && i < len(cells); i++ {
		out[i-from] = cells[i]
	}
	return out
}

func pickCells(cells []string, cols []int) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		if c < len(cells) {
			out[i] = cells[c]
		}
	}
	return out
}

func pick(aligns []tw.Align, cols []int) []tw.Align {
	out := make([]tw.Align, len(cols))
	for i, c := range cols {
		out[i] = aligns[c]
	}
	return out
}

var reNoteRef = regexp.MustCompile(`^\[\d+\] `)

// FitLines wraps each line of text wider than width (0: none) at its
// last space that fits; the rest is indented under the text of a
// footnote ("[1] ..."), or two spaces more than the line was. A word
// wider than the line is cut. The tables and the commands' help fit the
// terminal with it.
func FitLines(text []byte, width int) []byte {
	if width <= 0 {
		return text
	}
	var out bytes.Buffer
	for i, line := range strings.Split(string(text), "\n") {
		if i > 0 {
			out.WriteByte('\n')
		}
		if utf8.RuneCountInString(line) <= width {
			out.WriteString(line)
			continue
		}
		lead := len(line) - len(strings.TrimLeft(line, " "))
		indent := lead + 2
		if m := reNoteRef.FindString(line); m != "" {
			indent = len(m)
		}
		indent = min(indent, width/2)
		var parts []string
		words := wrapWords(line[lead:], width-lead)
		if len(words) > 1 {
			words = append(words[:1], wrapWords(strings.Join(words[1:], " "), width-indent)...)
		}
		for j, part := range words {
			pad := strings.Repeat(" ", indent)
			if j == 0 {
				pad = strings.Repeat(" ", lead)
			}
			for utf8.RuneCountInString(pad+part) > width { // a word longer than the line
				rs := []rune(part)
				cut := width - utf8.RuneCountInString(pad)
				parts = append(parts, pad+string(rs[:cut]))
				part, pad = string(rs[cut:]), strings.Repeat(" ", indent)
			}
			parts = append(parts, pad+part)
		}
		out.WriteString(strings.Join(parts, "\n"))
	}
	return out.Bytes()
}

// layoutSections lays out each section (the rows between blank rows) on a
// grid of its own, so that the figures of one kind do not widen the
// columns of another, with the key columns (the first keys) as wide in
// every section, and the rules as wide as the widest.
func layoutSections(rows []row, aligns []tw.Align, keys, width int) ([]string, error) {
	keyW := make([]int, keys)
	for _, r := range rows {
		for i, c := range keyCells(r, keys) {
			keyW[i] = max(keyW[i], utf8.RuneCountInString(c))
		}
	}
	padded := make([]row, len(rows))
	for i, r := range rows {
		padded[i] = r
		kc := keyCells(r, keys)
		if len(kc) == 0 {
			continue
		}
		cells := slices.Clone(r.cells)
		for j, c := range kc {
			pad := strings.Repeat(" ", keyW[j]-utf8.RuneCountInString(c))
			if aligns[j] == tw.AlignLeft {
				cells[j] = c + pad
			} else {
				cells[j] = pad + c
			}
		}
		padded[i].cells = cells
	}
	out, err := bySection(padded, func(sec []row) ([]string, error) { return layoutFit(sec, aligns, keys, width) })
	if err != nil {
		return nil, err
	}
	rule := 0
	for _, l := range out {
		if isRule(l) {
			rule = max(rule, len(l))
		}
	}
	for i, l := range out {
		if isRule(l) {
			out[i] = strings.Repeat("-", rule)
		}
	}
	return out, nil
}

// keyCells are the key cells of a row of cells or an error row (those
// before its error text).
func keyCells(r row, keys int) []string {
	switch r.kind {
	case rowCells:
		return r.cells[:min(keys, len(r.cells))]
	case rowError:
		return r.cells[:min(keys, max(len(r.cells)-1, 0))]
	}
	return nil
}

func isRule(l string) bool { return l != "" && strings.Trim(l, "-") == "" }

// columnBlocks splits the columns of a table whose columns are colw wide
// (two spaces between them) into blocks that each fit width runes (0: no
// limit) and start with the first column, the row's key (a rank, a
// host), as `ip` and benchstat keep a wide table readable: the columns
// of each block, the key first. The blocks are as even as fit (a 16-rank
// matrix in two blocks of 8, not 12 and 4); a column wider than the width
// left gets a block of its own.
func columnBlocks(colw []int, width int) [][]int {
	all := make([]int, len(colw))
	for i := range all {
		all[i] = i
	}
	total := 0
	for _, w := range colw {
		total += w + 2
	}
	if width <= 0 || len(colw) < 2 || total-2 <= width {
		return [][]int{all}
	}
	var blocks [][]int
	cur, curW := []int{0}, colw[0]
	for j := 1; j < len(colw); j++ {
		if len(cur) > 1 && curW+2+colw[j] > width {
			blocks = append(blocks, cur)
			cur, curW = []int{0}, colw[0]
		}
		cur = append(cur, j)
		curW += 2 + colw[j]
	}
	blocks = append(blocks, cur)
	if even := evenBlocks(colw, len(blocks), width); even != nil {
		return even
	}
	return blocks
}

// evenBlocks splits the columns after the first into k blocks of as many
// columns each as can be (the first ones one more), each led by the first
// column; nil when one of them does not fit width.
func evenBlocks(colw []int, k, width int) [][]int {
	n := len(colw) - 1
	blocks := make([][]int, 0, k)
	j := 1
	for b := range k {
		size := n / k
		if b < n%k {
			size++
		}
		cur, curW := []int{0}, colw[0]
		for range size {
			cur = append(cur, j)
			curW += 2 + colw[j]
			j++
		}
		if curW > width {
			return nil
		}
		blocks = append(blocks, cur)
	}
	return blocks
}
