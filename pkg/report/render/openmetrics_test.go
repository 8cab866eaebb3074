package render

import (
	"bytes"
	"errors"
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rdmabench/rdmabench/pkg/latency"
)

// openMetricsTypes are the type of each family; the others are gauges.
var openMetricsTypes = map[string]dto.MetricType{
	"rdmabench_latency_seconds":           dto.MetricType_HISTOGRAM,
	"rdmabench_latency_quantiles_seconds": dto.MetricType_SUMMARY,
}

// parseOpenMetrics reads out with Prometheus's own parsers: the
// OpenMetrics 1.0 decoder (strict, the grammar of the specification) and
// the text-format parser that node_exporter's textfile collector uses
// (with Prometheus's classic name rules). Both must read it, and read the
// same samples.
func parseOpenMetrics(t *testing.T, out []byte) map[string]*dto.MetricFamily {
	t.Helper()
	om := map[string]*dto.MetricFamily{}
	dec := expfmt.NewDecoder(bytes.NewReader(out), expfmt.NewFormat(expfmt.TypeOpenMetrics))
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("OpenMetrics decoder: %v\n%s", err, out)
		}
		om[mf.GetName()] = mf
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	text, err := p.TextToMetricFamilies(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("text parser (textfile collector): %v\n%s", err, out)
	}
	if len(text) != len(om) {
		t.Fatalf("the text parser read %d families, the OpenMetrics decoder %d", len(text), len(om))
	}
	for name, mf := range om {
		if got, want := familySamples(text[name]), familySamples(mf); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: the two parsers differ:\n%v\n%v", name, got, want)
		}
		want, ok := openMetricsTypes[name]
		if !ok {
			want = dto.MetricType_GAUGE
		}
		if mf.GetType() != want || mf.GetHelp() == "" {
			t.Errorf("%s: type %v (want %v), help %q", name, mf.GetType(), want, mf.GetHelp())
		}
		if unit := mf.GetUnit(); unit != "" && !strings.HasSuffix(name, "_"+unit) {
			t.Errorf("%s: unit %q not in the name", name, unit)
		}
	}
	return om
}

// omSamples flattens a family into its sample lines, keyed
// "name{labels}" (labels sorted, as labelKey): a histogram's _bucket
// (with le), _sum and _count, a summary's quantiles, _sum and _count.
func omSamples(mf *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	name := mf.GetName()
	Num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, m := range mf.GetMetric() {
		key := func(suffix string, extra ...string) string {
			l := []string{}
			for _, p := range m.GetLabel() {
				l = append(l, p.GetName()+"="+p.GetValue())
			}
			l = append(l, extra...)
			sort.Strings(l)
			return name + suffix + "{" + strings.Join(l, ",") + "}"
		}
		switch {
		case m.Histogram != nil:
			for _, b := range m.Histogram.GetBucket() {
				out[key("_bucket", "le="+Num(b.GetUpperBound()))] = float64(b.GetCumulativeCount())
			}
			out[key("_sum")] = m.Histogram.GetSampleSum()
			out[key("_count")] = float64(m.Histogram.GetSampleCount())
		case m.Summary != nil:
			for _, q := range m.Summary.GetQuantile() {
				out[key("", "quantile="+Num(q.GetQuantile()))] = q.GetValue()
			}
			out[key("_sum")] = m.Summary.GetSampleSum()
			out[key("_count")] = float64(m.Summary.GetSampleCount())
		default:
			out[key("")] = m.GetGauge().GetValue()
		}
	}
	return out
}

// familySamples lists a family's samples as "name{labels} value", sorted.
func familySamples(mf *dto.MetricFamily) []string {
	var out []string
	for k, v := range omSamples(mf) {
		out = append(out, k+" "+strconv.FormatFloat(v, 'g', -1, 64))
	}
	sort.Strings(out)
	return out
}

// labelKey is a sample's labels, sorted by name: "a=x,b=y".
func labelKey(m *dto.Metric) string {
	var l []string
	for _, p := range m.GetLabel() {
		l = append(l, p.GetName()+"="+p.GetValue())
	}
	sort.Strings(l)
	return strings.Join(l, ",")
}

