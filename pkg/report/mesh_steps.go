package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// MeshPattern is the load pattern a mesh ran (--pattern): a sequence of
// steps, each running many flows of one bandwidth test at once for a
// duration, with a ping-pong beside them (latency under the load).
type MeshPattern struct {
	// Name is as --pattern took it: "incast:3", "all-to-all",
	// "all-to-all:8", "bisection".
	Name string `json:"name"`
	// Test is the flows' bandwidth test, Probe the ping-pong's latency
	// test; DurationNs how long each step's flows and probe ran; QPs each
	// flow's QPs (0: the test's default).
	Test       string `json:"test"`
	Probe      string `json:"probe"`
	DurationNs int64  `json:"duration_ns"`
	QPs        int    `json:"qps,omitempty"`
	// Seed drew incast's senders (and with a sample, its receivers);
	// Sample is the number of receivers asked for (0: every rank).
	Seed   uint64 `json:"seed"`
	Sample int    `json:"sample,omitempty"`
	// Gates are the pattern's gates asked for.
	Gates *PatternLimits `json:"gates,omitempty"`
}

// PatternLimits are the gates of a load pattern's steps (--limit-share,
// --limit-fairness, --limit-load-p99): a receiver (or host) whose
// aggregate over its nominal rate is below MinShare, whose flows' Jain
// index is below MinJain, or a step whose probe's p99 is above
// MaxLoadP99Ns fails.
type PatternLimits struct {
	MinShare     float64 `json:"min_share,omitempty"`
	MinJain      float64 `json:"min_jain,omitempty"`
	MaxLoadP99Ns int64   `json:"max_load_p99_ns,omitempty"`
}

// IsZero reports whether l sets no gate.
func (l PatternLimits) IsZero() bool { return l == PatternLimits{} }

// MeshStep is one step of a load pattern: its flows' figures (each
// flow's full results are in the link stream, a link event tagged with
// the step), the receivers' aggregates and fairness, the latency under
// the load and the port counters' changes.
type MeshStep struct {
	Step int `json:"step"` // 1-based
	// Receiver is an incast step's receiver; absent when every rank of
	// the step receives (all-to-all, bisection).
	Receiver *int `json:"receiver,omitempty"`
	// Ranks are the step's ranks, sorted.
	Ranks []int `json:"ranks"`
	// Start and End bound the step's flows and probe.
	Start time.Time  `json:"start"`
	End   time.Time  `json:"end"`
	Flows []StepFlow `json:"flows"`
	// Receivers are, per rank receiving, its flows' aggregate; Hosts the
	// same per host, when ranks of one host received in the step.
	Receivers []StepReceiver `json:"receivers"`
	Hosts     []StepReceiver `json:"hosts,omitempty"`
	// Overlap is how much of the flows ran together: from the latest
	// start to the earliest end over the flows' whole span (1: all ran
	// the whole time together; 0: some never met).
	Overlap float64 `json:"overlap"`
	// Probe is the latency under the load.
	Probe *StepProbe `json:"probe,omitempty"`
	// Counters are the changes of every port counter of every NIC of the
	// step over it.
	Counters []StepCounters `json:"counters,omitempty"`
	Warnings []string       `json:"warnings,omitempty"`
	// Error says why the step did not run, or ran in part.
	Error string `json:"error,omitempty"`
	// Cost is where rank 0's time on the step went.
	Cost *StepCost `json:"cost,omitempty"`
}

// StepCost is where a step's time went, as rank 0 saw it: reading the
// counters (before and after), running the flows (from handing them out
// to the last one's document back: the duration, plus setting up,
// tearing down and sending the results), and recording the step (the
// link stream, the figures).
type StepCost struct {
	CountersNs int64 `json:"counters_ns"`
	FlowsNs    int64 `json:"flows_ns"`
	// SetupNs is FlowsNs beyond the flows' duration: connections, QPs,
	// the documents' way back.
	SetupNs  int64 `json:"setup_ns"`
	RecordNs int64 `json:"record_ns"`
}

