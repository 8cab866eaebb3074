package watch

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestAlertingRules: deploy/prometheus's rules pass `promtool check
// rules`, their tests pass `promtool test rules`, and every metric they
// name is one the agent exports.
func TestAlertingRules(t *testing.T) {
	const dir = "../../deploy/prometheus"
	rules, err := os.ReadFile(dir + "/rdmabench-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	a := probedAgent(t)
	a.mu.Lock()
	err = writeMetrics(&text, &a.st, &portReading{counters: map[string]uint64{"rcvd_seq_err": 1}}, FormatText)
	a.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range regexp.MustCompile(`rdmabench_[a-z_]+`).FindAllString(string(rules), -1) {
		if !strings.Contains(text.String(), "\n"+name+"{") {
			t.Errorf("the rules name %s, which the agent does not export", name)
		}
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
