package workloads

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// A Knob is a setting of a Spec that a user chooses and that means
// something for some tests only (the queue depth of an RDMA test, not of a
// TCP one). Its name is the command line's long flag. A knob asked for a
// test it does not apply to is refused before anything runs, naming the
// tests it applies to; in a suite it is left out for those tests.
type Knob struct {
	Name string
	// why says, when set, why the knob does not apply to the RDMA tests it
	// does not apply to (for TCP, the list of tests says enough).
	why     string
	applies func(TestInfo) bool
	set     func(*Spec) bool // the spec as asked sets it
	reset   func(*Spec)      // leaves it to the test's default
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

// Knobs lists every knob.
var Knobs = []Knob{
	{"ib-dev", "", isRDMA, func(s *Spec) bool { return s.Device != "" }, func(s *Spec) { s.Device = "" }},
	{"server-dev", "", isRDMA, func(s *Spec) bool { return s.ServerDevice != "" }, func(s *Spec) { s.ServerDevice = "" }},
	{"validate", "", isRDMA, func(s *Spec) bool { return s.CheckData }, func(s *Spec) { s.CheckData = false }},
	{"ib-port", "", isRDMA, func(s *Spec) bool { return s.Port != 0 }, func(s *Spec) { s.Port = 0 }},
	{"gid-index", "", isRDMA, func(s *Spec) bool { return s.GIDIndex >= 0 }, func(s *Spec) { s.GIDIndex = -1 }},
	{"connection", "", isRDMA, func(s *Spec) bool { return s.Connection != "" }, func(s *Spec) { s.Connection = "" }},
	{"mtu", "", isRDMA, func(s *Spec) bool { return s.MTU != 0 }, func(s *Spec) { s.MTU = 0 }},
	{"events", "", isRDMA, func(s *Spec) bool { return s.Events }, func(s *Spec) { s.Events = false }},
	{"qp-timeout", "", isRDMA, func(s *Spec) bool { return s.QPTimeout != 0 }, func(s *Spec) { s.QPTimeout = 0 }},
	{"tx-depth", "", isRDMA, func(s *Spec) bool { return s.TxDepth != 0 }, func(s *Spec) { s.TxDepth = 0 }},
	{"rx-depth", "only SENDs consume receives", func(t TestInfo) bool { return t.Op == OpSend },
		func(s *Spec) bool { return s.RxDepth != 0 }, func(s *Spec) { s.RxDepth = 0 }},
	{"inline-size", "READ and atomics write their local buffer; they send no payload",
		func(t TestInfo) bool { return t.Op == OpWrite || t.Op == OpSend },
		func(s *Spec) bool { return s.Inline >= 0 }, func(s *Spec) { s.Inline = -1 }},
	{"qp", "a latency test times one QP", isRDMABW, func(s *Spec) bool { return s.QPs != 0 }, func(s *Spec) { s.QPs = 0 }},
	{"cq-mod", "latency tests signal every operation", isRDMABW,
		func(s *Spec) bool { return s.CQMod != 0 }, func(s *Spec) { s.CQMod = 0 }},
	{"post-list", "latency tests post one operation at a time", isRDMABW,
		func(s *Spec) bool { return s.PostList != 0 }, func(s *Spec) { s.PostList = 0 }},
	{"bidirectional", "", isBandwidth, func(s *Spec) bool { return s.Bidirectional }, func(s *Spec) { s.Bidirectional = false }},
	{"atomic_type", "", func(t TestInfo) bool { return t.Op == OpAtomic },
		func(s *Spec) bool { return s.AtomicType != "" }, func(s *Spec) { s.AtomicType = "" }},

	// The path's settings (spec_path.go): the traffic class also sets TCP's IP_TOS.
	{"tclass", "", func(TestInfo) bool { return true }, func(s *Spec) bool { return s.TClass != nil }, func(s *Spec) { s.TClass = nil }},
	{"sl", "", isRDMA, func(s *Spec) bool { return s.SL != nil }, func(s *Spec) { s.SL = nil }},
	{"flow-label", "", isRDMA, func(s *Spec) bool { return s.FlowLabel != nil }, func(s *Spec) { s.FlowLabel = nil }},
	{"hop-limit", "", isRDMA, func(s *Spec) bool { return s.HopLimit != nil }, func(s *Spec) { s.HopLimit = nil }},
	{"reverse", "", isBandwidth, func(s *Spec) bool { return s.Reverse }, func(s *Spec) { s.Reverse = false }},
	{"rdma-cm", "", isRDMA, func(s *Spec) bool { return s.RDMACM }, func(s *Spec) { s.RDMACM = false }},
	{"threads", "a latency test times one QP", isRDMABW, func(s *Spec) bool { return s.Threads != 0 }, func(s *Spec) { s.Threads = 0 }},
	{"rate-limit", "a latency test sends one message at a time", isRDMABW,
		func(s *Spec) bool { return s.RateGbps != 0 || s.RateMsgs != 0 }, func(s *Spec) { s.RateGbps, s.RateMsgs = 0, 0 }},
	{"rate-limiter", "a latency test sends one message at a time", isRDMABW,
		func(s *Spec) bool { return s.RateLimiter != "" }, func(s *Spec) { s.RateLimiter = "" }},
	{"mem", "", isRDMA, func(s *Spec) bool { return s.Mem != "" }, func(s *Spec) { s.Mem = "" }},
	{"odp", "", isRDMA, func(s *Spec) bool { return s.ODP }, func(s *Spec) { s.ODP = false }},
	{"load", "the load runs under a latency test", isRDMALatency, func(s *Spec) bool { return s.Load != nil }, func(s *Spec) { s.Load = nil }},
	{"load-qps", "the load runs under a latency test", isRDMALatency,
		func(s *Spec) bool { return s.Load != nil && s.Load.QPs != 0 }, func(s *Spec) { s.Load = nil }},
	{"load-size", "the load runs under a latency test", isRDMALatency,
		func(s *Spec) bool { return s.Load != nil && s.Load.Size != 0 }, func(s *Spec) { s.Load = nil }},
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
		if !k.set(&s) || k.AppliesTo(t) {
			continue
		}
		if !lenient {
			return s, k.NotFor(test)
		}
		k.reset(&s)
	}
	if lenient && s.Connection != "" && !slices.ContainsFunc(t.Connections, func(c string) bool { return strings.EqualFold(c, s.Connection) }) {
		s.Connection = "" // in a suite, -c UD runs the tests that can over UD, the others over RC
	}
	return s, nil
}

