// Command grafana writes rdmabench-fleet.json, the Grafana dashboard of a
// fleet of rdmabench agents (docs/agent.md), from the typed builders of
// grafana-foundation-sdk:
//
//	go -C deploy/grafana run .            # writes deploy/grafana/rdmabench-fleet.json
//	go -C deploy/grafana run . -o -       # to stdout
//
// Every query names the agent's metric families (pkg/watch/metrics.go);
// pkg/watch's tests check that each one the committed JSON names is one
// the agent exports, and scripts/helm-check.sh that the committed JSON is
// this program's output.
package main

//lint:file-ignore SA1019 the classic dashboard model (schema v1), which every Grafana's import takes; dashboardv2's needs Grafana 12 with its v2 API on.

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

func main() {
	out := flag.String("o", "rdmabench-fleet.json", "the file to write (-: stdout)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "grafana: unexpected argument %q (flags: -o FILE)\n", flag.Arg(0))
		os.Exit(2)
	}
	b, err := render()
	if err != nil {
		fmt.Fprintln(os.Stderr, "grafana:", err)
		os.Exit(1)
	}
	if *out == "-" {
		_, err = os.Stdout.Write(b)
	} else {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "grafana:", err)
		os.Exit(1)
	}
}

// render is the dashboard's JSON, indented, with a final newline.
func render() ([]byte, error) {
	d, err := fleet().Build()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // PromQL's < and > as they are
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// The selectors every query carries: the hosts probing, the peers probed.
const (
	hostSel     = `host=~"$host"`
	hostPeerSel = `host=~"$host", peer=~"$peer"`
)

// ds is the datasource of every panel and query: the variable's.
func ds() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}
}

func query(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(ds()).Expr(expr).LegendFormat(legend).Range()
}

func instant(expr string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(ds()).Expr(expr).Instant().
		Format(prometheus.PromQueryFormatTable)
}

// The probes' histograms: the host's latency, and the network's time
// where the NICs stamp completions (the UD probe's).
const (
	latencyHist = "rdmabench_agent_probe_latency_seconds"
	networkHist = "rdmabench_agent_probe_network_latency_seconds"
)

// quantile is a quantile (0.5, 0.99) of the probes' histograms hist over
// the dashboard's rate interval, summed by the labels of by.
func quantile(hist, q, by string) string {
	return fmt.Sprintf(`histogram_quantile(%s, sum by (%s, le) (rate(%s_bucket{%s}[$__rate_interval])))`,
		q, by, hist, hostPeerSel)
}

func tableLegend() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().DisplayMode(common.LegendDisplayModeTable).
		Placement(common.LegendPlacementRight).ShowLegend(true).Calcs([]string{"mean", "max", "lastNotNull"}).
		SortBy("Max").SortDesc(true)
}

func series(title, desc, unit string, targets ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().Title(title).Description(desc).Datasource(ds()).Unit(unit).
		Height(8).Span(12).Legend(tableLegend())
	for _, t := range targets {
		p.WithTarget(t)
	}
	return p
}

// stacked is series with the series stacked, as bars: counts by kind.
func stacked(title, desc, unit string, targets ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	return series(title, desc, unit, targets...).DrawStyle(common.GraphDrawStyleBars).FillOpacity(80).
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))
}

// verdicts is a state timeline of 0/1 gauges: red while 1.
func verdicts(title, desc string, targets ...*prometheus.DataqueryBuilder) *statetimeline.PanelBuilder {
	p := statetimeline.NewPanelBuilder().Title(title).Description(desc).Datasource(ds()).
		Height(8).Span(12).ShowValue(common.VisibilityModeNever).MergeValues(true).
		Mappings([]dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{
			Type: dashboard.MappingTypeValueToText,
			Options: map[string]dashboard.ValueMappingResult{
				"0": {Text: cog.ToPtr("ok"), Color: cog.ToPtr("green")},
				"1": {Text: cog.ToPtr("bad"), Color: cog.ToPtr("red")},
			},
		}}})
	for _, t := range targets {
		p.WithTarget(t)
	}
	return p
}

func fleetStat(title, desc, unit string, t *prometheus.DataqueryBuilder) *stat.PanelBuilder {
	return stat.NewPanelBuilder().Title(title).Description(desc).Datasource(ds()).Unit(unit).
		Height(4).Span(4).WithTarget(t)
}

