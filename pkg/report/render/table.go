package render

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
	"github.com/rdmabench/rdmabench/pkg/settings"
)

// WriteTable writes doc for a terminal: a header block (tool, command, time,
// both hosts with their device, link layer, MTU and GID index, the clock),
// then one table holding every result in the order given, then what its
// peak column holds and the port counters that moved during the tests
// (one line per test, size and end), the settings the tests ran with, and
// footnotes (result warnings, run warnings, the run error).
//
// The table shares one column grid between a latency section (one unit,
// named in its title) and a bandwidth section (one unit per column, named
// in its label: "BW Gbit/s", "Mmsg/s"); a section with its own title and
// column labels starts wherever the kind of result changes, so a suite reads
// as two stacked tables with aligned columns. A failed result shows its
// error in its row; a duration-mode result is followed by one row per
// interval; a bidirectional result by one row per direction.
//
// A document of repeated runs ([report.Document.Repeated]) shows one row per test,
// connection and size instead of one per run: the median of each figure
// over the runs (the runs column counts those without an error), and
// under it the 95% confidence interval of that median ("±2%", as benchstat
// prints it; with fewer than [report.MinRunsForInterval] runs there is none, and
// the median stands alone). Each run's figures are in the JSON and CSV
// forms; warnings and errors of the runs are footnoted once, with the runs
// they come from.
func WriteTable(w io.Writer, doc *report.Document) error {
	return WriteTableWith(w, doc, Options{})
}

// WriteTableWith is [WriteTable] laid out as opts say: at a width, each
// line fits it.
func WriteTableWith(w io.Writer, doc *report.Document, opts Options) error {
	if doc == nil {
		return errors.New("report: write table: nil document")
	}
	var out bytes.Buffer
	at := opts.wrapAt(headerWrap)
	writeHeaderBlock(&out, doc, at)
	out.WriteByte('\n')

	var notes *footnotes
	var rows []row
	if doc.Repeated() {
		sums := doc.Summarize()
		notes = newSummaryFootnotes(doc)
		rows = buildSummaryRows(doc, sums, notes)
	} else {
		notes = newFootnotes(doc)
		rows = buildRows(doc, notes)
	}
	if len(doc.Results) == 0 {
		out.WriteString("no results\n")
	} else {
		lines, err := layout(rows, opts.Width)
		if err != nil {
			return err
		}
		for _, l := range lines {
			out.WriteString(l)
			out.WriteByte('\n')
		}
	}
	writeTableNotes(&out, doc, at)
	writeSettings(&out, doc, at)
	notes.write(&out, doc)
	if _, err := w.Write(FitLines(out.Bytes(), opts.Width)); err != nil {
		return fmt.Errorf("report: write table: %w", err)
	}
	return nil
}

// --- header block ---

func writeHeaderBlock(b *bytes.Buffer, doc *report.Document, at int) {
	kv := func(b *bytes.Buffer, k, v string) { kvAt(b, k, v, at) }
	t := doc.Tool
	name := cmp.Or(t.Name, "rdmabench")
	var meta []string
	if t.Commit != "" {
		meta = append(meta, "commit "+t.Commit)
	}
	if t.GoVersion != "" {
		meta = append(meta, t.GoVersion)
	}
	if t.Verbs {
		meta = append(meta, "with libibverbs")
	} else {
		meta = append(meta, "without libibverbs")
	}
	fmt.Fprintf(b, "%s %s (%s)\n", textfmt.Clean(name), textfmt.Clean(cmp.Or(t.Version, "devel")), textfmt.Clean(strings.Join(meta, ", ")))
	if len(doc.Command) > 0 {
		kv(b, "command", textfmt.Clean(strings.Join(doc.Command, " ")))
	}
	if !doc.Start.IsZero() {
		s := doc.Start.UTC().Format(time.RFC3339)
		if !doc.End.IsZero() && !doc.End.Before(doc.Start) {
			s += ", took " + doc.End.Sub(doc.Start).Round(100*time.Millisecond).String()
		}
		kv(b, "start", s)
	}
	hostLines(b, "local", &doc.Hosts.Local, at)
	if doc.Hosts.Remote != nil {
		hostLines(b, "remote", doc.Hosts.Remote, at)
	} else {
		kv(b, "remote", "none: loopback, both ends in this process on the local device")
	}
	for _, name := range slices.Sorted(maps.Keys(doc.Clocks)) {
		kv(b, "clock", name+": "+clockLine(doc.Clocks[name]))
	}
	if p := paramsLine(&doc.Params); p != "" {
		kv(b, "asked", p)
	}
	if doc.Repeated() {
		kv(b, "runs", fmt.Sprintf("%d; the table shows the median of the runs (-o csv or -o json: every run)", doc.Runs()))
	}
}

