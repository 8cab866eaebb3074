package mesh

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/topology"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

func parseTopology(t *testing.T, text string) *topology.Topology {
	t.Helper()
	topo, err := topology.Parse(strings.NewReader(text), "topology.conf")
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// Ranks on one host standing for the hosts of two leaves (--host): the
// ranks are named by them, every link records the switches it crossed,
// the document its topology, and the stream read back the same.
func TestMeshTopology(t *testing.T) {
	topo := parseTopology(t, "SwitchName=leaf1 Nodes=n[1-2] LinkSpeed=400\nSwitchName=leaf2 Nodes=n3,n4\nSwitchName=spine Switches=leaf[1-2]\n")
	hosts := []string{"n1", "n2", "n3", "n4"}
	doc, errs, links := meshRun{n: 4, tests: []string{"tcp-lat"}, topology: topo, hosts: hosts, blame: true}.runStream(t)
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	m := doc.Mesh
	if m.Topology == nil || m.Topology.File != "topology.conf" || len(m.Topology.Switches) != 3 ||
		m.Topology.Switches[0].LinkSpeed != "400" || m.Topology.Switches[0].Parent != "spine" ||
		!slices.Equal(m.Topology.Switches[2].Switches, []string{"leaf1", "leaf2"}) {
		t.Fatalf("topology %+v", m.Topology)
	}
	for _, r := range m.Ranks {
		if r.Host == nil || r.Host.Hostname != hosts[r.Rank] {
			t.Errorf("rank %d: host %+v, want %s", r.Rank, r.Host, hosts[r.Rank])
		}
	}
	leaf := func(r int) string { return map[bool]string{true: "leaf1", false: "leaf2"}[r < 2] }
	for _, ls := range [][]report.MeshLink{m.Links, links} {
		for _, l := range ls {
			want := []string{leaf(l.From)}
			if leaf(l.From) != leaf(l.To) {
				want = []string{leaf(l.From), "spine", leaf(l.To)}
			}
			if !slices.Equal(l.Switches, want) {
				t.Errorf("link %d -> %d crossed %v, want %v", l.From, l.To, l.Switches, want)
			}
		}
	}
}

// Hosts the topology does not list are named, with their ranks, before
// the first round: a usage error, no document.
func TestMeshTopologyMissingHosts(t *testing.T) {
	topo := parseTopology(t, "SwitchName=leaf1 Nodes=n[1-2]\n")
	_, errs, _ := meshRun{n: 4, tests: []string{"tcp-lat"}, topology: topo, hosts: []string{"n1", "n9", "n2", "n9"}, noDoc: true}.runStream(t)
	err := errs[0]
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--topology topology.conf lists no switch for 1 host(s) of the mesh: n9 (ranks 1, 3)") {
		t.Errorf("rank 0: %v", err)
	}
	for r := 1; r < 4; r++ {
		if errs[r] != nil {
			t.Errorf("rank %d: %v", r, errs[r])
		}
	}
}

// The ranks of one machine share its CPUs, whatever host each stands for:
// with a test that spins, more ranks than CPUs is named.
func TestCrowded(t *testing.T) {
	c := &coordinator{ranks: make([]report.MeshRank, 3), machines: []string{"vm", "vm", "other"}}
	for i := range c.ranks {
		c.ranks[i] = report.MeshRank{Rank: i, State: report.RankOK, Host: &report.Host{Hostname: []string{"n1", "n2", "n3"}[i], CPUs: 1}}
	}
	if got := c.crowded(true); got != "vm runs 2 spinning ranks on 1 CPU" {
		t.Errorf("crowded: %q", got)
	}
	if got := c.crowded(false); got != "" {
		t.Errorf("a test that does not spin: %q", got)
	}
	rdma, events, tcp := workloads.Request{Tests: []string{"write-lat"}}, workloads.Request{Tests: []string{"write-lat"}}, workloads.Request{Tests: []string{"tcp-lat"}}
	events.Spec.Events = true
	if !spins(rdma) || spins(events) || spins(tcp) {
		t.Errorf("spins: write-lat %v, write-lat -e %v (waits on a completion channel), tcp-lat %v", spins(rdma), spins(events), spins(tcp))
	}
}
