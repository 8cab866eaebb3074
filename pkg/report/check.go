package report

import (
	"fmt"
	"math"

	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// checkValues refuses what no run can produce and the schema forbids: a
// negative size, count, duration or figure, or one that is not a finite
// number (JSON has none, but a Document built in Go may). Huge values are
// left to the renderers, which print them as they are. The error names
// the place: "result 3 (write-lat, 64 B): latency: negative count -5".
func checkValues(doc *Document) error {
	var bad []string
	c := checker{bad: &bad}
	p := c.at("params")
	for i, s := range doc.Params.Sizes {
		p.int(fmt.Sprintf("sizes[%d]", i), int64(s))
	}
	p.int("iterations", int64(doc.Params.Iterations))
	p.int("qps", int64(doc.Params.QPs))
	p.int("repeat", int64(doc.Params.Repeat))
	p.float("duration_s", doc.Params.DurationS)
	for name, cl := range doc.Clocks {
		k := c.at(fmt.Sprintf("clock %q", name))
		k.float("resolution_ns", cl.ResolutionNs)
		k.float("reported_resolution_ns", cl.ReportedResolutionNs)
		k.float("read_cost_ns", cl.ReadCostNs)
	}
	for i := range doc.Results {
		r := &doc.Results[i]
		k := c.at(fmt.Sprintf("result %d (%s, %d B)", i+1, textfmt.Clean(r.Test), r.Size))
		k.int("size", int64(r.Size))
		k.int("run", int64(r.Run))
		k.int("iterations", int64(r.Iterations))
		k.int("warmup", int64(r.Warmup))
		k.int("qps", int64(r.QPs))
		k.float("duration_s", r.DurationS)
		k.latency("latency", r.Latency)
		k.bandwidth("bandwidth", r.Bandwidth)
		k.bandwidth("reverse", r.Reverse)
		k.bandwidth("total", r.Total)
		for j, iv := range r.Intervals {
			ki := k.at(fmt.Sprintf("%s: interval %d", k.where, j+1))
			ki.float("start_s", iv.StartS)
			ki.float("duration_s", iv.DurationS)
			ki.latency("latency", iv.Latency)
			ki.bandwidth("bandwidth", iv.Bandwidth)
		}
		if len(bad) > 0 {
			break
		}
	}
	if len(bad) == 0 {
		c.mesh(doc.Mesh)
	}
	for i := range doc.Summaries {
		s := &doc.Summaries[i]
		k := c.at(fmt.Sprintf("summary %d (%s, %d B)", i+1, textfmt.Clean(s.Test), s.Size))
		k.int("size", int64(s.Size))
		k.int("runs", int64(s.Runs))
		k.int("failed", int64(s.Failed))
		if l := s.Latency; l != nil {
			for _, sp := range []*Spread{&l.MinNs, &l.P50Ns, &l.MeanNs, &l.StdevNs, &l.P90Ns, &l.P99Ns, &l.P999Ns, &l.P9999Ns, &l.MaxNs} {
				k.spread("latency", sp)
			}
		}
		if b := s.Bandwidth; b != nil {
			for _, sp := range []*Spread{&b.Gbps, &b.MiBps, &b.Mmsgps} {
				k.spread("bandwidth", sp)
			}
		}
		if len(bad) > 0 {
			break
		}
	}
	if len(bad) == 0 {
		return nil
	}
	more := ""
	if len(bad) > 1 {
		more = fmt.Sprintf(" (and %d more)", len(bad)-1)
	}
	return fmt.Errorf("%s%s; no run produces that: the file was altered or is not one rdmabench wrote", bad[0], more)
}

type checker struct {
	where string
	bad   *[]string
}

func (c checker) at(where string) checker { return checker{where: where, bad: c.bad} }

func (c checker) add(format string, args ...any) {
	*c.bad = append(*c.bad, c.where+": "+fmt.Sprintf(format, args...))
}

func (c checker) int(name string, v int64) {
	if v < 0 {
		c.add("negative %s %d", name, v)
	}
}

func (c checker) float(name string, v float64) {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		c.add("%s is %v, not a number", name, v)
	case v < 0:
		c.add("negative %s %g", name, v)
	}
}

func (c checker) latency(name string, l *Latency) {
	if l == nil {
		return
	}
	c = c.at(c.where + ": " + name)
	c.int("count", l.Count)
	for _, f := range []struct {
		n string
		v float64
	}{{"min_ns", l.MinNs}, {"mean_ns", l.MeanNs}, {"stdev_ns", l.StdevNs}, {"p50_ns", l.P50Ns}, {"p90_ns", l.P90Ns},
		{"p99_ns", l.P99Ns}, {"p99_9_ns", l.P999Ns}, {"p99_99_ns", l.P9999Ns}, {"max_ns", l.MaxNs}} {
		c.float(f.n, f.v)
	}
}

func (c checker) bandwidth(name string, b *Bandwidth) {
	if b == nil {
		return
	}
	c = c.at(c.where + ": " + name)
	c.int("duration_ns", b.DurationNs)
	c.float("bw_gbps", b.Gbps)
	c.float("bw_mibps", b.MiBps)
	c.float("msg_rate_mpps", b.Mmsgps)
	c.float("bw_peak_gbps", b.PeakGbps)
}

func (c checker) spread(name string, s *Spread) {
	c = c.at(c.where + ": " + name)
	c.int("n", int64(s.N))
	c.float("median", s.Median)
	if s.Lo != nil {
		c.float("lo", *s.Lo)
	}
	if s.Hi != nil {
		c.float("hi", *s.Hi)
	}
}
