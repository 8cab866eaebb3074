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
)

// dashboardQuery is one query of the dashboard: a panel's target, or a
// template variable's.
type dashboardQuery struct {
	where, expr string
}

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
	for _, name := range []string{metricLatency + "_bucket", metricProbes, metricSlow, metricP50, metricBW,
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
		expr := q.expr
		if fn, arg, ok := strings.Cut(expr, "("); ok && fn == "label_values" {
			// label_values(SELECTOR, LABEL): Grafana's, not PromQL.
			expr = arg[:strings.LastIndex(arg, ",")]
		}
		e, _ := json.Marshal(grafana.Replace(expr))
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
