package report

import (
	"bytes"
	"errors"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

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
		if mf.GetType() != dto.MetricType_GAUGE || mf.GetHelp() == "" {
			t.Errorf("%s: type %v, help %q", name, mf.GetType(), mf.GetHelp())
		}
		if unit := mf.GetUnit(); unit != "" && !strings.HasSuffix(name, "_"+unit) {
			t.Errorf("%s: unit %q not in the name", name, unit)
		}
	}
	return om
}

// familySamples lists a family's samples as "labels value", sorted.
func familySamples(mf *dto.MetricFamily) []string {
	var out []string
	for _, m := range mf.GetMetric() {
		out = append(out, labelKey(m)+" "+strconv.FormatFloat(m.GetGauge().GetValue(), 'g', -1, 64))
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
// repeated), under the labels test, connection, size, device and host,
// and nothing else.
func TestOpenMetricsReadsBack(t *testing.T) {
	docs := map[string]*Document{"suite": suiteDoc(), "duration": durationDoc(), "repeat": repeatDoc(), "sweep": sweepDoc(true), "empty": NewDocument()}
	for name, doc := range docs {
		got := parseOpenMetrics(t, render(t, FormatOpenMetrics, doc))
		want := map[string]map[string]float64{}
		put := func(family string, v float64, labels ...string) {
			kv := []string{}
			for i := 0; i < len(labels); i += 2 {
				kv = append(kv, labels[i]+"="+labels[i+1])
			}
			sort.Strings(kv)
			if want[family] == nil {
				want[family] = map[string]float64{}
			}
			want[family][strings.Join(kv, ",")] = v
		}
		dev := ""
		if d := doc.Hosts.Local.Device; d != nil {
			dev = d.Name
		}
		host := doc.Hosts.Local.Hostname
		if !doc.End.IsZero() {
			put("rdmabench_end_timestamp_seconds", float64(doc.End.Unix()), "device", dev, "host", host)
		}
		for _, s := range Summarize(doc) {
			key := []string{"device", dev, "host", host, "test", s.Test, "connection", s.Connection, "size", strconv.Itoa(s.Size)}
			if s.Latency != nil {
				lat := append(key[:len(key):len(key)], "basis", s.Latency.Basis)
				for q, f := range map[string]Figure{"0": FigMin, "0.5": FigP50, "0.9": FigP90, "0.99": FigP99, "0.999": FigP999, "0.9999": FigP9999, "1": FigMax} {
					sp, _ := s.Spread(f)
					put("rdmabench_latency_seconds", sp.Median/1e9, append(lat[:len(lat):len(lat)], "quantile", q)...)
				}
				put("rdmabench_latency_mean_seconds", s.Latency.MeanNs.Median/1e9, lat...)
				put("rdmabench_latency_stdev_seconds", s.Latency.StdevNs.Median/1e9, lat...)
			}
			if s.Bandwidth != nil {
				put("rdmabench_bandwidth_bits_per_second", s.Bandwidth.Gbps.Median*1e9, key...)
				put("rdmabench_message_rate_messages_per_second", s.Bandwidth.Mmsgps.Median*1e6, key...)
			}
			put("rdmabench_runs", float64(s.Runs-s.Failed), key...)
			put("rdmabench_failed_runs", float64(s.Failed), key...)
		}
		for family, w := range want {
			mf := got[family]
			if mf == nil {
				t.Errorf("%s: no family %s", name, family)
				continue
			}
			if len(mf.GetMetric()) != len(w) {
				t.Errorf("%s: %s has %d samples, want %d", name, family, len(mf.GetMetric()), len(w))
			}
			for _, m := range mf.GetMetric() {
				k := labelKey(m)
				v, ok := w[k]
				g := m.GetGauge().GetValue()
				if !ok {
					t.Errorf("%s: %s{%s}: not a figure of the document", name, family, k)
				} else if math.Abs(g-v) > 1e-9*math.Abs(v) {
					t.Errorf("%s: %s{%s} = %v, want %v", name, family, k, g, v)
				}
			}
		}
		for family := range got {
			if want[family] == nil {
				t.Errorf("%s: family %s has no figure of the document", name, family)
			}
		}
	}
}

// TestOpenMetricsSources: several documents in one exposition, told apart
// by a label source; the parsers read it, with no sample twice.
func TestOpenMetricsSources(t *testing.T) {
	var buf bytes.Buffer
	srcs := []Source{{"base.json", baseRuns()}, {"new.json", regressedRuns()}, {"new.json", noiseRuns()}}
	if err := WriteSources(&buf, FormatOpenMetrics, srcs); err != nil {
		t.Fatal(err)
	}
	fams := parseOpenMetrics(t, buf.Bytes())
	seen := map[string]bool{}
	for _, m := range fams["rdmabench_latency_seconds"].GetMetric() {
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
	if len(seen) != 3*7 {
		t.Errorf("%d latency samples, want %d", len(seen), 3*7)
	}
}

// TestOpenMetricsDecoderIsStrict: the decoder the tests read with refuses
// an exposition without its final "# EOF", so passing it means something.
func TestOpenMetricsDecoderIsStrict(t *testing.T) {
	out := render(t, FormatOpenMetrics, suiteDoc())
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
