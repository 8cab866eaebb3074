package render

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/compare"
	"golang.org/x/perf/benchfmt"
)

var formatExt = map[string]string{
	FormatTable: "txt", FormatJSON: "json", FormatCSV: "csv", FormatMarkdown: "md", FormatGobench: "bench",
	FormatBenchActionLatency: "benchaction-latency.json", FormatBenchActionBandwidth: "benchaction-bandwidth.json",
	FormatOpenMetrics: "prom",
}

func render(t *testing.T, format string, doc *report.Document) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, format, doc); err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	return buf.Bytes()
}

// TestFormatsGolden: every renderer on every fixed document. The tables of
// suite, duration, units and empty are TestWriteTableGolden's.
func TestFormatsGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  *report.Document
	}{
		{"suite", reporttest.SuiteDoc()},
		{"duration", reporttest.DurationDoc()},
		{"repeat", reporttest.RepeatDoc()},
		{"units", unitsDoc()},
		{"empty", report.NewDocument()},
	} {
		for _, f := range Formats {
			if f == FormatTable && tc.name != "repeat" {
				continue
			}
			t.Run(tc.name+"/"+f, func(t *testing.T) {
				reporttest.CheckGolden(t, "../testdata", tc.name+"."+formatExt[f], render(t, f, tc.doc))
			})
		}
	}
}

func TestWriteUnknownFormat(t *testing.T) {
	if err := Write(&bytes.Buffer{}, "xml", reporttest.SuiteDoc()); err == nil || !strings.Contains(err.Error(), "table, json, csv, markdown, gobench") {
		t.Errorf("unknown format: %v", err)
	}
	for _, f := range Formats {
		if err := Write(&bytes.Buffer{}, f, nil); err == nil {
			t.Errorf("%s of a nil document: no error", f)
		}
	}
}

func TestFormatForPath(t *testing.T) {
	for path, want := range map[string]string{
		"res.json": "json", "res": "json", "dir/res.TXT": "table", "r.csv": "csv", "r.md": "markdown", "new.bench": "gobench",
		"rdmabench.prom": "openmetrics",
	} {
		if got := FormatForPath(path); got != want {
			t.Errorf("FormatForPath(%q) = %q, want %q", path, got, want)
		}
	}
}

// TestCSVReadsBack: encoding/csv reads the output, one row per result,
// with every figure exactly as in the document.
func TestCSVReadsBack(t *testing.T) {
	for name, doc := range map[string]*report.Document{"suite": reporttest.SuiteDoc(), "duration": reporttest.DurationDoc(), "repeat": reporttest.RepeatDoc(), "full": reporttest.FullDoc()} {
		recs, err := csv.NewReader(bytes.NewReader(render(t, FormatCSV, doc))).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Join(recs[0], ",") != strings.Join(CSVHeader, ",") {
			t.Fatalf("%s: header %v", name, recs[0])
		}
		if len(recs)-1 != len(doc.Results) {
			t.Fatalf("%s: %d rows for %d results", name, len(recs)-1, len(doc.Results))
		}
		col := map[string]int{}
		for i, h := range recs[0] {
			col[h] = i
		}
		for i, rec := range recs[1:] {
			r := &doc.Results[i]
			get := func(c string) string { return rec[col[c]] }
			if get("test") != r.Test || get("connection") != r.Connection || get("size_bytes") != strconv.Itoa(r.Size) ||
				get("run") != strconv.Itoa(max(r.Run, 1)) || get("error") != r.Error || get("warnings") != strings.Join(r.Warnings, "; ") {
				t.Errorf("%s row %d: %v for %+v", name, i, rec, r)
			}
			for _, fc := range []struct {
				col string
				fig report.Figure
			}{{"min_ns", report.FigMin}, {"p50_ns", report.FigP50}, {"mean_ns", report.FigMean}, {"p99_ns", report.FigP99}, {"p99_99_ns", report.FigP9999},
				{"max_ns", report.FigMax}, {"bw_gbps", report.FigGbps}, {"bw_mibps", report.FigMiBps}, {"msg_rate_mpps", report.FigMsgRate}} {
				want, ok := fc.fig.Of(r)
				cell := get(fc.col)
				if !ok {
					if cell != "" {
						t.Errorf("%s row %d: %s = %q, want empty", name, i, fc.col, cell)
					}
					continue
				}
				got, err := strconv.ParseFloat(cell, 64)
				if err != nil || got != want {
					t.Errorf("%s row %d: %s = %q, want exactly %v", name, i, fc.col, cell, want)
				}
			}
		}
	}
}