const (
	keyWidth   = 9
	headerWrap = 110 // header block lines wrap at this width
)

// kv writes one header line, wrapped at spaces under its value.
func kv(b *bytes.Buffer, k, v string) {
	kvAt(b, k, v, headerWrap)
}

func hostLines(b *bytes.Buffer, key string, h *report.Host, at int) {
	kv := func(b *bytes.Buffer, k, v string) { kvAt(b, k, v, at) }
	var parts []string
	for _, s := range []string{h.OS, h.Kernel} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if h.CPUs > 0 {
		parts = append(parts, fmt.Sprintf("%d CPUs", h.CPUs))
	}
	if h.CPU != "" {
		parts = append(parts, h.CPU)
	}
	line := cmp.Or(h.Hostname, "(unknown host)")
	if len(parts) > 0 {
		line += ": " + strings.Join(parts, ", ")
	}
	kv(b, key, line)
	if d := h.Device; d != nil {
		dev, gid := deviceLines(d)
		kv(b, "", dev)
		kv(b, "", gid)
	}
	for i := 1; i < len(h.Devices); i++ { // the others of several at once
		dev, gid := deviceLines(&h.Devices[i])
		kv(b, "", dev)
		kv(b, "", gid)
	}
}

// deviceLines describes a device and port, then the GID in use.
func deviceLines(d *report.Device) (dev, gid string) {
	dev = fmt.Sprintf("%s port %d", cmp.Or(d.Name, "(unknown device)"), d.Port)
	if d.PortState != "" {
		dev += " " + d.PortState
	}
	parts := []string{dev}
	if d.LinkLayer != "" {
		parts = append(parts, d.LinkLayer)
	}
	if d.Transport != "" && d.Transport != "InfiniBand" { // iWARP, usNIC, ...
		parts = append(parts, d.Transport)
	}
	if d.ActiveMTU > 0 {
		parts = append(parts, fmt.Sprintf("MTU %d", d.ActiveMTU))
	}
	if d.Firmware != "" {
		parts = append(parts, "fw "+d.Firmware)
	}
	if d.Netdev != "" {
		parts = append(parts, "netdev "+d.Netdev)
	}
	dev = strings.Join(parts, ", ")

	gid = fmt.Sprintf("GID index %d", d.GIDIndex)
	for _, s := range []string{d.GID, d.GIDType} {
		if s != "" {
			gid += " " + s
		}
	}
	if d.GIDReason != "" {
		gid += " (" + d.GIDReason + ")"
	}
	return dev, gid
}

func clockLine(c report.Clock) string {
	s := fmt.Sprintf("%s, resolution %s ns", cmp.Or(c.Source, "unknown source"), textfmt.Num(c.ResolutionNs))
	if c.ReportedResolutionNs > 0 {
		s += fmt.Sprintf(" (reported %s ns)", textfmt.Num(c.ReportedResolutionNs))
	}
	if c.ReadCostNs > 0 {
		s += fmt.Sprintf(", read cost %s ns", textfmt.Num(c.ReadCostNs))
	}
	return s
}

