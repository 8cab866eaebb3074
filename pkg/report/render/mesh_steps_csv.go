package render

import (
	"cmp"
	"io"
	"strconv"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// MeshStepsCSVHeader is the header of a load pattern mesh's CSV form
// (`rdmabench mesh --pattern`): long form, one row per step, flow,
// receiver or probe, and figure. Kind is "flow" (From sent to To: its
// Gbit/s), "receiver" (a rank: the figures of report.StepReceiver), "host"
// (the same per host, the ranks empty) or "probe" (its p50, p99 and p99.9
// under the load, in ns); a flow or probe that failed has an empty value
// and its error.
var MeshStepsCSVHeader = []string{"step", "kind", "test", "from_rank", "from_host", "to_rank", "to_host",
	"figure", "unit", "value", "error"}

// writeMeshStepsCSV writes the steps of load pattern meshes in long
// form, with a first column "source" when withSource.
func writeMeshStepsCSV(w io.Writer, srcs []report.Source, withSource bool) error {
	t := newSourcedCSV(w, MeshStepsCSVHeader, withSource)
	for _, src := range srcs {
		m := src.Doc.Mesh
		host := m.Hostname
		test, probe := "", ""
		if m.Pattern != nil {
			test, probe = m.Pattern.Test, m.Pattern.Probe
		}
		for _, st := range m.Steps {
			row := func(kind, test, from, fromHost, to, toHost, figure, unit, value, errMsg string) {
				t.row(src.Name, []string{strconv.Itoa(st.Step), kind, test, from, fromHost, to, toHost, figure, unit, value, errMsg})
			}
			num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
			for _, f := range st.Flows {
				val := ""
				if f.Gbps != nil {
					val = num(*f.Gbps)
				}
				row("flow", test, strconv.Itoa(f.From), host(f.From), strconv.Itoa(f.To), host(f.To), string(report.FigGbps), "Gbit/s", val, f.Error)
			}
			for _, group := range []struct {
				kind string
				rcs  []report.StepReceiver
			}{{"receiver", st.Receivers}, {"host", st.Hosts}} {
				for _, rc := range group.rcs {
					to, toHost := "", rc.Host
					if rc.Rank != nil {
						to, toHost = strconv.Itoa(*rc.Rank), host(*rc.Rank)
					}
					fig := func(figure, unit, value string) {
						row(group.kind, test, "", "", to, toHost, figure, unit, value, "")
					}
					fig("flows", "count", strconv.Itoa(rc.Flows))
					fig("measured", "count", strconv.Itoa(rc.Measured))
					fig("aggregate", "Gbit/s", num(rc.AggregateGbps))
					if rc.LinkGbps > 0 {
						fig("link", "Gbit/s", num(rc.LinkGbps))
					}
					if rc.Share != nil {
						fig("share", "ratio", num(*rc.Share))
					}
					fig("jain", "index", num(rc.Jain))
					fig("min_over_median", "ratio", num(rc.MinOverMedian))
					fig("max_over_median", "ratio", num(rc.MaxOverMedian))
				}
			}
			if p := st.Probe; p != nil {
				from, to := strconv.Itoa(p.From), strconv.Itoa(p.To)
				probe := cmp.Or(p.Test, probe) // a probe that failed has no result to say it
				if l := p.Latency; l != nil && p.Error == "" {
					for _, f := range []struct {
						fig report.Figure
						v   float64
					}{{report.FigP50, l.P50Ns}, {report.FigP99, l.P99Ns}, {report.FigP999, l.P999Ns}} {
						row("probe", probe, from, host(p.From), to, host(p.To), string(f.fig), "ns", num(f.v), "")
					}
				} else {
					row("probe", probe, from, host(p.From), to, host(p.To), "", "", "", cmp.Or(p.Error, "no latency result"))
				}
			}
		}
	}
	return t.end()
}
