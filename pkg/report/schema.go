package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaV1 is the JSON Schema (draft 2020-12) of [Schema]: every property
// of the document with its unit, the histogram's encoding, unit and basis,
// the percentile rule, and how versions change (docs/schema.md).
//
//go:embed schema/result-v1.json
var schemaV1 []byte

// SchemaURL is the $id of the schema of [Schema].
const SchemaURL = "https://github.com/rdmabench/rdmabench/raw/main/pkg/report/schema/result-v1.json"

// SchemaJSON returns the JSON Schema (draft 2020-12) of the results
// document, as published in pkg/report/schema/result-v1.json. Within v1 it
// allows properties it does not list, so that a document of a later v1
// writer still validates against it.
func SchemaJSON() []byte { return bytes.Clone(schemaV1) }

// strictSchema is the schema compiled for ValidateJSON.
var strictSchema = sync.OnceValues(func() (*jsonschema.Schema, error) { return compileSchema(true) })

// compileSchema compiles the schema with its date-time formats asserted;
// strict, every object with listed properties refuses any other.
func compileSchema(strict bool) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaV1))
	if err != nil {
		return nil, fmt.Errorf("report: schema: %w", err)
	}
	if strict {
		closeObjects(doc)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(SchemaURL, doc); err != nil {
		return nil, fmt.Errorf("report: schema: %w", err)
	}
	s, err := c.Compile(SchemaURL)
	if err != nil {
		return nil, fmt.Errorf("report: schema: %w", err)
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

// ValidateJSON validates data, one results document as JSON, against the
// schema of [Schema], strictly: besides the published schema's rules, no
// object may have a property the schema does not list. Every document
// this version of rdmabench writes passes, so tests can check the
// documents they produce; the error names each offending place (a JSON
// pointer) and rule.
func ValidateJSON(data []byte) error {
	s, err := strictSchema()
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("report: validate: not JSON: %w", err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("report: validate against %s: %w", Schema, err)
	}
	return nil
}
