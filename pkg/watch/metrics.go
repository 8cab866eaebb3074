package watch

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/rdmabench/rdmabench/internal/buildinfo"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/render"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// The metric families the agent exports (docs/agent.md is their reference).
const (
	metricLatency     = "rdmabench_agent_probe_latency_seconds"          // histogram, per peer
	metricProbes      = "rdmabench_agent_probes_total"                   // counter, per peer and result
	metricLastOK      = "rdmabench_agent_peer_last_ok_timestamp_seconds" // gauge, per peer
	metricP50         = "rdmabench_agent_peer_p50_seconds"               // gauge, per peer, as judged
	metricSlow        = "rdmabench_agent_peer_slow"                      // gauge 0/1, per peer judged
	metricJudged      = "rdmabench_agent_blame_judged"                   // gauge 0/1, per figure (test)
	metricPeers       = "rdmabench_agent_peers"                          // gauge
	metricPeriod      = "rdmabench_agent_probe_period_seconds"           // gauge
	metricSkipped     = "rdmabench_agent_probes_skipped_total"           // counter
	metricPeersErrors = "rdmabench_agent_peers_errors_total"             // counter, per kind
	metricPeersOK     = "rdmabench_agent_peers_ok"                       // gauge 0/1
	metricPortCounter = "rdmabench_agent_port_errors_total"              // counter, per port counter
	metricPortOK      = "rdmabench_agent_port_counters_ok"               // gauge 0/1
	// The registry's, with one (--registry).
	metricRegistrations = "rdmabench_agent_registrations" // gauge
	// The bandwidth probe's, with one.
	metricBW       = "rdmabench_agent_peer_bandwidth_bytes_per_second"          // gauge, per peer
	metricBWProbes = "rdmabench_agent_bandwidth_probes_total"                   // counter, per peer and result
	metricBWLastOK = "rdmabench_agent_peer_bandwidth_last_ok_timestamp_seconds" // gauge, per peer
	metricBWLow    = "rdmabench_agent_peer_bandwidth_low"                       // gauge 0/1, per peer
	metricBWPeriod = "rdmabench_agent_bandwidth_probe_period_seconds"           // gauge
	// The kept probe sessions', with them (tcp-lat, --keep).
	metricSessionsOpened = "rdmabench_agent_probe_sessions_opened_total" // counter
	metricSessionsFailed = "rdmabench_agent_probe_sessions_failed_total" // counter, per kind
	metricSessions       = "rdmabench_agent_probe_sessions"              // gauge
	// The UD probe's, with it (--probe ud-lat).
	metricUDAnswered    = "rdmabench_agent_ud_probes_answered_total"      // counter
	metricUDLate        = "rdmabench_agent_ud_answers_late_total"         // counter
	metricUDBad         = "rdmabench_agent_ud_messages_bad_total"         // counter
	metricNICTimestamps = "rdmabench_agent_nic_timestamps"                // gauge 0/1
	metricNetLatency    = "rdmabench_agent_probe_network_latency_seconds" // histogram, per peer
)

// Probe results: "ok", or the kind of error (the label result of
// rdmabench_agent_probes_total).
const (
	ResultOK       = "ok"
	ResultConnect  = "connect"  // the peer's server cannot be reached (refused, unreachable, name not found)
	ResultTimeout  = "timeout"  // no answer in time (the probe timeout, a silent peer)
	ResultBusy     = "busy"     // the peer's server ran another test, through every retry
	ResultAuth     = "auth"     // the token was refused
	ResultVersion  = "version"  // the peer runs another protocol version
	ResultProtocol = "protocol" // the peer answered what is not the control protocol (garbage), or closed without saying bye (killed, crashed)
	ResultClosed   = "closed"   // the peer's server said it is shutting down (bye) and closed: a clean stop or restart, not an error of the link
	ResultRefused  = "refused"  // the peer's server refused the probe test (spec, limit)
	ResultTest     = "test"     // the test itself failed
)

// results are every result, in the order of a peer's counters.
var results = []string{ResultOK, ResultConnect, ResultTimeout, ResultBusy, ResultAuth, ResultVersion,
	ResultProtocol, ResultClosed, ResultRefused, ResultTest}

