package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// manPages are the pages `rdmabench man` must write: one per command a
// user can run (cobra's completion commands included), named as man
// looks them up.
func manPages() []string {
	root := newRoot(&bytes.Buffer{}, &bytes.Buffer{}, nil)
	root.InitDefaultCompletionCmd()
	var pages []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
			return
		}
		pages = append(pages, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	slices.Sort(pages)
	return pages
}

// TestManPages: `rdmabench man DIR` writes one page per command, each with
// its header and sections, and groff reads every one without a warning.
// The date comes from SOURCE_DATE_EPOCH, so that two runs write the same
// pages.
func TestManPages(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1764547200") // 2025-12-01
	dir := filepath.Join(t.TempDir(), "man1")
	out, stderr, code := cli(t, "man", dir)
	if code != 0 {
		t.Fatalf("man: exit %d: %s", code, stderr)
	}
	want := manPages()
	if !strings.Contains(out, "wrote "+itoa(len(want))+" man pages") {
		t.Errorf("stdout %q", out)
	}
	var got []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages %q, want %q", got, want)
	}
	if len(want) < 20 {
		t.Fatalf("only %d commands", len(want))
	}
	for _, name := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		page := string(b)
		cmd := strings.TrimSuffix(name, ".1")
		// A page with tables starts by telling man to run tbl.
		if strings.Contains(page, "\n.TS\n") != strings.HasPrefix(page, tablePreprocessor+"\n") {
			t.Errorf("%s: tables and the tbl line disagree", name)
		}
		page = strings.TrimPrefix(page, tablePreprocessor+"\n")
		if !strings.HasPrefix(page, ".nh\n.TH \"RDMABENCH\" \"1\" \"Dec 2025\" \"rdmabench ") {
			t.Errorf("%s: header %q", name, strings.SplitN(page, "\n", 3)[:2])
		}
		for _, sec := range []string{".SH NAME\n" + cmd + " - ", ".SH SYNOPSIS\n", ".SH DESCRIPTION\n", ".SH OPTIONS\n", ".SH EXAMPLE\n"} {
			if !strings.Contains(page, sec) {
				t.Errorf("%s: no %q", name, sec)
			}
		}
		if cmd != "rdmabench" && !strings.Contains(page, ".SH SEE ALSO\n") {
			t.Errorf("%s: no SEE ALSO", name)
		}
	}
	// The same pages again.
	again := filepath.Join(t.TempDir(), "again")
	if _, _, code := cli(t, "man", again); code != 0 {
		t.Fatal("man again")
	}
	for _, name := range want {
		a, _ := os.ReadFile(filepath.Join(dir, name))
		b, _ := os.ReadFile(filepath.Join(again, name))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs", name)
		}
	}
	groff := groffPath(t)
	for _, name := range want {
		c := exec.Command(groff, "-t", "-man", "-Tutf8", "-ww", "-z", filepath.Join(dir, name))
		msg, err := c.CombinedOutput()
		if err != nil || len(msg) > 0 {
			t.Errorf("%s: groff: %v\n%s", name, err, msg)
		}
	}
}

// TestHelpTables: the two-column tables of a help text are found, rows
// whose term stands alone above its description included, and indented
// lines of another layout are left as they are.
func TestHelpTables(t *testing.T) {
	mark := func(i int) string { return "TABLE" + itoa(i) }
	text := "Intro:\n" +
		"  -a      first, which\n" +
		"          goes on\n" +
		"  --long-term\n" +
		"          second\n" +
		"  -c      third\n" +
		"After.\n\n" +
		"  rdmabench write-lat -d rxe0\n" +
		"    --all\n" +
		"\n" +
		"  x  one\n" +
		"     two\n" +
		"   three\n"
	got, tables := helpTables(text, mark)
	want := helpTable{{"-a", "first, which goes on"}, {"--long-term", "second"}, {"-c", "third"}}
	if len(tables) != 1 || !slices.Equal(tables[0], want) {
		t.Fatalf("tables %q, want one: %q", tables, want)
	}
	if !strings.HasPrefix(got, "Intro:\n\nTABLE0\n\nAfter.\n\n  rdmabench write-lat -d rxe0\n    --all\n\n  x  one\n") {
		t.Errorf("text %q", got)
	}
	if roff := tables[0].roff(); !strings.HasPrefix(roff, ".TS\nnokeep;\nl lx.\nT{\n-a\nT}\tT{\nfirst, which goes on\nT}\n") || !strings.HasSuffix(roff, ".TE\n") {
		t.Errorf("roff %q", roff)
	}
}

