package report_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/report"

	"github.com/rdmabench/rdmabench/pkg/report/schema"
)

func TestSchemaCompiles(t *testing.T) {
	s := reporttest.LoadSchema(t)
	if s["$id"] != schema.URL || s["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$id %v, $schema %v", s["$id"], s["$schema"])
	}
	if c := s["properties"].(reporttest.SchemaNode)["schema"].(reporttest.SchemaNode)["const"]; c != report.Schema {
		t.Errorf("schema const %v, want %s", c, report.Schema)
	}
	for _, strict := range []bool{false, true} {
		if _, err := schema.Compile(strict); err != nil {
			t.Fatalf("strict %v: %v", strict, err)
		}
	}
}

// TestSchemaMatchesModel walks the Go types of the document by their json
// tags and the schema side by side: every field is a property of the
// schema with the JSON type its Go type encodes to and a description, in
// "required" exactly when it has no omitempty; and every property of the
// schema is a field (or marked deprecated: kept for older v1 documents).
// A field added to the model without the schema, or the reverse, fails
// here.
func TestSchemaMatchesModel(t *testing.T) {
	reporttest.CheckSchemaModel(t, reporttest.LoadSchema(t), reflect.TypeFor[report.Document]())
}

// resultDocuments returns the files under the directories that hold a
// results document: JSON whose "schema" is rdmabench/result/v1.
func resultDocuments(t *testing.T, dirs ...string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var probe struct {
				Schema string `json:"schema"`
			}
			if json.Unmarshal(data, &probe) == nil && probe.Schema == report.Schema {
				out[f] = data
			}
		}
	}
	return out
}

// TestSchemaValidatesDocuments: every results document kept in the
// repository (golden files, fixtures, the measured examples in the docs)
// and every fixture document of the tests validates, strictly.
func TestSchemaValidatesDocuments(t *testing.T) {
	files := resultDocuments(t, "testdata", filepath.Join("..", "..", "docs", "examples"))
	if len(files) < 8 {
		t.Fatalf("only %d results documents found: %v", len(files), files)
	}
	for f, data := range files {
		if err := schema.Validate(data); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	for name, doc := range map[string]*report.Document{
		"suite": reporttest.SuiteDoc(), "duration": reporttest.DurationDoc(), "repeat": reporttest.RepeatDoc(), "full": reporttest.FullDoc(), "empty": report.NewDocument(),
		"base": reporttest.BaseRuns(), "regressed": reporttest.RegressedRuns(), "single": reporttest.SingleBase(), "other device": reporttest.OtherDeviceRuns(),
		"sweep": reporttest.SweepDoc(false), "sweep mtu 1024": reporttest.SweepDoc(true),
	} {
		var buf bytes.Buffer
		if err := report.WriteJSON(&buf, doc); err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(buf.Bytes()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestValidateJSONRefuses: what the schema rules out, with the place named.
func TestValidateJSONRefuses(t *testing.T) {
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, reporttest.SweepDoc(false)); err != nil {
		t.Fatal(err)
	}
	good := buf.String()
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"another version", `"schema": "rdmabench/result/v1"`, `"schema": "rdmabench/result/v2"`, "/schema"},
		{"a property the schema does not list", `"test": "write-lat",`, `"test": "write-lat", "p42_ns": 1,`, "p42_ns"},
		{"a count as a string", `"count": 10000,`, `"count": "10000",`, "/results/0/latency/count"},
		{"an unknown basis", `"basis": "rtt_half"`, `"basis": "one-way"`, "/basis"},
		{"a histogram that is not one", `"histogram": "HISTF`, `"histogram": "XISTF`, "/histogram"},
		{"a time that is not RFC 3339", `"start": "2025-03-01T12:00:00Z"`, `"start": "1 March 2025"`, "/start"},
		{"a missing required property", `"test": "write-lat",`, ``, "'test'"},
		{"a negative size", `"size": 2,`, `"size": -2,`, "/size"},
	} {
		bad := strings.Replace(good, tc.old, tc.new, 1)
		if bad == good {
			t.Fatalf("%s: %q not in the document", tc.name, tc.old)
		}
		err := schema.Validate([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error naming %s", tc.name, err, tc.want)
		}
	}
	if err := schema.Validate([]byte("{")); err == nil {
		t.Error("truncated JSON: no error")
	}
}
