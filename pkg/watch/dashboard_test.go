package watch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/control"
)

// dashboardQuery is one query of the dashboard: a panel's target, or a
// template variable's.
type dashboardQuery struct {
	where, expr string
}

// promQL is the query as PromQL, the dashboard's variables replaced as
// vars says (Grafana fills them so); a variable's label_values(SELECTOR,
// LABEL), Grafana's and not PromQL, becomes its SELECTOR.
func (q dashboardQuery) promQL(vars *strings.Replacer) string {
	expr := q.expr
	if fn, arg, ok := strings.Cut(expr, "("); ok && fn == "label_values" {
		expr = arg[:strings.LastIndex(arg, ",")]
	}
	return vars.Replace(expr)
}

// troubleOnly matches a query that selects only trouble: a comparison
// last (`> 0`, `== 0`, `== 1`).
var troubleOnly = regexp.MustCompile(`(>|==) [0-9]+\)?$`)

// dashboardQueries reads the dashboard of deploy/grafana: its template
// variables' names, and every query of its panels (rows' too) and
// variables.
func dashboardQueries(t *testing.T, file string) (vars []string, qs []dashboardQuery) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource *struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var walk func([]json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatalf("%s: a panel: %v", file, err)
			}
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: its datasource is not the variable $datasource: %+v", p.Title, p.Datasource)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				qs = append(qs, dashboardQuery{fmt.Sprintf("panel %q", p.Title), tg.Expr})
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: its query: %v", v.Name, err)
		}
		qs = append(qs, dashboardQuery{"variable " + v.Name, q.Query})
	}
	return vars, qs
}

// TestGrafanaDashboard: every metric the queries of deploy/grafana's
// dashboard name is one the agent exports (with a bandwidth probe, kept
// sessions and a registry, so that every family is there), every panel
// query selects the hosts of the variable $host, and `promtool check
// rules` parses each query (the dashboard's variables given values, as
// Grafana does).
func TestGrafanaDashboard(t *testing.T) {
	const file = "../../deploy/grafana/rdmabench-fleet.json"
	vars, qs := dashboardQueries(t, file)
	for _, want := range []string{"datasource", "host", "peer"} {
		if !slices.Contains(vars, want) {
			t.Errorf("the dashboard has no variable %s: %q", want, vars)
		}
	}
	if len(qs) < 10 {
		t.Fatalf("%d queries: the dashboard was not read", len(qs))
	}

	var text bytes.Buffer
	a := probedAgent(t)
	a.mu.Lock()
	a.st.keptOn, a.st.keptOpened, a.st.keptOpen = true, 1, 1
	a.st.registry, a.st.registrations = true, 4
	a.st.udOn, a.st.stamped = true, true
	err := writeMetrics(&text, &a.st, &portReading{counters: map[string]uint64{"rcvd_seq_err": 1}}, a.process, FormatText)
	a.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	metric := regexp.MustCompile(`\b(rdmabench_[a-z0-9_]+|process_[a-z0-9_]+|go_[a-z0-9_]+)\b`)
	seen := map[string]bool{}
	for _, q := range qs {
		names := metric.FindAllString(q.expr, -1)
		if len(names) == 0 {
			t.Errorf("%s: no metric of the agent in %q", q.where, q.expr)
		}
		for _, name := range names {
			seen[name] = true
			if !strings.Contains(text.String(), "\n"+name+"{") {
				t.Errorf("%s names %s, which the agent does not export: %s", q.where, name, q.expr)
			}
		}
		if strings.HasPrefix(q.where, "panel") && !strings.Contains(q.expr, `host=~"$host"`) {
			t.Errorf("%s: %q does not select host=~\"$host\"", q.where, q.expr)
		}
	}
	// The families a fleet's operator looks at first, each on a panel.
	for _, name := range []string{metricLatency + "_bucket", metricNetLatency + "_bucket", metricProbes, metricSlow, metricP50, metricBW,
		metricBWProbes, metricBWLow, metricSessions, metricSessionsFailed, metricPortCounter} {
		if !seen[name] {
			t.Errorf("no panel of the dashboard shows %s", name)
		}
	}

	// Each query as a recording rule's expression: promtool parses it.
	grafana := strings.NewReplacer(`$__rate_interval`, `1m`, `$__range`, `1h`, `$host`, `.*`, `$peer`, `.*`)
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range qs {
		e, _ := json.Marshal(q.promQL(grafana))
		fmt.Fprintf(&rules, "      - record: dashboard:query%d\n        expr: %s\n", i, e)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool(t), "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules of the dashboard's queries: %v\n%s\n%s", err, out, rules.String())
	}
}

// dashboardEmptyHere are the dashboard's queries that select only trouble
// this test's fleet has not (a comparison last), by the metric they read,
// and why; every other query must return data. The VM scenario's
// Prometheus (scripts/agent-vms.sh) has RDMA devices and a slowed host.
var dashboardEmptyHere = map[string]string{
	metricSlow:        "no peer here is slower than the others",
	metricPeersOK:     "every agent's peers source (the registry) is used whole",
	metricPortOK:      "no RDMA device on this host: the VM scenario's agents read port counters",
	metricPortCounter: "no RDMA device on this host",
	metricPeersErrors: "every peers source here answers",
	metricSkipped:     "the rate asked is kept",
}

