// Package schema holds the JSON Schemas of what rdmabench writes as JSON
// (the results document, rdmabench/result/v1, and the comparisons of two
// documents, rdmabench/compare/v1 and rdmabench/compare-mesh/v1) and
// validates documents against them, for the tests and tools that check
// what rdmabench writes. It is apart from pkg/report
// so that the rdmabench binary, which writes and reads documents without
// validating them, does not carry a schema compiler.
package schema

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaV1 is the JSON Schema (draft 2020-12) of the document: every property
// of the document with its unit, the histogram's encoding, unit and basis,
// the percentile rule, and how versions change (docs/schema.md).
//
//go:embed result-v1.json
var schemaV1 []byte

// The comparisons' schemas (draft 2020-12): what `rdmabench compare -o
// json` writes for two results documents and for two mesh documents. They
// take the tool, hosts and a mesh's link failures from result-v1.json.
//
//go:embed compare-v1.json
var compareV1 []byte

//go:embed compare-mesh-v1.json
var compareMeshV1 []byte

// base is where the schemas are published; each file's $id is base + its
// name, so that the comparisons' references to result-v1.json resolve.
const base = "https://github.com/rdmabench/rdmabench/raw/main/pkg/report/schema/"

// URL is the $id of the schema of the results document.
const URL = base + "result-v1.json"

// CompareURL and CompareMeshURL are the $ids of the comparisons' schemas.
const (
	CompareURL     = base + "compare-v1.json"
	CompareMeshURL = base + "compare-mesh-v1.json"
)

// files are the schemas by $id.
var files = map[string][]byte{URL: schemaV1, CompareURL: compareV1, CompareMeshURL: compareMeshV1}

// JSON returns the JSON Schema (draft 2020-12) of the results document, as
// published in pkg/report/schema/result-v1.json. Within v1 it allows
// properties it does not list, so that a document of a later v1 writer
// still validates against it.
func JSON() []byte { return bytes.Clone(schemaV1) }

// CompareJSON and CompareMeshJSON return the JSON Schemas of the
// comparisons, as published in pkg/report/schema/compare-v1.json and
// compare-mesh-v1.json; like the results document's, they allow
// properties they do not list.
func CompareJSON() []byte     { return bytes.Clone(compareV1) }
func CompareMeshJSON() []byte { return bytes.Clone(compareMeshV1) }

// strict are the schemas compiled for the Validate functions.
var (
	strict            = sync.OnceValues(func() (*jsonschema.Schema, error) { return CompileURL(URL, true) })
	strictCompare     = sync.OnceValues(func() (*jsonschema.Schema, error) { return CompileURL(CompareURL, true) })
	strictCompareMesh = sync.OnceValues(func() (*jsonschema.Schema, error) { return CompileURL(CompareMeshURL, true) })
)

// Compile compiles the schema of the results document with its date-time
// formats asserted; strict, every object with listed properties refuses
// any other.
func Compile(closed bool) (*jsonschema.Schema, error) { return CompileURL(URL, closed) }

// CompileURL compiles the schema whose $id is url ([URL], [CompareURL] or
// [CompareMeshURL]) as [Compile] does.
func CompileURL(url string, closed bool) (*jsonschema.Schema, error) {
	if _, ok := files[url]; !ok {
		return nil, fmt.Errorf("schema: no schema %s", url)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	for id, data := range files {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("schema: %s: %w", id, err)
		}
		if closed {
			closeObjects(doc)
		}
		if err := c.AddResource(id, doc); err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return s, nil
}

// closeObjects sets "additionalProperties": false on every schema object
// that lists "properties" and says nothing of others.
func closeObjects(v any) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["properties"]; ok {
			if _, ok := x["additionalProperties"]; !ok {
				x["additionalProperties"] = false
			}
		}
		for _, e := range x {
			closeObjects(e)
		}
	case []any:
		for _, e := range x {
			closeObjects(e)
		}
	}
}

// Validate validates data, one results document as JSON, against the
// schema, strictly: besides the published schema's rules, no
// object may have a property the schema does not list. Every document
// this version of rdmabench writes passes, so tests can check the
// documents they produce; the error names each offending place (a JSON
// pointer) and rule.
func Validate(data []byte) error { return validate(strict, URL, data) }

// ValidateCompare validates data, a comparison of two results documents
// (`rdmabench compare -o json`), strictly, as [Validate] does.
func ValidateCompare(data []byte) error { return validate(strictCompare, CompareURL, data) }

// ValidateCompareMesh validates data, a comparison of two mesh documents
// (`rdmabench compare -o json` of two meshes), strictly, as [Validate]
// does.
func ValidateCompareMesh(data []byte) error {
	return validate(strictCompareMesh, CompareMeshURL, data)
}

func validate(compiled func() (*jsonschema.Schema, error), url string, data []byte) error {
	s, err := compiled()
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("validate: not JSON: %w", err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("validate against %s: %w", url, err)
	}
	return nil
}
