package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/rdmabench/rdmabench/pkg/report"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// FormatOpenMetrics is the OpenMetrics text exposition, which Prometheus
// and node_exporter's textfile collector read (write it to a *.prom file
// in the collector's directory).
const FormatOpenMetrics = "openmetrics"

// The metric families of the OpenMetrics format: the figures of the last
// run, replaced by the next.
const (
	metricLatency          = "rdmabench_latency_seconds"           // histogram
	metricLatencyQuantiles = "rdmabench_latency_quantiles_seconds" // summary
	metricLatencyMean      = "rdmabench_latency_mean_seconds"
	metricLatencySD        = "rdmabench_latency_stdev_seconds"
	metricBandwidth        = "rdmabench_bandwidth_bytes_per_second"
	metricMsgRate          = "rdmabench_message_rate_messages_per_second"
	metricRuns             = "rdmabench_runs"
	metricFailedRuns       = "rdmabench_failed_runs"
	metricEnd              = "rdmabench_end_timestamp_seconds"
)

// OpenMetricsLatencyBoundsNs are the upper bounds (le), in nanoseconds,
// of the buckets of the histogram rdmabench_latency_seconds, before the
// last bucket +Inf: 1, 2 and 5 times each power of ten from 100 ns to
// 10 s (25 bounds). They are the same for every test, size and host, so
// the series of many hosts add up (sum by (le)) and histogram_quantile
// works on the sum. The spread covers a NIC's write latency (about 1 µs)
// up to Soft-RoCE's and TCP's milliseconds; the exact percentiles are
// rdmabench_latency_quantiles_seconds.
var OpenMetricsLatencyBoundsNs = func() []int64 {
	var b []int64
	for p := int64(100); p <= 1_000_000_000; p *= 10 {
		b = append(b, p, 2*p, 5*p)
	}
	return append(b, 10_000_000_000)
}()

// openMetricsQuantiles are the quantiles of the summary
// rdmabench_latency_quantiles_seconds and the figures they hold: 0 is the
// minimum and 1 the maximum, as Prometheus's own summaries say them.
var openMetricsQuantiles = []struct {
	q   float64
	fig report.Figure
}{{0, report.FigMin}, {0.5, report.FigP50}, {0.9, report.FigP90}, {0.99, report.FigP99}, {0.999, report.FigP999}, {0.9999, report.FigP9999}, {1, report.FigMax}}

// WriteOpenMetrics writes doc as OpenMetrics 1.0 text (which the
// Prometheus text parser of node_exporter's textfile collector also
// reads), encoded by Prometheus's own expfmt; `promtool check metrics`
// finds nothing to say about it. Every sample has the labels test,
// connection, size (bytes), device (the local RDMA device, empty without
// one), host (the local host name) and remote (the other end, see
// [OpenMetricsRemote]), so that one host measuring several servers writes
// a series per server; the families are:
//
//	rdmabench_latency_seconds{...,basis}            histogram: _bucket{le}, _sum, _count
//	rdmabench_latency_quantiles_seconds{...,basis}  summary: quantile 0 (min), 0.5, 0.9, 0.99, 0.999, 0.9999, 1 (max); _sum, _count
//	rdmabench_latency_mean_seconds{...,basis}       gauge: mean
//	rdmabench_latency_stdev_seconds{...,basis}      gauge: population standard deviation
//	rdmabench_bandwidth_bytes_per_second{...}       gauge: payload bytes/s (both directions summed when bidirectional)
//	rdmabench_message_rate_messages_per_second{...} gauge
//	rdmabench_runs{...}                             gauge: runs with figures
//	rdmabench_failed_runs{...}                      gauge: runs that recorded an error
//	rdmabench_end_timestamp_seconds{device,host,remote} gauge: when the run ended, Unix time
//
// basis is rtt_half (one-way) or rtt (round trip). The histogram's
// buckets (bounds [OpenMetricsLatencyBoundsNs]) count every sample of the
// runs with figures, read from their HdrHistograms: a sample counts in
// the bucket le=b when the lowest value equivalent to it (3 significant
// digits) is at most b, so one less than 0.1% above b may count there. It
// is left out for a result without its histogram (every result rdmabench
// records has one). _sum and _count, in both the histogram and the
// summary, are those of all the samples of those runs. In a document of
// repeated runs every other figure (the quantiles, gauges) is the median
// over the runs (failed runs left out), as [report.Document.Summarize] computes it.
// Figures are in base units (seconds, bytes/s), as Prometheus names them.
func WriteOpenMetrics(w io.Writer, doc *report.Document) error {
	if doc == nil {
		return errors.New("report: write openmetrics: nil document")
	}
	return writeOpenMetrics(w, []report.Source{{Doc: doc}})
}

