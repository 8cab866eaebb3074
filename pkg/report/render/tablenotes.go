package render

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// The notes under a results table, before its settings: the port
// counters that moved during the tests, one line per test, size and end,
// then what the peak column holds and why a cell of it is empty.

// peakDefinition says what the peak column holds.
const peakDefinition = "peak: perftest's BW peak, the fastest stretch between two checkpoints of the sender (the messages " +
	"posted after the first and complete by the second; the whole run is one, so peak >= BW). The loop notes one after a poll, " +
	"at least 10 µs apart, keeping 256 across the run; perftest times every message, so its peak for the same run can read higher."

// Why a peak cell shows "-", in the order the note lists them.
const (
	peakSum     = "<-> sums the two directions, whose fastest stretches need not coincide (perftest adds their peaks)"
	peakDevices = "a result on several devices at once sums theirs (each device's row has its own)"
	peakThreads = "--threads: the loop threads' stretches are not timed together"
	peakTCP     = "TCP: its stream is timed as a whole"
	peakAbsent  = "not in this document (written by an rdmabench that did not measure it)"
)

var peakReasons = []string{peakSum, peakDevices, peakThreads, peakTCP, peakAbsent}

// peakLines are the peak note of a table of doc's results (not of a
// summary: its medians are of the average): the definition where a peak
// is shown, the reasons where one is not. Empty without a bandwidth row.
func peakLines(doc *report.Document) []string {
	shown := false
	missing := map[string]bool{}
	one := func(r *report.Result, b *report.Bandwidth, k figureKind) {
		switch {
		case b == nil:
		case b.PeakGbps > 0:
			shown = true
		default:
			missing[peakReason(r, k)] = true
		}
	}
	for i := range doc.Results {
		r := &doc.Results[i]
		if resultSection(r) != sectionBandwidth {
			continue
		}
		devices := len(r.Devices) > 1
		switch {
		case !r.Bidirectional() && devices:
			one(r, r.Bandwidth, devicesSum)
		case !r.Bidirectional():
			one(r, r.Bandwidth, oneWay)
		default:
			total := r.Total
			if total == nil {
				total = report.Sum(r.Bandwidth, r.Reverse)
			}
			one(r, total, directionsSum)
			k := oneWay
			if devices {
				k = devicesSum
			}
			one(r, r.Bandwidth, k)
			one(r, r.Reverse, k)
		}
		for j := range r.Devices {
			d := &r.Devices[j]
			if d.Total != nil {
				one(r, d.Total, directionsSum)
			} else {
				one(r, d.Bandwidth, oneWay)
			}
		}
	}
	var lines []string
	if shown {
		lines = append(lines, peakDefinition)
	}
	var why []string
	for _, w := range peakReasons {
		if missing[w] {
			why = append(why, w)
		}
	}
	if len(why) > 0 {
		lines = append(lines, "no peak (-): "+strings.Join(why, "; "))
	}
	return lines
}

// figureKind is what a bandwidth figure of a result measured.
type figureKind int

const (
	oneWay        figureKind = iota // one direction on one device
	directionsSum                   // both directions, summed
	devicesSum                      // several devices, summed
)

// peakReason says why a figure of r, of kind k, has no peak.
func peakReason(r *report.Result, k figureKind) string {
	switch {
	case r.Connection == "TCP" || strings.HasPrefix(r.Test, "tcp-"):
		return peakTCP
	case k == directionsSum:
		return peakSum
	case k == devicesSum:
		return peakDevices
	case len(r.Threads) > 0 || (r.Effective != nil && r.Effective.Threads > 1):
		return peakThreads
	}
	return peakAbsent
}

// countersHeading leads the lines of the port counters that moved.
const countersHeading = "port counters that moved (each end's port over the test; other traffic on the port counts too):"