// TestOpenMetricsReadsBack: Prometheus's parsers read every figure of
// the document back, value by value (the median over runs when
// repeated), under the labels test, connection, size, device, host and
// remote, and nothing else; the latency histogram is checked by
// checkLatencyHistograms.
func TestOpenMetricsReadsBack(t *testing.T) {
	docs := map[string]*report.Document{"suite": reporttest.SuiteDoc(), "duration": reporttest.DurationDoc(), "repeat": reporttest.RepeatDoc(), "sweep": reporttest.SweepDoc(true), "empty": report.NewDocument()}
	for name, doc := range docs {
		got := parseOpenMetrics(t, render(t, FormatOpenMetrics, doc))
		checkLatencyHistograms(t, name, doc, got)
		want := map[string]map[string]float64{}
		put := func(family, suffix string, v float64, labels ...string) {
			kv := []string{}
			for i := 0; i < len(labels); i += 2 {
				kv = append(kv, labels[i]+"="+labels[i+1])
			}
			sort.Strings(kv)
			if want[family] == nil {
				want[family] = map[string]float64{}
			}
			want[family][family+suffix+"{"+strings.Join(kv, ",")+"}"] = v
		}
		dev := ""
		if d := doc.Hosts.Local.Device; d != nil {
			dev = d.Name
		}
		host := doc.Hosts.Local.Hostname
		remote := OpenMetricsRemote(doc)
		if !doc.End.IsZero() {
			put("rdmabench_end_timestamp_seconds", "", float64(doc.End.Unix()), "device", dev, "host", host, "remote", remote)
		}
		for _, s := range doc.Summarize() {
			key := []string{"device", dev, "host", host, "remote", remote, "test", s.Test, "connection", s.Connection, "size", strconv.Itoa(s.Size)}
			if s.Latency != nil {
				lat := append(key[:len(key):len(key)], "basis", s.Latency.Basis)
				for q, f := range map[string]report.Figure{"0": report.FigMin, "0.5": report.FigP50, "0.9": report.FigP90, "0.99": report.FigP99, "0.999": report.FigP999, "0.9999": report.FigP9999, "1": report.FigMax} {
					sp, _ := s.Spread(f)
					put("rdmabench_latency_quantiles_seconds", "", sp.Median/1e9, append(lat[:len(lat):len(lat)], "quantile", q)...)
				}
				var n, sum float64
				for _, r := range doc.Results {
					if r.Key() == s.Key() && r.Error == "" && r.Latency != nil {
						n += float64(r.Latency.Count)
						sum += float64(r.Latency.Count) * r.Latency.MeanNs / 1e9
					}
				}
				put("rdmabench_latency_quantiles_seconds", "_count", n, lat...)
				put("rdmabench_latency_quantiles_seconds", "_sum", sum, lat...)
				put("rdmabench_latency_mean_seconds", "", s.Latency.MeanNs.Median/1e9, lat...)
				put("rdmabench_latency_stdev_seconds", "", s.Latency.StdevNs.Median/1e9, lat...)
			}
			if s.Bandwidth != nil {
				put("rdmabench_bandwidth_bytes_per_second", "", s.Bandwidth.Gbps.Median*1e9/8, key...)
				put("rdmabench_message_rate_messages_per_second", "", s.Bandwidth.Mmsgps.Median*1e6, key...)
			}
			put("rdmabench_runs", "", float64(s.Runs-s.Failed), key...)
			put("rdmabench_failed_runs", "", float64(s.Failed), key...)
		}
		for family, w := range want {
			mf := got[family]
			if mf == nil {
				t.Errorf("%s: no family %s", name, family)
				continue
			}
			g := omSamples(mf)
			if len(g) != len(w) {
				t.Errorf("%s: %s has %d samples, want %d", name, family, len(g), len(w))
			}
			for k, gv := range g {
				v, ok := w[k]
				if !ok {
					t.Errorf("%s: %s: not a figure of the document", name, k)
				} else if math.Abs(gv-v) > 1e-9*math.Abs(v) {
					t.Errorf("%s: %s = %v, want %v", name, k, gv, v)
				}
			}
		}
		for family := range got {
			if want[family] == nil && family != "rdmabench_latency_seconds" {
				t.Errorf("%s: family %s has no figure of the document", name, family)
			}
		}
	}
}

