package render

import (
	"bytes"
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/schema"
)

func TestFabricRendering(t *testing.T) {
	doc := reporttest.FabricDoc()
	var b bytes.Buffer
	if err := WriteTable(&b, doc); err != nil {
		t.Fatal(err)
	}
	table := b.String()
	for _, want := range []string{"thread 0", "thread 1", "0-1", "2-3", "mlx5_0 / mlx5_2", "mlx5_1 / mlx5_3",
		"under load: write-bw, 4 QPs of 65536 B, 5.243 Gbit/s", "threads 2", "rate-limit 0.5 Gbit/s sw",
		"loop threads: client pinned to cores 0-1", "server on NUMA node 0 (cores 0-3)", "mlx5_1 / mlx5_3                 100"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	b.Reset()
	if err := WriteMarkdown(&b, doc); err != nil || !strings.Contains(b.String(), "thread 1") {
		t.Errorf("markdown: %v\n%s", err, b.String())
	}
	b.Reset()
	if err := report.WriteJSON(&b, doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(b.Bytes()); err != nil {
		t.Fatalf("the document does not follow the schema: %v", err)
	}
	for _, f := range Formats {
		b.Reset()
		if err := Write(&b, f, doc); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
