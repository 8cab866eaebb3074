package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestEveryCommandHasExample: every command a user can run (help and
// completion included) shows an Example in its help, and each rdmabench
// command line of it parses: the command exists, takes those flags and
// that many arguments.
func TestEveryCommandHasExample(t *testing.T) {
	root := newRoot(&bytes.Buffer{}, &bytes.Buffer{}, nil)
	n := 0
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		n++
		path := c.CommandPath()
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s: no Example", path)
		}
		// A line ending in a backslash goes on on the next, as in the shell.
		for _, line := range strings.Split(strings.ReplaceAll(c.Example, "\\\n", " "), "\n") {
			for _, cmdline := range exampleCommands(line) {
				checkExampleParses(t, path, cmdline)
			}
		}
		if help := helpOf(t, c); !strings.Contains(help, "Examples:\n") {
			t.Errorf("%s: --help shows no examples", path)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if n < 25 {
		t.Errorf("only %d commands", n)
	}
}

// helpOf is c's help text.
func helpOf(t *testing.T, c *cobra.Command) string {
	t.Helper()
	var b bytes.Buffer
	c.SetOut(&b)
	defer c.SetOut(nil)
	if err := c.Help(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// exampleCommands returns the rdmabench invocations of one example line,
// each cut at what the shell takes for itself (comments, pipes,
// redirections, &&), as argument lists after "rdmabench".
func exampleCommands(line string) [][]string {
	if i := strings.Index(line, "#"); i >= 0 {
		line = line[:i]
	}
	var out [][]string
	for _, part := range strings.FieldsFunc(line, func(r rune) bool { return r == '|' || r == '&' || r == ';' || r == '(' || r == ')' }) {
		f := strings.Fields(part)
		for i, w := range f {
			if w == "rdmabench" {
				args := f[i+1:]
				for j, a := range args {
					if strings.HasPrefix(a, ">") || strings.HasPrefix(a, "<") {
						args = args[:j]
						break
					}
				}
				out = append(out, args)
				break
			}
		}
	}
	return out
}

// checkExampleParses finds the command of args and parses its flags and
// arguments as cobra would, without running it.
func checkExampleParses(t *testing.T, where string, args []string) {
	t.Helper()
	root := newRoot(&bytes.Buffer{}, &bytes.Buffer{}, nil)
	c, rest, err := root.Find(args)
	if err != nil {
		t.Errorf("%s: example `rdmabench %s`: %v", where, strings.Join(args, " "), err)
		return
	}
	for i := range rest {
		rest[i] = strings.Trim(rest[i], `"`)
	}
	if err := c.ParseFlags(rest); err != nil {
		t.Errorf("%s: example `rdmabench %s`: %v", where, strings.Join(args, " "), err)
		return
	}
	if err := c.ValidateArgs(c.Flags().Args()); err != nil {
		t.Errorf("%s: example `rdmabench %s`: %v", where, strings.Join(args, " "), err)
	}
}
