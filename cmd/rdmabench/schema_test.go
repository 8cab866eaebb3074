package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report/schema"
)

// TestMeasuredDocumentsMatchSchema: documents measured by the commands
// (the TCP tests on this host's loopback: latency at two sizes, bandwidth
// in duration mode with its intervals, repeated runs with their
// summaries), and the same documents passed through `report -o json`,
// validate against the published schema.
func TestMeasuredDocumentsMatchSchema(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i, args := range [][]string{
		{"tcp-lat", "-s", "2,64", "-n", "30", "--warmup", "3"},
		{"tcp-bw", "-s", "4K", "-D", "1", "--interval", "500ms"},
		{"tcp-lat", "-n", "20", "--repeat", "2"},
	} {
		out, stderr, code := cli(t, append(args, "-o", "json")...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if err := schema.Validate([]byte(out)); err != nil {
			t.Errorf("%v: %v", args, err)
		}
		file := filepath.Join(dir, fmt.Sprintf("doc%d.json", i))
		if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, file)
	}
	out, stderr, code := cli(t, append([]string{"report", "-o", "json"}, files...)...)
	if code != 0 {
		t.Fatalf("report -o json: exit %d: %s", code, stderr)
	}
	var docs []json.RawMessage
	if err := json.Unmarshal([]byte(out), &docs); err != nil || len(docs) != len(files) {
		t.Fatalf("report -o json of %d files: %v, %d documents", len(files), err, len(docs))
	}
	for i, d := range docs {
		if err := schema.Validate(d); err != nil {
			t.Errorf("report -o json, document %d: %v", i, err)
		}
	}
}
