package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rdmabench/rdmabench/internal/atomicfile"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/spf13/cobra"
)

// With COLUMNS=80 every command's help fits 80 columns; with no COLUMNS,
// into a pipe, each flag keeps one line.
func TestHelpFits80Columns(t *testing.T) {
	var names [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		names = append(names, path)
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() || s.Name() == "help" {
				walk(s, append(append([]string(nil), path...), s.Name()))
			}
		}
	}
	walk(newRoot(io.Discard, io.Discard, nil), nil)
	if len(names) < 20 {
		t.Fatalf("only %d commands found", len(names))
	}
	for _, path := range names {
		t.Setenv("COLUMNS", "80")
		out, _, code := cli(t, append(path, "--help")...)
		if code != 0 || out == "" {
			t.Errorf("%v --help: exit %d", path, code)
			continue
		}
		for i, line := range strings.Split(out, "\n") {
			if n := utf8.RuneCountInString(line); n > 80 {
				t.Errorf("rdmabench %s --help, line %d: %d columns: %q", strings.Join(path, " "), i+1, n, line)
			}
		}
	}
	t.Setenv("COLUMNS", "")
	out, _, _ := cli(t, "write-lat", "--help")
	if !strings.Contains(out, "--cpu cores                pin each end's loop threads to these cores, e.g. 0-3,8 (default: the cores of the device's NUMA node)\n") {
		t.Errorf("with no width, a flag's description is not on one line:\n%s", out)
	}
}

// With COLUMNS=80 tables fit 80 columns too: report (of results and of
// mesh documents: R×R matrices of 4 and 16 ranks, the aggregate of 80),
// compare and a test command's; into a pipe they keep their one layout.
func TestTablesFit80Columns(t *testing.T) {
	dir := t.TempDir()
	meshFile := func(n int) string {
		path := filepath.Join(dir, fmt.Sprintf("mesh%d.json", n))
		if err := atomicfile.Write(path, func(w io.Writer) error { return report.WriteJSON(w, meshDoc(n, nil, nil)) }); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cases := [][]string{
		{"report", "../../pkg/report/testdata/mesh.json"},
		{"report", meshFile(16)},
		{"report", meshFile(80)},
		{"report", "../../docs/examples/base.json"},
		{"report", "../../docs/examples/base.json", "../../docs/examples/new.json"},
		{"report", "../../pkg/report/testdata/suite.json"},
		{"report", "../../pkg/report/testdata/repeat.json"},
		{"report", "../../pkg/report/testdata/duration.json"},
		{"compare", "../../docs/examples/base.json", "../../docs/examples/new.json"},
		{"compare", meshFile(16), meshFile(16)},
		{"tcp-lat", "-n", "20", "-s", "2,64"},
	}
	for _, args := range cases {
		t.Setenv("COLUMNS", "")
		wide, _, code := cli(t, args...)
		if code != 0 {
			t.Fatalf("rdmabench %s: exit %d", strings.Join(args, " "), code)
		}
		widest := 0
		for _, line := range strings.Split(wide, "\n") {
			widest = max(widest, utf8.RuneCountInString(line))
		}
		if widest <= 80 && args[0] != "tcp-lat" {
			t.Errorf("rdmabench %s is only %d columns wide with no COLUMNS: the case tests nothing", strings.Join(args, " "), widest)
		}
		t.Setenv("COLUMNS", "80")
		out, _, code := cli(t, args...)
		if code != 0 {
			t.Fatalf("COLUMNS=80 rdmabench %s: exit %d", strings.Join(args, " "), code)
		}
		for i, line := range strings.Split(out, "\n") {
			if n := utf8.RuneCountInString(line); n > 80 {
				t.Errorf("COLUMNS=80 rdmabench %s, line %d: %d columns: %q", strings.Join(args, " "), i+1, n, line)
			}
		}
	}
}
