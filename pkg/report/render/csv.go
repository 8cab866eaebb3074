package render

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// CSVHeader is the header row of WriteCSV: units are in the column names
// (nanoseconds, Gbit/s = 10^9 bit/s, MiB/s = 2^20 byte/s, 10^6 messages/s).
// A column holding a property of the results document has that property's
// JSON name; the first columns of v1 named three of them with their unit,
// bytes (size_bytes, inline_max_bytes, path_mtu_bytes), and stay, with a
// column of the JSON name at the end (size, inline_max, path_mtu). Columns
// are only ever added, at the end (docs/schema.md).
var CSVHeader = []string{
	"test", "connection", "size_bytes", "run", "iterations", "warmup", "qps", "bidirectional", "basis",
	"min_ns", "p50_ns", "mean_ns", "stdev_ns", "p90_ns", "p99_ns", "p99_9_ns", "p99_99_ns", "max_ns",
	"bw_gbps", "bw_mibps", "msg_rate_mpps", "bytes", "messages", "duration_ns",
	"warnings", "error",
	"tx_depth", "rx_depth", "cq_mod", "post_list", "inline_max_bytes", "inline", "path_mtu_bytes", "clock",
	"size", "inline_max", "path_mtu", "duration_s", "bw_peak_gbps",
}

// WriteCSV writes doc as CSV (RFC 4180, as encoding/csv reads it): the
// header [CSVHeader], then one row per result: per test and size, and per
// run in a document of repeated runs (run is 1 in a document of one run).
// Figures a result does not have are empty cells. The bandwidth columns
// hold [report.Result.Headline]: both directions summed in a bidirectional test.
// Numbers are written exactly (shortest representation that reads back the
// same float64). warnings holds a result's warnings joined by "; ".
// Intervals are not written; the JSON form has them. The last columns are
// the effective RDMA settings ([report.Result.Effective]; empty where a test has
// none) and the name of the clock the result was timed with; then the
// columns named as in JSON: size, inline_max and path_mtu (the values of
// size_bytes, inline_max_bytes and path_mtu_bytes) and duration_s, the
// duration a duration-mode (-D) result was asked to run, in seconds
// (duration_ns is the measured period of its bandwidth figures), then
// bw_peak_gbps, the headline's BW peak where it was measured.
func WriteCSV(w io.Writer, doc *report.Document) error {
	if doc == nil {
		return errors.New("report: write csv: nil document")
	}
	return writeCSV(w, []report.Source{{Doc: doc}}, false)
}

// sourcedCSV is a table of several sources' rows: with a first column
// "source" holding each row's source name when withSource.
type sourcedCSV struct {
	cw         *csv.Writer
	withSource bool
}

// newSourcedCSV starts the table with its header.
func newSourcedCSV(w io.Writer, header []string, withSource bool) *sourcedCSV {
	t := &sourcedCSV{cw: csv.NewWriter(w), withSource: withSource}
	t.row("source", header)
	return t
}

// row writes rec, a row of the source named src. A write error is kept by
// the csv.Writer and returned by end.
func (t *sourcedCSV) row(src string, rec []string) {
	if t.withSource {
		rec = append([]string{src}, rec...)
	}
	_ = t.cw.Write(rec)
}

// end flushes the table and says whether any of it failed to write.
func (t *sourcedCSV) end() error {
	t.cw.Flush()
	if err := t.cw.Error(); err != nil {
		return fmt.Errorf("report: write csv: %w", err)
	}
	return nil
}

// writeCSV writes the results of every source in one table; withSource
// adds a first column "source" holding each source's name.
func writeCSV(w io.Writer, srcs []report.Source, withSource bool) error {
	t := newSourcedCSV(w, CSVHeader, withSource)
	for _, src := range srcs {
		for i := range src.Doc.Results {
			t.row(src.Name, csvRecord(&src.Doc.Results[i]))
		}
	}
	return t.end()
}

func csvRecord(r *report.Result) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	run := max(r.Run, 1)
	rec := []string{r.Test, r.Connection, strconv.Itoa(r.Size), strconv.Itoa(run), strconv.Itoa(r.Iterations),
		strconv.Itoa(r.Warmup), strconv.Itoa(r.QPs), strconv.FormatBool(r.Bidirectional())}
	if l := r.Latency; l != nil {
		rec = append(rec, l.Basis)
		if l.Count > 0 {
			for _, fig := range report.LatencyFigures {
				v, _ := fig.Of(r)
				rec = append(rec, f(v))
			}
		} else {
			rec = append(rec, make([]string, len(report.LatencyFigures))...)
		}
	} else {
		rec = append(rec, make([]string, 1+len(report.LatencyFigures))...)
	}
	if b := r.Headline(); b != nil {
		rec = append(rec, f(b.Gbps), f(b.MiBps), f(b.Mmsgps),
			strconv.FormatUint(b.Bytes, 10), strconv.FormatUint(b.Messages, 10), strconv.FormatInt(b.DurationNs, 10))
	} else {
		rec = append(rec, make([]string, 6)...)
	}
	rec = append(rec, strings.Join(r.Warnings, "; "), r.Error)
	opt := func(v int) string {
		if v == 0 {
			return ""
		}
		return strconv.Itoa(v)
	}
	dur := ""
	if r.DurationS > 0 {
		dur = f(r.DurationS)
	}
	peak := ""
	if b := r.Headline(); b != nil && b.PeakGbps > 0 {
		peak = f(b.PeakGbps)
	}
	e := r.Effective
	if e == nil {
		return append(rec, "", "", "", "", "", "", "", r.Clock, strconv.Itoa(r.Size), "", "", dur, peak)
	}
	return append(rec, opt(e.TxDepth), opt(e.RxDepth), opt(e.CQMod), opt(e.PostList), opt(e.InlineMax),
		strconv.FormatBool(e.Inline), opt(e.PathMTU), r.Clock,
		strconv.Itoa(r.Size), opt(e.InlineMax), opt(e.PathMTU), dur, peak)
}