// settingsLines says, per test and connection in document order, what its
// results ran with (see [report.SettingsLine]); empty when no result records it.
func settingsLines(doc *report.Document) []string {
	type key struct{ test, conn string }
	var order []key
	groups := map[key][]*report.Result{}
	for i := range doc.Results {
		r := &doc.Results[i]
		if r.Run > 1 {
			continue // the runs of a repeated document ran alike
		}
		k := key{r.Test, r.Connection}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var lines []string
	for _, k := range order {
		if l := report.SettingsLine(groups[k]); l != "" {
			lines = append(lines, fmt.Sprintf("%s %s: %s", textfmt.Clean(k.test), textfmt.Clean(cmp.Or(k.conn, "-")), textfmt.Clean(l)))
		}
	}
	return lines
}

// writeSettings writes the settings block of a table: a heading, then one
// wrapped line per test.
func writeSettings(b *bytes.Buffer, doc *report.Document, at int) {
	lines := settingsLines(doc)
	if len(lines) == 0 {
		return
	}
	b.WriteString("\nran with (as the device or the socket took it):\n")
	for _, l := range lines {
		parts := wrap(l, at-2)
		if at < headerWrap && len(parts) > 1 { // the rest within at, under their deeper indent
			parts = append(parts[:1], wrap(strings.Join(parts[1:], " "), at-6)...)
		}
		for i, part := range parts {
			indent := "  "
			if i > 0 {
				indent = "      "
			}
			b.WriteString(indent + part + "\n")
		}
	}
}

// paramsLine is the "asked" line: what the command line asked for, each
// setting named as pkg/settings' table names it.
func paramsLine(p *report.Params) string {
	var parts []string
	add := func(k string, v int) {
		if v != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, v))
		}
	}
	if p.Server != "" {
		parts = append(parts, "server "+p.Server)
	}
	if p.Connection != "" {
		parts = append(parts, p.Connection)
	}
	add(settings.MTU.Label(), p.MTU)
	add(settings.TxDepth.Label(), p.TxDepth)
	add(settings.RxDepth.Label(), p.RxDepth)
	add(settings.QPs.Label(), p.QPs)
	if p.Inline != nil {
		parts = append(parts, fmt.Sprintf("%s %d", settings.Inline.Label(), *p.Inline))
	}
	add(settings.CQMod.Label(), p.CQMod)
	add(settings.PostList.Label(), p.PostList)
	if p.Events {
		parts = append(parts, settings.Events.Label())
	}
	if p.QPTimeout > 0 {
		parts = append(parts, fmt.Sprintf("%s %d", settings.QPTimeout.Label(), p.QPTimeout))
	}
	if p.Bidirectional {
		parts = append(parts, settings.Bidirectional.Label())
	}
	if p.AtomicType != "" {
		parts = append(parts, settings.AtomicType.Label()+" "+p.AtomicType)
	}
	add(settings.Iterations.Label(), p.Iterations)
	if p.DurationS > 0 {
		parts = append(parts, settings.Duration.Label()+" "+textfmt.Num(p.DurationS)+" s")
	}
	if p.PrecisionPct > 0 {
		parts = append(parts, fmt.Sprintf("%s %s%% within %s s", settings.Precision.Label(), textfmt.Num(p.PrecisionPct), textfmt.Num(p.PrecisionCapS)))
	}
	if p.Warmup != nil {
		parts = append(parts, fmt.Sprintf("%s %d", settings.Warmup.Label(), *p.Warmup))
	}
	add(settings.Repeat.Label(), p.Repeat)
	for _, k := range slices.Sorted(maps.Keys(p.Extra)) {
		parts = append(parts, k+" "+p.Extra[k])
	}
	return strings.Join(parts, ", ")
}

// --- the table ---

// The shared column grid. Latency and bandwidth rows use the same positions
// with different meanings; each section has its own label row.
const (
	colTest = iota
	colConn
	colBytes
	colIters
	colKind // latency: basis; bandwidth: dir
	colFirstMetric
	numCols = colFirstMetric + 9 // latency has 9 figures: min .. max
)

var (
	latencyLabels = []string{"test", "conn", "bytes", "iters", "basis", "min", "p50", "mean", "stdev", "p90", "p99", "p99.9", "p99.99", "max"}
)

// bandwidthLabels are the column labels of a bandwidth section whose
// figures are in u: "BW Gbit/s", "peak Gbit/s", "MiB/s", "Mmsg/s".
func bandwidthLabels(u rateUnits) []string {
	return []string{"test", "conn", "bytes", "iters", "dir", "QPs", "BW " + u.bw.Name, "peak " + u.bw.Name, "MiB/s", u.msg.Name}
}

// rateUnits are the units of a bandwidth section's columns: one for its
// bandwidths (BW and peak, which read against each other), one for its
// message rates.
type rateUnits struct{ bw, msg textfmt.RateUnit }

// unitsOf picks a section's units from every figure its rows show.
func unitsOf(bs []*report.Bandwidth) rateUnits {
	var gbps, mpps []float64
	for _, b := range bs {
		if b != nil {
			gbps = append(gbps, b.Gbps, b.PeakGbps)
			mpps = append(mpps, b.Mmsgps)
		}
	}
	return rateUnits{textfmt.BandwidthUnitOf(gbps), textfmt.MsgRateUnitOf(mpps)}
}