func fleet() *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder("rdmabench fleet").
		Uid("rdmabench-fleet").
		Description("rdmabench agents probing each other: latency per link, blame's verdicts, probe results, bandwidth probes, kept sessions (docs/agent.md).").
		Tags([]string{"rdmabench", "rdma"}).
		Refresh("30s").
		Time("now-3h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus")).
		WithVariable(dashboard.NewQueryVariableBuilder("host").Label("Host (probing)").
			Description("The agents probing: their host label (a node's name).").
			Datasource(ds()).
			Query(dashboard.StringOrMap{Map: map[string]any{
				"qryType": 1, "query": "label_values(rdmabench_agent_peers, host)", "refId": "host",
			}}).
			Definition("label_values(rdmabench_agent_peers, host)").
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Sort(dashboard.VariableSortAlphabeticalAsc).
			Multi(true).IncludeAll(true).AllValue(".*")).
		WithVariable(dashboard.NewQueryVariableBuilder("peer").Label("Peer (probed)").
			Description("The peers probed: host:port, as the agents' --peers name them.").
			Datasource(ds()).
			Query(dashboard.StringOrMap{Map: map[string]any{
				"qryType": 1, "query": `label_values(rdmabench_agent_probes_total{host=~"$host"}, peer)`, "refId": "peer",
			}}).
			Definition(`label_values(rdmabench_agent_probes_total{host=~"$host"}, peer)`).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Sort(dashboard.VariableSortAlphabeticalAsc).
			Multi(true).IncludeAll(true).AllValue(".*")).
		// The fleet at a glance.
		WithPanel(fleetStat("Agents", "Agents scraped (their build info).", "none",
			instant(`count(rdmabench_build_info{`+hostSel+`})`))).
		WithPanel(fleetStat("Peers probed", "Peers in the agents' peer sets, all agents together.", "none",
			instant(`sum(rdmabench_agent_peers{`+hostSel+`})`))).
		WithPanel(fleetStat("Fleet p50", "The median latency of every probe of the selected links, over the range.", "s",
			instant(`histogram_quantile(0.5, sum by (le) (rate(`+latencyHist+`_bucket{`+hostPeerSel+`}[$__range])))`))).
		WithPanel(fleetStat("Fleet p99", "The 99th percentile latency of every probe of the selected links, over the range.", "s",
			instant(`histogram_quantile(0.99, sum by (le) (rate(`+latencyHist+`_bucket{`+hostPeerSel+`}[$__range])))`))).
		WithPanel(fleetStat("Links judged slow", "Links blame calls slow now (rdmabench_agent_peer_slow).", "none",
			instant(`sum(rdmabench_agent_peer_slow{`+hostPeerSel+`}) or vector(0)`)).
			Thresholds(dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps([]dashboard.Threshold{
				{Value: nil, Color: "green"}, {Value: cog.ToPtr(1.0), Color: "red"},
			}))).
		WithPanel(fleetStat("Probes failing", "Probes per second that failed (any result but ok), over the range.", "reqps",
			instant(`sum(rate(rdmabench_agent_probes_total{`+hostPeerSel+`, result!="ok"}[$__range])) or vector(0)`))).
		WithRow(dashboard.NewRowBuilder("Latency")).
		WithPanel(series("Fleet p50 and p99", "Every selected link's probes together, by probe test.", "s",
			query(quantile(latencyHist, "0.5", "test"), "p50 {{test}}"),
			query(quantile(latencyHist, "0.99", "test"), "p99 {{test}}"))).
		WithPanel(table.NewPanelBuilder().Title("Judged p50: host × peer").
			Description("The p50 blame judges each link by (the median of its last good probes' p50s, rdmabench_agent_peer_p50_seconds), now: a row per probing host, a column per peer.").
			Datasource(ds()).Unit("s").Height(8).Span(12).
			WithTarget(instant(`max by (host, peer) (rdmabench_agent_peer_p50_seconds{` + hostPeerSel + `})`)).
			WithTransformation(dashboard.DataTransformerConfig{Id: "groupingToMatrix", Options: map[string]any{
				"columnField": "peer", "rowField": "host", "valueField": "Value", "emptyValue": "null",
			}}).
			CellOptions(common.TableCellOptions{TableColoredBackgroundCellOptions: &common.TableColoredBackgroundCellOptions{
				Type: common.TableCellDisplayModeColorBackground,
				Mode: cog.ToPtr(common.TableCellBackgroundDisplayModeGradient),
			}}).
			ColorScheme(dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdContinuousGrYlRd))).
		WithPanel(series("p50 per link", "The median latency of each link's probes (host → peer).", "s",
			query(quantile(latencyHist, "0.5", "host, peer, test"), "{{host}} → {{peer}}"))).
		WithPanel(series("p99 per link", "The 99th percentile latency of each link's probes (host → peer).", "s",
			query(quantile(latencyHist, "0.99", "host, peer, test"), "{{host}} → {{peer}}"))).
		WithRow(dashboard.NewRowBuilder("Blame")).
		WithPanel(verdicts("Slow verdicts", "Blame's verdict on each link's p50 against the fleet's (rdmabench_agent_peer_slow): bad while slow.",
			query(`max by (host, peer, test) (rdmabench_agent_peer_slow{`+hostPeerSel+`})`, "{{host}} → {{peer}}"))).
		WithPanel(series("Peers named slow by several agents", "How many agents name each peer slow: from two and more, its own NIC or link is the likely cause (the alert RdmabenchHostSlow).", "none",
			query(`count by (peer, test) (rdmabench_agent_peer_slow{`+hostPeerSel+`} == 1)`, "{{peer}} ({{test}})"))).
		WithPanel(verdicts("Low bandwidth verdicts", "Blame's verdict on each link's last bandwidth probe (rdmabench_agent_peer_bandwidth_low): bad while low.",
			query(`max by (host, peer, test) (rdmabench_agent_peer_bandwidth_low{`+hostPeerSel+`})`, "{{host}} → {{peer}}"))).
		WithPanel(verdicts("Blame judging", "Whether the last blame pass had enough peers with a figure to judge (rdmabench_agent_blame_judged): bad while not.",
			query(`1 - min by (host, test) (rdmabench_agent_blame_judged{`+hostSel+`})`, "{{host}} {{test}}"))).
		WithRow(dashboard.NewRowBuilder("Probes")).
		WithPanel(stacked("Probe results", "Probes per second by result: ok, or the kind of failure (connect, timeout, busy, auth, version, protocol, closed, refused, test); and the probes skipped, not run (every slot in flight: --max-inflight).", "reqps",
			query(`sum by (result) (rate(rdmabench_agent_probes_total{`+hostPeerSel+`}[$__rate_interval]))`, "{{result}}"),
			query(`sum(rate(rdmabench_agent_probes_skipped_total{`+hostSel+`}[$__rate_interval])) > 0`, "skipped"))).
		WithPanel(series("Failed probes per link", "Probes per second that failed, by link and result.", "reqps",
			query(`sum by (host, peer, result) (rate(rdmabench_agent_probes_total{`+hostPeerSel+`, result!="ok"}[$__rate_interval])) > 0`, "{{host}} → {{peer}}: {{result}}"))).
		WithPanel(series("Since the last good probe", "How long since each link's last good probe.", "s",
			query(`time() - max by (host, peer) (rdmabench_agent_peer_last_ok_timestamp_seconds{`+hostPeerSel+`})`, "{{host}} → {{peer}}"))).
		WithPanel(series("Probe cycle", "The time each agent takes to probe every peer once (its peers over --rate).", "s",
			query(`max by (host) (rdmabench_agent_probe_period_seconds{`+hostSel+`})`, "{{host}}"))).
		WithPanel(series("Peer source", "Peers each agent probes, and the errors of its peer source (the peers file, DNS, SRV or the registry) per second by kind.", "none",
			query(`max by (host) (rdmabench_agent_peers{`+hostSel+`})`, "{{host}} peers"),
			query(`sum by (host, kind) (rate(rdmabench_agent_peers_errors_total{`+hostSel+`}[$__rate_interval])) > 0`, "{{host}} {{kind}}/s"),
			query(`max by (host) (rdmabench_agent_peers_ok{`+hostSel+`}) == 0`, "{{host}} peer source failing"))).
		WithPanel(stacked("Port error counters", "The probe device's port error counters, increase per second, by counter (symbol, link, sequence errors...).", "cps",
			query(`sum by (host, device, counter) (rate(rdmabench_agent_port_errors_total{`+hostSel+`}[$__rate_interval])) > 0`, "{{host}} {{device}} {{counter}}"),
			query(`max by (host, device) (rdmabench_agent_port_counters_ok{`+hostSel+`}) == 0`, "{{host}} {{device}} counters unreadable"))).
		WithRow(dashboard.NewRowBuilder("Bandwidth probes (--bw-probe)")).
		WithPanel(series("Bandwidth per link", "Each link's last good bandwidth probe: payload bytes per second.", "Bps",
			query(`max by (host, peer, test) (rdmabench_agent_peer_bandwidth_bytes_per_second{`+hostPeerSel+`})`, "{{host}} → {{peer}}"))).
		WithPanel(stacked("Bandwidth probe results", "Bandwidth probes per second by result.", "reqps",
			query(`sum by (result) (rate(rdmabench_agent_bandwidth_probes_total{`+hostPeerSel+`}[$__rate_interval]))`, "{{result}}"))).
		WithPanel(series("Since the last good bandwidth probe", "How long since each link's last good bandwidth probe; the cycle of the probes over every peer.", "s",
			query(`time() - max by (host, peer) (rdmabench_agent_peer_bandwidth_last_ok_timestamp_seconds{`+hostPeerSel+`})`, "{{host}} → {{peer}}"),
			query(`max by (host) (rdmabench_agent_bandwidth_probe_period_seconds{`+hostSel+`})`, "{{host}} cycle"))).
		WithRow(dashboard.NewRowBuilder("Kept sessions (tcp-lat, --keep)")).
		WithPanel(series("Kept sessions", "Probe sessions kept open now, and set up per second.", "none",
			query(`sum by (host) (rdmabench_agent_probe_sessions{`+hostSel+`})`, "{{host}} open"),
			query(`sum by (host) (rate(rdmabench_agent_probe_sessions_opened_total{`+hostSel+`}[$__rate_interval]))`, "{{host}} set up/s"))).
		WithPanel(stacked("Kept sessions torn down", "Kept sessions torn down per second for an error, by kind.", "cps",
			query(`sum by (host, kind) (rate(rdmabench_agent_probe_sessions_failed_total{`+hostSel+`}[$__rate_interval])) > 0`, "{{host}} {{kind}}"))).
		WithRow(dashboard.NewRowBuilder("UD probe (--probe ud-lat)")).
		WithPanel(series("UD probes answered", "Peers' UD probes each agent's responder answered per second; answers to its own probes that came after they were given up (--probe-timeout), and messages that were no probe of ours, per second.", "reqps",
			query(`sum by (host) (rate(rdmabench_agent_ud_probes_answered_total{`+hostSel+`}[$__rate_interval]))`, "{{host}} answered/s"),
			query(`sum by (host) (rate(rdmabench_agent_ud_answers_late_total{`+hostSel+`}[$__rate_interval])) > 0`, "{{host}} late/s"),
			query(`sum by (host) (rate(rdmabench_agent_ud_messages_bad_total{`+hostSel+`}[$__rate_interval])) > 0`, "{{host}} bad/s"))).
		WithPanel(series("NIC completion timestamps", "1 where the probe's device stamps work completions with its own clock (ibv_query_device_ex): its probes of peers whose NICs stamp too then record the network's time beside the host's round trip.", "none",
			query(`max by (host, device) (rdmabench_agent_nic_timestamps{`+hostSel+`})`, "{{host}} {{device}}"))).
		WithPanel(series("Network time p50 and p99 (NIC stamps)", "Where both ends' NICs stamp completions: the network's time of the UD probes' ping-pongs (both NICs' stamps less the peer's delay from its receive to its answer's send, as R-Pingmesh's), on the probe's basis, beside the host's round trips under Latency. Empty where the NICs stamp none (Soft-RoCE).", "s",
			query(quantile(networkHist, "0.5", "test"), "p50 {{test}}"),
			query(quantile(networkHist, "0.99", "test"), "p99 {{test}}"))).
		WithRow(dashboard.NewRowBuilder("Registry (--registry)")).
		WithPanel(series("Registrations", "Live registrations in each registry agent.", "none",
			query(`max by (host) (rdmabench_agent_registrations{`+hostSel+`})`, "{{host}}")))
}
