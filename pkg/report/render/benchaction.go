package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// Output formats for github-action-benchmark
// (github.com/benchmark-action/github-action-benchmark), whose custom tools
// read a JSON array of {name, unit, value, range, extra}. One file is read
// with one tool, and a tool has one direction, so the figures are split:
//
//   - FormatBenchActionLatency: latency only, smaller is better; give it
//     tool: customSmallerIsBetter;
//   - FormatBenchActionBandwidth: bandwidth and message rate only, bigger
//     is better; give it tool: customBiggerIsBetter.
//
// (The action's "go" tool reads the gobench format but takes every unit
// as smaller-is-better, so it would gate bandwidth backwards.)
const (
	FormatBenchActionLatency   = "github-action-benchmark-latency"
	FormatBenchActionBandwidth = "github-action-benchmark-bandwidth"
)

// BenchActionEntry is one benchmark of github-action-benchmark's custom
// JSON input, as its BenchmarkResult type declares it.
type BenchActionEntry struct {
	Name  string  `json:"name"`
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
	// Range is "± h": the half-width of the 95% confidence interval of the
	// median, the larger side, in Unit; set when the runs are repeated
	// enough for a bounded interval (6 or more).
	Range string `json:"range,omitempty"`
	// Extra is shown in the action's tooltips: device and firmware, hosts,
	// runs, basis.
	Extra string `json:"extra,omitempty"`
}

// The figures of each kind, in output order.
var (
	benchActionLatency   = []report.Figure{report.FigP50, report.FigP99, report.FigP999}
	benchActionBandwidth = []report.Figure{report.FigGbps, report.FigMsgRate}
)

// WriteBenchAction writes doc as github-action-benchmark's custom JSON:
// with bandwidth false the latency figures (p50, p99, p99.9 in µs, unit
// "us", which the action knows as a time unit), with bandwidth true the
// bandwidth figures (Gbit/s and Mmsg/s). One entry per test, connection,
// size and figure, named "write-lat RC 2 B p50" ("... bidirectional" for
// a bidirectional test); in a document of repeated runs the value is the
// median over the runs (failed runs left out) and Range its confidence
// interval, as [report.Document.Summarize] computes them. Results that measured nothing of
// the kind are left out: a document with none gives "[]", which the action
// refuses ("No benchmark result was found").
func WriteBenchAction(w io.Writer, doc *report.Document, bandwidth bool) error {
	if doc == nil {
		return errors.New("report: write github-action-benchmark: nil document")
	}
	return writeBenchAction(w, []report.Source{{Doc: doc}}, bandwidth)
}

// writeBenchAction writes the entries of every source in one array; with
// several sources each name starts with its source's name.
func writeBenchAction(w io.Writer, srcs []report.Source, bandwidth bool) error {
	entries := []BenchActionEntry{}
	names := uniqueNames(srcs)
	for i, s := range srcs {
		prefix := ""
		if len(srcs) > 1 {
			prefix = names[i] + ": "
		}
		entries = append(entries, benchActionEntries(s.Doc, prefix, bandwidth)...)
	}
	b, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return fmt.Errorf("report: write github-action-benchmark: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("report: write github-action-benchmark: %w", err)
	}
	return nil
}

func benchActionEntries(doc *report.Document, prefix string, bandwidth bool) []BenchActionEntry {
	var out []BenchActionEntry
	device := benchActionDevice(doc)
	groups := doc.Groups()
	for i := range groups {
		g := &groups[i]
		sum := g.Summarize()
		figs, unit, scale := benchActionLatency, "us", 1e3
		if bandwidth {
			figs, unit, scale = benchActionBandwidth, "", 1
		}
		name := prefix + sum.Key().String()
		if slices.ContainsFunc(g.Results, (*report.Result).Bidirectional) {
			name += " bidirectional"
		}
		var extra []string
		if device != "" {
			extra = append(extra, device)
		}
		if h := benchActionHosts(doc); h != "" {
			extra = append(extra, "host: "+h)
		}
		if !bandwidth && sum.Latency != nil {
			extra = append(extra, basisWords(sum.Latency.Basis))
		}
		for _, f := range figs {
			sp, ok := sum.Spread(f)
			if !ok || sp.N == 0 {
				continue
			}
			e := BenchActionEntry{Name: name + " " + string(f), Unit: unit, Value: sig12(sp.Median / scale)}
			if bandwidth {
				e.Name, e.Unit = name+" "+f.Unit(), f.Unit()
			}
			lines := slices.Clone(extra)
			if sum.Runs > 1 {
				runs := fmt.Sprintf("runs: %d, value: the median", sp.N)
				if sum.Failed > 0 {
					runs += fmt.Sprintf(" (%d failed, left out)", sum.Failed)
				}
				if sp.Bounded() {
					half := math.Max(*sp.Hi-sp.Median, sp.Median-*sp.Lo) / scale
					e.Range = "± " + sig6(half)
					runs += fmt.Sprintf(", range: %.0f%% confidence interval", 100*sp.Confidence)
				}
				lines = append(lines, runs)
			}
			e.Extra = strings.Join(lines, "\n")
			out = append(out, e)
		}
	}
	return out
}

// benchActionDevice is the device line of extra: "device: mlx5_0,
// firmware 20.39.1002, RoCE v2, MTU 4096".
func benchActionDevice(doc *report.Document) string {
	d := doc.Hosts.Local.Device
	if d == nil {
		return ""
	}
	parts := []string{textfmt.Clean(d.Name)}
	if d.Firmware != "" {
		parts = append(parts, "firmware "+textfmt.Clean(d.Firmware))
	}
	if d.GIDType != "" {
		parts = append(parts, textfmt.Clean(d.GIDType))
	} else if d.LinkLayer != "" {
		parts = append(parts, textfmt.Clean(d.LinkLayer))
	}
	if d.ActiveMTU > 0 {
		parts = append(parts, "MTU "+strconv.Itoa(d.ActiveMTU))
	}
	return "device: " + strings.Join(parts, ", ")
}

// benchActionHosts is "node-a", "node-a to node-b" or "node-a (loopback)".
func benchActionHosts(doc *report.Document) string {
	h := textfmt.Clean(doc.Hosts.Local.Hostname)
	switch {
	case h == "":
		return ""
	case doc.Hosts.Remote != nil:
		return h + " to " + textfmt.Clean(doc.Hosts.Remote.Hostname)
	}
	return h + " (loopback)"
}

// uniqueNames returns the sources' names, with " (2)", " (3)", ... added
// to repeated ones, so that the entries of two sources never collide.
func uniqueNames(srcs []report.Source) []string {
	names := make([]string, len(srcs))
	seen := map[string]int{}
	for i, s := range srcs {
		n := s.Name
		seen[n]++
		if seen[n] > 1 {
			n += fmt.Sprintf(" (%d)", seen[n])
		}
		names[i] = n
	}
	return names
}

// basisWords says what a latency is: "one-way latency (rtt/2)".
func basisWords(basis string) string {
	switch basis {
	case report.BasisRTTHalf:
		return "one-way latency (rtt/2)"
	case report.BasisRTT:
		return "round-trip latency"
	}
	return "latency basis " + basisLabel(basis)
}

// sig12 rounds v to 12 significant digits: a value divided into another
// unit loses the binary noise of the division (2.893, not
// 2.8930000000000002) and nothing a measurement holds.
func sig12(v float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	if err != nil {
		return v
	}
	return r
}
