package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
		c := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z", filepath.Join(dir, name))
		msg, err := c.CombinedOutput()
		if err != nil || len(msg) > 0 {
			t.Errorf("%s: groff: %v\n%s", name, err, msg)
		}
	}
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
