package render

import (
	"bytes"
	"encoding/json"
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// benchActionInput is github-action-benchmark's input for its custom
// tools, as its BenchmarkResult type declares it: name, value and unit
// required, range and extra optional strings, nothing else.
type benchActionInput struct {
	Name  *string  `json:"name"`
	Value *float64 `json:"value"`
	Unit  *string  `json:"unit"`
	Range *string  `json:"range"`
	Extra *string  `json:"extra"`
}

// benchActionRange is how the action reads a range (extractRangeInfo):
// "±" or "+-", spaces, a number.
var benchActionRange = regexp.MustCompile(`^(\+-|±)\s*(\d.+)$`)

// readBenchAction decodes out as the action does, strictly: a JSON array
// of entries of exactly its input's fields, each with a name, a unit and a
// finite value, the names unique, any range one it can read.
func readBenchAction(t *testing.T, out []byte) []benchActionInput {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	var entries []benchActionInput
	if err := dec.Decode(&entries); err != nil {
		t.Fatalf("not github-action-benchmark input: %v\n%s", err, out)
	}
	names := map[string]bool{}
	for i, e := range entries {
		if e.Name == nil || *e.Name == "" || e.Unit == nil || *e.Unit == "" || e.Value == nil || math.IsNaN(*e.Value) || math.IsInf(*e.Value, 0) {
			t.Fatalf("entry %d lacks a name, unit or value: %s", i, out)
		}
		if names[*e.Name] {
			t.Errorf("name %q twice", *e.Name)
		}
		names[*e.Name] = true
		if e.Range != nil {
			m := benchActionRange.FindStringSubmatch(*e.Range)
			if m == nil {
				t.Errorf("%s: range %q is not one the action reads", *e.Name, *e.Range)
			} else if v, err := strconv.ParseFloat(m[2], 64); err != nil || v < 0 {
				t.Errorf("%s: range %q: %v", *e.Name, *e.Range, err)
			}
		}
	}
	return entries
}

// TestBenchActionReadsBack: each format is read back as the action reads
// its input; the latency file has the latency figures of every test and
// size (in µs, a unit the action knows) and nothing else, the bandwidth
// file the bandwidth and message rate; each value is the document's (the
// median over runs, with its confidence interval as range, when repeated),
// and extra names the device and firmware.
func TestBenchActionReadsBack(t *testing.T) {
	docs := map[string]*report.Document{"suite": reporttest.SuiteDoc(), "duration": reporttest.DurationDoc(), "repeat": reporttest.RepeatDoc(), "sweep": reporttest.SweepDoc(false), "empty": report.NewDocument()}
	for name, doc := range docs {
		for _, bandwidth := range []bool{false, true} {
			format := FormatBenchActionLatency
			if bandwidth {
				format = FormatBenchActionBandwidth
			}
			got := readBenchAction(t, render(t, format, doc))
			type want struct {
				value float64
				unit  string
				rng   bool
			}
			wants := map[string]want{}
			var order []string
			for _, s := range doc.Summarize() {
				figs := []report.Figure{report.FigP50, report.FigP99, report.FigP999}
				if bandwidth {
					figs = []report.Figure{report.FigGbps, report.FigMsgRate}
				}
				bidir := false
				for _, r := range doc.Results {
					if r.Key() == s.Key() && r.Bidirectional() {
						bidir = true
					}
				}
				for _, f := range figs {
					sp, ok := s.Spread(f)
					if !ok {
						continue
					}
					n := s.Key().String()
					if bidir {
						n += " bidirectional"
					}
					w := want{value: sp.Median / 1e3, unit: "us", rng: sp.Bounded()}
					n += " " + string(f)
					if bandwidth {
						n = strings.TrimSuffix(n, string(f)) + f.Unit()
						w.value, w.unit = sp.Median, f.Unit()
					}
					wants[n] = w
					order = append(order, n)
				}
			}
			if len(got) != len(wants) {
				t.Fatalf("%s %s: %d entries, want %d (%v)", name, format, len(got), len(wants), order)
			}
			for i, e := range got {
				w, ok := wants[*e.Name]
				if !ok || *e.Name != order[i] {
					t.Errorf("%s %s: entry %d is %q, want %q", name, format, i, *e.Name, order[i])
					continue
				}
				if *e.Unit != w.unit || math.Abs(*e.Value-w.value) > 1e-9*math.Abs(w.value) || (e.Range != nil) != w.rng {
					t.Errorf("%s %s: %s = %v %s range %v, want %v %s range %v", name, format, *e.Name, *e.Value, *e.Unit, e.Range, w.value, w.unit, w.rng)
				}
				if dev := doc.Hosts.Local.Device; dev != nil && (e.Extra == nil || !strings.Contains(*e.Extra, "device: "+dev.Name) ||
					dev.Firmware != "" && !strings.Contains(*e.Extra, "firmware "+dev.Firmware)) {
					t.Errorf("%s %s: %s: extra %v lacks the device and firmware", name, format, *e.Name, e.Extra)
				}
			}
		}
	}
}

// TestBenchActionSources: several documents in one array, each name
// starting with its source's; a source named twice gets a number.
func TestBenchActionSources(t *testing.T) {
	var buf bytes.Buffer
	srcs := []report.Source{{Name: "base.json", Doc: reporttest.BaseRuns()}, {Name: "new.json", Doc: reporttest.RegressedRuns()}, {Name: "new.json", Doc: reporttest.NoiseRuns()}}
	if err := WriteSources(&buf, FormatBenchActionLatency, srcs); err != nil {
		t.Fatal(err)
	}
	got := readBenchAction(t, buf.Bytes())
	if len(got) != 9 || *got[0].Name != "base.json: write-lat RC 2 B p50" || *got[3].Name != "new.json: write-lat RC 2 B p50" ||
		*got[6].Name != "new.json (2): write-lat RC 2 B p50" {
		t.Errorf("entries of three sources: %d, first names %q %q %q", len(got), *got[0].Name, *got[3].Name, *got[len(got)-1].Name)
	}
}