func resultIndex(r string) int {
	i := slices.Index(results, r)
	if i < 0 {
		return len(results) - 1
	}
	return i
}

// peersKinds are the kinds of the peers' source errors, in counter order.
var peersKinds = []string{PeersRead, PeersParse, PeersTooMany, PeersNotFound, PeersResolve, PeersUnreachable, PeersRefused}

// recentProbes is how many of a peer's last good probes its judged p50 is
// the median of at most (Config.BlameProbes, by default all).
const recentProbes = 16

// peerStats is what the agent keeps of one peer: fixed size.
type peerStats struct {
	addr string
	// buckets counts the samples of every good probe by the bounds of
	// render.OpenMetricsLatencyBoundsNs, the last above them all (not
	// cumulative).
	buckets [26]uint64
	count   uint64
	sumNs   float64
	probes  [10]uint64 // by results
	lastOK  time.Time
	recent  [recentProbes]float64 // p50s (ns) of the last good probes, a ring
	nRecent int
	next    int
	window  int     // the ring's length used: Config.BlameProbes (recentProbes when 0)
	p50     float64 // judged p50 (ns), 0 until judged
	slow    bool
	// The bandwidth probes': by result, the last good one's payload
	// bytes per second and end, and blame's verdict on it.
	bwProbes [10]uint64
	bwBytes  float64
	bwAt     time.Time
	bwLow    bool
	// The network's time of the good UD probes' ping-pongs where both
	// NICs stamp (their stamps less the responder's delay), as buckets
	// above.
	netBuckets [26]uint64
	netCount   uint64
	netSumNs   float64
}

func init() {
	if len(render.OpenMetricsLatencyBoundsNs)+1 != len(peerStats{}.buckets) || len(peerStats{}.netBuckets) != len(peerStats{}.buckets) ||
		len(results) != len(peerStats{}.probes) {
		panic("watch: peerStats sizes out of date")
	}
}

// addSamples adds a good probe's samples: its HdrHistogram's bars and its
// count and mean.
func (p *peerStats) addSamples(l *report.Latency) error {
	h, err := l.DecodeHistogram()
	if err != nil {
		return err
	}
	bounds := render.OpenMetricsLatencyBoundsNs
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		i, _ := slices.BinarySearch(bounds, bar.From)
		p.buckets[i] += uint64(bar.Count)
	}
	p.count += uint64(l.Count)
	p.sumNs += float64(l.Count) * l.MeanNs
	w := p.window
	if w <= 0 || w > recentProbes {
		w = recentProbes
	}
	p.recent[p.next] = l.P50Ns
	p.next = (p.next + 1) % w
	p.nRecent = min(p.nRecent+1, w)
	return nil
}

// recentP50 is the median of the p50s of the last good probes (ns), or 0
// with fewer than 3.
func (p *peerStats) recentP50() float64 {
	if p.nRecent < 3 {
		return 0
	}
	v := slices.Clone(p.recent[:p.nRecent])
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// labels are the labels every sample of the agent has, in order: host,
// device, then those of the sample.
type labels struct{ host, device, test, basis string }

// portReading is one read of the probe device's port counters.
type portReading struct {
	counters map[string]uint64 // by name, those verbs.IsErrorCounter picks
	err      error
}

// state is everything the metrics say, as of one moment.
type state struct {
	labels
	port        int          // the probe device's port
	peers       []*peerStats // in the peers file's order
	skipped     uint64
	peersErrors [7]uint64 // by peersKinds
	peersOK     bool
	// slowJudged, bwJudged: the last blame pass judged the peers' p50s,
	// bandwidths: at least MinBlamePeers of them had one. Without, no
	// peer has a verdict.
	slowJudged, bwJudged bool
	rate                 float64
	// bwTest is the bandwidth probe's test ("" without one); every
	// bwPeriod one starts, at one peer.
	bwTest   string
	bwPeriod time.Duration
	// registry: the agent keeps one, of registrations live ones at the
	// scrape.
	registry      bool
	registrations int
	// The kept probe sessions' (keptOn: the probes run on them): set up
	// in all, torn down for an error by results, kept now.
	keptOn     bool
	keptOpened uint64
	keptFailed [10]uint64
	keptOpen   int
	// The UD probe's (udOn: the probe is it): its counters as last read,
	// whether the device stamps completions, and whether the probe's CQs
	// do (the probes then measure the network's time).
	udOn          bool
	ud            workloads.UDProbeCounters
	nicTimestamps bool
	stamped       bool
}

func ptrTo[T any](v T) *T { return &v }

// promHistogram is a histogram of buckets (by the bounds of
// render.OpenMetricsLatencyBoundsNs, the last above them all, not
// cumulative) of count samples adding up to sumNs.
func promHistogram(buckets []uint64, count uint64, sumNs float64) *dto.Histogram {
	h := &dto.Histogram{SampleCount: ptrTo(count), SampleSum: ptrTo(sumNs / 1e9)}
	var cum uint64
	for i, b := range render.OpenMetricsLatencyBoundsNs {
		cum += buckets[i]
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptrTo(float64(b) / 1e9), CumulativeCount: ptrTo(cum)})
	}
	h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptrTo(math.Inf(1)), CumulativeCount: ptrTo(count)})
	return h
}