// shownBandwidths are the figures r's rows show: its own, each
// direction's, each device's and thread's, each interval's.
func shownBandwidths(r *report.Result) []*report.Bandwidth {
	bs := []*report.Bandwidth{r.Bandwidth, r.Reverse, r.Total}
	if r.Bidirectional() && r.Total == nil {
		bs = append(bs, report.Sum(r.Bandwidth, r.Reverse))
	}
	for i := range r.Devices {
		d := &r.Devices[i]
		bs = append(bs, d.Bandwidth, d.Total)
		for j := range d.Threads {
			bs = append(bs, d.Threads[j].Bandwidth)
		}
	}
	for i := range r.Threads {
		bs = append(bs, r.Threads[i].Bandwidth)
	}
	for _, iv := range shownIntervals(r) {
		bs = append(bs, iv.Bandwidth)
	}
	return bs
}

// bandwidthSectionUnits are the units of the bandwidth section that
// starts with the first of rs.
func bandwidthSectionUnits(rs []report.Result) rateUnits {
	var bs []*report.Bandwidth
	for i := range rs {
		if resultSection(&rs[i]) != sectionBandwidth {
			break
		}
		bs = append(bs, shownBandwidths(&rs[i])...)
	}
	return unitsOf(bs)
}

const (
	latencyTitle   = "Latency, %s (rtt/2: one-way, half the round trip; rtt: full round trip; p50 is perftest's typical; nothing trimmed)"
	bandwidthTitle = "Bandwidth, payload only (peak: see below; k, M, G: 10^3, 10^6, 10^9; MiB/s: 2^20 byte/s; msg: messages)"
	dirLegend      = "dir: -> the local (client) side's direction, <- the remote side's, <-> both summed"
)

type rowKind int

const (
	rowCells rowKind = iota
	rowBlank
	rowTitle // text replaces the line
	rowRule  // a line of dashes as wide as the table
	rowError // text replaces the line from errorMarker on
)

// errorMarker holds the place in an error row where its text starts; cells
// after it are empty, so it is the last thing on its rendered line.
const errorMarker = "<!>"

type row struct {
	kind   rowKind
	cells  []string
	text   string
	suffix string // footnote references, after the row's last cell
}

type section int

const (
	sectionNone section = iota
	sectionLatency
	sectionBandwidth
)

func resultSection(r *report.Result) section {
	switch {
	case r.Latency != nil:
		return sectionLatency
	case r.Bandwidth != nil || r.Total != nil || r.Reverse != nil:
		return sectionBandwidth
	case strings.HasSuffix(r.Test, "-bw"):
		return sectionBandwidth
	}
	return sectionLatency
}

func buildRows(doc *report.Document, notes *footnotes) []row {
	var rows []row
	cur := sectionNone
	unit := textfmt.UnitUs
	var rates rateUnits
	for i := range doc.Results {
		r := &doc.Results[i]
		sec := resultSection(r)
		if sec != cur {
			if sec == sectionLatency {
				unit = sectionUnit(doc.Results[i:])
			} else {
				rates = bandwidthSectionUnits(doc.Results[i:])
			}
			rows = startSection(rows, cur, sec, fmt.Sprintf(latencyTitle, unit.Name), latencyLabels, bandwidthTitle, bandwidthLabels(rates))
			cur = sec
		}
		note := notes.refs(i)
		var rs []row
		if sec == sectionLatency {
			rs = latencyRows(r, note, unit)
		} else {
			rs = bandwidthRows(r, note, rates)
		}
		rows = append(rows, notes.sayFailure(i, r, rs)...)
	}
	return append(rows, cpuRows(doc)...)
}

// sectionUnit is the latency unit of the section that starts with the
// first of rs: that of the p50s of its results.
func sectionUnit(rs []report.Result) textfmt.LatencyUnit {
	var p50s []float64
	for i := range rs {
		if resultSection(&rs[i]) != sectionLatency {
			break
		}
		if l := rs[i].Latency; l != nil && l.Count > 0 {
			p50s = append(p50s, l.P50Ns)
		}
	}
	return textfmt.LatencyUnitOf(p50s)
}

var cpuLabels = []string{"test", "conn", "bytes", "", "end", "user s", "sys s", "cores"}

const cpuTitle = "CPU of each end's loops, warm-up included (cores: CPU time over wall time; 1 is a core busy all the time)"