// requested is the document's record of a run's spec as asked: what the
// user chose, nothing filled in.
func (s *Spec) requested() report.Params {
	p := report.Params{Device: s.Device, Port: s.Port, GIDIndex: s.GIDIndex, Connection: s.Connection, MTU: s.MTU,
		Sizes: s.Sizes, TxDepth: s.TxDepth, RxDepth: s.RxDepth, QPs: s.QPs, CQMod: s.CQMod, PostList: s.PostList,
		Events: s.Events, QPTimeout: s.QPTimeout, Bidirectional: s.Bidirectional, AtomicType: s.AtomicType, Iterations: s.Iterations,
		DurationS: s.Duration.Seconds(), PrecisionPct: 100 * s.Precision}
	if s.Precision > 0 {
		p.PrecisionCapS = s.PrecisionCap.Seconds()
	}
	p.Validate = s.CheckData
	if s.Inline >= 0 {
		p.Inline = ptr(s.Inline)
	}
	if s.Warmup >= 0 {
		p.Warmup = ptr(s.Warmup)
	}
	p.TClass, p.SL, p.FlowLabel, p.HopLimit = s.TClass, s.SL, s.FlowLabel, s.HopLimit
	p.Reverse, p.RDMACM = s.Reverse, s.RDMACM
	p.Mem, p.ODP = s.Mem, s.ODP
	s.requestedFabric(&p)
	return p
}

func ptr(v int) *int { return &v }
