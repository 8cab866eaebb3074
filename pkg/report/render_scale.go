package report

// scaledValue formats a figure for the results and comparison tables:
// latencies in u (the table's), bandwidth and message rate scaled, MiB/s
// with two decimals.
func scaledValue(f Figure, v float64, u LatencyUnit) string {
	switch f {
	case FigGbps:
		return GbitCell(v)
	case FigMsgRate:
		return MmsgCell(v)
	}
	return tableValue(f, v, u)
}

// figureLabel names a figure in the comparison table: its unit when every
// value has it ("p99 µs", "MiB/s"; a latency in u, the table's), else what
// it is ("bandwidth").
func figureLabel(f Figure, u LatencyUnit) string {
	switch {
	case f.IsLatency():
		return f.Label() + " " + u.Name
	case f == FigGbps:
		return "bandwidth"
	case f == FigMsgRate:
		return "msg rate"
	}
	return f.Label()
}

// formatIn is f.Format(v) with a latency in u, up to three decimals.
func formatIn(f Figure, v float64, u LatencyUnit) string {
	if f.IsLatency() {
		return Num(v/u.Ns) + " " + u.Name
	}
	return f.Format(v)
}
