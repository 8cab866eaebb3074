package render

import (
	"bytes"
	"fmt"
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"math"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchunit"
)

// benchstat scales the units of -o gobench itself: read back with its
// parser and formatted as it formats a value (benchunit.Tidy, then the
// unit's class and scale), a bandwidth or message rate takes a prefix of
// 1 or more (k, M, G: never m or µ, as a prefixed unit such as Gbps gave
// for 0.37 Gbit/s), and the scaled value says the same figure.
func TestGobenchUnitsScaleInBenchstat(t *testing.T) {
	docs := map[string]*report.Document{"suite": reporttest.SuiteDoc(), "repeat": reporttest.RepeatDoc()}
	for _, f := range []string{"../../../docs/examples/base.json", "../../../docs/examples/new.json"} {
		doc, err := report.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = doc
	}
	prefixes := map[string]float64{"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
	for name, doc := range docs {
		r := benchfmt.NewReader(bytes.NewReader(render(t, FormatGobench, doc)), name)
		seen := map[string]int{}
		for r.Scan() {
			if e, ok := r.Result().(*benchfmt.SyntaxError); ok {
				t.Fatalf("%s: %v", name, e)
			}
			res, ok := r.Result().(*benchfmt.Result)
			if !ok {
				continue // unit metadata
			}
			for _, v := range res.Values {
				val, unit := benchunit.Tidy(v.Value, v.Unit)
				s := benchunit.CommonScale([]float64{val}, benchunit.ClassOf(unit))
				seen[unit]++
				switch unit {
				case "bit/s", "msg/s":
				default:
					continue
				}
				factor, ok := prefixes[s.Prefix]
				if !ok {
					t.Errorf("%s: %s: %v %s prints as %s %s", name, res.Name, v.Value, unit, s.Format(val), unit)
					continue
				}
				if val > 0 && math.Abs(val/factor-mustParse(t, strings.TrimSuffix(s.Format(val), s.Prefix)))/(val/factor) > 0.01 {
					t.Errorf("%s: %s: %v %s prints as %s", name, res.Name, val, unit, s.Format(val))
				}
			}
		}
		if seen["bit/s"] == 0 || seen["msg/s"] == 0 || seen["sec/op"] == 0 {
			t.Errorf("%s: units seen %v, want bit/s, msg/s and sec/op", name, seen)
		}
	}
	// The example's write-bw, 0.37 Gbit/s, as benchstat prints it.
	if got := benchunit.Scale(0.368e9, benchunit.ClassOf("bit/s")); got != "368.0M" {
		t.Errorf("0.368 Gbit/s prints as %q", got)
	}
}

func mustParse(t *testing.T, s string) float64 {
	t.Helper()
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return f
}
