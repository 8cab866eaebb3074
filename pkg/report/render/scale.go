package render

import (
	"github.com/rdmabench/rdmabench/pkg/report"

	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// scaledValue formats a figure for the results and comparison tables:
// latencies in u (the table's), bandwidth and message rate scaled, MiB/s
// with two decimals.
func scaledValue(f report.Figure, v float64, u textfmt.LatencyUnit) string {
	switch f {
	case report.FigGbps:
		return textfmt.GbitCell(v)
	case report.FigMsgRate:
		return textfmt.MmsgCell(v)
	}
	return tableValue(f, v, u)
}

// figureLabel names a figure in the comparison table: its unit when every
// value has it ("p99 µs", "MiB/s"; a latency in u, the table's), else what
// it is ("bandwidth").
func figureLabel(f report.Figure, u textfmt.LatencyUnit) string {
	switch {
	case f.IsLatency():
		return f.Label() + " " + u.Name
	case f == report.FigGbps:
		return "bandwidth"
	case f == report.FigMsgRate:
		return "msg rate"
	}
	return f.Label()
}

// formatIn is f.Format(v) with a latency in u, up to three decimals.
func formatIn(f report.Figure, v float64, u textfmt.LatencyUnit) string {
	if f.IsLatency() {
		return textfmt.Num(v/u.Ns) + " " + u.Name
	}
	return f.Format(v)
}