// counterLines are the port counters that moved during doc's tests: one
// line per test, size (and run) and end, in document order, naming the
// end's device and port: "write-bw RC 65536 B, client rxe0 port 1:
// completer_retry_err +19, duplicate_request +544". Empty when none moved.
func counterLines(doc *report.Document) []string {
	var lines []string
	add := func(what string, pc *report.PortCounters, client, server string) {
		if pc == nil {
			return
		}
		for _, end := range []struct {
			name, dev string
			d         *report.CounterDeltas
		}{{"client", client, pc.Client}, {"server", server, pc.Server}} {
			if end.d != nil && len(end.d.Deltas) > 0 {
				// In loopback on one device the server reads none: the
				// client's count both ends.
				shared := doc.Hosts.Remote == nil && pc.Server == nil
				lines = append(lines, what+", "+endLabel(doc, end.name, end.dev, shared)+": "+deltasText(end.d.Deltas))
			}
		}
	}
	for i := range doc.Results {
		r := &doc.Results[i]
		what := fmt.Sprintf("%s %s %d B", textfmt.Clean(r.Test), cmp.Or(textfmt.Clean(r.Connection), "-"), r.Size)
		if doc.Repeated() && r.Run > 0 {
			what += fmt.Sprintf(", run %d", r.Run)
		}
		add(what, r.PortCounters, "", doc.Params.ServerDevice)
		for j := range r.Devices { // on several devices at once, each counted its own
			d := &r.Devices[j]
			add(what, d.PortCounters, d.Device, cmp.Or(d.ServerDevice, d.Device))
		}
	}
	return lines
}

// endLabel names an end of doc's tests and the port it counted: "client
// rxe0 port 1" (dev, one of several devices, else the end's only one);
// shared: in loopback on one device, "both ends (loopback) rxe0 port 1".
func endLabel(doc *report.Document, end, dev string, shared bool) string {
	h := &doc.Hosts.Local
	switch {
	case shared:
		end = "both ends (loopback)"
	case end == "server" && doc.Hosts.Remote != nil:
		h = doc.Hosts.Remote
	}
	d := h.Device
	if dev != "" && (d == nil || d.Name != dev) {
		d = &report.Device{Name: dev}
		for i := range h.Devices {
			if h.Devices[i].Name == dev {
				d = &h.Devices[i]
			}
		}
	}
	if d == nil || d.Name == "" {
		return end
	}
	end += " " + textfmt.Clean(d.Name)
	if d.Port > 0 {
		end += fmt.Sprintf(" port %d", d.Port)
	}
	return end
}

// deltasText writes counters and how much each grew, by name.
func deltasText(deltas map[string]uint64) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(deltas)) {
		parts = append(parts, fmt.Sprintf("%s +%d", textfmt.Clean(name), deltas[name]))
	}
	return strings.Join(parts, ", ")
}

// writeTableNotes writes the notes under a table: the counters, then the
// peak note (not for a summary's table), each line wrapped at at.
func writeTableNotes(b *bytes.Buffer, doc *report.Document, at int) {
	var peak []string
	if !doc.Repeated() {
		peak = peakLines(doc)
	}
	counters := counterLines(doc)
	if len(peak) == 0 && len(counters) == 0 {
		return
	}
	b.WriteByte('\n')
	if len(counters) > 0 {
		writeWrapped(b, countersHeading, "", "  ", at)
		for _, l := range counters {
			b.WriteString("  " + l + "\n") // one line each, to be found with grep
		}
	}
	for _, l := range peak {
		writeWrapped(b, l, "", "      ", at)
	}
}

// writeWrapped writes s wrapped at at: its first line after first, the
// others after more.
func writeWrapped(b *bytes.Buffer, s, first, more string, at int) {
	parts := wrap(s, at-len(first))
	if len(parts) > 1 {
		parts = append(parts[:1], wrap(strings.Join(parts[1:], " "), at-len(more))...)
	}
	for i, p := range parts {
		if i == 0 {
			b.WriteString(first + p + "\n")
		} else {
			b.WriteString(more + p + "\n")
		}
	}
}

// mdTableNotes are the same notes as list items for Markdown.
func mdTableNotes(doc *report.Document) []string {
	var items []string
	if counters := counterLines(doc); len(counters) > 0 {
		items = append(items, countersHeading)
		for _, l := range counters {
			items = append(items, "  "+l)
		}
	}
	if !doc.Repeated() {
		items = append(items, peakLines(doc)...)
	}
	return items
}
