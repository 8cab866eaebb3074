package report_test

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/plot"
)

// The plots of this package's test documents: hostile ones, and meshes
// too large to keep as files.

// TestPlotHostileDocuments: the plot of each hostile document beside
// another neither panics nor writes a control character of the document,
// as TestRenderHostileDocuments asks of every renderer.
func TestPlotHostileDocuments(t *testing.T) {
	docs := hostileDocs()
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				for _, other := range []*report.Document{reporttest.SuiteDoc(), docs["huge values"]} {
					checkText(t, "plot", func(w io.Writer) error {
						return plot.Write(w, []report.Source{{Name: "a.json", Doc: doc}, {Name: "b.json", Doc: other}})
					})
				}
			}()
			select {
			case <-done:
			case <-time.After(2 * time.Minute): // a hang guard, not a timing
				t.Fatal("plotting never finished")
			}
		})
	}
}

// TestPlotMeshAggregateOnly: the plot of a mesh of 520 ranks, read back
// from its JSON, draws its aggregate alone (see TestMeshAggregateOnly).
func TestPlotMeshAggregateOnly(t *testing.T) {
	var js bytes.Buffer
	if err := report.WriteJSON(&js, reporttest.AggregateOnlyMesh(t)); err != nil {
		t.Fatal(err)
	}
	back, err := report.ReadJSON(bytes.NewReader(js.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := plot.Write(&page, []report.Source{{Name: "fabric.json", Doc: back}}); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	if c := strings.Count(html, `data-aggregate="hosts"`); c != 3 {
		t.Errorf("%d host heatmaps, want 3 (p50, p99, bandwidth)", c)
	}
	if c := strings.Count(html, `data-aggregate="rails"`); c != 3 {
		t.Errorf("%d NIC grids, want 3", c)
	}
	if strings.Contains(html, `data-ranks="520"`) || !strings.Contains(html, `data-ranks="65"`) || !strings.Contains(html, "an aggregate, not cells per rank") ||
		!strings.Contains(html, "img-src data:") || !strings.Contains(html, "data:image/png;base64,") {
		t.Errorf("the plot of 520 ranks does not draw the aggregate alone (%d bytes)", len(html))
	}
	if strings.Contains(html, "server rank (to)") {
		t.Error("an aggregate heatmap says its columns are ranks")
	}
}

// TestPlotMeshAggregateOneHost: the plot of 72 ranks on one host draws the
// rank matrices alone, no host matrix of one cell (see
// TestMeshAggregateOneHost).
func TestPlotMeshAggregateOneHost(t *testing.T) {
	var page bytes.Buffer
	if err := plot.Write(&page, []report.Source{{Name: "m.json", Doc: reporttest.OneHostMesh(t)}}); err != nil {
		t.Fatal(err)
	}
	if html := page.String(); strings.Contains(html, "data-aggregate=") || strings.Count(html, `data-ranks="72"`) != 2 {
		t.Errorf("plot of 72 ranks on one host: aggregate %v, %d rank heatmaps", strings.Contains(html, "data-aggregate="),
			strings.Count(html, `data-ranks="72"`))
	}
}
