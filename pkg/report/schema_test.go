package report

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report/schema"
)

// schemaNode is one schema object of the published schema.
type schemaNode = map[string]any

func loadSchema(t *testing.T) schemaNode {
	t.Helper()
	var s schemaNode
	if err := json.Unmarshal(schema.JSON(), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSchemaCompiles(t *testing.T) {
	s := loadSchema(t)
	if s["$id"] != schema.URL || s["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$id %v, $schema %v", s["$id"], s["$schema"])
	}
	if c := s["properties"].(schemaNode)["schema"].(schemaNode)["const"]; c != Schema {
		t.Errorf("schema const %v, want %s", c, Schema)
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
	checkSchemaModel(t, loadSchema(t), reflect.TypeFor[Document]())
}

// jsonField is a field of a struct as encoding/json sees it: the fields of
// an embedded struct without a json name are its own.
type jsonField struct {
	name, opts string
	goName     string
	typ        reflect.Type
}

func jsonFields(typ reflect.Type) []jsonField {
	var out []jsonField
	for f := range typ.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				out = append(out, jsonFields(et)...)
				continue
			}
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name: name, opts: opts, goName: typ.Name() + "." + f.Name, typ: f.Type})
	}
	return out
}

// checkSchemaModel checks the schema root against the Go type typ as
// TestSchemaMatchesModel says. References into the results document's
// schema (result-v1.json#/$defs/...) are followed there.
func checkSchemaModel(t *testing.T, root schemaNode, typ reflect.Type) {
	t.Helper()
	defs, _ := root["$defs"].(schemaNode)
	resultDefs := loadSchema(t)["$defs"].(schemaNode)
	used := map[string]bool{}
	// resolve follows n's reference, if any, from the definitions cur
	// (root's or the results document's), and returns the definitions
	// the references under it are relative to.
	resolve := func(n, cur schemaNode) (schemaNode, schemaNode) {
		ref, ok := n["$ref"].(string)
		if !ok {
			return n, cur
		}
		in, name := cur, strings.TrimPrefix(ref, "#/$defs/")
		if after, ok := strings.CutPrefix(ref, "result-v1.json#/$defs/"); ok {
			in, name = resultDefs, after
		}
		if reflect.ValueOf(in).Pointer() == reflect.ValueOf(defs).Pointer() {
			used[name] = true
		}
		d, ok := in[name].(schemaNode)
		if !ok {
			t.Fatalf("$ref %s: no such definition", ref)
		}
		return d, in
	}
	timeType := reflect.TypeFor[time.Time]()
	var walk func(path string, typ reflect.Type, n, cur schemaNode)
	walk = func(path string, typ reflect.Type, n, cur schemaNode) {
		// A pointer inside an array (a matrix cell) may be null.
		nullable := typ.Kind() == reflect.Pointer && strings.HasSuffix(path, "[]")
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		n, cur = resolve(n, cur)
		want := ""
		switch {
		case typ == timeType:
			want = "string"
			if n["format"] != "date-time" {
				t.Errorf("%s: a time without format date-time", path)
			}
		case typ.Kind() == reflect.Struct:
			want = "object"
		case typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array:
			want = "array"
		case typ.Kind() == reflect.Map:
			want = "object"
		case typ.Kind() == reflect.String:
			want = "string"
		case typ.Kind() == reflect.Bool:
			want = "boolean"
		case typ.Kind() >= reflect.Int && typ.Kind() <= reflect.Uint64:
			want = "integer"
		case typ.Kind() == reflect.Float32 || typ.Kind() == reflect.Float64:
			want = "number"
		default:
			t.Fatalf("%s: Go type %s has no JSON type in this test", path, typ)
		}
		if nullable {
			if ts, _ := n["type"].([]any); len(ts) == 2 && ts[0] == want && ts[1] == "null" {
				n = maps.Clone(n)
				n["type"] = want
			}
		}
		if n["type"] != want {
			t.Errorf("%s: schema type %v, Go type %s encodes as %s", path, n["type"], typ, want)
			return
		}
		switch {
		case typ == timeType:
		case typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array:
			items, ok := n["items"].(schemaNode)
			if !ok {
				t.Errorf("%s: array without items", path)
				return
			}
			walk(path+"[]", typ.Elem(), items, cur)
		case typ.Kind() == reflect.Map:
			add, ok := n["additionalProperties"].(schemaNode)
			if !ok {
				t.Errorf("%s: map without additionalProperties", path)
				return
			}
			walk(path+"{}", typ.Elem(), add, cur)
		case typ.Kind() == reflect.Struct:
			props, _ := n["properties"].(schemaNode)
			var required []string
			reqs, _ := n["required"].([]any) // absent: nothing is required
			for _, r := range reqs {
				required = append(required, r.(string))
			}
			fields := map[string]bool{}
			for _, f := range jsonFields(typ) {
				name := f.name
				if fields[name] {
					t.Fatalf("%s: two fields named %s: this test does not resolve them as encoding/json does", path, name)
				}
				fields[name] = true
				fp := path + "." + name
				p, ok := props[name].(schemaNode)
				if !ok {
					t.Errorf("%s: field %s is not in the schema", fp, f.goName)
					continue
				}
				if d, _ := p["description"].(string); len(d) < 8 {
					t.Errorf("%s: no description", fp)
				}
				omit := slices.Contains(strings.Split(f.opts, ","), "omitempty")
				if req := slices.Contains(required, name); req == omit {
					t.Errorf("%s: required %v in the schema, omitempty %v in %s", fp, req, omit, f.goName)
				}
				walk(fp, f.typ, p, cur)
			}
			for name, p := range props {
				if !fields[name] && p.(schemaNode)["deprecated"] != true {
					t.Errorf("%s.%s: in the schema, not in %s (mark it deprecated if older documents have it)", path, name, typ.Name())
				}
			}
			for _, r := range required {
				if !fields[r] {
					t.Errorf("%s: required %q is not a field of %s", path, r, typ.Name())
				}
			}
		}
	}
	walk("$", typ, root, defs)
	for name := range defs {
		if !used[name] {
			t.Errorf("$defs/%s: not used by any property", name)
		}
	}
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
			if json.Unmarshal(data, &probe) == nil && probe.Schema == Schema {
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
	for name, doc := range map[string]*Document{
		"suite": suiteDoc(), "duration": durationDoc(), "repeat": repeatDoc(), "full": fullDoc(), "empty": NewDocument(),
		"base": baseRuns(), "regressed": regressedRuns(), "single": singleBase(), "other device": otherDeviceRuns(),
		"sweep": sweepDoc(false), "sweep mtu 1024": sweepDoc(true),
	} {
		var buf bytes.Buffer
		if err := WriteJSON(&buf, doc); err != nil {
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
	if err := WriteJSON(&buf, sweepDoc(false)); err != nil {
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
