package mesh

import (
	"slices"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// checkSteps checks what every step of a pattern over TCP recorded: each
// receiver's flows, aggregates above 0, Jain in (0,1], a probe with its
// distribution, counters said absent (no device); and that the link
// stream holds every flow and probe, tagged with its step.
func checkSteps(t *testing.T, doc *report.Document, links []report.MeshLink, steps []Step) {
	t.Helper()
	m := doc.Mesh
	if m.Schedule != KindPattern || m.Pattern == nil || len(m.Steps) != len(steps) || len(m.Links) != 0 {
		t.Fatalf("schedule %q, pattern %+v, %d steps (want %d), %d links", m.Schedule, m.Pattern, len(m.Steps), len(steps), len(m.Links))
	}
	streamed := map[int]int{}
	probes := 0
	for _, l := range links {
		if l.Step == 0 || len(l.Results) == 0 {
			t.Errorf("stream link %d -> %d: step %d, %d results", l.From, l.To, l.Step, len(l.Results))
		}
		if l.Probe {
			probes++
		} else {
			streamed[l.Step]++
		}
	}
	if probes != len(steps) {
		t.Errorf("%d probes in the stream, want %d", probes, len(steps))
	}
	for i, st := range m.Steps {
		want := steps[i]
		if st.Error != "" || len(st.Flows) != len(want.Flows) || streamed[st.Step] != len(want.Flows) {
			t.Errorf("step %d: %q, %d flows (%d streamed), want %d", st.Step, st.Error, len(st.Flows), streamed[st.Step], len(want.Flows))
		}
		into := map[int]int{}
		for _, f := range want.Flows {
			into[f.To]++
		}
		if len(st.Receivers) != len(into) {
			t.Errorf("step %d: %d receivers, want %d", st.Step, len(st.Receivers), len(into))
		}
		for _, rc := range st.Receivers {
			if rc.Rank == nil || rc.Flows != into[*rc.Rank] || rc.Measured != rc.Flows || rc.AggregateGbps <= 0 ||
				rc.Jain <= 0 || rc.Jain > 1 || rc.Share != nil || rc.NoShare == "" || rc.MinOverMedian > 1 || rc.MaxOverMedian < 1 {
				t.Errorf("step %d: receiver %+v", st.Step, rc)
			}
		}
		if p := st.Probe; p == nil || p.Test != "tcp-lat" || p.Latency == nil || p.Latency.Count == 0 || p.Latency.Histogram == "" {
			t.Errorf("step %d: probe %+v", st.Step, st.Probe)
		}
		if len(st.Counters) != len(want.Ranks()) {
			t.Errorf("step %d: counters of %d ranks, want %d", st.Step, len(st.Counters), len(want.Ranks()))
		}
		if st.Overlap <= 0 || st.Overlap > 1 {
			t.Errorf("step %d: overlap %v", st.Step, st.Overlap)
		}
	}
}

func TestPatternMeshIncast(t *testing.T) {
	p := Pattern{Kind: PatternIncast, K: 3}
	doc, errs, links := meshRun{n: 4, tests: []string{"tcp-bw"}, pattern: &p, duration: 200 * time.Millisecond}.runStream(t)
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	checkSteps(t, doc, links, Incast(4, 3, PatternOptions{Seed: 5}))
	for i, st := range doc.Mesh.Steps {
		if st.Receiver == nil || *st.Receiver != i {
			t.Errorf("step %d: receiver %v", st.Step, st.Receiver)
		}
	}
}

// All-to-all and a bisection across two leaves, with gates no TCP flow
// on one host can meet: every step fails the fairness and the p99 gate,
// naming its receivers.
func TestPatternMeshAllToAllBisection(t *testing.T) {
	p := Pattern{Kind: PatternAllToAll}
	doc, _, links := meshRun{n: 4, tests: []string{"tcp-bw"}, pattern: &p, duration: 200 * time.Millisecond}.runStream(t)
	checkSteps(t, doc, links, AllToAll(4, 0))

	topo := parseTopology(t, "SwitchName=leaf1 Nodes=n[1-2]\nSwitchName=leaf2 Nodes=n[3-4]\nSwitchName=spine Switches=leaf[1-2]\n")
	hosts := []string{"n1", "n3", "n2", "n4"}
	p = Pattern{Kind: PatternBisection}
	limits := report.PatternLimits{MinJain: 1.01, MaxLoadP99Ns: 1}
	doc, _, links = meshRun{n: 4, tests: []string{"tcp-bw"}, pattern: &p, duration: 200 * time.Millisecond, topology: topo, hosts: hosts,
		patternLimits: limits}.runStream(t)
	a, b, _ := Halves(4, hosts, topo)
	checkSteps(t, doc, links, []Step{Bisection(a, b)})
	st := doc.Mesh.Steps[0]
	if len(st.Receivers) != 4 || !slices.Equal(st.Ranks, []int{0, 1, 2, 3}) {
		t.Errorf("bisection: %d receivers, ranks %v", len(st.Receivers), st.Ranks)
	}
	var gates []string
	for _, f := range doc.Mesh.StepFailures {
		gates = append(gates, f.Gate+" "+f.Receiver)
	}
	if !slices.Equal(gates, []string{"fairness rank 0", "fairness rank 1", "fairness rank 2", "fairness rank 3", "load-p99 probe 0 -> 1"}) {
		t.Errorf("step failures %q", gates)
	}
}
