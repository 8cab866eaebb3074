package workloads

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// A Knob is a setting of a Spec that a user chooses and that means
// something for some tests only (the queue depth of an RDMA test, not of a
// TCP one). Its name is the command line's long flag, which Flag describes
// as data: the commands build their flags from Knobs. A knob asked for a
// test it does not apply to is refused before anything runs, naming the
// tests it applies to; in a suite it is left out for those tests.
type Knob struct {
	Name string
	// why says, when set, why the knob does not apply to the RDMA tests it
	// does not apply to (for TCP, the list of tests says enough).
	why     string
	applies func(TestInfo) bool
	// set reports whether the spec as asked sets the knob, and reset leaves
	// it to the test's default; nil for both: as Flag's kind says "unset".
	set   func(*Spec) bool
	reset func(*Spec)
	// Shared marks a setting of the device and path that a --load test
	// takes from the latency test it runs under.
	Shared bool
	// Param points at where the document records the knob as asked, in
	// report.Params: a field of Field's type, or an int where Field is a
	// **int (-1: unset, as report.Params has the GID index); nil for a knob
	// recorded otherwise.
	Param func(*report.Params) any
	Flag  Flag
}

// A Flag is a knob's command-line flag, as data: its long name is the
// knob's.
type Flag struct {
	Short string // its letter, perftest's where it has one; "" for none
	Help  string
	Kind  FlagKind
	// Min and Max bound a FlagRange, for the flag and for a spec from
	// anywhere (validateRanges); What names its value in the error.
	Min, Max int
	What     string
	// Field points into a spec at what the flag sets: a *string, *bool,
	// *int, **int or RateFields, as Kind says. LoadField, instead, into the
	// --load test's LoadSpec.
	Field     func(*Spec) any
	LoadField func(*LoadSpec) any
}

// A FlagKind says what a flag's value is, and how its Field says "unset".
type FlagKind int

const (
	FlagString        FlagKind = iota // *string; "" unset
	FlagBool                          // *bool; false unset
	FlagCount                         // *int, at least 1; 0 unset
	FlagRange                         // **int within Min..Max; nil unset
	FlagMem                           // *string, a memory kind (ParseMem)
	FlagRate                          // RateFields: a payload or message rate
	FlagLimiter                       // *string: LimiterSW or LimiterHW
	FlagBandwidthTest                 // *string: an RDMA bandwidth test's name
	FlagSize                          // *int: one message size
)

// RateFields are the fields a FlagRate sets: one of the two.
type RateFields struct{ Gbps, Msgs *float64 }

// isSet reports whether the spec as asked sets the knob.
func (k Knob) isSet(s *Spec) bool {
	if k.set != nil {
		return k.set(s)
	}
	switch p := k.Flag.Field(s).(type) {
	case *string:
		return *p != ""
	case *bool:
		return *p
	case **int:
		return *p != nil
	case *int:
		return *p != 0
	}
	panic("workloads: knob " + k.Name + " has no set")
}

// unset leaves the knob to the test's default.
func (k Knob) unset(s *Spec) {
	if k.reset != nil {
		k.reset(s)
		return
	}
	switch p := k.Flag.Field(s).(type) {
	case *string:
		*p = ""
	case *bool:
		*p = false
	case **int:
		*p = nil
	case *int:
		*p = 0
	default:
		panic("workloads: knob " + k.Name + " has no reset")
	}
}

// record sets the knob's param in p as s asks it.
func (k Knob) record(p *report.Params, s *Spec) {
	src := k.Flag.Field(s)
	switch d := k.Param(p).(type) {
	case *string:
		*d = *src.(*string)
	case *bool:
		*d = *src.(*bool)
	case *int:
		switch v := src.(type) {
		case *int:
			*d = *v
		case **int:
			*d = orAuto(*v)
		}
	case **int:
		*d = *src.(**int)
	case RateFields:
		r := src.(RateFields)
		*d.Gbps, *d.Msgs = *r.Gbps, *r.Msgs
	default:
		panic("workloads: knob " + k.Name + " cannot be recorded")
	}
}