// writeOpenMetrics writes every source in one exposition, with a label
// source (its name) on every sample when there are several.
func writeOpenMetrics(w io.Writer, srcs []report.Source) error {
	fams := newMetricFamilies()
	names := uniqueNames(srcs)
	for i, s := range srcs {
		source := ""
		if len(srcs) > 1 {
			source = names[i]
		}
		fams.add(s.Doc, source)
	}
	var out bytes.Buffer
	for _, mf := range fams.list {
		if len(mf.Metric) == 0 {
			continue
		}
		if _, err := expfmt.MetricFamilyToOpenMetrics(&out, mf); err != nil {
			return fmt.Errorf("report: write openmetrics: %w", err)
		}
	}
	if _, err := expfmt.FinalizeOpenMetrics(&out); err != nil {
		return fmt.Errorf("report: write openmetrics: %w", err)
	}
	if _, err := w.Write(out.Bytes()); err != nil {
		return fmt.Errorf("report: write openmetrics: %w", err)
	}
	return nil
}

// metricFamilies are the families being filled, in output order.
type metricFamilies struct {
	list  []*dto.MetricFamily
	byKey map[string]*dto.MetricFamily
}

func newMetricFamilies() *metricFamilies {
	f := &metricFamilies{byKey: map[string]*dto.MetricFamily{}}
	gauge, histogram, summary := dto.MetricType_GAUGE, dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY
	for _, d := range []struct {
		name, unit string
		typ        dto.MetricType
		help       string
	}{
		{metricLatency, "seconds", histogram, "Latency samples on their basis (rtt_half: one-way, half the round trip; rtt: round trip), of every run; the same bucket bounds for every test and host."},
		{metricLatencyQuantiles, "seconds", summary, "Latency at a quantile (0: min, 1: max) on its basis, from the HdrHistogram (3 significant digits); the median over runs when repeated."},
		{metricLatencyMean, "seconds", gauge, "Mean latency on its basis; the median over runs when repeated."},
		{metricLatencySD, "seconds", gauge, "Population standard deviation of the latency on its basis; the median over runs when repeated."},
		{metricBandwidth, "bytes_per_second", gauge, "Payload bandwidth (both directions summed when bidirectional); the median over runs when repeated."},
		{metricMsgRate, "messages_per_second", gauge, "Message rate (both directions summed when bidirectional); the median over runs when repeated."},
		{metricRuns, "", gauge, "Runs of the test at this size that measured it."},
		{metricFailedRuns, "", gauge, "Runs of the test at this size that recorded an error."},
		{metricEnd, "seconds", gauge, "When the run ended, Unix time."},
	} {
		mf := &dto.MetricFamily{Name: ptrTo(d.name), Help: ptrTo(d.help), Type: d.typ.Enum()}
		if d.unit != "" {
			mf.Unit = ptrTo(d.unit)
		}
		f.list = append(f.list, mf)
		f.byKey[d.name] = mf
	}
	return f
}

// labelPairs makes name, value pairs of labels.
func labelPairs(labels []string) []*dto.LabelPair {
	var l []*dto.LabelPair
	for i := 0; i+1 < len(labels); i += 2 {
		l = append(l, &dto.LabelPair{Name: ptrTo(labels[i]), Value: ptrTo(labels[i+1])})
	}
	return l
}

// gauge adds one sample to family name.
func (f *metricFamilies) gauge(name string, v float64, labels ...string) {
	f.add1(name, &dto.Metric{Label: labelPairs(labels), Gauge: &dto.Gauge{Value: ptrTo(sig12(v))}})
}

func (f *metricFamilies) add1(name string, m *dto.Metric) {
	mf := f.byKey[name]
	mf.Metric = append(mf.Metric, m)
}

