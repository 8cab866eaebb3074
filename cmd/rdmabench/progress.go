package main

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/workloads"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows, on a terminal only, a bar over every (repeat, test, size)
// step of a run, and each duration-mode interval as it ends. It is silent
// on a pipe or a file, and when the results go to stdout as a machine
// format (-o json, csv, gobench) without --out.
type progress struct {
	mu  sync.Mutex
	bar *progressbar.ProgressBar
	w   io.Writer
}

func newProgress(stderr io.Writer, f *benchFlags, specs []workloads.Spec) *progress {
	file, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(file.Fd())) {
		return nil
	}
	if f.output != "table" && f.output != "markdown" && f.outFile == "" {
		return nil
	}
	steps := 0
	for _, s := range specs {
		steps += len(s.Sizes)
	}
	steps *= f.repeat
	if steps < 2 && specs[0].Duration == 0 {
		return nil // one short step: nothing to follow
	}
	bar := progressbar.NewOptions(steps, progressbar.OptionSetWriter(stderr), progressbar.OptionShowCount(),
		progressbar.OptionClearOnFinish(), progressbar.OptionSetWidth(30), progressbar.OptionSetPredictTime(true))
	return &progress{bar: bar, w: stderr}
}

// start names the step under way.
func (p *progress) start(rep int, s workloads.Spec) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	d := s.Test
	if rep > 0 {
		d = fmt.Sprintf("run %d: %s", rep, s.Test)
	}
	p.bar.Describe(d)
}

// callback is the workloads.Options.Progress of every test.
func (p *progress) callback() func(workloads.Progress) {
	if p == nil {
		return nil
	}
	return func(ev workloads.Progress) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if ev.Interval != nil {
			p.bar.Clear()
			fmt.Fprintf(p.w, "%s %d B  %s\n", ev.Test, ev.Size, intervalLine(ev.Interval))
		}
		if ev.Done {
			p.bar.Add(1)
		}
	}
}

// skip advances the bar past the sizes of a test that failed early.
func (p *progress) skip(n int) {
	if p == nil || n <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bar.Add(n)
}

func (p *progress) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bar.Finish()
	p.bar.Clear()
}

func intervalLine(iv *report.Interval) string {
	s := fmt.Sprintf("%6.1f-%.1f s", iv.StartS, iv.StartS+iv.DurationS)
	if b := iv.Bandwidth; b != nil {
		s += fmt.Sprintf("  %8.2f Gbit/s  %10.2f MiB/s  %.4f Mmsg/s", b.Gbps, b.MiBps, b.Mmsgps)
	}
	if l := iv.Latency; l != nil && l.Count > 0 {
		s += fmt.Sprintf("  %d samples  p50 %.2f us  p99 %.2f us  max %.2f us", l.Count, l.P50Ns/1e3, l.P99Ns/1e3, l.MaxNs/1e3)
	}
	return s
}
