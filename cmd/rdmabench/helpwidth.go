package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rdmabench/rdmabench/pkg/report/render"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// Help fits the terminal: at the width that COLUMNS says, or else the
// terminal's, the flags' descriptions wrap in their column and any other
// line longer than that wraps as the tables' lines do (render.FitLines).
// Into a pipe, with no COLUMNS, the layout is the same every time: one
// line per flag.

// minHelpWidth is the narrowest width help wraps to; below it (or with no
// width known) nothing wraps.
const minHelpWidth = 40

// helpColumns is the width of the help being written (0: none), for the
// usage template's flagUsages.
var helpColumns atomic.Int64

// helpWidth is the width help wraps to for cmd's output, 0 for none.
func helpWidth(cmd *cobra.Command) int {
	if c, err := strconv.Atoi(strings.TrimSpace(os.Getenv("COLUMNS"))); err == nil {
		if c >= minHelpWidth {
			return c
		}
		return 0
	}
	if f, ok := cmd.OutOrStdout().(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w >= minHelpWidth {
			return w
		}
	}
	return 0
}

// tableOptions lay tables out for cmd's output: at the width help wraps
// to (COLUMNS, or the terminal's), or unlimited into a pipe.
func tableOptions(cmd *cobra.Command) render.Options {
	return render.Options{Width: helpWidth(cmd)}
}

// addFlagUsages adds the template function flagUsages once: cobra keeps
// template functions in a global map, which commands run at once in one
// process (tests) must not write together.
var addFlagUsages sync.Once

// useWrappedHelp makes the help of root and its commands fit helpWidth.
func useWrappedHelp(root *cobra.Command) {
	addFlagUsages.Do(func() {
		cobra.AddTemplateFunc("flagUsages", func(fs *pflag.FlagSet) string {
			if w := int(helpColumns.Load()); w > 0 {
				return fs.FlagUsagesWrapped(w - 1)
			}
			return fs.FlagUsages()
		})
	})
	t := root.UsageTemplate()
	for _, set := range []string{"LocalFlags", "InheritedFlags"} {
		t = strings.Replace(t, "{{."+set+".FlagUsages | trimTrailingWhitespaces}}",
			"{{flagUsages ."+set+" | trimTrailingWhitespaces}}", 1)
	}
	root.SetUsageTemplate(t)
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		w := helpWidth(c)
		if w == 0 {
			help(c, args)
			return
		}
		out := c.OutOrStdout()
		var b bytes.Buffer
		c.SetOut(&b)
		helpColumns.Store(int64(w))
		help(c, args)
		helpColumns.Store(0)
		c.SetOut(out)
		out.Write(render.FitLines(b.Bytes(), w))
	})
}