// copyTo sets the knob of dst as src has it.
func (k Knob) copyTo(dst, src *Spec) {
	switch p := k.Flag.Field(dst).(type) {
	case *string:
		*p = *k.Flag.Field(src).(*string)
	case *bool:
		*p = *k.Flag.Field(src).(*bool)
	case **int:
		*p = *k.Flag.Field(src).(**int)
	case *int:
		*p = *k.Flag.Field(src).(*int)
	default:
		panic("workloads: knob " + k.Name + " cannot be copied")
	}
}

// AppliesTo reports whether the knob means something for t.
func (k Knob) AppliesTo(t TestInfo) bool { return k.applies(t) }

// Tests lists the tests the knob applies to.
func (k Knob) Tests() []string {
	var names []string
	for _, t := range Tests {
		if k.applies(t) {
			names = append(names, t.Name)
		}
	}
	return names
}

// NotFor is the error of a knob asked for test, which it does not apply to.
func (k Knob) NotFor(test string) error {
	why := ""
	if t, _ := LookupTest(test); k.why != "" && t.IsRDMA() {
		why = " (" + k.why + ")"
	}
	tests := k.Tests()
	list := strings.Join(tests, ", ")
	if n := len(tests); n > 1 {
		list = strings.Join(tests[:n-1], ", ") + " and " + tests[n-1]
	}
	return fmt.Errorf("--%s does not apply to %s%s: it is for %s", k.Name, test, why, list)
}

func isRDMA(t TestInfo) bool      { return t.IsRDMA() }
func isRDMABW(t TestInfo) bool    { return t.IsRDMA() && t.Metric == Bandwidth }
func isBandwidth(t TestInfo) bool { return t.Metric == Bandwidth }

