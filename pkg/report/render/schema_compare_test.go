package render

import (
	"bytes"
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/compare"
	"github.com/rdmabench/rdmabench/pkg/report/schema"
)

// TestCompareSchemasMatchModel: the comparisons' schemas and the Go types
// they are written from (as WriteComparison and WriteMeshComparison write
// them) agree field by field, as the results document's do.
func TestCompareSchemasMatchModel(t *testing.T) {
	t.Run("compare", func(t *testing.T) {
		reporttest.CheckSchemaModel(t, reporttest.LoadSchemaFile(t, schema.CompareJSON()), reflect.TypeFor[comparisonJSON]())
	})
	t.Run("compare-mesh", func(t *testing.T) {
		reporttest.CheckSchemaModel(t, reporttest.LoadSchemaFile(t, schema.CompareMeshJSON()), reflect.TypeFor[meshComparisonJSON]())
	})
}

// comparisonOutputs are the comparisons of the fixture documents, as
// `rdmabench compare -o json` writes them: with and without gates, with
// tests on one side only, failed runs, limits and gates that failed.
func comparisonOutputs(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	write := func(name string, base, new report.Source, gates compare.Gates, limits report.Limits) {
		c := compare.Compare(base.Doc, new.Doc, compare.Options{BaseName: base.Name, NewName: new.Name})
		var g *compare.GateResult
		if gates != nil || !limits.IsZero() {
			g = c.CheckGates(gates)
			g.AddLimits("--limit-bw 50Gbps", new.Doc, limits)
		}
		var buf bytes.Buffer
		if err := WriteComparison(&buf, FormatJSON, c, g); err != nil {
			t.Fatal(err)
		}
		out[name] = buf.Bytes()
	}
	doc := func(name string, d *report.Document) report.Source { return report.Source{Name: name, Doc: d} }
	examples := func(name string) report.Source {
		return reporttest.ReadFixture(t, filepath.Join("..", "..", "..", "docs", "examples", name))
	}
	regress := compare.Gates{compare.MaxRegressionGate("--max-regression 5%", 0.05)}
	write("examples", examples("base.json"), examples("new.json"), regress, report.Limits{MinGbps: 50})
	write("examples, no gates", examples("base.json"), examples("new.json"), nil, report.Limits{})
	write("sweep", reporttest.ReadFixture(t, "sweep.json"), reporttest.ReadFixture(t, "sweep-mtu1024.json"), compare.Gates{compare.MinRatioGate("--min-bw-ratio 0.95", 0.95)}, report.Limits{})
	write("sweep against duration", reporttest.ReadFixture(t, "sweep.json"), reporttest.ReadFixture(t, "duration.json"), regress, report.Limits{})
	write("repeat", reporttest.ReadFixture(t, "repeat.json"), reporttest.ReadFixture(t, "repeat.json"), regress, report.Limits{})
	write("regressed", doc("base.json", reporttest.BaseRuns()), doc("new.json", reporttest.RegressedRuns()), regress, report.Limits{})
	write("noise", doc("base.json", reporttest.BaseRuns()), doc("new.json", reporttest.NoiseRuns()), regress, report.Limits{})
	write("single", doc("base.json", reporttest.SingleBase()), doc("new.json", reporttest.SingleNew()), regress, report.Limits{})
	write("other device", doc("base.json", reporttest.BaseRuns()), doc("new.json", reporttest.OtherDeviceRuns()), nil, report.Limits{})
	failed := reporttest.RegressedRuns()
	failed.Results[0].Error = "IBV_WC_RETRY_EXC_ERR"
	failed.Error = "interrupted"
	write("failed runs", doc("base.json", reporttest.BaseRuns()), doc("new.json", failed), regress, report.Limits{})
	write("empty", doc("base.json", report.NewDocument()), doc("new.json", report.NewDocument()), nil, report.Limits{})
	return out
}

// meshComparisonOutputs are comparisons of mesh documents: the plot's
// fixture against itself and against a copy with a slow link, ranks
// moved between hosts, failed links, gates and limits.
func meshComparisonOutputs(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	write := func(name string, base, new *report.Document, gates compare.Gates, limits report.Limits) {
		c, err := compare.CompareMesh(base, new, compare.MeshOptions{BaseName: "base.json", NewName: "new.json", Top: 3})
		if err != nil {
			t.Fatal(err)
		}
		var g *compare.MeshGateResult
		if gates != nil || !limits.IsZero() {
			g = c.CheckGates(gates)
			c.AddLimits(g, "--limit-bw 90Gbps", limits)
		}
		var buf bytes.Buffer
		if err := WriteMeshComparison(&buf, FormatJSON, c, g); err != nil {
			t.Fatal(err)
		}
		out[name] = buf.Bytes()
	}
	mesh := reporttest.ReadFixture(t, "mesh.json").Doc
	write("fixture", mesh, mesh, compare.Gates{compare.MaxRegressionGate("--max-regression 5%", 0.05)}, report.Limits{MinGbps: 90})
	write("no gates", mesh, mesh, nil, report.Limits{})
	slow := reporttest.CmpMesh{N: 4, SlowBW: func(from, to int) float64 {
		if from == 1 && to == 2 {
			return 2
		}
		return 1
	}, Failed: func(from, to int) bool { return from == 3 && to == 0 }}.Doc()
	write("slow link", reporttest.CmpMesh{N: 4}.Doc(), slow, compare.Gates{compare.MinRatioGate("--min-bw-ratio 0.9", 0.9, report.FigGbps)}, report.Limits{MinGbps: 90})
	moved := reporttest.CmpMesh{N: 4, Host: func(r int) (string, string) { return "node" + string(rune('0'+3-r)), "mlx5_0" }}.Doc()
	write("moved ranks", reporttest.CmpMesh{N: 4}.Doc(), moved, nil, report.Limits{})
	write("other size", reporttest.CmpMesh{N: 3}.Doc(), reporttest.CmpMesh{N: 4}.Doc(), nil, report.Limits{})
	return out
}