// TestManTableReads: man reads the mesh page's schedule table as a table:
// each term at the start of its row, every description in one column,
// beside its term (or after a term wider than the others' column, as the
// help has it) and filled to man's width, its words all there in order.
func TestManTableReads(t *testing.T) {
	manCmd := lookTool(t, "man", "man-db")
	dir := t.TempDir()
	if _, stderr, code := cli(t, "man", dir); code != 0 {
		t.Fatalf("man: %s", stderr)
	}
	root := newRoot(&bytes.Buffer{}, &bytes.Buffer{}, nil)
	mesh, _, err := root.Find([]string{"mesh"})
	if err != nil {
		t.Fatal(err)
	}
	_, tables := helpTables(mesh.Long, func(int) string { return "" })
	if len(tables) < 1 || len(tables[0]) < 5 {
		t.Fatalf("mesh's help: tables %q, want the schedule's", tables)
	}
	rows := tables[0]
	for _, width := range []string{"80", "60", "50"} {
		c := exec.Command(manCmd, "-l", filepath.Join(dir, "rdmabench-mesh.1"))
		c.Env = append(os.Environ(), "MANWIDTH="+width, "MANPAGER=cat", "PAGER=cat", "LC_ALL=C.UTF-8")
		out, err := c.Output()
		if err != nil {
			t.Fatalf("man -l: %v", err)
		}
		lines := strings.Split(string(out), "\n")
		start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), rows[0][0]+" ") })
		if start < 0 {
			t.Fatalf("width %s: no row %q in\n%s", width, rows[0][0], out)
		}
		termCol, descCol := indent(lines[start]), -1
		i := start
		for r, row := range rows {
			line := lines[i]
			if indent(line) != termCol || !strings.HasPrefix(line[termCol:], row[0]+" ") {
				t.Fatalf("width %s: row %d: %q, want term %q at column %d", width, r, line, row[0], termCol)
			}
			rest := line[termCol+len(row[0]):]
			c := termCol + len(row[0]) + indent(rest)
			if descCol < 0 {
				descCol = c
			}
			if c != descCol {
				t.Errorf("width %s: %q: description at column %d, the others' at %d", width, row[0], c, descCol)
			}
			text := strings.TrimSpace(rest)
			for i++; i < len(lines) && indent(lines[i]) == descCol; i++ {
				if w, _ := strconv.Atoi(width); len([]rune(lines[i])) > w {
					t.Errorf("width %s: %q longer than the page", width, lines[i])
				}
				if strings.HasSuffix(text, "\u2010") { // man hyphenated a word
					text = strings.TrimSuffix(text, "\u2010") + strings.TrimSpace(lines[i])
				} else {
					text += " " + strings.TrimSpace(lines[i])
				}
			}
			if strings.Join(strings.Fields(text), " ") != row[1] {
				t.Errorf("width %s: %q reads %q, want %q", width, row[0], text, row[1])
			}
		}
	}
}

// lookTool is the path of cmd, from the Debian package pkg (which
// scripts/deps.sh installs); without it the test skips, unless CI is set.
func lookTool(t *testing.T, cmd, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(cmd); err == nil {
		return p
	}
	msg := cmd + " not installed (Debian package " + pkg + ", which scripts/deps.sh installs)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "; CI is set, so the test fails rather than skipping")
	}
	t.Skip(msg)
	return ""
}

// groffPath is groff, which man renders pages with (Debian package
// groff-base, installed by scripts/deps.sh); without it the test skips,
// unless CI is set.
func groffPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("groff"); err == nil {
		return p
	}
	msg := "groff not installed (Debian package groff-base, which scripts/deps.sh installs)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "; CI is set, so the test fails rather than skipping")
	}
	t.Skip(msg)
	return ""
}

// TestManNeedsDir: man takes exactly one directory.
func TestManNeedsDir(t *testing.T) {
	if _, _, code := cli(t, "man"); code != exitUsage {
		t.Errorf("man without DIR: exit %d", code)
	}
}