// dashboardNeedsDevice are the dashboard's metrics that only an agent
// with an RDMA device exports (the UD probe's), and so none here: the VM
// scenario's agents (scripts/agent-vms.sh) run the UD probe.
var dashboardNeedsDevice = []string{metricUDAnswered, metricUDLate, metricUDBad, metricNICTimestamps}

// dashboardNeedsStamps are the dashboard's metrics that only an agent
// whose NIC stamps completions exports: none here, nor in the VMs
// (Soft-RoCE stamps none).
var dashboardNeedsStamps = []string{metricNetLatency + "_bucket"}

// TestDashboardQueriesOnPrometheus: five agents with every feature the
// dashboard shows (peers from a registry one of them keeps, tcp-lat on
// kept sessions, a tcp-bw bandwidth probe), scraped by a real Prometheus
// every second; then one agent stops, so that the others' probes and
// kept sessions of it fail. Every query of the dashboard, its variables
// as Grafana fills them (every host and peer, a window of a minute),
// evaluates, and each returns data but those of dashboardEmptyHere.
func TestDashboardQueriesOnPrometheus(t *testing.T) {
	prom := prometheusPath(t)
	if testing.Short() {
		t.Skip("-short: runs Prometheus and five agents for about 10 s")
	}
	_, qs := dashboardQueries(t, "../../deploy/grafana/rdmabench-fleet.json")
	start := func(name, registry string) (string, string, func()) {
		ln, mln := listen(t), listen(t)
		conns, tests := ServerLimits(DefaultMaxPeers) // as rdmabench agent's: several tests at once, kept sessions
		cfg := Config{Host: name, Serve: ln, Metrics: mln, PeersMesh: registry, Probe: probeRequest(), Keep: true,
			ServerOptions: control.ServerOptions{MaxConns: conns, MaxTests: tests},
			BW:            BWProbe{Test: "tcp-bw", Duration: 100 * time.Millisecond, Share: 0.1}, Rate: 20,
			Reload: 200 * time.Millisecond, BlameEvery: time.Second, ProbeTimeout: 2 * time.Second,
			Log: &testLog{t: t, name: name}}
		if registry == "" {
			// Registrations outlive a stopped agent by a minute: its
			// peers go on probing it, and failing.
			cfg.PeersMesh, cfg.Registry, cfg.RegistryExpiry = ln.Addr().String(), true, time.Minute
		}
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return ln.Addr().String(), mln.Addr().String(), runAgent(t, name, a)
	}
	// Five: each of the four left after one stops judges its three
	// others (blame takes three peers with a figure).
	raddr, rm, _ := start("r", "")
	metrics := []string{rm}
	for _, name := range []string{"b", "c", "d"} {
		_, m, _ := start(name, raddr)
		metrics = append(metrics, m)
	}
	eaddr, em, stopE := start("e", raddr)
	base := startPrometheus(t, prom, append(metrics, em))

	grafana := strings.NewReplacer(`$__rate_interval`, `1m`, `$__range`, `1m`, `$host`, `.+`, `$peer`, `.+`)
	emptyHere := func(expr string) string {
		for _, name := range dashboardNeedsDevice {
			if strings.Contains(expr, name+"{") {
				return "no RDMA device on this host: the VM scenario's agents run the UD probe"
			}
		}
		for _, name := range dashboardNeedsStamps {
			if strings.Contains(expr, name+"{") {
				return "no NIC here stamps completions"
			}
		}
		if !troubleOnly.MatchString(expr) {
			return ""
		}
		for name, why := range dashboardEmptyHere {
			if strings.Contains(expr, name+"{") {
				return why
			}
		}
		return ""
	}
	// The features' series first: every host's latency of its four
	// peers, bandwidth measured, sessions kept, registrations.
	eventually(t, 30*time.Second, "the fleet's features in Prometheus", func() (bool, string) {
		for _, q := range []string{
			`count(rdmabench_agent_probe_latency_seconds_count > 0) >= 20`,
			`count(rdmabench_agent_peer_bandwidth_bytes_per_second > 0) >= 5`,
			`sum(rdmabench_agent_probe_sessions) >= 20`,
			`max(rdmabench_agent_registrations) >= 5`,
		} {
			if len(query(t, base, q)) == 0 {
				lhs, _, _ := strings.Cut(q, " >=")
				return false, fmt.Sprintf("%s: now %+v", q, query(t, base, lhs))
			}
		}
		return true, ""
	})
	stopE()
	eventually(t, 30*time.Second, "data from every query of the dashboard", func() (bool, string) {
		var missing []string
		for _, q := range qs {
			expr := q.promQL(grafana)
			got := query(t, base, expr) // a query that does not evaluate fails the test
			if why := emptyHere(q.expr); why != "" {
				if len(got) > 0 {
					t.Logf("%s: data, though %s: %q", q.where, why, expr)
				}
				continue
			}
			if len(got) == 0 {
				missing = append(missing, q.where+": "+expr)
			}
		}
		return len(missing) == 0, fmt.Sprintf("no data (e %s stopped): %s", eaddr, strings.Join(missing, "; "))
	})
}
