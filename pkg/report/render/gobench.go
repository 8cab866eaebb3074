package render

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// Units of the Go benchmark format output, each in its base unit, with no
// SI prefix, since benchstat adds its own: it normalizes a unit whose
// numerator holds "ns" to seconds ("p99-ns" becomes "p99-sec"), and scales
// decimal units (no "B" in the numerator) by powers of 1000, so 3.68e8
// bit/s prints as "368.4M bit/s" (a prefixed unit such as "Gbps" would
// print as "368.4m Gbps").
const (
	gobenchP50Unit   = "ns/op" // the median latency, p50: benchstat's sec/op
	gobenchMeanUnit  = "mean-ns"
	gobenchP90Unit   = "p90-ns"
	gobenchP99Unit   = "p99-ns"
	gobenchP999Unit  = "p99.9-ns"
	gobenchBitsUnit  = "bit/s" // payload bits per second
	gobenchMsgsUnit  = "msg/s" // messages per second
	gobenchModuleKey = "pkg"
)

// gobenchUnits is the order of the Unit metadata lines, with the direction
// that is better for each.
var gobenchUnits = []struct{ unit, better string }{
	{gobenchP50Unit, "lower"},
	{gobenchMeanUnit, "lower"},
	{gobenchP90Unit, "lower"},
	{gobenchP99Unit, "lower"},
	{gobenchP999Unit, "lower"},
	{gobenchBitsUnit, "higher"},
	{gobenchMsgsUnit, "higher"},
}

// WriteGobench writes doc in the Go benchmark format
// (golang.org/design/14313-benchmark-format, with its Unit metadata
// extension), so that benchstat reads rdmabench results directly, and
// pools repeated runs as it pools `go test -count` runs:
//
//	$ rdmabench write-lat --repeat 10 -o gobench > new.txt
//	$ benchstat old.txt new.txt
//
// The output is: a comment line naming the tool, version and command
// (benchstat ignores it); configuration lines (goos, goarch, pkg, cpu,
// device, firmware, link-layer, mtu, gid-type; those the document knows);
// one "Unit U better=higher|lower" line per unit; then one line per result
// without an error, in document order:
//
//	BenchmarkWriteLat/conn=RC/size=2  10000  1040 ns/op  1060 mean-ns  1090 p90-ns  1310 p99-ns  2870 p99.9-ns
//	BenchmarkWriteBW/conn=RC/size=65536  10000  98531600000 bit/s  187935 msg/s
//
// The name is the test in CamelCase, then "conn=" and "size=" (bytes)
// sub-benchmark keys (plus "dir=bidir" for a bidirectional test), so
// `benchstat -col /size` works. The iteration count is the number of
// measured samples or messages. Latency is the p50 as ns/op plus the mean,
// p90, p99 and p99.9 in ns, on the test's basis: a "basis" configuration
// line (rtt_half or rtt) precedes latency results and an empty one removes
// it before bandwidth results, so benchstat shows one-way latencies, round
// trips and bandwidth in separate tables. Bandwidth is [report.Result.Headline] in
// bit/s (payload) and msg/s, which benchstat scales itself (k, M, G: powers
// of 1000). Values have six significant digits. Results with errors are left out (the other forms keep them).
func WriteGobench(w io.Writer, doc *report.Document) error {
	if doc == nil {
		return errors.New("report: write gobench: nil document")
	}
	var out bytes.Buffer
	t := doc.Tool
	comment := "# " + cmp.Or(t.Name, "rdmabench") + " " + cmp.Or(t.Version, "devel")
	if t.Commit != "" {
		comment += " (" + t.Commit + ")"
	}
	if len(doc.Command) > 0 {
		comment += ": " + strings.Join(doc.Command, " ")
	}
	if !doc.Start.IsZero() {
		comment += ", " + doc.Start.UTC().Format(time.RFC3339)
	}
	out.WriteString(gobenchClean(comment) + "\n")
	for _, kv := range gobenchConfig(doc) {
		fmt.Fprintf(&out, "%s: %s\n", kv[0], kv[1])
	}
	for _, u := range gobenchUnits {
		fmt.Fprintf(&out, "Unit %s better=%s\n", u.unit, u.better)
	}
	basis := ""
	for i := range doc.Results {
		r := &doc.Results[i]
		if r.Error != "" {
			continue
		}
		var vals []string
		var iters int64
		switch {
		case r.Latency != nil && r.Latency.Count > 0:
			l := r.Latency
			if l.Basis != basis {
				basis = l.Basis
				fmt.Fprintf(&out, "basis: %s\n", gobenchClean(basis))
			}
			iters = l.Count
			vals = []string{
				sig6(l.P50Ns), gobenchP50Unit, sig6(l.MeanNs), gobenchMeanUnit, sig6(l.P90Ns), gobenchP90Unit,
				sig6(l.P99Ns), gobenchP99Unit, sig6(l.P999Ns), gobenchP999Unit,
			}
		case r.Headline() != nil:
			if basis != "" {
				basis = ""
				out.WriteString("basis:\n") // an empty value removes the key
			}
			b := r.Headline()
			iters = int64(b.Messages)
			vals = []string{sig6(b.Gbps * 1e9), gobenchBitsUnit, sig6(b.Mmsgps * 1e6), gobenchMsgsUnit}
		default:
			continue
		}
		if iters <= 0 {
			iters = int64(max(r.Iterations, 1))
		}
		fmt.Fprintf(&out, "%s %d %s\n", GobenchName(r), iters, strings.Join(vals, " "))
	}
	if _, err := w.Write(out.Bytes()); err != nil {
		return fmt.Errorf("report: write gobench: %w", err)
	}
	return nil
}

