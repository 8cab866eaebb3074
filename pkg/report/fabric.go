package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// The parts of a result that say how a test spread over the host: its loop
// threads (--threads), its devices (-d A,B), the cores its loops ran on
// (--cpu) and the load it ran under (--load).

// Thread is one sending loop thread of an end of a bandwidth test run on
// several threads (--threads): the QPs it drove and what it sent.
type Thread struct {
	// End is "client" or "server": whose sending it is.
	End   string `json:"end"`
	Index int    `json:"index"`
	// QPs are the indexes of the QPs the thread drove (0-based, as the
	// test created them), each with its own loop on the thread's own CQs.
	QPs       []int      `json:"qps"`
	Bandwidth *Bandwidth `json:"bandwidth,omitempty"`
}

// Placement says where each end's loop threads ran.
type Placement struct {
	Client *EndPlacement `json:"client,omitempty"`
	Server *EndPlacement `json:"server,omitempty"`
}

// Placement policies.
const (
	// PlaceCPUList: pinned to the cores asked for (--cpu, --server-cpu).
	PlaceCPUList = "cpu-list"
	// PlaceNUMA: pinned to the cores of the device's NUMA node.
	PlaceNUMA = "numa"
	// PlaceNone: not pinned; Note says why.
	PlaceNone = "none"
)

// EndPlacement is where one end's loop threads were allowed to run and
// where they were seen running.
type EndPlacement struct {
	// Policy is PlaceCPUList, PlaceNUMA or PlaceNone.
	Policy string `json:"policy"`
	// NUMANode is the device's NUMA node (policy numa).
	NUMANode *int `json:"numa_node,omitempty"`
	// CPUs are the cores every loop thread was pinned to
	// (sched_setaffinity); absent when not pinned.
	CPUs []int `json:"cpus,omitempty"`
	// Used are the cores the loop threads were seen running on (at the
	// start and end of each loop call).
	Used []int `json:"used_cpus,omitempty"`
	// Note says why the threads were not pinned, or what limited the set.
	Note string `json:"note,omitempty"`
}

// DeviceResult is one device's part of a test run on several devices at
// once (-d A,B): the result's own figures are the sum of its devices'
// (bandwidth: the rates add) or all their samples together (latency).
type DeviceResult struct {
	// Device is the client's device, ServerDevice the server's it was
	// paired with.
	Device       string `json:"device"`
	ServerDevice string `json:"server_device,omitempty"`
	Iterations   int    `json:"iterations"`
	// The figures of this device alone, as in a result.
	Latency   *Latency   `json:"latency,omitempty"`
	Bandwidth *Bandwidth `json:"bandwidth,omitempty"`
	Reverse   *Bandwidth `json:"reverse,omitempty"`
	Total     *Bandwidth `json:"total,omitempty"`
	Threads   []Thread   `json:"threads,omitempty"`
	Load      *Load      `json:"load,omitempty"`
	Intervals []Interval `json:"intervals,omitempty"`
	Precision *Precision `json:"precision,omitempty"`
	Effective *Effective `json:"effective,omitempty"`
	Placement *Placement `json:"placement,omitempty"`
	// PortCounters are how this device's port counters (and those of the
	// server's device it was paired with) changed over its part.
	PortCounters *PortCounters `json:"port_counters,omitempty"`
	Warnings     []string      `json:"warnings,omitempty"`
	Error        string        `json:"error,omitempty"`
}

// Load is the background load of a latency test run under load (--load):
// a bandwidth test on QPs of its own between the same two ends, and what
// it moved while the latency of one size was measured.
type Load struct {
	Test       string `json:"test"`
	Connection string `json:"connection,omitempty"`
	Size       int    `json:"size"`
	QPs        int    `json:"qps"`
	// Bandwidth is what the load's sender completed from the first
	// measured latency sample to the last.
	Bandwidth *Bandwidth `json:"bandwidth,omitempty"`
}

// LoadParams is a load as asked for (--load, --load-qps, --load-size).
type LoadParams struct {
	Test string `json:"test"`
	QPs  int    `json:"qps,omitempty"`
	Size int    `json:"size,omitempty"`
}

// listText writes indexes as ranges: "0-3", "0,2".
func listText(v []int) string {
	if len(v) == 0 {
		return "-"
	}
	return strings.Join(textfmt.IntRanges(v), ",")
}

// Text says where each end's loop threads ran: "loop threads: client
// pinned to cores 0-3; server not pinned"; empty for a nil p.
func (p *Placement) Text() string {
	if p == nil {
		return ""
	}
	end := func(name string, e *EndPlacement) string {
		if e == nil {
			return ""
		}
		var s string
		switch e.Policy {
		case PlaceCPUList:
			s = name + " pinned to cores " + listText(e.CPUs)
		case PlaceNUMA:
			node := "?"
			if e.NUMANode != nil {
				node = strconv.Itoa(*e.NUMANode)
			}
			s = fmt.Sprintf("%s on NUMA node %s (cores %s)", name, node, listText(e.CPUs))
		default:
			s = name + " not pinned"
		}
		if len(e.Used) > 0 {
			s += ", ran on " + listText(e.Used)
		}
		return s
	}
	var parts []string
	for _, s := range []string{end("client", p.Client), end("server", p.Server)} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "loop threads: " + strings.Join(parts, "; ")
}