func labelPairs(kv ...string) []*dto.LabelPair {
	l := make([]*dto.LabelPair, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		l = append(l, &dto.LabelPair{Name: ptrTo(kv[i]), Value: ptrTo(kv[i+1])})
	}
	return l
}

// Formats the endpoint serves: OpenMetrics 1.0 text to a scraper that
// asks for it (Prometheus does), else the Prometheus text format 0.0.4
// (curl's, what `promtool check metrics` lints); both are Prometheus's
// expfmt encoding of the same families.
var (
	FormatOpenMetrics = expfmt.NewFormat(expfmt.TypeOpenMetrics)
	FormatText        = expfmt.NewFormat(expfmt.TypeTextPlain)
)

// metricBuildInfo is the build's family: 1, its facts in the labels, as
// Prometheus's own *_build_info.
const metricBuildInfo = "rdmabench_build_info"

// processRegistry is the registry of what the agent says of its process
// beside its own families: rdmabench_build_info, the process collector's
// process_* (CPU seconds, resident and virtual memory, descriptors, start
// time) and the Go collector's go_* (goroutines, threads, GC pauses and
// the runtime's memory classes: go_memory_classes_heap_objects_bytes is
// the live heap, go_memory_classes_total_bytes all the runtime mapped),
// every sample with the agent's labels host and device. The collector's
// go_memstats_* are left out: in OpenMetrics, which Prometheus asks the
// agent for, its counter go_memstats_alloc_bytes_total is a family
// go_memstats_alloc_bytes, the name of its gauge too, and a strict parser
// refuses the exposition.
func processRegistry(host, device string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	wrapped := prometheus.WrapRegistererWith(prometheus.Labels{"host": host, "device": device}, reg)
	bi := buildinfo.Get()
	commit := bi.Commit
	switch {
	case commit == "":
		commit = "unknown"
	case bi.Modified:
		commit += "-modified"
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricBuildInfo,
		Help:        "1, with this rdmabench's version, commit (-modified: built from a changed tree) and Go version in the labels.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "commit": commit, "goversion": bi.GoVersion}})
	build.Set(1)
	wrapped.MustRegister(build, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector(collectors.WithGoCollectorMemStatsMetricsDisabled(), collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsMemory)))
	return reg
}

// writeMetrics writes s, and pc when not nil, with what reg gathers
// (nil: nothing more), in format: one exposition, gathered together
// (prometheus.Gatherers, which refuses a series twice) and encoded by
// expfmt.
func writeMetrics(w io.Writer, s *state, pc *portReading, reg prometheus.Gatherer, format expfmt.Format) error {
	return writeFamilies(w, metricFamilies(s, pc), reg, format)
}