// checkLatencyHistograms: a test and size of doc has a histogram exactly
// when each of its runs with figures has an HdrHistogram; every histogram
// has the same bounds, [OpenMetricsLatencyBoundsNs] then +Inf, its
// cumulative counts never decrease, and its +Inf bucket, _count and _sum
// are the summary's.
func checkLatencyHistograms(t *testing.T, name string, doc *report.Document, fams map[string]*dto.MetricFamily) {
	t.Helper()
	withHist := 0
	for _, s := range doc.Summarize() {
		if s.Latency == nil {
			continue
		}
		all := true
		for _, r := range doc.Results {
			if r.Key() == s.Key() && r.Error == "" && r.Latency != nil && r.Latency.Histogram == "" {
				all = false
			}
		}
		if all {
			withHist++
		}
	}
	hist := fams["rdmabench_latency_seconds"]
	if got := len(hist.GetMetric()); got != withHist {
		t.Errorf("%s: %d latency histograms, want %d", name, got, withHist)
	}
	summaries := map[string]*dto.Summary{}
	for _, m := range fams["rdmabench_latency_quantiles_seconds"].GetMetric() {
		summaries[labelKey(m)] = m.Summary
	}
	for _, m := range hist.GetMetric() {
		h, k := m.GetHistogram(), labelKey(m)
		b := h.GetBucket()
		if len(b) != len(OpenMetricsLatencyBoundsNs)+1 {
			t.Fatalf("%s: {%s}: %d buckets", name, k, len(b))
		}
		for i, bk := range b {
			want := math.Inf(1)
			if i < len(OpenMetricsLatencyBoundsNs) {
				want = float64(OpenMetricsLatencyBoundsNs[i]) / 1e9
			}
			if bk.GetUpperBound() != want {
				t.Errorf("%s: {%s}: bucket %d le=%v, want %v", name, k, i, bk.GetUpperBound(), want)
			}
			if i > 0 && bk.GetCumulativeCount() < b[i-1].GetCumulativeCount() {
				t.Errorf("%s: {%s}: bucket le=%v has fewer than the one before", name, k, bk.GetUpperBound())
			}
		}
		q := summaries[k]
		if q == nil {
			t.Errorf("%s: {%s}: a histogram without a summary", name, k)
			continue
		}
		if last := b[len(b)-1].GetCumulativeCount(); last != h.GetSampleCount() || last != q.GetSampleCount() || h.GetSampleSum() != q.GetSampleSum() {
			t.Errorf("%s: {%s}: +Inf %d, count %d, sum %v; summary count %d, sum %v", name, k, last, h.GetSampleCount(), h.GetSampleSum(), q.GetSampleCount(), q.GetSampleSum())
		}
	}
}