// StepFlow is one flow of a step: From sent to To's server.
type StepFlow struct {
	From int `json:"from"`
	To   int `json:"to"`
	// Gbps is the flow's bandwidth, Gbit/s; absent when it failed.
	Gbps  *float64  `json:"bw_gbps,omitempty"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Error string    `json:"error,omitempty"`
}

// StepReceiver is one receiver's (a rank's, or a host's) flows in a step.
type StepReceiver struct {
	Rank *int   `json:"rank,omitempty"`
	Host string `json:"host,omitempty"`
	// Flows into it, and of them those measured.
	Flows    int `json:"flows"`
	Measured int `json:"measured"`
	// AggregateGbps is the sum of its measured flows' bandwidth.
	AggregateGbps float64 `json:"aggregate_gbps"`
	// LinkGbps is its port's nominal rate (the device's active speed ×
	// width), Share the aggregate over it; absent where the device does
	// not say (TCP), NoShare then saying why.
	LinkGbps float64  `json:"link_gbps,omitempty"`
	Share    *float64 `json:"share,omitempty"`
	NoShare  string   `json:"no_share,omitempty"`
	// Jain is Jain's fairness index over its measured flows, (Σx)²/(n·Σx²):
	// 1 when all got the same, 1/n when one got everything.
	Jain float64 `json:"jain"`
	// MinOverMedian and MaxOverMedian are the slowest and fastest flow
	// over the median of its flows.
	MinOverMedian float64 `json:"min_over_median"`
	MaxOverMedian float64 `json:"max_over_median"`
}

// Name is "rank 3", or the host's name.
func (r *StepReceiver) Name() string {
	if r.Rank != nil {
		return fmt.Sprintf("rank %d", *r.Rank)
	}
	return r.Host
}

// StepProbe is the ping-pong run beside a step's flows, between two of
// its ranks, for as long as they ran: the latency under the load.
type StepProbe struct {
	From int    `json:"from"`
	To   int    `json:"to"`
	Test string `json:"test"`
	Size int    `json:"size,omitempty"`
	// Latency is its full distribution (histogram included).
	Latency *Latency `json:"latency,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// StepCounters are the changes of one rank's port counters over a step:
// every counter of /sys/class/infiniband/DEV/ports/N/{counters,hw_counters}
// and, named "netdev:NAME", of its network device's statistics.
type StepCounters struct {
	Rank   int    `json:"rank"`
	Device string `json:"device,omitempty"`
	Port   int    `json:"port,omitempty"`
	// Watched is how many counters the port has; Deltas those that
	// changed, by how much.
	Watched int               `json:"watched"`
	Deltas  map[string]uint64 `json:"deltas,omitempty"`
	// Congestion are the congestion and pause counters the port has (see
	// CongestionCounters), changed or not; Absent the congestion counters
	// it does not have (rxe has none of them): absent, not zero.
	Congestion map[string]uint64 `json:"congestion,omitempty"`
	Absent     []string          `json:"absent,omitempty"`
	// Error says why the counters could not be read (a TCP rank without a
	// device, a device without sysfs counters).
	Error string `json:"error,omitempty"`
}

// CongestionCounters name the counters of congestion and its control
// that a step's counters name (mlx5's); a counter whose name holds
// "pause" (the Ethernet device's PFC pauses) is one too.
var CongestionCounters = []string{"np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored",
	"out_of_sequence", "packet_seq_err"}

// IsCongestion reports whether the counter named name is a congestion or
// pause counter.
func IsCongestion(name string) bool {
	return slices.Contains(CongestionCounters, name) || strings.Contains(strings.ToLower(name), "pause")
}

// CounterChange is the change of a port's counters from before to after
// (a counter that went back, as a reset does, counts from 0).
func CounterChange(rank int, dev string, port int, before, after map[string]uint64) StepCounters {
	sc := StepCounters{Rank: rank, Device: dev, Port: port, Watched: len(after)}
	for name, v := range after {
		d := v
		if b, ok := before[name]; ok && b <= v {
			d = v - b
		}
		if d > 0 {
			if sc.Deltas == nil {
				sc.Deltas = map[string]uint64{}
			}
			sc.Deltas[name] = d
		}
		if IsCongestion(name) {
			if sc.Congestion == nil {
				sc.Congestion = map[string]uint64{}
			}
			sc.Congestion[name] = d
		}
	}
	for _, name := range CongestionCounters {
		if _, ok := after[name]; !ok {
			sc.Absent = append(sc.Absent, name)
		}
	}
	return sc
}

// StepInput is what a step is made of: its flows and probe as links (with
// their results), the receivers' nominal rates, the ranks' hosts and the
// counters.
type StepInput struct {
	Step     int
	Receiver int // -1: every rank of the step receives
	Ranks    []int
	Duration time.Duration
	Flows    []MeshLink
	Probe    *MeshLink
	// LinkGbps is each receiving rank's nominal rate (absent: unknown);
	// NoShare says why there is none (TCP).
	LinkGbps map[int]float64
	NoShare  string
	// Hosts are the ranks' hosts, by rank.
	Hosts    []string
	Counters []StepCounters
}

// MinOverlap is the overlap below which a step warns that its flows did
// not run together.
const MinOverlap = 0.8

// NewMeshStep makes a step's record from what it ran.
func NewMeshStep(in StepInput) MeshStep {
	st := MeshStep{Step: in.Step, Ranks: in.Ranks, Counters: in.Counters}
	if in.Receiver >= 0 {
		st.Receiver = ptrTo(in.Receiver)
	}
	var latestStart, earliestEnd time.Time
	into := map[int][]float64{}
	count := map[int]int{}
	var failed []string
	for _, l := range in.Flows {
		f := StepFlow{From: l.From, To: l.To, Start: l.Start, End: l.End, Error: l.Failure()}
		if v, ok := flowGbps(&l); ok && f.Error == "" {
			f.Gbps = ptrTo(v)
			into[l.To] = append(into[l.To], v)
		} else if f.Error == "" {
			f.Error = "no bandwidth result"
		}
		if f.Error != "" {
			failed = append(failed, fmt.Sprintf("%d -> %d: %s", l.From, l.To, f.Error))
		}
		count[l.To]++
		st.Flows = append(st.Flows, f)
		if l.Start.IsZero() || l.End.IsZero() {
			continue
		}
		if st.Start.IsZero() || l.Start.Before(st.Start) {
			st.Start = l.Start
		}
		if l.End.After(st.End) {
			st.End = l.End
		}
		if l.Start.After(latestStart) {
			latestStart = l.Start
		}
		if earliestEnd.IsZero() || l.End.Before(earliestEnd) {
			earliestEnd = l.End
		}
	}
	if span := st.End.Sub(st.Start); span > 0 {
		st.Overlap = max(0, float64(earliestEnd.Sub(latestStart))/float64(span))
	}
	if len(st.Flows) > 1 && st.Overlap < MinOverlap {
		st.Warnings = append(st.Warnings, fmt.Sprintf("the flows overlapped for %.0f%% of the step only (latest start to earliest end): their figures are not all under the full load", 100*st.Overlap))
	}
	if len(failed) > 0 {
		st.Error = fmt.Sprintf("%d of %d flows failed: %s", len(failed), len(st.Flows), strings.Join(failed, "; "))
	}
	for _, r := range slices.Sorted(maps.Keys(count)) {
		rc := receiver(into[r], count[r], in.LinkGbps[r], in.NoShare)
		rc.Rank = ptrTo(r)
		st.Receivers = append(st.Receivers, rc)
	}
	// Per host, when ranks of one host received.
	if len(in.Hosts) > 0 {
		byHost := map[string][]int{}
		for _, r := range slices.Sorted(maps.Keys(count)) {
			if r < len(in.Hosts) && in.Hosts[r] != "" {
				byHost[in.Hosts[r]] = append(byHost[in.Hosts[r]], r)
			}
		}
		shared := false
		for _, rs := range byHost {
			shared = shared || len(rs) > 1
		}
		if shared {
			for _, h := range slices.Sorted(maps.Keys(byHost)) {
				var vals []float64
				n := 0
				link := 0.0
				for _, r := range byHost[h] {
					vals = append(vals, into[r]...)
					n += count[r]
					link += in.LinkGbps[r]
				}
				if len(in.LinkGbps) == 0 || slices.ContainsFunc(byHost[h], func(r int) bool { return in.LinkGbps[r] <= 0 }) {
					link = 0
				}
				rc := receiver(vals, n, link, in.NoShare)
				rc.Host = h
				st.Hosts = append(st.Hosts, rc)
			}
		}
	}
	if p := in.Probe; p != nil {
		sp := &StepProbe{From: p.From, To: p.To, Error: p.Failure()}
		for _, r := range p.Results {
			if r.Latency != nil && r.Error == "" {
				sp.Test, sp.Size, sp.Latency = r.Test, r.Size, r.Latency
				break
			}
		}
		if sp.Latency == nil && sp.Error == "" {
			sp.Error = "no latency result"
		}
		st.Probe = sp
	}
	return st
}

// flowGbps is a flow's bandwidth: its first bandwidth result's.
func flowGbps(l *MeshLink) (float64, bool) {
	for _, r := range l.Results {
		if r.Bandwidth != nil && r.Error == "" {
			return r.Bandwidth.Gbps, true
		}
	}
	return 0, false
}

func receiver(vals []float64, flows int, link float64, noShare string) StepReceiver {
	rc := StepReceiver{Flows: flows, Measured: len(vals)}
	for _, v := range vals {
		rc.AggregateGbps += v
	}
	rc.Jain = Jain(vals)
	if med := Median(vals); med > 0 {
		rc.MinOverMedian = slices.Min(vals) / med
		rc.MaxOverMedian = slices.Max(vals) / med
	}
	switch {
	case link > 0:
		rc.LinkGbps = link
		rc.Share = ptrTo(rc.AggregateGbps / link)
	case noShare != "":
		rc.NoShare = noShare
	default:
		rc.NoShare = "the device does not say its nominal rate"
	}
	return rc
}

// Jain is Jain's fairness index of x, (Σx)²/(n·Σx²): 1 when every value
// is the same, 1/n when one holds everything; 0 for no values (or only
// zeros).
func Jain(x []float64) float64 {
	var sum, sq float64
	for _, v := range x {
		sum += v
		sq += v * v
	}
	if len(x) == 0 || sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(x)) * sq)
}