// Knobs lists every knob, each with its flag.
var Knobs = []Knob{
	{Name: "ib-dev", applies: isRDMA, Shared: true,
		Param: func(p *report.Params) any { return &p.Device },
		Flag: Flag{Kind: FlagString, Short: "d", Field: func(s *Spec) any { return &s.Device },
			Help: "RDMA device, or several at once (mlx5_0,mlx5_1, or all), each paired with the server's (default: the first one)"}},
	{Name: "server-dev", applies: isRDMA, Shared: true,
		Param: func(p *report.Params) any { return &p.ServerDevice },
		Flag: Flag{Kind: FlagString, Field: func(s *Spec) any { return &s.ServerDevice },
			Help: "device the server uses, or one per -d device (default: its own -d, or its first device)"}},
	{Name: "validate", applies: isRDMA,
		Param: func(p *report.Params) any { return &p.Validate },
		Flag: Flag{Kind: FlagBool, Field: func(s *Spec) any { return &s.CheckData },
			Help: "after each size, check the data: an untimed pass moves 3 messages per QP and direction, each with its own pattern, and the receiving side compares every byte (exit 1 on a difference)"}},
	{Name: "ib-port", applies: isRDMA, Shared: true,
		Param: func(p *report.Params) any { return &p.Port },
		Flag: Flag{Kind: FlagCount, Short: "i", Field: func(s *Spec) any { return &s.Port },
			Help: "device port (default 1)"}},
	{Name: "gid-index", applies: isRDMA, Shared: true,
		Param: func(p *report.Params) any { return &p.GIDIndex },
		Flag: Flag{Kind: FlagRange, Short: "x", Min: 0, Max: 255, What: "GID index", Field: func(s *Spec) any { return &s.GIDIndex },
			Help: "GID index (default: chosen automatically, as rdmabench devices shows)"}},
	{Name: "connection", applies: isRDMA,
		Param: func(p *report.Params) any { return &p.Connection },
		Flag: Flag{Kind: FlagString, Short: "c", Field: func(s *Spec) any { return &s.Connection },
			Help: "connection type: RC, UC or UD (default RC)"}},
	{Name: "mtu", applies: isRDMA, Shared: true,
		Param: func(p *report.Params) any { return &p.MTU },
		Flag: Flag{Kind: FlagCount, Short: "m", Field: func(s *Spec) any { return &s.MTU },
			Help: "path MTU: 256, 512, 1024, 2048 or 4096 (default: the port's active MTU)"}},
	{Name: "events", applies: isRDMA,
		Param: func(p *report.Params) any { return &p.Events },
		Flag: Flag{Kind: FlagBool, Short: "e", Field: func(s *Spec) any { return &s.Events },
			Help: "wait for completion events instead of busy polling"}},
	{Name: "qp-timeout", applies: isRDMA, Shared: true,
		Param: func(p *report.Params) any { return &p.QPTimeout },
		Flag: Flag{Kind: FlagCount, Short: "u", Field: func(s *Spec) any { return &s.QPTimeout },
			Help: "QP local ACK timeout: 4.096 us x 2^N, N within 1..31; raise it on a slow or emulated network (default 14: 67 ms)"}},
	{Name: "tx-depth", applies: isRDMA,
		Param: func(p *report.Params) any { return &p.TxDepth },
		Flag: Flag{Kind: FlagCount, Short: "t", Field: func(s *Spec) any { return &s.TxDepth },
			Help: "send queue depth of each QP, the outstanding sends of a bandwidth test (default 128 for bandwidth, 1 for latency)"}},
	{Name: "rx-depth", applies: func(t TestInfo) bool { return t.Op == OpSend }, why: "only SENDs consume receives",
		Param: func(p *report.Params) any { return &p.RxDepth },
		Flag: Flag{Kind: FlagCount, Short: "r", Field: func(s *Spec) any { return &s.RxDepth },
			Help: "receive queue depth: receives kept posted (default 512 for bandwidth, 16 for latency)"}},
	{Name: "inline-size", applies: func(t TestInfo) bool { return t.Op == OpWrite || t.Op == OpSend }, why: "READ and atomics write their local buffer; they send no payload",
		Param: func(p *report.Params) any { return &p.Inline },
		Flag: Flag{Kind: FlagRange, Short: "I", Min: 0, Max: 65536, What: "inline size", Field: func(s *Spec) any { return &s.Inline },
			Help: "inline data size in bytes; 0 for none (default 220 for latency, where the device allows it, else 0)"}},
	{Name: "qp", applies: isRDMABW, why: "a latency test times one QP",
		Param: func(p *report.Params) any { return &p.QPs },
		Flag: Flag{Kind: FlagCount, Short: "q", Field: func(s *Spec) any { return &s.QPs },
			Help: "number of QPs (default 1)"}},
	{Name: "cq-mod", applies: isRDMABW, why: "latency tests signal every operation",
		Param: func(p *report.Params) any { return &p.CQMod },
		Flag: Flag{Kind: FlagCount, Short: "Q", Field: func(s *Spec) any { return &s.CQMod },
			Help: "signal one send in this many (default 100, at most the tx-depth)"}},
	{Name: "post-list", applies: isRDMABW, why: "latency tests post one operation at a time",
		Param: func(p *report.Params) any { return &p.PostList },
		Flag: Flag{Kind: FlagCount, Short: "l", Field: func(s *Spec) any { return &s.PostList },
			Help: "work requests per post call (default 1)"}},
	{Name: "bidirectional", applies: isBandwidth,
		Param: func(p *report.Params) any { return &p.Bidirectional },
		Flag: Flag{Kind: FlagBool, Short: "b", Field: func(s *Spec) any { return &s.Bidirectional },
			Help: "both ends send at once"}},
	{Name: "atomic_type", applies: func(t TestInfo) bool { return t.Op == OpAtomic },
		Param: func(p *report.Params) any { return &p.AtomicType },
		Flag: Flag{Kind: FlagString, Short: "A", Field: func(s *Spec) any { return &s.AtomicType },
			Help: "atomic operation: FETCH_AND_ADD or CMP_AND_SWAP (default FETCH_AND_ADD)"}},

	// The path's settings (spec_path.go): the traffic class also sets TCP's IP_TOS.
	{Name: "tclass", applies: func(TestInfo) bool { return true }, Shared: true,
		Param: func(p *report.Params) any { return &p.TClass },
		Flag: Flag{Kind: FlagRange, Short: "T", Min: 0, Max: 255, What: "traffic class", Field: func(s *Spec) any { return &s.TClass },
			Help: "traffic class of both ends' packets: the IP header's DS field on RoCE v2 (DSCP << 2 | ECN) and IP_TOS on TCP, e.g. 0x68 (default 0)"}},
	{Name: "sl", applies: isRDMA, Shared: true,
		Param: func(p *report.Params) any { return &p.SL },
		Flag: Flag{Kind: FlagRange, Short: "S", Min: 0, Max: 15, What: "service level", Field: func(s *Spec) any { return &s.SL },
			Help: "service level of both ends' QPs (default 0)"}},
	{Name: "flow-label", applies: isRDMA, Shared: true,
		Param: func(p *report.Params) any { return &p.FlowLabel },
		Flag: Flag{Kind: FlagRange, Min: 0, Max: 0xfffff, What: "flow label", Field: func(s *Spec) any { return &s.FlowLabel },
			Help: "GRH flow label of both ends' QPs, 20 bits (default 0)"}},
	{Name: "hop-limit", applies: isRDMA, Shared: true,
		Param: func(p *report.Params) any { return &p.HopLimit },
		Flag: Flag{Kind: FlagRange, Short: "L", Min: 1, Max: 255, What: "hop limit", Field: func(s *Spec) any { return &s.HopLimit },
			Help: "GRH hop limit of both ends' QPs, on InfiniBand (on RoCE the kernel takes the IP TTL from the route) (default 64)"}},
	{Name: "reverse", applies: isBandwidth,
		Param: func(p *report.Params) any { return &p.Reverse },
		Flag: Flag{Kind: FlagBool, Field: func(s *Spec) any { return &s.Reverse },
			Help: "the server sends and the client receives (the server issues READs and atomics), without swapping hosts"}},
	{Name: "rdma-cm", applies: isRDMA, Shared: true,
		Param: func(p *report.Params) any { return &p.RDMACM },
		Flag: Flag{Kind: FlagBool, Short: "R", Field: func(s *Spec) any { return &s.RDMACM },
			Help: "connect the QPs with rdma_cm (RC and UD), as perftest's -R"}},
	{Name: "threads", applies: isRDMABW, why: "a latency test times one QP",
		Param: func(p *report.Params) any { return &p.Threads },
		Flag: Flag{Kind: FlagCount, Field: func(s *Spec) any { return &s.Threads },
			Help: "spread the QPs over this many loop threads on each end, each with its own CQs (default 1)"}},
	{Name: "rate-limit", applies: isRDMABW, why: "a latency test sends one message at a time",
		set: func(s *Spec) bool { return s.RateGbps != 0 || s.RateMsgs != 0 }, reset: func(s *Spec) { s.RateGbps, s.RateMsgs = 0, 0 },
		Param: func(p *report.Params) any { return RateFields{&p.RateLimitGbps, &p.RateLimitMsgs} },
		Flag: Flag{Kind: FlagRate, Field: func(s *Spec) any { return RateFields{&s.RateGbps, &s.RateMsgs} },
			Help: "limit each end's sending on each device to this payload rate (5Gbps, 800Mbps, 1GB/s; a bare number is Gbit/s) or message rate (2Mpps)"}},
	{Name: "rate-limiter", applies: isRDMABW, why: "a latency test sends one message at a time",
		Param: func(p *report.Params) any { return &p.RateLimiter },
		Flag: Flag{Kind: FlagLimiter, Field: func(s *Spec) any { return &s.RateLimiter },
			Help: "what enforces --rate-limit: sw (the timed loop paces its posts) or hw (the device's per-QP rate limiter) (default sw)"}},
	{Name: "mem", applies: isRDMA,
		Param: func(p *report.Params) any { return &p.Mem },
		Flag: Flag{Kind: FlagMem, Field: func(s *Spec) any { return &s.Mem },
			Help: "where both ends' buffers live: host, hugepages (2 MiB pages; hugepages:1G for 1 GiB), or cuda[:GPU] (GPU memory; GPU an index or PCI bus id, default the GPU nearest the NIC), as perftest's --use_hugepages and --use_cuda (default host)"}},
	{Name: "odp", applies: isRDMA,
		Param: func(p *report.Params) any { return &p.ODP },
		Flag: Flag{Kind: FlagBool, Field: func(s *Spec) any { return &s.ODP },
			Help: "register the buffers for on-demand paging (IBV_ACCESS_ON_DEMAND), as perftest's --odp; refused where the device lacks ODP for the transport and operation"}},
	{Name: "load", applies: isRDMALatency, why: "the load runs under a latency test",
		set: func(s *Spec) bool { return s.Load != nil }, reset: func(s *Spec) { s.Load = nil },
		Flag: Flag{Kind: FlagBandwidthTest, LoadField: func(l *LoadSpec) any { return &l.Test },
			Help: "run this bandwidth test (write-bw, read-bw, send-bw, atomic-bw) in the background, on QPs of its own, while the latency is measured"}},
	{Name: "load-qps", applies: isRDMALatency, why: "the load runs under a latency test",
		set: func(s *Spec) bool { return s.Load != nil && s.Load.QPs != 0 }, reset: func(s *Spec) { s.Load = nil },
		Flag: Flag{Kind: FlagCount, LoadField: func(l *LoadSpec) any { return &l.QPs },
			Help: "QPs of the --load test (default 1)"}},
	{Name: "load-size", applies: isRDMALatency, why: "the load runs under a latency test",
		set: func(s *Spec) bool { return s.Load != nil && s.Load.Size != 0 }, reset: func(s *Spec) { s.Load = nil },
		Flag: Flag{Kind: FlagSize, LoadField: func(l *LoadSpec) any { return &l.Size },
			Help: "message size of the --load test (default its own: 64K, atomics 8)"}},
}

