package watch

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestAlertingRules: deploy/prometheus's rules pass `promtool check
// rules`, their tests pass `promtool test rules`, every alert has a test
// case on series where it fires, and every metric they name is one the
// agent exports.
func TestAlertingRules(t *testing.T) {
	const dir = "../../deploy/prometheus"
	rules, err := os.ReadFile(dir + "/rdmabench-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	a := probedAgent(t)
	a.mu.Lock()
	err = writeMetrics(&text, &a.st, &portReading{counters: map[string]uint64{"rcvd_seq_err": 1}}, a.process, FormatText)
	a.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range regexp.MustCompile(`rdmabench_[a-z_]+`).FindAllString(string(rules), -1) {
		if !strings.Contains(text.String(), "\n"+name+"{") {
			t.Errorf("the rules name %s, which the agent does not export", name)
		}
	}
	for _, name := range untestedAlerts(t, rules, dir+"/rdmabench-rules.test.yml") {
		t.Errorf("alert %s has no test case where it fires (rdmabench-rules.test.yml)", name)
	}
	tool := promtool(t)
	for _, args := range [][]string{{"check", "rules", "rdmabench-rules.yml"}, {"test", "rules", "rdmabench-rules.test.yml"}} {
		cmd := exec.Command(tool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// untestedAlerts returns the alerts of rules (a rules file) that no
// alert_rule_test of the tests file expects to fire.
func untestedAlerts(t *testing.T, rules []byte, tests string) []string {
	t.Helper()
	var rf struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(rules, &rf); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(tests)
	if err != nil {
		t.Fatal(err)
	}
	var tf struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(data, &tf); err != nil {
		t.Fatal(err)
	}
	fires := map[string]bool{}
	for _, tc := range tf.Tests {
		for _, at := range tc.AlertRuleTest {
			if len(at.ExpAlerts) > 0 {
				fires[at.Alertname] = true
			}
		}
	}
	var out []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" && !fires[r.Alert] {
				out = append(out, r.Alert)
			}
		}
	}
	return out
}

// TestChartRules: the Helm chart's copy of the rules (a chart reads files
// inside itself only), which its PrometheusRule holds, is the rules file.
func TestChartRules(t *testing.T) {
	want, err := os.ReadFile("../../deploy/prometheus/rdmabench-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	const chart = "../../deploy/helm/rdmabench/files/rdmabench-rules.yml"
	got, err := os.ReadFile(chart)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from deploy/prometheus/rdmabench-rules.yml: cp deploy/prometheus/rdmabench-rules.yml deploy/helm/rdmabench/files/", chart)
	}
}
