package compare

import (
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
)

func patternDoc(name string, gbps, jain, p99 float64) *report.Document {
	r := 1
	st := report.MeshStep{Step: 1, Receiver: &r, Receivers: []report.StepReceiver{{Rank: &r, Flows: 3, Measured: 3, AggregateGbps: gbps, Jain: jain}},
		Probe: &report.StepProbe{From: 0, To: 1, Test: "write-lat", Latency: &report.Latency{P99Ns: p99}}}
	return &report.Document{Mesh: &report.Mesh{Size: 4, Schedule: "pattern", Pattern: &report.MeshPattern{Name: name, Test: "write-bw", Seed: 1},
		Steps: []report.MeshStep{st}}}
}

// Two pattern meshes: per step and receiver, the aggregate, Jain and p99
// under the load on both sides; patterns that differ are said to.
func TestCompareMeshSteps(t *testing.T) {
	c, err := CompareMesh(patternDoc("incast:3", 100, 0.99, 5000), patternDoc("incast:3", 80, 0.9, 10000), MeshOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Steps) != 1 {
		t.Fatalf("steps %+v", c.Steps)
	}
	s := c.Steps[0]
	if s.Step != 1 || s.Receiver != "rank 1" || s.BaseGbps != 100 || s.NewGbps != 80 || *s.Change > -0.19 || *s.Change < -0.21 ||
		s.BaseJain != 0.99 || s.NewJain != 0.9 || *s.P99Change != 1 {
		t.Errorf("%+v", s)
	}
	c, _ = CompareMesh(patternDoc("incast:3", 100, 1, 1), patternDoc("incast:2", 100, 1, 1), MeshOptions{})
	if !strings.Contains(strings.Join(c.Warnings, "\n"), "patterns differ: base incast:3 of write-bw, new incast:2") {
		t.Errorf("warnings %q", c.Warnings)
	}
}