// add adds the figures of doc, labelled with source when it is not empty.
func (f *metricFamilies) add(doc *report.Document, source string) {
	device := ""
	if d := doc.Hosts.Local.Device; d != nil {
		device = d.Name
	}
	host := doc.Hosts.Local.Hostname
	remote := OpenMetricsRemote(doc)
	base := func(extra ...string) []string {
		l := []string{}
		if source != "" {
			l = append(l, "source", source)
		}
		return append(append(l, "device", device, "host", host, "remote", remote), extra...)
	}
	if !doc.End.IsZero() {
		f.gauge(metricEnd, float64(doc.End.UnixNano())/1e9, base()...)
	}
	groups := doc.Groups()
	for i := range groups {
		g := &groups[i]
		sum := g.Summarize()
		key := base("test", sum.Test, "connection", sum.Connection, "size", strconv.Itoa(sum.Size))
		if l := sum.Latency; l != nil {
			lat := slices.Concat(key, []string{"basis", l.Basis})
			count, total := latencySamples(g)
			q := &dto.Summary{SampleCount: ptrTo(count), SampleSum: ptrTo(sig12(total / 1e9))}
			for _, oq := range openMetricsQuantiles {
				sp, _ := sum.Spread(oq.fig)
				q.Quantile = append(q.Quantile, &dto.Quantile{Quantile: ptrTo(oq.q), Value: ptrTo(sig12(sp.Median / 1e9))})
			}
			if h := latencyHistogram(g); h != nil {
				f.add1(metricLatency, &dto.Metric{Label: labelPairs(lat), Histogram: h})
			}
			f.add1(metricLatencyQuantiles, &dto.Metric{Label: labelPairs(lat), Summary: q})
			f.gauge(metricLatencyMean, l.MeanNs.Median/1e9, lat...)
			f.gauge(metricLatencySD, l.StdevNs.Median/1e9, lat...)
		}
		if b := sum.Bandwidth; b != nil {
			f.gauge(metricBandwidth, b.Gbps.Median*1e9/8, key...)
			f.gauge(metricMsgRate, b.Mmsgps.Median*1e6, key...)
		}
		f.gauge(metricRuns, float64(sum.Runs-sum.Failed), key...)
		f.gauge(metricFailedRuns, float64(sum.Failed), key...)
	}
}

// OpenMetricsLoopback is the label remote of a run whose two ends ran in
// one process (loopback): not a host's name, since a server on the same
// host (remote its host name) is another measurement.
const OpenMetricsLoopback = "loopback"

// OpenMetricsRemote is the label remote of doc's samples: the server's
// host name as it reported it (the document's hosts.remote.hostname),
// else the server as given on the command line (params.server: a run
// that failed before reaching it), else, both ends in this process,
// [OpenMetricsLoopback].
func OpenMetricsRemote(doc *report.Document) string {
	if r := doc.Hosts.Remote; r != nil && r.Hostname != "" {
		return r.Hostname
	}
	if doc.Params.Server != "" {
		return doc.Params.Server
	}
	return OpenMetricsLoopback
}

// latencySamples returns the number of latency samples of g's runs with
// figures and their sum in ns (each run's count times its mean).
func latencySamples(g *report.Group) (count uint64, sumNs float64) {
	for _, r := range g.Results {
		if r.Error != "" || r.Latency == nil || r.Latency.Count <= 0 {
			continue
		}
		count += uint64(r.Latency.Count)
		sumNs += float64(r.Latency.Count) * r.Latency.MeanNs
	}
	return count, sumNs
}

// latencyHistogram returns the histogram of the latency samples of g's
// runs with figures, bucketed by [OpenMetricsLatencyBoundsNs] (in
// seconds), or nil when one of them has no decodable histogram or its
// count differs from the run's.
func latencyHistogram(g *report.Group) *dto.Histogram {
	bounds := OpenMetricsLatencyBoundsNs
	counts := make([]uint64, len(bounds)+1) // the last: above every bound
	var total uint64
	var sumNs float64
	for _, r := range g.Results {
		l := r.Latency
		if r.Error != "" || l == nil {
			continue
		}
		if l.Histogram == "" {
			return nil
		}
		h, err := l.DecodeHistogram()
		if err != nil || h.TotalCount() != l.Count {
			return nil
		}
		for _, bar := range h.Distribution() {
			if bar.Count == 0 {
				continue
			}
			i, _ := slices.BinarySearch(bounds, bar.From)
			counts[i] += uint64(bar.Count)
		}
		total += uint64(l.Count)
		sumNs += float64(l.Count) * l.MeanNs
	}
	out := &dto.Histogram{SampleCount: ptrTo(total), SampleSum: ptrTo(sig12(sumNs / 1e9))}
	var cum uint64
	for i, b := range bounds {
		cum += counts[i]
		out.Bucket = append(out.Bucket, &dto.Bucket{UpperBound: ptrTo(float64(b) / 1e9), CumulativeCount: ptrTo(cum)})
	}
	out.Bucket = append(out.Bucket, &dto.Bucket{UpperBound: ptrTo(math.Inf(1)), CumulativeCount: ptrTo(total)})
	return out
}
