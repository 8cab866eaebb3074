package render

import (
	"bytes"
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// consumerTool finds a program the tests run to read our output as its
// users do. Without it the test is skipped, unless the environment says
// CI (CI set, as scripts/test.sh sets it): there a missing tool fails,
// since scripts/deps.sh installs it (Debian package pkg).
func consumerTool(t *testing.T, pkg string, found func() (string, bool)) string {
	t.Helper()
	if p, ok := found(); ok {
		return p
	}
	msg := "not installed (Debian package " + pkg + ", which scripts/deps.sh installs)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "; CI is set, so the test fails rather than skipping")
	}
	t.Skip(msg)
	return ""
}

// promtoolPath is promtool on $PATH.
func promtoolPath(t *testing.T) string {
	return consumerTool(t, "prometheus", func() (string, bool) {
		p, err := exec.LookPath("promtool")
		return p, err == nil
	})
}

// pythonWithClient is a python3 that imports prometheus_client: the one on
// $PATH, else Debian's own (/usr/bin/python3, where the Debian package
// installs the module, when $PATH leads to another Python first).
func pythonWithClient(t *testing.T) string {
	return consumerTool(t, "python3-prometheus-client", func() (string, bool) {
		cands := []string{"/usr/bin/python3"}
		if p, err := exec.LookPath("python3"); err == nil {
			cands = append([]string{p}, cands...)
		}
		for _, p := range cands {
			if exec.Command(p, "-c", "import prometheus_client").Run() == nil {
				return p, true
			}
		}
		return "", false
	})
}

// openMetricsOutputs renders every fixture as OpenMetrics: the documents
// of the tests, every results document in testdata and docs/examples
// (mesh documents, which have no OpenMetrics rendering, left out), and
// several documents in one exposition. It returns name -> exposition.
func openMetricsOutputs(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for name, doc := range map[string]*report.Document{"suite": reporttest.SuiteDoc(), "duration": reporttest.DurationDoc(), "repeat": reporttest.RepeatDoc(), "sweep": reporttest.SweepDoc(false), "sweep-mtu1024": reporttest.SweepDoc(true), "empty": report.NewDocument()} {
		out["fixture "+name] = render(t, FormatOpenMetrics, doc)
	}
	files, _ := filepath.Glob("../testdata/*.json")
	examples, _ := filepath.Glob("../../../docs/examples/*.json")
	if len(examples) == 0 {
		t.Fatal("no docs/examples/*.json")
	}
	var srcs []report.Source
	for _, f := range append(files, examples...) {
		doc, err := report.ReadFile(f)
		if err != nil {
			continue // not a results document (benchaction, compare output)
		}
		var buf bytes.Buffer
		if err := Write(&buf, FormatOpenMetrics, doc); err != nil {
			if strings.Contains(err.Error(), "mesh document renders as") {
				continue
			}
			t.Fatalf("%s: %v", f, err)
		}
		out[f] = buf.Bytes()
		if strings.Contains(f, "docs/examples") {
			srcs = append(srcs, report.Source{Name: filepath.Base(f), Doc: doc})
		}
	}
	var buf bytes.Buffer
	if err := WriteSources(&buf, FormatOpenMetrics, srcs); err != nil {
		t.Fatal(err)
	}
	out["docs/examples together"] = buf.Bytes()
	return out
}

// TestOpenMetricsPromtool: `promtool check metrics` (Prometheus's linter)
// passes every OpenMetrics output of the fixtures with nothing to say.
func TestOpenMetricsPromtool(t *testing.T) {
	promtool := promtoolPath(t)
	for name, exp := range openMetricsOutputs(t) {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(exp)
		msg, err := cmd.CombinedOutput()
		if err != nil || len(bytes.TrimSpace(msg)) > 0 {
			t.Errorf("%s: promtool check metrics: %v\n%s", name, err, msg)
		}
	}
}

// pythonParse reads each file named on the command line with the Python
// client's strict OpenMetrics parser and its text-format parser and prints,
// per file, the families and samples both read (they must agree).
const pythonParse = `
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om
from prometheus_client.parser import text_string_to_metric_families as text
for path in sys.argv[1:]:
    s = open(path).read()
    a = list(om(s))
    b = list(text(s))
    n = sum(len(m.samples) for m in a)
    if len(a) != len(b):
        sys.exit("%s: %d families in OpenMetrics, %d in text" % (path, len(a), len(b)))
    print(path, len(a), n)
`

// TestOpenMetricsPythonClient: Python's prometheus_client parses every
// OpenMetrics output of the fixtures with its strict OpenMetrics parser
// (which checks histograms: ordered buckets, +Inf equal to _count) and its
// text parser, and finds every family and sample.
func TestOpenMetricsPythonClient(t *testing.T) {
	python := pythonWithClient(t)
	dir := t.TempDir()
	outs := openMetricsOutputs(t)
	args := []string{"-c", pythonParse}
	want := map[string]string{}
	for name, exp := range outs {
		p := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(name)+".prom")
		if err := os.WriteFile(p, exp, 0o644); err != nil {
			t.Fatal(err)
		}
		// Prometheus's text parser (the strict OpenMetrics decoder, which
		// other tests run, is slow on the larger outputs).
		parser := expfmt.NewTextParser(model.LegacyValidation)
		fams, err := parser.TextToMetricFamilies(bytes.NewReader(exp))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		n := 0
		for _, mf := range fams {
			n += len(omSamples(mf))
		}
		want[p] = p + " " + strconv.Itoa(len(fams)) + " " + strconv.Itoa(n)
		args = append(args, p)
	}
	msg, err := exec.Command(python, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", python, err, msg)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(msg)), "\n") {
		got[strings.Fields(line)[0]] = line
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("Python read %q, Go %q", got[p], w)
		}
	}
}
