package render

import (
	"cmp"
	"fmt"
	"strconv"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// The table's rows for a result spread over loop threads (--threads),
// devices (-d A,B) or run under a load (--load), and the words for where
// its loop threads ran.

// fabricBandwidthRows are the rows under a bandwidth result's own: each
// device's figures (and its threads), or each thread's.
func fabricBandwidthRows(r *report.Result, u rateUnits) []row {
	var rows []row
	for _, d := range r.Devices {
		label := "  " + textfmt.Clean(d.Device)
		if d.ServerDevice != "" && d.ServerDevice != d.Device {
			label += " / " + textfmt.Clean(d.ServerDevice)
		}
		cells := []string{label, "", "", "-"}
		if d.Iterations > 0 {
			cells[colIters] = strconv.Itoa(d.Iterations)
		}
		switch {
		case d.Error != "":
			rows = append(rows, errorRow(cells, d.Error, ""))
			continue
		case d.Total != nil:
			rows = append(rows, row{cells: append(cells, bwCells("<->", "", d.Total, u)...)})
		default:
			rows = append(rows, row{cells: append(cells, bwCells("->", "", d.Bandwidth, u)...)})
		}
		rows = append(rows, threadRows(d.Threads, "    ", u)...)
	}
	if len(r.Devices) == 0 {
		rows = append(rows, threadRows(r.Threads, "  ", u)...)
	}
	return rows
}

// threadRows are a row per sending thread: its QPs and what it sent.
func threadRows(ts []report.Thread, indent string, u rateUnits) []row {
	var rows []row
	for _, t := range ts {
		dir := "->"
		if t.End == "server" {
			dir = "<-"
		}
		cells := []string{fmt.Sprintf("%sthread %d", indent, t.Index), "", "", "-"}
		if t.Bandwidth != nil {
			cells[colIters] = strconv.FormatUint(t.Bandwidth.Messages, 10)
		}
		rows = append(rows, row{cells: append(cells, partCells(dir, listText(t.QPs), t.Bandwidth, u)...)})
	}
	return rows
}

// fabricLatencyRows are the rows under a latency result's own: each
// device's figures, and the load it ran under.
func fabricLatencyRows(r *report.Result, u textfmt.LatencyUnit) []row {
	var rows []row
	for _, d := range r.Devices {
		cells := []string{"  " + textfmt.Clean(d.Device), "", "", "-"}
		if d.Latency == nil {
			rows = append(rows, errorRow(cells, cmp.Or(d.Error, "no latency"), ""))
			continue
		}
		cells[colIters] = strconv.FormatInt(d.Latency.Count, 10)
		rows = append(rows, row{cells: append(cells, latencyCells(d.Latency, u)...)})
		if d.Load != nil {
			rows = append(rows, row{kind: rowTitle, text: "    " + loadText(d.Load)})
		}
	}
	if r.Load != nil {
		rows = append(rows, row{kind: rowTitle, text: "  " + loadText(r.Load)})
	}
	return rows
}

// loadText says what a load moved while a size's latency was measured.
func loadText(l *report.Load) string {
	s := fmt.Sprintf("under load: %s, %d QPs of %d B", textfmt.Clean(l.Test), l.QPs, l.Size)
	if b := l.Bandwidth; b != nil {
		s += fmt.Sprintf(", %.3f Gbit/s (%.4f Mmsg/s) during the samples", b.Gbps, b.Mmsgps)
	}
	return s
}