// TestOpenMetricsHistogramBuckets: the buckets count the recorded samples
// by the documented rule (a sample counts at le=b when its lowest
// equivalent value is at most b), over every run with figures: a failed
// run is left out, two runs add up.
func TestOpenMetricsHistogramBuckets(t *testing.T) {
	run := func(n int, values ...uint64) report.Result {
		rec := latency.NewRecorder(report.BasisRTT) // values as recorded, not halved
		for _, v := range values {
			rec.Record(v)
		}
		return report.Result{Test: "read-lat", Connection: "RC", Size: 2, Run: n, Latency: rec.Snapshot()}
	}
	doc := report.NewDocument()
	failed := run(3, 1, 1, 1)
	failed.Error = "lost"
	doc.Results = []report.Result{
		// 4999 and 5003 are recorded as 4996 and 5000 (in units of 4 ns
		// from 4096 to 8191), so both count at le=5 µs; 5004 does not.
		run(1, 150, 150, 150, 1000, 1000, 1000, 4999, 5003, 5004),
		run(2, 1000, 1000, 1001, 5000, 70_000_000_000),
		failed,
	}
	fams := parseOpenMetrics(t, render(t, FormatOpenMetrics, doc))
	checkLatencyHistograms(t, "buckets", doc, fams)
	h := fams["rdmabench_latency_seconds"].GetMetric()[0].GetHistogram()
	want := map[float64]uint64{1e-7: 0, 2e-7: 3, 5e-7: 3, 1e-6: 8, 2e-6: 9, 5e-6: 12, 1e-5: 13, 10: 13, math.Inf(1): 14}
	for _, b := range h.GetBucket() {
		if w, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
			t.Errorf("le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
	}
	if h.GetSampleCount() != 14 {
		t.Errorf("count %d, want 14", h.GetSampleCount())
	}
}

// TestOpenMetricsSources: several documents in one exposition, told apart
// by a label source; the parsers read it, with no sample twice.
func TestOpenMetricsSources(t *testing.T) {
	var buf bytes.Buffer
	srcs := []report.Source{{Name: "base.json", Doc: reporttest.BaseRuns()}, {Name: "new.json", Doc: reporttest.RegressedRuns()}, {Name: "new.json", Doc: reporttest.NoiseRuns()}}
	if err := WriteSources(&buf, FormatOpenMetrics, srcs); err != nil {
		t.Fatal(err)
	}
	fams := parseOpenMetrics(t, buf.Bytes())
	seen := map[string]bool{}
	for _, m := range fams["rdmabench_latency_quantiles_seconds"].GetMetric() {
		k := labelKey(m)
		if seen[k] {
			t.Errorf("sample {%s} twice", k)
		}
		seen[k] = true
	}
	for _, s := range []string{"source=base.json", "source=new.json,", "source=new.json (2)"} {
		found := false
		for k := range seen {
			found = found || strings.Contains(k+",", s)
		}
		if !found {
			t.Errorf("no sample with %s", s)
		}
	}
	if len(seen) != 3 {
		t.Errorf("%d latency summaries, want %d", len(seen), 3)
	}
}

// TestOpenMetricsRemote: the label remote names the other end: the
// server's host name as it reported it, else the server as given (a run
// that failed before reaching it), else loopback; every sample has it.
func TestOpenMetricsRemote(t *testing.T) {
	failed := reporttest.SuiteDoc()
	failed.Hosts.Remote = nil
	failed.Params.Server = "10.0.0.9:19515"
	for _, tc := range []struct {
		what string
		doc  *report.Document
		want string
	}{
		{"a server", reporttest.SuiteDoc(), "node-b"},
		{"a server never reached", failed, "10.0.0.9:19515"},
		{"loopback", reporttest.DurationDoc(), "loopback"},
		{"loopback, repeated", reporttest.RepeatDoc(), "loopback"},
	} {
		if got := OpenMetricsRemote(tc.doc); got != tc.want {
			t.Errorf("%s: remote %q, want %q", tc.what, got, tc.want)
		}
		for name, mf := range parseOpenMetrics(t, render(t, FormatOpenMetrics, tc.doc)) {
			for _, m := range mf.GetMetric() {
				if k := labelKey(m); !strings.Contains(","+k+",", ",remote="+tc.want+",") {
					t.Errorf("%s: %s{%s}: no remote=%s", tc.what, name, k, tc.want)
				}
			}
		}
	}
}

// TestOpenMetricsTwoServers: one host measuring two servers, each run its
// own document (the textfile collector's two files, or two `report`
// inputs in one exposition), writes two series of every figure, told
// apart by remote alone: no sample of one is a sample of the other, and
// both gathered into one scrape have every sample once.
func TestOpenMetricsTwoServers(t *testing.T) {
	docB, docC := reporttest.SuiteDoc(), reporttest.SuiteDoc()
	c := *docC.Hosts.Remote
	c.Hostname = "node-c"
	docC.Hosts.Remote, docC.Params.Server = &c, "node-c"
	samples := func(doc *report.Document) map[string]bool {
		out := map[string]bool{}
		for _, mf := range parseOpenMetrics(t, render(t, FormatOpenMetrics, doc)) {
			for k := range omSamples(mf) {
				out[k] = true
			}
		}
		return out
	}
	b, cs := samples(docB), samples(docC)
	if len(b) == 0 || len(b) != len(cs) {
		t.Fatalf("%d samples for node-b, %d for node-c", len(b), len(cs))
	}
	for k := range b {
		if cs[k] {
			t.Errorf("%s: the same series for both servers", k)
		}
		if !strings.Contains(k, "remote=node-b") {
			t.Errorf("%s: no remote=node-b", k)
		}
		if other := strings.ReplaceAll(k, "remote=node-b", "remote=node-c"); !cs[other] {
			t.Errorf("%s: node-c has no %s", k, other)
		}
	}
	// The textfile collector gathers both files into one scrape, as
	// Prometheus's client does several gatherers: a series in both
	// would fail it ("collected before with the same name and label
	// values").
	gatherer := func(doc *report.Document) prometheus.Gatherer {
		return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
			var fams []*dto.MetricFamily
			for _, mf := range parseOpenMetrics(t, render(t, FormatOpenMetrics, doc)) {
				fams = append(fams, mf)
			}
			return fams, nil
		})
	}
	fams, err := prometheus.Gatherers{gatherer(docB), gatherer(docC)}.Gather()
	if err != nil {
		t.Fatalf("both servers in one scrape: %v", err)
	}
	n := 0
	for _, mf := range fams {
		n += len(omSamples(mf))
	}
	if n != len(b)+len(cs) {
		t.Errorf("both servers in one scrape: %d samples, want %d", n, len(b)+len(cs))
	}
}

// TestOpenMetricsDecoderIsStrict: the decoder the tests read with refuses
// an exposition without its final "# EOF", so passing it means something.
func TestOpenMetricsDecoderIsStrict(t *testing.T) {
	out := render(t, FormatOpenMetrics, reporttest.SuiteDoc())
	if !bytes.HasSuffix(out, []byte("\n# EOF\n")) {
		t.Fatalf("no final # EOF:\n%s", out)
	}
	dec := expfmt.NewDecoder(bytes.NewReader(bytes.TrimSuffix(out, []byte("# EOF\n"))), expfmt.NewFormat(expfmt.TypeOpenMetrics))
	var err error
	for err == nil {
		err = dec.Decode(&dto.MetricFamily{})
	}
	if errors.Is(err, io.EOF) {
		t.Error("the OpenMetrics decoder read an exposition without # EOF")
	}
}