// cpuRows is the CPU section: a row per end of each result that recorded
// its CPU (--cpu-util).
func cpuRows(doc *report.Document) []row {
	var rows []row
	for i := range doc.Results {
		r := &doc.Results[i]
		if r.CPU == nil {
			continue
		}
		if rows == nil {
			rows = []row{{kind: rowBlank}, {kind: rowTitle, text: cpuTitle}, {cells: cpuLabels}, {kind: rowRule}}
		}
		first := lead(r, 0)
		first[colIters] = ""
		for _, side := range []struct {
			name string
			c    *report.CPUSide
		}{{"client", r.CPU.Client}, {"server", r.CPU.Server}} {
			if side.c == nil {
				continue
			}
			rows = append(rows, row{cells: append(slices.Clone(first), side.name,
				strconv.FormatFloat(side.c.UserS, 'f', 3, 64), strconv.FormatFloat(side.c.SysS, 'f', 3, 64),
				strconv.FormatFloat(side.c.Cores, 'f', 2, 64))})
			first = []string{"", "", "", ""}
		}
	}
	return rows
}

// startSection appends the head of a new section (latency or bandwidth)
// after the rows of the previous one: a blank line, its title, its column
// labels and a rule.
func startSection(rows []row, prev, sec section, latTitle string, latLabels []string, bwTitle string, bwLabels []string) []row {
	if prev != sectionNone {
		rows = append(rows, row{kind: rowBlank})
	}
	title, labels := latTitle, latLabels
	if sec == sectionBandwidth {
		title, labels = bwTitle, bwLabels
	}
	return append(rows, row{kind: rowTitle, text: title}, row{cells: labels}, row{kind: rowRule})
}

// lead returns the first four cells of a result's main row.
func lead(r *report.Result, iters int64) []string {
	it := "-"
	if iters > 0 {
		it = strconv.FormatInt(iters, 10)
	}
	return []string{textfmt.Clean(r.Test), cmp.Or(textfmt.Clean(r.Connection), "-"), strconv.Itoa(r.Size), it}
}

func errorRow(first []string, msg, note string) row {
	cells := make([]string, colKind, colKind+1)
	copy(cells, first)
	return row{kind: rowError, cells: append(cells, errorMarker), text: "error: " + textfmt.Clean(msg), suffix: note}
}

func latencyRows(r *report.Result, note string, u textfmt.LatencyUnit) []row {
	iters := int64(r.Iterations)
	if iters == 0 && r.Latency != nil {
		iters = r.Latency.Count
	}
	first := lead(r, iters)
	if r.Latency == nil {
		if r.Error != "" {
			return []row{errorRow(first, r.Error, note)}
		}
		return []row{{cells: append(first, "-"), suffix: note}}
	}
	rows := []row{{cells: append(first, latencyCells(r.Latency, u)...), suffix: note}}
	rows = append(rows, fabricLatencyRows(r, u)...)
	for _, iv := range shownIntervals(r) {
		cells := []string{intervalLabel(iv), "", "", "-"}
		if l := iv.Latency; l != nil {
			cells[colIters] = strconv.FormatInt(l.Count, 10)
			cells = append(cells, latencyCells(l, u)...)
			cells[colKind] = ""
		}
		rows = append(rows, row{cells: cells})
	}
	if r.Error != "" {
		rows = append(rows, errorRow(nil, r.Error, ""))
	}
	return rows
}

func latencyCells(l *report.Latency, u textfmt.LatencyUnit) []string {
	cells := []string{basisLabel(l.Basis)}
	if l.Count == 0 {
		for range numCols - colFirstMetric {
			cells = append(cells, "-")
		}
		return cells
	}
	for _, ns := range []float64{l.MinNs, l.P50Ns, l.MeanNs, l.StdevNs, l.P90Ns, l.P99Ns, l.P999Ns, l.P9999Ns, l.MaxNs} {
		cells = append(cells, u.Cell(ns))
	}
	return cells
}

func basisLabel(b string) string {
	switch b {
	case report.BasisRTTHalf:
		return "rtt/2"
	case report.BasisRTT:
		return "rtt"
	}
	return cmp.Or(textfmt.Clean(b), "?")
}

