package reporttest

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report/schema"
)

// SchemaNode is one schema object of the published schema.
type SchemaNode = map[string]any

func LoadSchema(t *testing.T) SchemaNode {
	t.Helper()
	var s SchemaNode
	if err := json.Unmarshal(schema.JSON(), &s); err != nil {
		t.Fatal(err)
	}
	return s
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

// CheckSchemaModel checks the schema root against the Go type typ as
// TestSchemaMatchesModel says. References into the results document's
// schema (result-v1.json#/$defs/...) are followed there.
func CheckSchemaModel(t *testing.T, root SchemaNode, typ reflect.Type) {
	t.Helper()
	defs, _ := root["$defs"].(SchemaNode)
	resultDefs := LoadSchema(t)["$defs"].(SchemaNode)
	used := map[string]bool{}
	// resolve follows n's reference, if any, from the definitions cur
	// (root's or the results document's), and returns the definitions
	// the references under it are relative to.
	resolve := func(n, cur SchemaNode) (SchemaNode, SchemaNode) {
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
		d, ok := in[name].(SchemaNode)
		if !ok {
			t.Fatalf("$ref %s: no such definition", ref)
		}
		return d, in
	}
	timeType := reflect.TypeFor[time.Time]()
	var walk func(path string, typ reflect.Type, n, cur SchemaNode)
	walk = func(path string, typ reflect.Type, n, cur SchemaNode) {
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
			items, ok := n["items"].(SchemaNode)
			if !ok {
				t.Errorf("%s: array without items", path)
				return
			}
			walk(path+"[]", typ.Elem(), items, cur)
		case typ.Kind() == reflect.Map:
			add, ok := n["additionalProperties"].(SchemaNode)
			if !ok {
				t.Errorf("%s: map without additionalProperties", path)
				return
			}
			walk(path+"{}", typ.Elem(), add, cur)
		case typ.Kind() == reflect.Struct:
			props, _ := n["properties"].(SchemaNode)
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
				p, ok := props[name].(SchemaNode)
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
				if !fields[name] && p.(SchemaNode)["deprecated"] != true {
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

func LoadSchemaFile(t *testing.T, data []byte) SchemaNode {
	t.Helper()
	var s SchemaNode
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}
