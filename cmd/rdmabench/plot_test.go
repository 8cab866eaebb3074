package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/plot"
)

// TestPlot: the command writes exactly the page plot.Write makes of the
// documents, to a file or to standard output; its mistakes have the usual
// exit statuses. (The page itself is tested in a browser in
// pkg/report/plot.)
func TestPlot(t *testing.T) {
	dir := t.TempDir()
	base := writeDoc(t, dir, "base.json", runsDoc("mlx5_0", []float64{1.31, 1.30, 1.33}, []float64{98.5, 98.4, 98.6}))
	newer := writeDoc(t, dir, "new.json", runsDoc("mlx5_0", []float64{1.97, 1.95, 1.99}, []float64{88.6, 88.7, 88.5}))
	page := filepath.Join(dir, "page.html")

	stdout, stderr, code := cli(t, "plot", base, newer, "-o", page)
	if code != 0 || stdout != "" || stderr != "plot: wrote "+page+"\n" {
		t.Fatalf("plot: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	var want bytes.Buffer
	var srcs []report.Source
	for _, f := range []string{base, newer} {
		doc, err := report.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, report.Source{Name: f, Doc: doc})
	}
	if err := plot.Write(&want, srcs); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(page)
	if err != nil || string(got) != want.String() {
		t.Errorf("plot wrote %d bytes (%v), want the %d of plot.Write", len(got), err, want.Len())
	}
	if !strings.HasPrefix(string(got), "<!DOCTYPE html>") {
		t.Errorf("not an HTML page: %.60q", got)
	}

	stdout, _, code = cli(t, "plot", base, newer, "-o", "-")
	if code != 0 || stdout != want.String() {
		t.Errorf("plot -o -: exit %d, %d bytes", code, len(stdout))
	}

	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"plot"}, exitUsage, "name at least one results file"},
		{[]string{"plot", base, "-o", ""}, exitUsage, "-o needs a file name"},
		{[]string{"plot", filepath.Join(dir, "missing.json"), "-o", page}, exitError, "missing.json"},
		{[]string{"plot", base, "-o", filepath.Join(dir, "no-such-dir", "p.html")}, exitError, "no-such-dir"},
	} {
		_, stderr, code := cli(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, %q; want exit %d mentioning %q", tc.args, code, stderr, tc.code, tc.msg)
		}
	}
}

// TestPlotMesh: a mesh document, alone or beside a pair's, is drawn as
// the heatmaps of its matrices (the page is tested in pkg/report/plot).
func TestPlotMesh(t *testing.T) {
	dir := t.TempDir()
	mesh := filepath.Join("..", "..", "pkg", "report", "testdata", "mesh.json")
	base := writeDoc(t, dir, "base.json", runsDoc("mlx5_0", []float64{1.31, 1.30, 1.33}, []float64{98.5, 98.4, 98.6}))
	for _, args := range [][]string{{mesh}, {mesh, base}, {base, mesh}} {
		page := filepath.Join(dir, "fabric.html")
		stdout, stderr, code := cli(t, append(append([]string{"plot"}, args...), "-o", page)...)
		if code != 0 || stdout != "" || stderr != "plot: wrote "+page+"\n" {
			t.Fatalf("plot %v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
		got, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(got), `<figure class="chart heatmap" data-kind="mesh-heatmap"`); n != 3 {
			t.Errorf("plot %v: %d heatmaps, want 3", args, n)
		}
	}
}