func bandwidthRows(r *report.Result, note string, u rateUnits) []row {
	msgs := uint64(0)
	if r.Bandwidth != nil {
		msgs = r.Bandwidth.Messages
	}
	iters := int64(r.Iterations)
	if iters == 0 {
		iters = int64(msgs)
	}
	first := lead(r, iters)
	qps := "-"
	if r.QPs > 0 {
		qps = strconv.Itoa(r.QPs)
	}
	if r.Bandwidth == nil && r.Reverse == nil && r.Total == nil {
		if r.Error != "" {
			return []row{errorRow(first, r.Error, note)}
		}
		return []row{{cells: append(first, "-", qps, "-", "-", "-", "-"), suffix: note}}
	}
	var rows []row
	if !r.Bidirectional() {
		rows = append(rows, row{cells: append(first, bwCells(dirArrow(r), qps, r.Bandwidth, u)...), suffix: note})
	} else {
		// The sum on the result's row, then each direction under it.
		total := r.Total
		if total == nil {
			total = report.Sum(r.Bandwidth, r.Reverse)
		}
		blank := []string{"", "", "", ""}
		rows = append(rows,
			row{cells: append(first, bwCells("<->", qps, total, u)...), suffix: note},
			row{cells: append(slices.Clone(blank), bwCells("->", "", r.Bandwidth, u)...)},
			row{cells: append(slices.Clone(blank), bwCells("<-", "", r.Reverse, u)...)},
		)
	}
	rows = append(rows, fabricBandwidthRows(r, u)...)
	for _, iv := range shownIntervals(r) {
		cells := []string{intervalLabel(iv), "", "", "-"}
		if b := iv.Bandwidth; b != nil {
			cells[colIters] = strconv.FormatUint(b.Messages, 10)
		}
		dir := dirArrow(r)
		if r.Bidirectional() {
			dir = "" // which direction an interval covers is not recorded
		}
		rows = append(rows, row{cells: append(cells, partCells(dir, "", iv.Bandwidth, u)...)})
	}
	if r.Error != "" {
		rows = append(rows, errorRow(nil, r.Error, ""))
	}
	return rows
}

// bwCells are the cells of a bandwidth row from dir on, its figures in u;
// a peak that was not measured is "-" (the peak note says why).
func bwCells(dir, qps string, b *report.Bandwidth, u rateUnits) []string {
	if b == nil {
		return []string{dir, qps, "-", "-", "-", "-"}
	}
	peak := "-"
	if b.PeakGbps > 0 {
		peak = u.bw.Cell(b.PeakGbps)
	}
	return []string{dir, qps,
		u.bw.Cell(b.Gbps),
		peak,
		strconv.FormatFloat(b.MiBps, 'f', 2, 64),
		u.msg.Cell(b.Mmsgps),
	}
}

// partCells are bwCells for a part of a result that has no peak of its
// own to miss: an interval (itself a stretch) or a loop thread.
func partCells(dir, qps string, b *report.Bandwidth, u rateUnits) []string {
	cells := bwCells(dir, qps, b, u)
	if b == nil || b.PeakGbps == 0 {
		cells[3] = ""
	}
	return cells
}

func intervalLabel(iv report.Interval) string {
	return "  " + textfmt.Num(iv.StartS) + "-" + textfmt.Num(iv.StartS+iv.DurationS) + " s"
}

// minWrap is the width error texts wrap at when the table is narrower.
const minWrap = 100

// layout renders rows with tablewriter (borderless, two spaces between
// columns, one line per row), then fills in what spans columns: titles,
// rules, error texts (wrapped under their first column) and footnote
// references (after a row's last cell).
func layout(rows []row, width int) ([]string, error) {
	aligns := make([]tw.Align, numCols)
	for i := range aligns {
		aligns[i] = tw.AlignRight
	}
	aligns[colTest], aligns[colConn], aligns[colKind] = tw.AlignLeft, tw.AlignLeft, tw.AlignLeft
	return layoutSections(rows, aligns, colFirstMetric, width)
}