// GobenchName is r's benchmark name in the Go benchmark format:
// "BenchmarkWriteLat/conn=RC/size=2".
func GobenchName(r *report.Result) string {
	var b strings.Builder
	b.WriteString("Benchmark")
	for _, part := range strings.FieldsFunc(r.Test, func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) }) {
		switch p := strings.ToLower(part); p {
		case "bw", "tcp", "udp", "rdma":
			b.WriteString(strings.ToUpper(p))
		default:
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	if r.Connection != "" {
		b.WriteString("/conn=" + strings.Map(func(c rune) rune {
			if unicode.IsSpace(c) || unicode.IsControl(c) || c == '/' {
				return '_'
			}
			return c
		}, r.Connection))
	}
	b.WriteString("/size=" + strconv.Itoa(r.Size))
	if r.Bidirectional() {
		b.WriteString("/dir=bidir")
	}
	return b.String()
}

// gobenchConfig returns the configuration lines of doc: facts of the
// environment that stay the same between runs meant to be compared (not
// the time, tool version or host name, which would make benchstat split
// them into different tables).
func gobenchConfig(doc *report.Document) [][2]string {
	var kv [][2]string
	add := func(k, v string) {
		if v = gobenchClean(v); v != "" {
			kv = append(kv, [2]string{k, v})
		}
	}
	h := &doc.Hosts.Local
	// workloads.LocalHost records runtime.GOOS + "/" + runtime.GOARCH.
	if goos, goarch, ok := strings.Cut(h.OS, "/"); ok && !strings.ContainsAny(h.OS, " \t") {
		add("goos", goos)
		add("goarch", goarch)
	}
	add(gobenchModuleKey, "github.com/rdmabench/rdmabench")
	add("cpu", h.CPU)
	if d := h.Device; d != nil {
		add("device", d.Name)
		add("firmware", d.Firmware)
		add("link-layer", d.LinkLayer)
		if d.ActiveMTU > 0 {
			add("mtu", strconv.Itoa(d.ActiveMTU))
		}
		add("gid-type", d.GIDType)
	}
	return kv
}

// gobenchClean makes s safe for one line of the format.
func gobenchClean(s string) string { return strings.TrimSpace(textfmt.Clean(s)) }

// sig6 formats v with six significant digits, without an exponent.
func sig6(v float64) string {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	if err != nil {
		r = v
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}
