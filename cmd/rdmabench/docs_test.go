package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/mesh"
)

// TestDocExamples executes every `$ rdmabench ...` line of the ```console
// blocks in README.md and docs/*.md, from the repository root, and checks
// that the output (stdout, then stderr) and the exit status are exactly
// what the document shows, so the examples cannot drift.
//
// A line ending in " &" runs in the background, beside the next line of
// its block (in this one process, as two commands run at once): a mesh's
// other ranks on one host. It must exit 0 and print nothing. Such an
// example measures, so its figures vary: its output is compared but its
// numbers, spacing and the host's name (docHost in the document), and it
// runs on a free port, each --coordinator HOST of its block becoming
// HOST:PORT, the output read back as the default port's.
func TestDocExamples(t *testing.T) {
	t.Chdir("../..")
	files, _ := filepath.Glob("docs/*.md")
	files = append([]string{"README.md"}, files...)
	n := 0
	for _, file := range files {
		for _, ex := range consoleExamples(t, file) {
			n++
			t.Run(fmt.Sprintf("%s:%d", file, ex.line), func(t *testing.T) {
				if len(ex.bg) > 0 {
					runWithBackground(t, file, ex)
					return
				}
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
	// bg are the block's commands before this one that end in " &":
	// they run in the background beside it.
	bg [][]string
}

func consoleExamples(t *testing.T, file string) []example {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []example
	var cur *example
	var bg [][]string
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
			if len(bg) > 0 {
				t.Fatalf("%s:%d: a block ends with a command in the background and none beside it", file, ln)
			}
		case in && strings.HasPrefix(l, "$ rdmabench ") && strings.HasSuffix(l, " &"):
			if cur != nil {
				out = append(out, *cur)
				cur = nil
			}
			bg = append(bg, strings.Fields(strings.TrimSuffix(strings.TrimPrefix(l, "$ rdmabench "), " &")))
		case in && strings.HasPrefix(l, "$ rdmabench "):
			if cur != nil {
				out = append(out, *cur)
			}
			cur = &example{line: ln, args: strings.Fields(strings.TrimPrefix(l, "$ rdmabench ")), bg: bg}
			bg = nil
		case in && cur != nil:
			cur.want += l + "\n"
		}
	}
	return out
}

// docHost is the host the docs' examples with a command in the background
// ran on, as their output names it.
const docHost = "vm"

// runWithBackground runs ex with its background commands (see
// TestDocExamples) and compares its output with the document's, its
// numbers, spacing and host name aside.
func runWithBackground(t *testing.T, file string, ex example) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	var coordinators []string // HOST as given
	onPort := func(args []string) []string {
		out := append([]string(nil), args...)
		for i := 1; i < len(out); i++ {
			if out[i-1] == "--coordinator" && !strings.Contains(out[i], ":") {
				coordinators = append(coordinators, out[i])
				out[i] += ":" + port
			}
		}
		return out
	}
	type result struct {
		args []string
		out  string
		code int
	}
	done := make(chan result, len(ex.bg))
	for _, args := range ex.bg {
		args := onPort(args)
		go func() {
			stdout, stderr, code := cli(t, args...)
			done <- result{args, stdout + stderr, code}
		}()
	}
	stdout, stderr, code := cli(t, onPort(ex.args)...)
	for range ex.bg {
		select {
		case r := <-done:
			if r.code != 0 || r.out != "" {
				t.Errorf("in the background, `rdmabench %s`: exit %d, printed\n%s", strings.Join(r.args, " "), r.code, r.out)
			}
		case <-time.After(2 * time.Minute):
			t.Fatal("a command in the background did not end")
		}
	}
	got := stdout + stderr
	if code != 0 {
		got += fmt.Sprintf("[exit status %d]\n", code)
	}
	for _, h := range coordinators {
		got = strings.ReplaceAll(got, "--coordinator "+h+":"+port, "--coordinator "+h)
		got = strings.ReplaceAll(got, h+":"+port, h+":"+strconv.Itoa(mesh.DefaultPort))
	}
	if h, err := os.Hostname(); err == nil && h != docHost {
		got = regexp.MustCompile(`(?m)^(rank \d+\s+)`+regexp.QuoteMeta(h)+`,`).ReplaceAllString(got, "${1}"+docHost+",")
	}
	// The document's host has no RDMA device; where the host has some
	// (the Soft-RoCE VM), each rank's line lists them too.
	got = rankDevices.ReplaceAllString(got, "$1")
	if figuresAside(got) != figuresAside(ex.want) {
		t.Errorf("%s line %d: `rdmabench %s` printed\n%s\nthe document shows (numbers, spacing, the host and its devices aside)\n%s", file, ex.line,
			strings.Join(ex.args, " "), got, ex.want)
	}
}

// rankDevices is the devices a mesh header's rank line lists.
var rankDevices = regexp.MustCompile(`(?m)^(rank \d+\s+.*), devices \S+$`)

var (
	// durationText is a duration as Go prints it: 300ms, 1.2s, 1m3s.
	durationText = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ns|µs|us|ms|s|m|h)([0-9]+(\.[0-9]+)?(ms|s|m))*\b`)
	numberText   = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)
	// latencyUnit is the unit a latency table or figure picks from its
	// figures: "(µs)", "11.6 µs", "2.34 ms".
	latencyUnit = regexp.MustCompile(`(\(|\s)(ns|µs|ms)(\)|\s|$)`)
)

// figuresAside is s with every duration, then every number and latency
// unit, as one token, and every run of blanks and newlines as one space.
func figuresAside(s string) string {
	s = durationText.ReplaceAllString(s, "D")
	s = latencyUnit.ReplaceAllString(s, "${1}U${3}")
	s = numberText.ReplaceAllString(s, "N")
	return strings.Join(strings.Fields(s), " ")
}
