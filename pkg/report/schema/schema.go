// Package schema holds the JSON Schema of the results document
// (rdmabench/result/v1) and validates documents against it, for the tests
// and tools that check what rdmabench writes. It is apart from pkg/report
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

// URL is the $id of the schema.
const URL = "https://github.com/rdmabench/rdmabench/raw/main/pkg/report/schema/result-v1.json"

// JSON returns the JSON Schema (draft 2020-12) of the results document, as
// published in pkg/report/schema/result-v1.json. Within v1 it allows
// properties it does not list, so that a document of a later v1 writer
// still validates against it.
func JSON() []byte { return bytes.Clone(schemaV1) }

// strict is the schema compiled for Validate.
var strict = sync.OnceValues(func() (*jsonschema.Schema, error) { return Compile(true) })

// Compile compiles the schema with its date-time formats asserted;
// strict, every object with listed properties refuses any other.
func Compile(closed bool) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaV1))
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if closed {
		closeObjects(doc)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(URL, doc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s, err := c.Compile(URL)
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
func Validate(data []byte) error {
	s, err := strict()
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("validate: not JSON: %w", err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("validate against %s: %w", URL, err)
	}
	return nil
}