// layoutGridWrap lays rows out on a grid of len(aligns) columns, with
// error texts wrapped within limit runes (0: at the table's width, or
// minWrap when narrower).
func layoutGridWrap(rows []row, aligns []tw.Align, limit int) ([]string, error) {
	numCols := len(aligns)

	var buf bytes.Buffer
	table := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleASCII),
			Settings: tw.Settings{
				Separators: tw.Separators{ShowHeader: tw.Off, ShowFooter: tw.Off, BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowTop: tw.Off, ShowBottom: tw.Off, ShowHeaderLine: tw.Off, ShowFooterLine: tw.Off},
			},
		})),
		tablewriter.WithConfig(tablewriter.Config{
			Row: tw.CellConfig{
				Formatting: tw.CellFormatting{AutoWrap: tw.WrapNone},
				Padding:    tw.CellPadding{Global: tw.Padding{Left: "", Right: "  ", Overwrite: true}},
				Alignment:  tw.CellAlignment{Global: tw.AlignRight, PerColumn: aligns},
			},
			Behavior: tw.Behavior{TrimSpace: tw.Off, TrimLine: tw.Off},
		}),
		tablewriter.WithEastAsian(tw.Off),
	)
	for _, r := range rows {
		cells := make([]string, numCols)
		copy(cells, r.cells)
		if err := table.Append(cells); err != nil {
			return nil, fmt.Errorf("report: write table: %w", err)
		}
	}
	if err := table.Render(); err != nil {
		return nil, fmt.Errorf("report: write table: %w", err)
	}
	rendered := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(rendered) != len(rows) {
		return nil, fmt.Errorf("report: write table: layout gave %d lines for %d rows", len(rendered), len(rows))
	}
	width := 0
	for i, l := range rendered {
		rendered[i] = strings.TrimRightFunc(l, unicode.IsSpace)
		if rows[i].kind == rowCells {
			width = max(width, utf8.RuneCountInString(rendered[i]))
		}
	}

	lines := make([]string, 0, len(rows))
	for i, r := range rows {
		l := rendered[i]
		switch r.kind {
		case rowBlank:
			l = ""
		case rowTitle:
			l = r.text
		case rowRule:
			l = strings.Repeat("-", width)
		case rowError:
			at := strings.LastIndex(l, errorMarker)
			if at < 0 {
				return nil, errors.New("report: write table: lost the place of an error text")
			}
			indent := strings.Repeat(" ", utf8.RuneCountInString(l[:at]))
			text := r.text
			if r.suffix != "" {
				text += "  " + r.suffix
			}
			wrapAt := max(width, minWrap)
			if limit > 0 {
				wrapAt = limit
			}
			for j, part := range wrap(text, wrapAt-len(indent)) {
				if j == 0 {
					lines = append(lines, l[:at]+part)
				} else {
					lines = append(lines, indent+part)
				}
			}
			continue
		}
		if r.suffix != "" {
			l += "  " + r.suffix
		}
		lines = append(lines, l)
	}
	return lines, nil
}

// wrap splits s at spaces into lines of at most width runes (a longer word
// gets a line of its own); width is at least 30.
func wrap(s string, width int) []string {
	return wrapWords(s, max(width, 30))
}

