package main

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/render"
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

// newProgress returns the progress of a run, or nil when nothing is shown.
func newProgress(stderr io.Writer, f *benchFlags) *progress {
	file, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(file.Fd())) {
		return nil
	}
	if f.output != render.FormatTable && f.output != render.FormatMarkdown && f.outFile == "" {
		return nil
	}
	return &progress{w: stderr}
}

// start makes the bar of a run of steps measurements.
func (p *progress) start(steps int, specs []workloads.Spec) {
	if p == nil || (steps < 2 && specs[0].Duration == 0) {
		return // one short step: nothing to follow
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bar = progressbar.NewOptions(steps, progressbar.OptionSetWriter(p.w), progressbar.OptionShowCount(),
		progressbar.OptionClearOnFinish(), progressbar.OptionSetWidth(30), progressbar.OptionSetPredictTime(true))
}

// callback is the Request's Progress.
func (p *progress) callback() func(workloads.Progress) {
	if p == nil {
		return nil
	}
	return func(ev workloads.Progress) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.bar == nil {
			return
		}
		switch {
		case ev.Start && ev.Run > 0:
			p.bar.Describe(fmt.Sprintf("run %d: %s", ev.Run, ev.Test))
		case ev.Start:
			p.bar.Describe(ev.Test)
		case ev.Interval != nil:
			p.bar.Clear()
			fmt.Fprintf(p.w, "%s %d B  %s\n", ev.Test, ev.Size, intervalLine(ev.Interval))
		case ev.Done:
			p.bar.Add(1)
		case ev.Skipped > 0:
			p.bar.Add(ev.Skipped)
		}
	}
}

func (p *progress) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Finish()
		p.bar.Clear()
	}
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
