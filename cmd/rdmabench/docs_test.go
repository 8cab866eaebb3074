package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocExamples executes every `$ rdmabench ...` line of the ```console
// blocks in README.md and docs/*.md, from the repository root, and checks
// that the output (stdout, then stderr) and the exit status are exactly
// what the document shows, so the examples cannot drift.
func TestDocExamples(t *testing.T) {
	t.Chdir("../..")
	files, _ := filepath.Glob("docs/*.md")
	files = append([]string{"README.md"}, files...)
	n := 0
	for _, file := range files {
		for _, ex := range consoleExamples(t, file) {
			n++
			t.Run(fmt.Sprintf("%s:%d", file, ex.line), func(t *testing.T) {
				stdout, stderr, code := cli(t, ex.args...)
				got := stdout + stderr
				if code != 0 {
					got += fmt.Sprintf("[exit status %d]\n", code)
				}
				if got != ex.want {
					t.Errorf("%s line %d: `rdmabench %s` printed\n%s\nthe document shows\n%s", file, ex.line,
						strings.Join(ex.args, " "), got, ex.want)
				}
			})
		}
	}
	if n == 0 {
		t.Fatal("no console examples found in the docs")
	}
}

type example struct {
	line int
	args []string
	want string
}

func consoleExamples(t *testing.T, file string) []example {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []example
	var cur *example
	in := false
	sc := bufio.NewScanner(f)
	for ln := 1; sc.Scan(); ln++ {
		l := sc.Text()
		switch {
		case !in && l == "```console":
			in = true
		case in && l == "```":
			in = false
			if cur != nil {
				out = append(out, *cur)
				cur = nil
			}
		case in && strings.HasPrefix(l, "$ rdmabench "):
			if cur != nil {
				out = append(out, *cur)
			}
			cur = &example{line: ln, args: strings.Fields(strings.TrimPrefix(l, "$ rdmabench "))}
		case in && cur != nil:
			cur.want += l + "\n"
		}
	}
	return out
}