// wrapWords is wrap at any width of at least 1.
func wrapWords(s string, width int) []string {
	width = max(width, 1)
	var lines []string
	var cur strings.Builder
	n := 0
	for _, w := range strings.Fields(s) {
		wn := utf8.RuneCountInString(w)
		if n > 0 && n+1+wn > width {
			lines = append(lines, cur.String())
			cur.Reset()
			n = 0
		}
		if n > 0 {
			cur.WriteByte(' ')
			n++
		}
		cur.WriteString(w)
		n += wn
	}
	if n > 0 || len(lines) == 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

// --- footnotes ---

type footnotes struct {
	byResult map[int][]int // result (or summary) index -> footnote numbers
	texts    []string
	bidir    bool
	// unbounded: a summary row has too few runs for an interval.
	unbounded bool
	// failed is what a failed result's row says instead of its error,
	// by result index: its cause, or where several results failed for
	// one cause, the footnote that says it once.
	failed map[int]string
	// causes: the footnote of each cause of failures, by cause.
	causes map[string]int
}

func newFootnotes(doc *report.Document) *footnotes {
	f := &footnotes{byResult: map[int][]int{}, failed: map[int]string{}, causes: map[string]int{}}
	fails := Failures(doc)
	failureOf := map[int]*Failure{}
	for j := range fails {
		for _, i := range fails[j].Results {
			failureOf[i] = &fails[j]
		}
	}
	for i := range doc.Results {
		r := &doc.Results[i]
		if r.Bidirectional() || r.Reversed() {
			f.bidir = true
		}
		notes := r.Warnings
		if r.Precision != nil {
			notes = append([]string{precisionNote(r.Precision)}, notes...)
		}
		for _, w := range notes {
			f.texts = append(f.texts, fmt.Sprintf("%s %d B: %s", textfmt.Clean(r.Test), r.Size, textfmt.Clean(w)))
			f.byResult[i] = append(f.byResult[i], len(f.texts))
		}
		// A cause that failed one result is said in its row; one that
		// failed several, once, in a footnote their rows refer to.
		if fl := failureOf[i]; fl != nil {
			if len(fl.Results) == 1 {
				f.failed[i] = "error: " + textfmt.Clean(fl.Cause)
			} else {
				f.failed[i] = "failed [" + strconv.Itoa(f.cause(doc, fl)) + "]"
			}
		}
	}
	return f
}

// cause returns the number of the footnote that says fl's cause once,
// with the results it failed, adding it the first time.
func (f *footnotes) cause(doc *report.Document, fl *Failure) int {
	if n, ok := f.causes[fl.Cause]; ok {
		return n
	}
	f.texts = append(f.texts, fl.Where(doc)+" failed: "+textfmt.Clean(fl.Cause))
	f.causes[fl.Cause] = len(f.texts)
	return len(f.texts)
}

// sayFailure makes the rows of result i (r) that say its error say what
// f.failed has for it instead: the cause once for all the results it
// failed. Rows of a device's own error (several devices at once) stay.
func (f *footnotes) sayFailure(i int, r *report.Result, rows []row) []row {
	say, ok := f.failed[i]
	if !ok {
		return rows
	}
	own := "error: " + textfmt.Clean(r.Error)
	for j := range rows {
		if rows[j].kind == rowError && rows[j].text == own {
			rows[j].text = say
		}
	}
	return rows
}

func (f *footnotes) refs(i int) string {
	nums := f.byResult[i]
	if len(nums) == 0 {
		return ""
	}
	s := make([]string, len(nums))
	for j, n := range nums {
		s[j] = "[" + strconv.Itoa(n) + "]"
	}
	return strings.Join(s, "")
}

func (f *footnotes) write(b *bytes.Buffer, doc *report.Document) {
	stopped := doc.Stopped()
	if len(f.texts) == 0 && !f.bidir && !f.unbounded && len(doc.Warnings) == 0 && stopped == "" {
		return
	}
	b.WriteByte('\n')
	if f.bidir {
		b.WriteString(dirLegend + "\n")
	}
	for i, t := range f.texts {
		fmt.Fprintf(b, "[%d] %s\n", i+1, t)
	}
	if f.unbounded {
		fmt.Fprintf(b, "a %g%% confidence interval of the median needs at least %d runs: rows of fewer show the median alone\n", 100*report.Confidence, report.MinRunsForInterval)
	}
	for _, w := range doc.Warnings {
		fmt.Fprintf(b, "warning: %s\n", textfmt.Clean(w))
	}
	// Only a run that stopped before its end says so: a test that failed
	// did not stop the others (its row says why it failed).
	if stopped != "" {
		fmt.Fprintf(b, "error: %s (the run stopped; results before it are kept)\n", textfmt.Clean(stopped))
	}
}

// shownIntervals are the intervals a table shows: a duration's; the rounds
// of precision mode stay in the JSON.
func shownIntervals(r *report.Result) []report.Interval {
	if r.Precision != nil {
		return nil
	}
	return r.Intervals
}

// precisionNote says how well a result's headline figure is known.
func precisionNote(p *report.Precision) string {
	what := "p50"
	if p.Figure == "bw_gbps" {
		what = "bandwidth"
	}
	switch {
	case p.HalfWidthPct == nil:
		return fmt.Sprintf("%s not bounded: %d rounds are too few for a 95%% confidence interval (target ±%s%%)", what, p.Rounds, textfmt.Num(p.TargetPct))
	case p.Met:
		return fmt.Sprintf("%s known to ±%.1f%% (95%% confidence, %d rounds)", what, *p.HalfWidthPct, p.Rounds)
	}
	return fmt.Sprintf("%s known to ±%.1f%% only (target ±%s%%; 95%% confidence, %d rounds until the cap)", what, *p.HalfWidthPct, textfmt.Num(p.TargetPct), p.Rounds)
}

// --- helpers ---

// dirArrow is how tables show a one-way result's direction: "->" the client
// initiated, "<-" the server.
func dirArrow(r *report.Result) string {
	if r.Reversed() {
		return "<-"
	}
	return "->"
}
