package render

import (
	"bytes"
	"fmt"
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/compare"
)

// widthFixtures are the result documents a table is tested at a width
// with: every fixture but the mesh one, and the recorded examples.
func widthFixtures(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, glob := range []string{"../testdata/*.json", "../../../docs/examples/*.json"} {
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
		doc, err := report.ReadFile(f)
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
	doc := reporttest.SuiteDoc()
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
	base, err := report.ReadFile("../../../docs/examples/base.json")
	if err != nil {
		t.Fatal(err)
	}
	next, err := report.ReadFile("../../../docs/examples/new.json")
	if err != nil {
		t.Fatal(err)
	}
	c := compare.Compare(base, next, compare.Options{BaseName: "docs/examples/base.json", NewName: "docs/examples/new.json"})
	gates := c.CheckGates([]compare.Gate{{Name: "--max-regression 5%", MaxRegression: 5}})
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

// At a width, a mesh document's table fits it, the small meshes' R×R
// matrices and the aggregate past 64 ranks alike: a matrix too wide is
// split into blocks of columns, each led by the row's rank, that together
// have every rank's column; with no width it is laid out as before.
func TestMeshTableFitsWidth(t *testing.T) {
	fixture, err := report.ReadFile("../testdata/mesh.json")
	if err != nil {
		t.Fatal(err)
	}
	lat := func(from, to int) float64 { return 2000 + float64((from*7+to*3)%50) }
	cases := []struct {
		name string
		doc  *report.Document
		cols int // the columns of its matrices, 0 for a per-host table
	}{
		{"../testdata/mesh.json", fixture, 4},
		{"16 ranks", reporttest.RailMesh(t, 16, 1, lat, [2]int{-1, -1}), 16},
		{"16 hosts × 8 rails", reporttest.RailMesh(t, 16, 8, lat, [2]int{-1, -1}), 16},
		{"40 hosts × 2 rails", reporttest.RailMesh(t, 40, 2, lat, [2]int{0, 2}), 0},
	}
	for _, c := range cases {
		var wide bytes.Buffer
		if err := Write(&wide, FormatTable, c.doc); err != nil {
			t.Fatal(err)
		}
		widest := 0
		for _, l := range strings.Split(wide.String(), "\n") {
			widest = max(widest, utf8.RuneCountInString(l))
		}
		if widest <= 80 {
			t.Errorf("%s is only %d columns wide: the case tests nothing", c.name, widest)
		}
		for _, width := range []int{80, 60} {
			var buf bytes.Buffer
			if err := WriteWith(&buf, FormatTable, c.doc, Options{Width: width}); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for i, l := range strings.Split(out, "\n") {
				if n := utf8.RuneCountInString(l); n > width {
					t.Errorf("%s at width %d, line %d: %d columns: %q", c.name, width, i+1, n, l)
				}
			}
			if c.cols == 0 {
				for _, want := range []string{"per host (its links both ways)", "worst link", "39 node39"} {
					if !strings.Contains(out, want) {
						t.Errorf("%s at width %d: %q is gone\n%s", c.name, width, want, out)
					}
				}
				continue
			}
			// Each matrix's blocks together label every column once.
			blocks, labels := 0, map[string]int{}
			for _, l := range strings.Split(out, "\n") {
				if f := strings.Fields(l); len(f) > 0 && f[0] == `from\to` {
					blocks++
					for _, k := range f[1:] {
						labels[k]++
					}
				}
			}
			matrices := len(c.doc.Mesh.Matrices)
			if c.doc.Mesh.Aggregate != nil && len(c.doc.Mesh.Matrices) == 0 {
				matrices = len(c.doc.Mesh.Aggregate.Figures)
			}
			for k := range c.cols {
				if n := labels[strconv.Itoa(k)]; n != matrices {
					t.Errorf("%s at width %d: column %d is labelled %d times, want once in each of the %d matrices\n%s", c.name, width, k, n, matrices, out)
				}
			}
			if c.cols > 4 && blocks <= matrices {
				t.Errorf("%s at width %d: %d blocks for %d matrices: none was split", c.name, width, blocks, matrices)
			}
		}
		var zero bytes.Buffer
		if err := WriteWith(&zero, FormatTable, c.doc, Options{}); err != nil {
			t.Fatal(err)
		}
		if zero.String() != wide.String() {
			t.Errorf("%s: width 0 changed the layout", c.name)
		}
	}
}

// columnBlocks keeps a table that fits in one block, splits one that
// does not into even blocks led by the key column, and gives a column too
// wide for any block one of its own.
func TestColumnBlocks(t *testing.T) {
	for _, c := range []struct {
		colw  []int
		width int
		want  string
	}{
		{[]int{7, 4, 4, 4}, 0, "[[0 1 2 3]]"},
		{[]int{7, 4, 4, 4}, 25, "[[0 1 2 3]]"},
		{[]int{7, 4, 4, 4}, 24, "[[0 1 2] [0 3]]"},
		{[]int{7, 4, 4, 4, 4, 4}, 25, "[[0 1 2 3] [0 4 5]]"},
		{[]int{7, 4, 4, 4, 4, 4, 4, 4}, 38, "[[0 1 2 3 4] [0 5 6 7]]"},
		{[]int{5, 30, 3}, 20, "[[0 1] [0 2]]"},
	} {
		if got := fmt.Sprint(columnBlocks(c.colw, c.width)); got != c.want {
			t.Errorf("columnBlocks(%v, %d) = %s, want %s", c.colw, c.width, got, c.want)
		}
	}
}