// StepFailure is a step that failed a pattern's gate: a receiver (or
// host) below the share or fairness asked, or a probe's p99 above its
// limit.
type StepFailure struct {
	Step int `json:"step"`
	// Receiver names the receiver ("rank 3", a host), or the probe's ends
	// for the latency gate.
	Receiver string `json:"receiver"`
	// Gate is "share", "fairness" or "load-p99"; Value and Limit are in
	// its unit (a share, Jain's index, ns).
	Gate    string  `json:"gate"`
	Value   float64 `json:"value"`
	Limit   float64 `json:"limit"`
	Message string  `json:"message"`
}

// The gates of a StepFailure.
const (
	GateShare    = "share"
	GateFairness = "fairness"
	GateLoadP99  = "load-p99"
)

// CheckSteps applies the pattern's gates to its steps. A receiver with
// no share (TCP) is not held to --limit-share; a step whose probe failed
// is not held to --limit-load-p99 (its error says so).
func CheckSteps(steps []MeshStep, l PatternLimits) []StepFailure {
	var out []StepFailure
	for _, st := range steps {
		rcs := append(slices.Clone(st.Receivers), st.Hosts...)
		for _, rc := range rcs {
			if l.MinShare > 0 && rc.Share != nil && *rc.Share < l.MinShare {
				out = append(out, StepFailure{Step: st.Step, Receiver: rc.Name(), Gate: GateShare, Value: *rc.Share, Limit: l.MinShare,
					Message: fmt.Sprintf("step %d, %s: aggregate %.3g Gbit/s is %.1f%% of its %g Gbit/s link, below the limit %.1f%%",
						st.Step, rc.Name(), rc.AggregateGbps, 100**rc.Share, rc.LinkGbps, 100*l.MinShare)})
			}
			if l.MinJain > 0 && rc.Measured > 0 && rc.Jain < l.MinJain {
				out = append(out, StepFailure{Step: st.Step, Receiver: rc.Name(), Gate: GateFairness, Value: rc.Jain, Limit: l.MinJain,
					Message: fmt.Sprintf("step %d, %s: Jain's index %.3f over its %d flows, below the limit %.3f",
						st.Step, rc.Name(), rc.Jain, rc.Measured, l.MinJain)})
			}
		}
		if l.MaxLoadP99Ns > 0 && st.Probe != nil && st.Probe.Latency != nil && st.Probe.Latency.P99Ns > float64(l.MaxLoadP99Ns) {
			p := st.Probe
			name := fmt.Sprintf("probe %d -> %d", p.From, p.To)
			out = append(out, StepFailure{Step: st.Step, Receiver: name, Gate: GateLoadP99, Value: p.Latency.P99Ns, Limit: float64(l.MaxLoadP99Ns),
				Message: fmt.Sprintf("step %d, %s: %s p99 under load %v, above the limit %v", st.Step, name, p.Test,
					time.Duration(math.Round(p.Latency.P99Ns)), time.Duration(l.MaxLoadP99Ns))})
		}
	}
	slices.SortStableFunc(out, func(a, b StepFailure) int { return cmp.Compare(a.Step, b.Step) })
	return out
}
