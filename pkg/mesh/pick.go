package mesh

import (
	"fmt"
	"net"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// Schedule kinds, as report.Mesh.Schedule records them.
const (
	KindRoundRobin  = "round-robin"         // every pair of ranks, both directions
	KindPairsFile   = "pairs-file"          // --pairs
	KindRailAligned = "rail-aligned"        // --rails: every pair of hosts on every rail
	KindSample      = "sample"              // --sample K over the ranks
	KindRailSample  = "rail-aligned-sample" // --rails --sample K: over the hosts, on every rail
	KindRetest      = "retest"              // suspects packed into rounds of their own
	KindPattern     = "pattern"             // --pattern: steps of flows at once (report.Mesh.Pattern)
)

// ScheduleOptions choose the schedule beside Config.Links (--pairs).
type ScheduleOptions struct {
	// Rails: ranks are NICs, NIC i of a host measured only against NIC i
	// of the others, the rails of a host pair at once (--rails).
	Rails bool
	// Sample, when above 0, is K rounds of random perfect matchings
	// (--sample K): over the ranks, or over the hosts with Rails.
	Sample int
	// Seed seeds the matchings (--seed; the command draws one when it is
	// not given, and the document records it).
	Seed uint64
}

// pickSchedule is rank 0's schedule of n ranks, from the options and, for
// rails, the ranks as they registered (their host and local rank). The
// sample it returns, if any, is for the document.
func pickSchedule(cfg *Config, ranks []report.MeshRank) (Schedule, string, *report.MeshSample, error) {
	n := len(ranks)
	o := cfg.Schedule
	switch {
	case cfg.Links != nil:
		return FromLinks(cfg.Links), KindPairsFile, nil, nil
	case !o.Rails && o.Sample > 0:
		return Sample(n, o.Sample, o.Seed), KindSample, &report.MeshSample{Rounds: o.Sample, Seed: o.Seed}, nil
	case !o.Rails:
		return RoundRobin(n), KindRoundRobin, nil, nil
	}
	names := make([]string, n)
	local := make([]int, n)
	for i, rk := range ranks {
		local[i] = rk.LocalRank
		if rk.State == report.RankUnregistered {
			continue // its host is unknown: left out
		}
		if rk.Host != nil && rk.Host.Hostname != "" {
			names[i] = rk.Host.Hostname
		} else if h, _, err := net.SplitHostPort(rk.Addr); err == nil {
			names[i] = h
		}
	}
	l, err := NewLayout(names, local)
	if err != nil {
		return nil, "", nil, fmt.Errorf("--rails: %w", err)
	}
	if o.Sample > 0 {
		if h := l.Hosts(); h >= 2 && o.Sample >= h-1+h%2 {
			logf(cfg.Log, "--sample %d on %d hosts: every host pair, in %d rounds", o.Sample, h, h-1+h%2)
		}
		return OnRails(SampleHosts(l.Hosts(), o.Sample, o.Seed), l), KindRailSample,
			&report.MeshSample{Rounds: o.Sample, Seed: o.Seed}, nil
	}
	return RailAligned(l), KindRailAligned, nil, nil
}