// writeFamilies writes own, the agent's families, with what reg gathers
// (nil: nothing more), in format.
func writeFamilies(w io.Writer, own []*dto.MetricFamily, reg prometheus.Gatherer, format expfmt.Format) error {
	fams := own
	if reg != nil {
		var err error
		if fams, err = (prometheus.Gatherers{reg, prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return own, nil })}).Gather(); err != nil {
			return fmt.Errorf("write metrics: %w", err)
		}
		// Gather keeps a family's name, help and type, not its unit.
		units := map[string]*string{}
		for _, mf := range own {
			units[mf.GetName()] = mf.Unit
		}
		for _, mf := range fams {
			if u, ok := units[mf.GetName()]; ok {
				mf.Unit = u
			}
		}
	}
	var out bytes.Buffer
	enc := expfmt.NewEncoder(&out, format)
	for _, mf := range fams {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("write metrics: %w", err)
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		if err := c.Close(); err != nil {
			return fmt.Errorf("write metrics: %w", err)
		}
	}
	_, err := w.Write(out.Bytes())
	return err
}

// metricFamilies are the families of s and pc (nil: no port counters),
// in output order; those with no sample are left out.
func metricFamilies(s *state, pc *portReading) []*dto.MetricFamily {
	gauge, counter, histogram := dto.MetricType_GAUGE, dto.MetricType_COUNTER, dto.MetricType_HISTOGRAM
	fam := func(name, unit string, typ dto.MetricType, help string) *dto.MetricFamily {
		mf := &dto.MetricFamily{Name: ptrTo(name), Help: ptrTo(help), Type: typ.Enum()}
		if unit != "" {
			mf.Unit = ptrTo(unit)
		}
		return mf
	}
	base := []string{"host", s.host, "device", s.device}
	peerL := func(p *peerStats, extra ...string) []*dto.LabelPair {
		return labelPairs(append(append(slices.Clone(base), "peer", p.addr, "test", s.test), extra...)...)
	}
	g := func(v float64, l []*dto.LabelPair) *dto.Metric {
		return &dto.Metric{Label: l, Gauge: &dto.Gauge{Value: ptrTo(v)}}
	}
	c := func(v uint64, l []*dto.LabelPair) *dto.Metric {
		return &dto.Metric{Label: l, Counter: &dto.Counter{Value: ptrTo(float64(v))}}
	}
	b01 := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}

	lat := fam(metricLatency, "seconds", histogram, "Latency samples of the good probes of a peer, on the test's basis (rtt_half: one-way, half the round trip; rtt: round trip), since the agent started; the bucket bounds of rdmabench_latency_seconds.")
	probes := fam(metricProbes, "", counter, "Probes of a peer since the agent started, by result: ok, closed (its server shut down cleanly), or the kind of error.")
	lastOK := fam(metricLastOK, "seconds", gauge, "When the last good probe of a peer ended, Unix time; absent before the first.")
	p50 := fam(metricP50, "seconds", gauge, "A peer's p50 as blame judges it: the median of the p50s of its last good probes (--blame-probes, 16 by default; at least 3); absent before.")
	slow := fam(metricSlow, "", gauge, "1 when blame judged a peer's p50 bad against this agent's other peers (the mesh's rules), else 0; absent for a peer not judged (no p50 yet) and for all while blame_judged is 0.")
	judged := fam(metricJudged, "", gauge, "1 when the last blame pass judged this test's figure of the peers (at least 3 peers had one), 0 when it could not (fewer: none can stand out) or has not run: then no peer has a verdict.")
	judged.Metric = append(judged.Metric, g(b01(s.slowJudged), labelPairs(append(slices.Clone(base), "test", s.test)...)))
	peers := fam(metricPeers, "", gauge, "Peers in the set being probed.")
	period := fam(metricPeriod, "seconds", gauge, "Every peer is probed once in this period: the peers over the probe rate.")
	skipped := fam(metricSkipped, "", counter, "Probe slots skipped because every peer was still being probed or the probes in flight were at their cap.")
	peersErr := fam(metricPeersErrors, "", counter, "Times the peers' source could not be used, by kind: the file's read or parse, the DNS name's not_found or resolve, the registry's unreachable or refused (the last good set is kept); too_many (the first peers are kept).")
	peersOK := fam(metricPeersOK, "", gauge, "1 when the last read of the peers file, lookup of the peers' name or registration was used whole, else 0.")
	registrations := fam(metricRegistrations, "", gauge, "With --registry: the live registrations of the registry this agent keeps, at this scrape.")
	if s.registry {
		registrations.Metric = append(registrations.Metric, g(float64(s.registrations), labelPairs(base...)))
	}

	netLat := fam(metricNetLatency, "seconds", histogram, "With --probe ud-lat where both ends' NICs stamp completions: the network's time of each ping-pong of the good probes of a peer (the two NICs' stamps, less the peer's delay from its receive to its answer's send), on the test's basis, since the agent started; the bucket bounds of rdmabench_latency_seconds.")
	for _, p := range s.peers {
		lat.Metric = append(lat.Metric, &dto.Metric{Label: peerL(p, "basis", s.basis), Histogram: promHistogram(p.buckets[:], p.count, p.sumNs)})
		if s.stamped {
			netLat.Metric = append(netLat.Metric, &dto.Metric{Label: peerL(p, "basis", s.basis), Histogram: promHistogram(p.netBuckets[:], p.netCount, p.netSumNs)})
		}
		for i, r := range results {
			probes.Metric = append(probes.Metric, c(p.probes[i], peerL(p, "result", r)))
		}
		if !p.lastOK.IsZero() {
			lastOK.Metric = append(lastOK.Metric, g(float64(p.lastOK.UnixMilli())/1e3, peerL(p)))
		}
		if p.p50 > 0 {
			p50.Metric = append(p50.Metric, g(p.p50/1e9, peerL(p, "basis", s.basis)))
		}
		if s.slowJudged && p.p50 > 0 {
			slow.Metric = append(slow.Metric, g(b01(p.slow), peerL(p)))
		}
	}
	peers.Metric = append(peers.Metric, g(float64(len(s.peers)), labelPairs(base...)))
	if s.rate > 0 {
		period.Metric = append(period.Metric, g(float64(len(s.peers))/s.rate, labelPairs(base...)))
	}
	skipped.Metric = append(skipped.Metric, c(s.skipped, labelPairs(base...)))
	for i, k := range peersKinds {
		peersErr.Metric = append(peersErr.Metric, c(s.peersErrors[i], labelPairs(append(slices.Clone(base), "kind", k)...)))
	}
	peersOK.Metric = append(peersOK.Metric, g(b01(s.peersOK), labelPairs(base...)))

	portCounter := fam(metricPortCounter, "", counter, "The error and retransmission counters of the probe device's port, by name, as the kernel shows them: the driver's (sysfs ports/PORT/hw_counters) and the IB port counters (ports/PORT/counters; some saturate rather than wrap).")
	portOK := fam(metricPortOK, "", gauge, "1 when the port counters of the probe device could be read at this scrape, else 0.")
	if pc != nil {
		portL := append(slices.Clone(base), "port", strconv.Itoa(s.port))
		names := slices.Sorted(maps.Keys(pc.counters))
		for _, n := range names {
			portCounter.Metric = append(portCounter.Metric, c(pc.counters[n], labelPairs(append(slices.Clone(portL), "counter", n)...)))
		}
		portOK.Metric = append(portOK.Metric, g(b01(pc.err == nil), labelPairs(portL...)))
	}

	bw := fam(metricBW, "bytes_per_second", gauge, "The payload rate of the last good bandwidth probe of a peer (--bw-probe), this agent sending; absent before the first.")
	bwProbes := fam(metricBWProbes, "", counter, "Bandwidth probes of a peer since the agent started, by result, as rdmabench_agent_probes_total's.")
	bwLastOK := fam(metricBWLastOK, "seconds", gauge, "When the last good bandwidth probe of a peer ended, Unix time; absent before the first.")
	bwLow := fam(metricBWLow, "", gauge, "1 when blame judged a peer's last bandwidth bad against this agent's other peers (the mesh's rules), else 0; absent for a peer not judged (no bandwidth yet) and for all while blame_judged is 0.")
	bwPeriod := fam(metricBWPeriod, "seconds", gauge, "Every peer gets a bandwidth probe once in this period: the peers times the interval between two (--bw-duration over --bw-share).")
	if s.bwTest != "" {
		bwL := func(p *peerStats, extra ...string) []*dto.LabelPair {
			return labelPairs(append(append(slices.Clone(base), "peer", p.addr, "test", s.bwTest), extra...)...)
		}
		for _, p := range s.peers {
			if !p.bwAt.IsZero() {
				bw.Metric = append(bw.Metric, g(p.bwBytes, bwL(p)))
				bwLastOK.Metric = append(bwLastOK.Metric, g(float64(p.bwAt.UnixMilli())/1e3, bwL(p)))
			}
			for i, r := range results {
				bwProbes.Metric = append(bwProbes.Metric, c(p.bwProbes[i], bwL(p, "result", r)))
			}
			if s.bwJudged && p.bwBytes > 0 {
				bwLow.Metric = append(bwLow.Metric, g(b01(p.bwLow), bwL(p)))
			}
		}
		judged.Metric = append(judged.Metric, g(b01(s.bwJudged), labelPairs(append(slices.Clone(base), "test", s.bwTest)...)))
		bwPeriod.Metric = append(bwPeriod.Metric, g(float64(len(s.peers))*s.bwPeriod.Seconds(), labelPairs(base...)))
	}

	sOpened := fam(metricSessionsOpened, "", counter, "Kept probe sessions set up (a control connection's test kept open, its endpoints reused probe after probe), since the agent started: one per peer unless sessions fail.")
	sFailed := fam(metricSessionsFailed, "", counter, "Kept probe sessions torn down for an error, by kind (as rdmabench_agent_probes_total's results); each is set up again at the peer's next probe.")
	sOpen := fam(metricSessions, "", gauge, "Kept probe sessions open now, at most one per peer.")
	if s.keptOn {
		sOpened.Metric = append(sOpened.Metric, c(s.keptOpened, labelPairs(append(slices.Clone(base), "test", s.test)...)))
		for i, r := range results[1:] {
			sFailed.Metric = append(sFailed.Metric, c(s.keptFailed[i+1], labelPairs(append(slices.Clone(base), "test", s.test, "kind", r)...)))
		}
		sOpen.Metric = append(sOpen.Metric, g(float64(s.keptOpen), labelPairs(append(slices.Clone(base), "test", s.test)...)))
	}

	udAnswered := fam(metricUDAnswered, "", counter, "The peers' UD probes this agent's UD probe answered, since it started.")
	udLate := fam(metricUDLate, "", counter, "Answers to this agent's UD probes that came after their probe was given up (--probe-timeout).")
	udBad := fam(metricUDBad, "", counter, "Messages to this agent's UD probe QPs that were no probe or answer of ours.")
	nicTS := fam(metricNICTimestamps, "", gauge, "1 when the probe's device stamps work completions with its own clock (ibv_query_device_ex): the probes then record the network's time too (rdmabench_agent_probe_network_latency_seconds), of the peers whose NICs stamp.")
	if s.udOn {
		l := labelPairs(append(slices.Clone(base), "test", s.test)...)
		udAnswered.Metric = append(udAnswered.Metric, c(s.ud.Served, l))
		udLate.Metric = append(udLate.Metric, c(s.ud.Late, l))
		udBad.Metric = append(udBad.Metric, c(s.ud.Bad, l))
		nicTS.Metric = append(nicTS.Metric, g(b01(s.nicTimestamps), labelPairs(base...)))
	}

	var fams []*dto.MetricFamily
	for _, mf := range []*dto.MetricFamily{lat, netLat, probes, lastOK, p50, slow, judged, peers, period, skipped, peersErr, peersOK, registrations, portCounter, portOK,
		bw, bwProbes, bwLastOK, bwLow, bwPeriod, sOpened, sFailed, sOpen, udAnswered, udLate, udBad, nicTS} {
		if len(mf.Metric) > 0 {
			fams = append(fams, mf)
		}
	}
	return fams
}
