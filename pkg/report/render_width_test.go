package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// widthFixtures are the result documents a table is tested at a width
// with: every fixture but the mesh one, and the recorded examples.
func widthFixtures(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, glob := range []string{"testdata/*.json", "../../docs/examples/*.json"} {
		fs, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if strings.Contains(f, "benchaction") || strings.HasPrefix(filepath.Base(f), "compare-") || filepath.Base(f) == "mesh.json" {
				continue // other renderings, or not a result document a table shows
			}
			files = append(files, f)
		}
	}
	if len(files) < 5 {
		t.Fatalf("only %d fixtures: %v", len(files), files)
	}
	return files
}

func checkWidth(t *testing.T, what, out string, width int) {
	t.Helper()
	for i, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > width {
			t.Errorf("%s, line %d: %d columns (max %d): %q", what, i+1, n, width, l)
		}
		if strings.TrimRight(l, " ") != l {
			t.Errorf("%s, line %d has trailing spaces: %q", what, i+1, l)
		}
	}
}

// At a width, every table fits it, and still holds every figure: the
// split tables together have the labels of the unsplit one.
func TestTableFitsWidth(t *testing.T) {
	for _, f := range widthFixtures(t) {
		doc, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var wide bytes.Buffer
		if err := WriteTable(&wide, doc); err != nil {
			t.Fatal(err)
		}
		for _, width := range []int{80, 60} {
			var buf bytes.Buffer
			if err := WriteTableWith(&buf, doc, Options{Width: width}); err != nil {
				t.Fatal(err)
			}
			checkWidth(t, f, buf.String(), width)
			for _, label := range []string{"p99.99", "max", "Mmsg/s", "MiB/s"} {
				if strings.Contains(wide.String(), "  "+label) && !strings.Contains(buf.String(), "  "+label) {
					t.Errorf("%s at width %d: lost the column %s\n%s", f, width, label, buf.String())
				}
			}
		}
		var zero bytes.Buffer
		if err := WriteTableWith(&zero, doc, Options{}); err != nil {
			t.Fatal(err)
		}
		if zero.String() != wide.String() {
			t.Errorf("%s: width 0 changed the layout", f)
		}
	}
}

// A table that fits the width is laid out as with none.
func TestTableWidthKeepsWhatFits(t *testing.T) {
	doc := suiteDoc()
	var wide, at bytes.Buffer
	if err := WriteTable(&wide, doc); err != nil {
		t.Fatal(err)
	}
	if err := WriteTableWith(&at, doc, Options{Width: 400}); err != nil {
		t.Fatal(err)
	}
	if wide.String() != at.String() {
		t.Errorf("a width wider than the table changed it:\n%s", at.String())
	}
}

func TestComparisonFitsWidth(t *testing.T) {
	base, err := ReadFile("../../docs/examples/base.json")
	if err != nil {
		t.Fatal(err)
	}
	next, err := ReadFile("../../docs/examples/new.json")
	if err != nil {
		t.Fatal(err)
	}
	c := Compare(base, next, CompareOptions{BaseName: "docs/examples/base.json", NewName: "docs/examples/new.json"})
	gates := c.CheckGates([]Gate{{Name: "--max-regression 5%", MaxRegression: 5}})
	var wide bytes.Buffer
	if err := WriteComparison(&wide, FormatTable, c, gates); err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{80, 60} {
		var buf bytes.Buffer
		if err := WriteComparisonWith(&buf, FormatTable, c, gates, Options{Width: width}); err != nil {
			t.Fatal(err)
		}
		checkWidth(t, "compare", buf.String(), width)
		if !strings.Contains(buf.String(), "U test") {
			t.Errorf("at width %d the U test column is gone:\n%s", width, buf.String())
		}
	}
}

// FitLines wraps text lines under their footnote number and cuts a word
// longer than the line.
func TestFitLines(t *testing.T) {
	got := string(FitLines([]byte("[12] aaaa bbbb cccc dddd\nshort\n"+strings.Repeat("x", 25)), 14))
	want := "[12] aaaa bbbb\n     cccc dddd\nshort\n" + strings.Repeat("x", 14) + "\n  " + strings.Repeat("x", 11)
	if got != want {
		t.Errorf("FitLines gave\n%q\nwant\n%q", got, want)
	}
}
