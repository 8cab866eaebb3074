package mesh

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/topology"
)

// hostsInTopology refuses, before the first round, ranks whose hosts the
// topology does not list, naming them (ranks that never registered are
// left to fail their links).
func hostsInTopology(t *topology.Topology, ranks []report.MeshRank) error {
	if t == nil {
		return nil
	}
	var missing []string
	byHost := map[string][]string{}
	for _, rk := range ranks {
		if rk.State != report.RankOK || rk.Host == nil {
			continue
		}
		h := rk.Host.Hostname
		if _, ok := t.Leaf(h); ok {
			continue
		}
		if byHost[h] == nil {
			missing = append(missing, h)
		}
		byHost[h] = append(byHost[h], strconv.Itoa(rk.Rank))
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, len(missing))
	for i, h := range missing {
		word := "rank"
		if len(byHost[h]) > 1 {
			word = "ranks"
		}
		names[i] = fmt.Sprintf("%s (%s %s)", h, word, strings.Join(byHost[h], ", "))
	}
	return usagef("--topology %s lists no switch for %d host(s) of the mesh: %s; add them to a switch's Nodes= (or name the host a rank stands for with --host)",
		t.File, len(missing), strings.Join(names, ", "))
}

// meshTopology is the topology as the document records it.
func meshTopology(t *topology.Topology) *report.MeshTopology {
	if t == nil {
		return nil
	}
	out := &report.MeshTopology{File: t.File, Switches: make([]report.MeshSwitch, len(t.Switches))}
	for i, s := range t.Switches {
		out.Switches[i] = report.MeshSwitch{Name: s.Name, Parent: s.Parent, Nodes: s.Nodes, Switches: s.Switches, LinkSpeed: s.LinkSpeed}
	}
	return out
}

// hostName is a rank's host, or "" while unknown; c.mu is held.
func (c *coordinator) hostName(r int) string {
	if r < 0 || r >= len(c.ranks) || c.ranks[r].Host == nil {
		return ""
	}
	return c.ranks[r].Host.Hostname
}

// path is the switches the link from -> to crosses, nil without a
// topology; c.mu is held.
func (c *coordinator) path(from, to int) []string {
	if c.cfg.Topology == nil {
		return nil
	}
	return c.cfg.Topology.Path(c.hostName(from), c.hostName(to))
}

// switchesUp are, by rank, the switches over its host; c.mu is held.
func (c *coordinator) switchesUp() [][]string {
	if c.cfg.Topology == nil {
		return nil
	}
	out := make([][]string, len(c.ranks))
	for r := range c.ranks {
		out[r] = c.cfg.Topology.Up(c.hostName(r))
	}
	return out
}

// keepName keeps, in h (a host as a link's document records it), the name
// the rank registered (--host), once it has one.
func keepName(h *report.Host, registered *report.Host) {
	if registered != nil && registered.Hostname != "" {
		h.Hostname = registered.Hostname
	}
}

// crowded names the hosts that run more ranks than they have CPUs when a
// test spins (an RDMA test polls its completions): their figures measure
// the CPUs' sharing; "" when none does. c.mu is held.
func (c *coordinator) crowded(spins bool) string {
	if !spins {
		return ""
	}
	count := map[string]int{}
	cpus := map[string]int{}
	var order []string
	for r, rk := range c.ranks {
		if rk.State == report.RankUnregistered || rk.Host == nil {
			continue
		}
		h := c.machines[r]
		if _, seen := count[h]; !seen {
			order = append(order, h)
		}
		count[h]++
		cpus[h] = max(cpus[h], rk.Host.CPUs)
	}
	var out []string
	for _, h := range order {
		if cpus[h] > 0 && count[h] > cpus[h] {
			cores := "CPUs"
			if cpus[h] == 1 {
				cores = "CPU"
			}
			out = append(out, fmt.Sprintf("%s runs %d spinning ranks on %d %s", cmpName(h), count[h], cpus[h], cores))
		}
	}
	return strings.Join(out, ", ")
}

func cmpName(h string) string {
	if h == "" {
		return "a host"
	}
	return h
}
