package render

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/compare"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// patternLine says a mesh's load pattern: its test, probe, duration, QPs
// and gates.
func patternLine(p *report.MeshPattern, steps int) string {
	s := fmt.Sprintf("%s, %s flows for %v each step (%d steps), %s beside them", p.Name, p.Test,
		time.Duration(p.DurationNs), steps, p.Probe)
	if p.QPs > 0 {
		s += fmt.Sprintf(", %d QPs a flow", p.QPs)
	}
	if p.Sample > 0 {
		s += fmt.Sprintf(", %d receivers", p.Sample)
	}
	s += fmt.Sprintf(", seed %d", p.Seed)
	if g := p.Gates; g != nil {
		var gs []string
		if g.MinShare > 0 {
			gs = append(gs, fmt.Sprintf("share >= %.0f%%", 100*g.MinShare))
		}
		if g.MinJain > 0 {
			gs = append(gs, fmt.Sprintf("Jain >= %.3g", g.MinJain))
		}
		if g.MaxLoadP99Ns > 0 {
			gs = append(gs, fmt.Sprintf("p99 under load <= %v", time.Duration(g.MaxLoadP99Ns)))
		}
		s += "; gates: " + strings.Join(gs, ", ")
	}
	return s
}

// writeStepsText writes a block per step of a load pattern: its
// receivers' aggregate, share, fairness and spread, the latency under
// the load, the congestion counters that changed.
func writeStepsText(b *bytes.Buffer, m *report.Mesh, md bool, width int) {
	for _, st := range m.Steps {
		b.WriteByte('\n')
		head := fmt.Sprintf("step %d", st.Step)
		if st.Receiver != nil {
			head += fmt.Sprintf(": into rank %d", *st.Receiver)
		}
		head += fmt.Sprintf(", %d flows between %d ranks, overlap %.0f%%", len(st.Flows), len(st.Ranks), 100*st.Overlap)
		if p := st.Probe; p != nil {
			switch {
			case p.Latency != nil:
				u := textfmt.LatencyUnitOf([]float64{p.Latency.P50Ns})
				head += fmt.Sprintf("; %s %d -> %d under load: p50 %s, p99 %s, p99.9 %s %s", p.Test, p.From, p.To,
					u.Cell(p.Latency.P50Ns), u.Cell(p.Latency.P99Ns), u.Cell(p.Latency.P999Ns), u.Name)
			case p.Error != "":
				head += fmt.Sprintf("; probe %d -> %d failed: %s", p.From, p.To, p.Error)
			}
		}
		if md {
			fmt.Fprintf(b, "**%s**\n\n", mdEscape(head))
		} else {
			b.WriteString(textfmt.Clean(head) + "\n")
		}
		rows := [][]string{{"receiver", "flows", "aggregate", "share", "Jain", "min/median", "max/median"}}
		for _, rc := range append(slices.Clone(st.Receivers), st.Hosts...) {
			share := "-"
			if rc.Share != nil {
				share = fmt.Sprintf("%.1f%%", 100**rc.Share)
			}
			flows := strconv.Itoa(rc.Flows)
			if rc.Measured != rc.Flows {
				flows = fmt.Sprintf("%d of %d", rc.Measured, rc.Flows)
			}
			rows = append(rows, []string{rc.Name(), flows, textfmt.GbitCell(rc.AggregateGbps), share,
				fmt.Sprintf("%.3f", rc.Jain), fmt.Sprintf("%.2f", rc.MinOverMedian), fmt.Sprintf("%.2f", rc.MaxOverMedian)})
		}
		writeRows(b, rows, md, width)
		if c := congestionLine(st.Counters); c != "" {
			if md {
				fmt.Fprintf(b, "\n%s\n", mdEscape(c))
			} else {
				b.WriteString(textfmt.Clean(c) + "\n")
			}
		}
	}
}

// congestionLine says which congestion and pause counters changed in a
// step, by rank, which the devices do not have, and the ranks whose
// counters could not be read.
func congestionLine(cs []report.StepCounters) string {
	var changed, unread []string
	absent := map[string]bool{}
	for _, c := range cs {
		if c.Error != "" {
			unread = append(unread, strconv.Itoa(c.Rank))
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(c.Congestion)) {
			if v := c.Congestion[name]; v > 0 {
				changed = append(changed, fmt.Sprintf("rank %d %s +%d", c.Rank, name, v))
			}
		}
		for _, a := range c.Absent {
			absent[a] = true
		}
	}
	var parts []string
	switch {
	case len(changed) > 0:
		parts = append(parts, "congestion counters changed: "+strings.Join(changed, ", "))
	case len(unread) < len(cs):
		parts = append(parts, "congestion counters: none changed")
	}
	if len(absent) > 0 {
		parts = append(parts, "absent on the devices: "+strings.Join(slices.Sorted(maps.Keys(absent)), ", "))
	}
	if len(unread) > 0 {
		msg := "counters not read on rank(s) " + strings.Join(unread, ", ")
		for _, c := range cs {
			if c.Error != "" {
				msg += " (" + c.Error + ")"
				break
			}
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "; ")
}

// writeStepChanges writes the steps' receivers of two pattern meshes:
// aggregate, Jain and p99 under the load on each side.
func writeStepChanges(b *bytes.Buffer, steps []compare.StepChange, md bool, width int) {
	b.WriteByte('\n')
	title := "load pattern steps: receiver aggregate, Jain, p99 under the load (base -> new)"
	if md {
		fmt.Fprintf(b, "**%s**\n\n", mdEscape(title))
	} else {
		b.WriteString(title + "\n")
	}
	rows := [][]string{{"step", "receiver", "base", "new", "change", "Jain", "p99 under load", "p99 change"}}
	pct := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%+.1f%%", 100**v)
	}
	for _, s := range steps {
		p99 := "-"
		if s.BaseP99Ns != nil && s.NewP99Ns != nil {
			u := textfmt.LatencyUnitOf([]float64{*s.BaseP99Ns, *s.NewP99Ns})
			p99 = fmt.Sprintf("%s -> %s %s", u.Cell(*s.BaseP99Ns), u.Cell(*s.NewP99Ns), u.Name)
		}
		rows = append(rows, []string{strconv.Itoa(s.Step), s.Receiver, textfmt.GbitCell(s.BaseGbps), textfmt.GbitCell(s.NewGbps),
			pct(s.Change), fmt.Sprintf("%.3f -> %.3f", s.BaseJain, s.NewJain), p99, pct(s.P99Change)})
	}
	writeRows(b, rows, md, width)
}
