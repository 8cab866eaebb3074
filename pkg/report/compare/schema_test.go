package compare

import (
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report/schema"
)

// TestCompareSchemasCompile: the comparisons' schemas compile, with their
// references into the results document's schema, and name their version.
func TestCompareSchemasCompile(t *testing.T) {
	for _, tc := range []struct {
		url, version string
		data         []byte
	}{
		{schema.CompareURL, Schema, schema.CompareJSON()},
		{schema.CompareMeshURL, MeshSchema, schema.CompareMeshJSON()},
	} {
		s := reporttest.LoadSchemaFile(t, tc.data)
		if s["$id"] != tc.url || s["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("$id %v, $schema %v", s["$id"], s["$schema"])
		}
		if c := s["properties"].(reporttest.SchemaNode)["schema"].(reporttest.SchemaNode)["const"]; c != tc.version {
			t.Errorf("%s: schema const %v, want %s", tc.url, c, tc.version)
		}
		for _, strict := range []bool{false, true} {
			if _, err := schema.CompileURL(tc.url, strict); err != nil {
				t.Fatalf("%s, strict %v: %v", tc.url, strict, err)
			}
		}
	}
	if _, err := schema.CompileURL("https://example.com/x.json", false); err == nil {
		t.Error("an unknown schema compiled")
	}
}
