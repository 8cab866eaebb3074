package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// FormatOpenMetrics is the OpenMetrics text exposition, which Prometheus
// and node_exporter's textfile collector read (write it to a *.prom file
// in the collector's directory).
const FormatOpenMetrics = "openmetrics"

// The metric families of the OpenMetrics format, all gauges: the figures
// of the last run, replaced by the next.
const (
	metricLatency     = "rdmabench_latency_seconds"
	metricLatencyMean = "rdmabench_latency_mean_seconds"
	metricLatencySD   = "rdmabench_latency_stdev_seconds"
	metricBandwidth   = "rdmabench_bandwidth_bits_per_second"
	metricMsgRate     = "rdmabench_message_rate_messages_per_second"
	metricRuns        = "rdmabench_runs"
	metricFailedRuns  = "rdmabench_failed_runs"
	metricEnd         = "rdmabench_end_timestamp_seconds"
)

// openMetricsQuantiles are the quantile labels of rdmabench_latency_seconds
// and the figures they hold: 0 is the minimum and 1 the maximum.
var openMetricsQuantiles = []struct {
	q   string
	fig Figure
}{{"0", FigMin}, {"0.5", FigP50}, {"0.9", FigP90}, {"0.99", FigP99}, {"0.999", FigP999}, {"0.9999", FigP9999}, {"1", FigMax}}

// WriteOpenMetrics writes doc as OpenMetrics 1.0 text (which the
// Prometheus text parser of node_exporter's textfile collector also
// reads), encoded by Prometheus's own expfmt. Every sample has the labels
// test, connection, size (bytes), device (the local RDMA device, empty
// without one) and host (the local host name); the families are:
//
//	rdmabench_latency_seconds{...,basis,quantile}  quantiles 0 (min), 0.5, 0.9, 0.99, 0.999, 0.9999, 1 (max)
//	rdmabench_latency_mean_seconds{...,basis}      mean
//	rdmabench_latency_stdev_seconds{...,basis}     population standard deviation
//	rdmabench_bandwidth_bits_per_second{...}       payload bit/s (both directions summed when bidirectional)
//	rdmabench_message_rate_messages_per_second{...}
//	rdmabench_runs{...}                            runs with figures
//	rdmabench_failed_runs{...}                     runs that recorded an error
//	rdmabench_end_timestamp_seconds{device,host}   when the run ended, Unix time
//
// basis is rtt_half (one-way) or rtt (round trip). In a document of
// repeated runs each figure is the median over the runs (failed runs left
// out), as [Summarize] computes it. Latency and bandwidth are in base units
// (seconds, bit/s), as Prometheus names them.
func WriteOpenMetrics(w io.Writer, doc *Document) error {
	if doc == nil {
		return errors.New("report: write openmetrics: nil document")
	}
	return writeOpenMetrics(w, []Source{{Doc: doc}})
}

// writeOpenMetrics writes every source in one exposition, with a label
// source (its name) on every sample when there are several.
func writeOpenMetrics(w io.Writer, srcs []Source) error {
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
	for _, d := range []struct{ name, unit, help string }{
		{metricLatency, "seconds", "Latency at a quantile (0: min, 1: max) on its basis (rtt_half: one-way, half the round trip; rtt: round trip); the median over runs when repeated."},
		{metricLatencyMean, "seconds", "Mean latency on its basis; the median over runs when repeated."},
		{metricLatencySD, "seconds", "Population standard deviation of the latency on its basis; the median over runs when repeated."},
		{metricBandwidth, "bits_per_second", "Payload bandwidth (both directions summed when bidirectional); the median over runs when repeated."},
		{metricMsgRate, "messages_per_second", "Message rate (both directions summed when bidirectional); the median over runs when repeated."},
		{metricRuns, "", "Runs of the test at this size that measured it."},
		{metricFailedRuns, "", "Runs of the test at this size that recorded an error."},
		{metricEnd, "seconds", "When the run ended, Unix time."},
	} {
		mf := &dto.MetricFamily{Name: ptrTo(d.name), Help: ptrTo(d.help), Type: dto.MetricType_GAUGE.Enum()}
		if d.unit != "" {
			mf.Unit = ptrTo(d.unit)
		}
		f.list = append(f.list, mf)
		f.byKey[d.name] = mf
	}
	return f
}

func ptrTo[T any](v T) *T { return &v }

// gauge adds one sample to family name.
func (f *metricFamilies) gauge(name string, v float64, labels ...string) {
	m := &dto.Metric{Gauge: &dto.Gauge{Value: ptrTo(sig12(v))}}
	for i := 0; i+1 < len(labels); i += 2 {
		m.Label = append(m.Label, &dto.LabelPair{Name: ptrTo(labels[i]), Value: ptrTo(labels[i+1])})
	}
	mf := f.byKey[name]
	mf.Metric = append(mf.Metric, m)
}

// add adds the figures of doc, labelled with source when it is not empty.
func (f *metricFamilies) add(doc *Document, source string) {
	device := ""
	if d := doc.Hosts.Local.Device; d != nil {
		device = d.Name
	}
	host := doc.Hosts.Local.Hostname
	base := func(extra ...string) []string {
		l := []string{}
		if source != "" {
			l = append(l, "source", source)
		}
		return append(append(l, "device", device, "host", host), extra...)
	}
	if !doc.End.IsZero() {
		f.gauge(metricEnd, float64(doc.End.UnixNano())/1e9, base()...)
	}
	for _, sum := range Summarize(doc) {
		key := base("test", sum.Test, "connection", sum.Connection, "size", strconv.Itoa(sum.Size))
		if l := sum.Latency; l != nil {
			lat := slices.Concat(key, []string{"basis", l.Basis})
			for _, q := range openMetricsQuantiles {
				sp, _ := sum.Spread(q.fig)
				f.gauge(metricLatency, sp.Median/1e9, slices.Concat(lat, []string{"quantile", q.q})...)
			}
			f.gauge(metricLatencyMean, l.MeanNs.Median/1e9, lat...)
			f.gauge(metricLatencySD, l.StdevNs.Median/1e9, lat...)
		}
		if b := sum.Bandwidth; b != nil {
			f.gauge(metricBandwidth, b.Gbps.Median*1e9, key...)
			f.gauge(metricMsgRate, b.Mmsgps.Median*1e6, key...)
		}
		f.gauge(metricRuns, float64(sum.Runs-sum.Failed), key...)
		f.gauge(metricFailedRuns, float64(sum.Failed), key...)
	}
}