func isRDMALatency(t TestInfo) bool { return t.IsRDMA() && t.Metric == Latency }

// LookupKnob returns the knob named name.
func LookupKnob(name string) (Knob, bool) {
	for _, k := range Knobs {
		if k.Name == name {
			return k, true
		}
	}
	return Knob{}, false
}

// specFor derives the spec of test from the spec as asked. A knob that does
// not apply to test is an error, or in a suite (lenient) is left out.
func specFor(asked Spec, test string, lenient bool) (Spec, error) {
	t, ok := LookupTest(test)
	if !ok {
		s := asked
		s.Test = test
		return s, s.Validate() // names the tests there are
	}
	s := asked
	s.Test = test
	s.Sizes = append([]int(nil), asked.Sizes...)
	for _, k := range Knobs {
		if !k.isSet(&s) || k.AppliesTo(t) {
			continue
		}
		if !lenient {
			return s, k.NotFor(test)
		}
		k.unset(&s)
	}
	if lenient && s.Connection != "" && !slices.ContainsFunc(t.Connections, func(c string) bool { return strings.EqualFold(c, s.Connection) }) {
		s.Connection = "" // in a suite, -c UD runs the tests that can over UD, the others over RC
	}
	return s, nil
}

// validateRanges checks every set FlagRange knob against the bounds its
// flag declares: a spec from the wire or a file is held to what the
// command line takes.
func (s *Spec) validateRanges(bad func(string, ...any)) {
	for _, k := range Knobs {
		if f := k.Flag; f.Kind == FlagRange {
			if p := *f.Field(s).(**int); p != nil && (*p < f.Min || *p > f.Max) {
				bad("%s %d is outside %d..%d", f.What, *p, f.Min, f.Max)
			}
		}
	}
}

// requested is the document's record of a run's spec as asked: what the
// user chose, nothing filled in. Each knob lands where its Param says.
func (s *Spec) requested() report.Params {
	p := report.Params{Sizes: s.Sizes, Iterations: s.Iterations,
		DurationS: s.Duration.Seconds(), PrecisionPct: 100 * s.Precision}
	for _, k := range Knobs {
		if k.Param != nil {
			k.record(&p, s)
		}
	}
	if s.Precision > 0 {
		p.PrecisionCapS = s.PrecisionCap.Seconds()
	}
	if s.Warmup != nil {
		p.Warmup = ptr(*s.Warmup)
	}
	s.requestedFabric(&p)
	return p
}

func ptr(v int) *int { return &v }