// TestCompareSchemasValidate: every comparison of the fixtures validates
// strictly against its schema, and so does the golden comparison kept in
// testdata/.
func TestCompareSchemasValidate(t *testing.T) {
	outs := comparisonOutputs(t)
	files, err := filepath.Glob(filepath.Join("..", "testdata", "compare-*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden comparison: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		outs[f] = data
	}
	for name, data := range outs {
		if err := schema.ValidateCompare(data); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if err := schema.ValidateCompareMesh(data); err == nil {
			t.Errorf("%s: a comparison of two results documents validates as one of two meshes", name)
		}
	}
	for name, data := range meshComparisonOutputs(t) {
		if err := schema.ValidateCompareMesh(data); err != nil {
			t.Errorf("mesh %s: %v", name, err)
		}
		if err := schema.ValidateCompare(data); err == nil {
			t.Errorf("mesh %s: a comparison of two meshes validates as one of two results documents", name)
		}
	}
	// The outputs hold what the schemas have to describe.
	for _, w := range []struct{ name, want string }{{"examples", `"limits"`}, {"examples", `"not_significant"`},
		{"sweep against duration", `"only_base"`}, {"failed runs", `"notes"`}, {"failed runs", `"incomplete"`},
		{"single", `"too_few_runs"`}, {"other device", `"warnings"`}} {
		if !strings.Contains(string(outs[w.name]), w.want) {
			t.Errorf("%s: no %s in\n%s", w.name, w.want, outs[w.name])
		}
	}
	mesh := meshComparisonOutputs(t)
	for name, want := range map[string]string{"slow link": `"failed_new"`, "moved ranks": `"base_from"`, "fixture": `"limits"`, "other size": `"only_base"`} {
		if !strings.Contains(string(mesh[name]), want) {
			t.Errorf("mesh %s: no %s in\n%s", name, want, mesh[name])
		}
	}
}

// TestValidateCompareRefuses: what the comparisons' schemas rule out,
// with the place named.
func TestValidateCompareRefuses(t *testing.T) {
	outs := comparisonOutputs(t)
	good := string(outs["examples"])
	for _, tc := range []struct{ name, old, new, want string }{
		{"another version", `"schema": "rdmabench/compare/v1"`, `"schema": "rdmabench/compare/v2"`, "/schema"},
		{"an unknown figure", `"figure": "p50"`, `"figure": "p42"`, "/figure"},
		{"an unknown kind", `"kind": "latency"`, `"kind": "throughput"`, "/kind"},
		{"a property the schema does not list", `"alpha": 0.05,`, `"alpha": 0.05, "beta": 1,`, "beta"},
		{"a missing required property", `"confidence": 0.95,`, ``, "'confidence'"},
		{"a host the results schema refuses", `"hostname": "`, `"hostname": 1, "x": "`, "/hostname"},
	} {
		bad := strings.Replace(good, tc.old, tc.new, 1)
		if bad == good {
			t.Fatalf("%s: %q not in the comparison", tc.name, tc.old)
		}
		if err := schema.ValidateCompare([]byte(bad)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error naming %s", tc.name, err, tc.want)
		}
	}
	goodMesh := string(meshComparisonOutputs(t)["fixture"])
	for _, tc := range []struct{ name, old, new, want string }{
		{"another version", `"schema": "rdmabench/compare-mesh/v1"`, `"schema": "rdmabench/compare-mesh/v2"`, "/schema"},
		{"an unknown matching", `"matched_by": "rank"`, `"matched_by": "luck"`, "/matched_by"},
		{"a limit of an unknown kind", `"kind": "limit"`, `"kind": "hunch"`, "/kind"},
	} {
		bad := strings.Replace(goodMesh, tc.old, tc.new, 1)
		if bad == goodMesh {
			t.Fatalf("mesh %s: %q not in the comparison", tc.name, tc.old)
		}
		if err := schema.ValidateCompareMesh([]byte(bad)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("mesh %s: %v; want an error naming %s", tc.name, err, tc.want)
		}
	}
}