// TestGobenchReadsBack: benchstat's own parser reads the output: the units
// with their direction, the configuration, one result per result without
// an error, with its iteration count and values.
func TestGobenchReadsBack(t *testing.T) {
	for name, doc := range map[string]*report.Document{"suite": reporttest.SuiteDoc(), "repeat": reporttest.RepeatDoc(), "duration": reporttest.DurationDoc()} {
		r := benchfmt.NewReader(bytes.NewReader(render(t, FormatGobench, doc)), name+".bench")
		var got []*benchfmt.Result
		for r.Scan() {
			switch rec := r.Result().(type) {
			case *benchfmt.Result:
				got = append(got, rec.Clone())
			case *benchfmt.SyntaxError:
				t.Fatalf("%s: %v", name, rec)
			}
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		units := r.Units()
		for unit, better := range map[string]int{"ns/op": -1, "mean-ns": -1, "p90-ns": -1, "p99-ns": -1, "p99.9-ns": -1, "bit/s": 1, "msg/s": 1} {
			if b := units.GetBetter(unit); b != better {
				t.Errorf("%s: unit %s better=%d, want %d", name, unit, b, better)
			}
		}
		var want []*report.Result
		for i := range doc.Results {
			if res := &doc.Results[i]; res.Error == "" && (res.Latency != nil || res.Headline() != nil) {
				want = append(want, res)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%s: benchfmt read %d results, want %d", name, len(got), len(want))
		}
		for i, g := range got {
			w := want[i]
			if full := "Benchmark" + string(g.Name.Full()); full != GobenchName(w) {
				t.Errorf("%s: name %q, want %q", name, full, GobenchName(w))
			}
			if g.GetConfig("pkg") != "github.com/rdmabench/rdmabench" {
				t.Errorf("%s: pkg %q", name, g.GetConfig("pkg"))
			}
			if dev := doc.Hosts.Local.Device; dev != nil && g.GetConfig("device") != dev.Name {
				t.Errorf("%s: device %q, want %q", name, g.GetConfig("device"), dev.Name)
			}
			orig := map[string]float64{}
			for _, v := range g.Values {
				u, x := v.Unit, v.Value
				if v.OrigUnit != "" {
					u, x = v.OrigUnit, v.OrigValue
				}
				orig[u] = x
			}
			near := func(a, b float64) bool { return a == b || (a-b)/b < 1e-5 && (b-a)/b < 1e-5 }
			if w.Latency != nil {
				if g.Iters != int(w.Latency.Count) || g.GetConfig("basis") != w.Latency.Basis {
					t.Errorf("%s: %s: iters %d basis %q", name, GobenchName(w), g.Iters, g.GetConfig("basis"))
				}
				if !near(orig["ns/op"], w.Latency.P50Ns) || !near(orig["p99-ns"], w.Latency.P99Ns) || !near(orig["mean-ns"], w.Latency.MeanNs) {
					t.Errorf("%s: %s: values %v, want p50 %v p99 %v", name, GobenchName(w), orig, w.Latency.P50Ns, w.Latency.P99Ns)
				}
				// benchstat compares durations in seconds.
				if s, ok := g.Value("sec/op"); !ok || !near(s, w.Latency.P50Ns/1e9) {
					t.Errorf("%s: sec/op %v %v", name, s, ok)
				}
			} else {
				b := w.Headline()
				if g.Iters != int(b.Messages) || g.GetConfig("basis") != "" {
					t.Errorf("%s: %s: iters %d basis %q", name, GobenchName(w), g.Iters, g.GetConfig("basis"))
				}
				if !near(orig["bit/s"], b.Gbps*1e9) || !near(orig["msg/s"], b.Mmsgps*1e6) {
					t.Errorf("%s: %s: values %v, want %v Gbit/s %v Mmsg/s", name, GobenchName(w), orig, b.Gbps, b.Mmsgps)
				}
			}
		}
	}
}

func TestGobenchName(t *testing.T) {
	for _, tc := range []struct {
		r    report.Result
		want string
	}{
		{report.Result{Test: "write-lat", Connection: "RC", Size: 2}, "BenchmarkWriteLat/conn=RC/size=2"},
		{report.Result{Test: "tcp-bw", Connection: "TCP", Size: 65536}, "BenchmarkTCPBW/conn=TCP/size=65536"},
		{report.Result{Test: "send-bw", Connection: "UD", Size: 4096, Total: &report.Bandwidth{}}, "BenchmarkSendBW/conn=UD/size=4096/dir=bidir"},
		{report.Result{Test: "atomic-lat", Size: 8}, "BenchmarkAtomicLat/size=8"},
	} {
		if got := GobenchName(&tc.r); got != tc.want {
			t.Errorf("GobenchName(%s) = %q, want %q", tc.r.Test, got, tc.want)
		}
	}
}

// TestWriteSources: several documents together, in every format.
func TestWriteSources(t *testing.T) {
	srcs := []report.Source{{Name: "base.json", Doc: reporttest.SuiteDoc()}, {Name: "runs.json", Doc: reporttest.RepeatDoc()}}
	out := func(format string) string {
		var buf bytes.Buffer
		if err := WriteSources(&buf, format, srcs); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		return buf.String()
	}
	reporttest.CheckGolden(t, "../testdata", "sources.txt", []byte(out(FormatTable)))
	if s := out(FormatTable); strings.Count(s, "==> ") != 2 || !strings.HasPrefix(s, "==> base.json <==\n") || !strings.Contains(s, "\n==> runs.json <==\n") {
		t.Errorf("table of two documents:\n%s", s)
	}
	if s := out(FormatMarkdown); !strings.HasPrefix(s, "### base.json\n") || !strings.Contains(s, "\n### runs.json\n") {
		t.Errorf("markdown of two documents:\n%s", s)
	}

	recs, err := csv.NewReader(strings.NewReader(out(FormatCSV))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if recs[0][0] != "source" || len(recs) != 1+len(srcs[0].Doc.Results)+len(srcs[1].Doc.Results) ||
		recs[1][0] != "base.json" || recs[len(recs)-1][0] != "runs.json" {
		t.Errorf("csv of two documents: %d rows, first %v", len(recs), recs[0])
	}

	var docs []json.RawMessage
	if err := json.Unmarshal([]byte(out(FormatJSON)), &docs); err != nil || len(docs) != 2 {
		t.Fatalf("json of two documents: %v, %d elements", err, len(docs))
	}
	for i, raw := range docs {
		d, err := report.ReadJSON(bytes.NewReader(raw))
		if err != nil || len(d.Results) != len(srcs[i].Doc.Results) {
			t.Errorf("element %d: %v", i, err)
		}
	}

	gb := out(FormatGobench)
	if !strings.HasPrefix(gb, "# source: base.json\n") || !strings.Contains(gb, "\n# source: runs.json\n") {
		t.Errorf("gobench of two documents:\n%s", gb)
	}

	// One source is exactly the document alone.
	var one bytes.Buffer
	if err := WriteSources(&one, FormatJSON, srcs[:1]); err != nil || one.String() != string(render(t, FormatJSON, srcs[0].Doc)) {
		t.Errorf("one source differs from the document alone: %v", err)
	}
	if err := WriteSources(&one, "yaml", srcs); err == nil {
		t.Error("unknown format: no error")
	}
}

// TestMarkdownTablesAreRectangular: every row of a Markdown table has as
// many cells as its header, whatever the cells hold.
func TestMarkdownTablesAreRectangular(t *testing.T) {
	doc := reporttest.DurationDoc()
	doc.Results[0].Warnings = []string{"a | pipe and a *star*"}
	for name, d := range map[string]*report.Document{"suite": reporttest.SuiteDoc(), "duration": doc, "repeat": reporttest.RepeatDoc()} {
		cols := 0
		for i, l := range strings.Split(string(render(t, FormatMarkdown, d)), "\n") {
			if !strings.HasPrefix(l, "|") {
				cols = 0
				continue
			}
			n := strings.Count(strings.ReplaceAll(l, `\|`, ""), "|") - 1
			if cols == 0 {
				cols = n
			} else if n != cols {
				t.Errorf("%s line %d: %d cells, header has %d: %q", name, i+1, n, cols, l)
			}
		}
	}
}

// TestTablesFit: every table form fits 120 columns, without trailing
// spaces.
func TestTablesFit(t *testing.T) {
	var outs []string
	outs = append(outs, string(render(t, FormatTable, reporttest.RepeatDoc())))
	for _, pair := range [][2]*report.Document{{reporttest.BaseRuns(), reporttest.RegressedRuns()}, {reporttest.SingleBase(), reporttest.SingleNew()}, {reporttest.BaseRuns(), reporttest.OtherDeviceRuns()}} {
		c := compareNamed(pair[0], pair[1])
		var buf bytes.Buffer
		if err := WriteComparison(&buf, FormatTable, c, c.CheckGates(compare.Gates{compare.MaxRegressionGate("--max-regression 5%", 0.05)})); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, buf.String())
	}
	for i, out := range outs {
		for j, l := range strings.Split(out, "\n") {
			if n := len([]rune(l)); n > 120 && !strings.HasPrefix(l, "gate ") {
				t.Errorf("output %d line %d is %d columns wide: %q", i, j+1, n, l)
			}
			if strings.TrimRight(l, " ") != l {
				t.Errorf("output %d line %d has trailing spaces: %q", i, j+1, l)
			}
		}
	}
}

// TestCSVNamesMatchJSON: each CSV column is named as the property of the
// results document it holds (a result's, its latency's, bandwidth's or
// effective settings'), but the derived bidirectional and the three
// columns v1 first named with their unit, which keep their name beside a
// column of the JSON name holding the same value.
func TestCSVNamesMatchJSON(t *testing.T) {
	defs := reporttest.LoadSchema(t)["$defs"].(reporttest.SchemaNode)
	props := map[string]bool{}
	for _, def := range []string{"result", "latency", "bandwidth", "effective"} {
		for name := range defs[def].(reporttest.SchemaNode)["properties"].(reporttest.SchemaNode) {
			props[name] = true
		}
	}
	unitNamed := map[string]string{"size_bytes": "size", "inline_max_bytes": "inline_max", "path_mtu_bytes": "path_mtu"}
	header := map[string]bool{}
	for _, h := range CSVHeader {
		header[h] = true
	}
	for _, h := range CSVHeader {
		if twin, ok := unitNamed[h]; ok {
			if !header[twin] || !props[twin] {
				t.Errorf("column %s: no column %s beside it, or no such JSON property", h, twin)
			}
			continue
		}
		if !props[h] && h != "bidirectional" {
			t.Errorf("column %s: no JSON property of that name", h)
		}
	}
	doc := reporttest.DurationDoc()
	recs, err := csv.NewReader(bytes.NewReader(render(t, FormatCSV, doc))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	durations := 0
	for i, rec := range recs[1:] {
		r := &doc.Results[i]
		for old, twin := range unitNamed {
			if rec[col[old]] != rec[col[twin]] {
				t.Errorf("row %d: %s %q, %s %q", i, old, rec[col[old]], twin, rec[col[twin]])
			}
		}
		want := ""
		if r.DurationS > 0 {
			want = strconv.FormatFloat(r.DurationS, 'f', -1, 64)
			durations++
		}
		if rec[col["size"]] != strconv.Itoa(r.Size) || rec[col["duration_s"]] != want {
			t.Errorf("row %d: size %q, duration_s %q, for %+v", i, rec[col["size"]], rec[col["duration_s"]], r)
		}
		if e := r.Effective; e != nil && e.PathMTU > 0 && rec[col["path_mtu"]] != strconv.Itoa(e.PathMTU) {
			t.Errorf("row %d: path_mtu %q, want %d", i, rec[col["path_mtu"]], e.PathMTU)
		}
	}
	if durations == 0 {
		t.Error("no duration-mode result in the document")
	}
}
