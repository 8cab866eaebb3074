package workloads

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MTUs are the path MTUs a spec may ask for (0 leaves the port's).
var MTUs = []int{256, 512, 1024, 2048, 4096}

// A spec made whole: its defaults filled in and its values checked, the
// spec's own (spec.go) and those of each of its parts (the knobs' ranges,
// the path, the fabric, the memory), each part's in its file. It stands
// above the parts so that they stand on the Spec alone.

// NewSpec returns the Spec of test with every default applied.
func NewSpec(test string) Spec {
	s := Spec{Test: test}
	s.applyDefaults()
	return s
}

// Normalize fills every field left to its default and checks the result
// (see [Spec.Validate]). It is done once per test, where the test is
// planned (NewPlan) or accepted (Server.Accept).
func (s *Spec) Normalize() error {
	s.applyDefaults()
	return s.Validate()
}

// applyDefaults fills every field left to its default.
func (s *Spec) applyDefaults() {
	t, ok := LookupTest(s.Test)
	if !ok {
		return
	}
	s.Connection = strings.ToUpper(s.Connection)
	s.AtomicType = strings.ToUpper(s.AtomicType)
	if s.Connection == "" {
		s.Connection = t.Connections[0]
	}
	if len(s.Sizes) == 0 {
		s.Sizes = []int{t.DefaultSize}
	}
	if s.Port == 0 {
		s.Port = 1
	}
	if s.Interval == 0 {
		// Every second, or once for a shorter duration.
		s.Interval = time.Second
		if s.Duration > 0 {
			s.Interval = min(s.Interval, s.Duration)
		}
	}
	if s.IdleTimeout == 0 {
		s.IdleTimeout = DefaultIdleTimeout
	}
	if s.Precision > 0 && s.PrecisionCap == 0 {
		s.PrecisionCap = DefaultPrecisionCap
	}
	if !t.IsRDMA() {
		return // the rest are RDMA settings
	}
	iters := s.maxIters()
	if s.TxDepth == 0 {
		s.TxDepth = DefaultTxDepth
		if t.Metric == Latency {
			s.TxDepth = 1
		}
		if iters > 0 {
			s.TxDepth = min(s.TxDepth, iters)
		}
	}
	if s.RxDepth == 0 && t.Op == OpSend {
		s.RxDepth = DefaultRxDepth
		switch {
		case iters > 0 && (s.Connection == "UC" || s.Connection == "UD"):
			s.RxDepth = min(iters, maxUnreliableRxDepth)
		case iters > 0:
			s.RxDepth = min(s.RxDepth, iters)
		}
	}
	if s.QPs == 0 {
		s.QPs = 1
	}
	if s.CQMod == 0 && t.Metric == Latency {
		s.CQMod = 1
	}
	if s.PostList == 0 {
		s.PostList = 1
	}
	if s.AtomicType == "" && t.Op == OpAtomic {
		s.AtomicType = FetchAdd
	}
	s.applyFabricDefaults(t)
}

// Validate checks a normalized spec with no device: the values, and how
// they fit together. Which settings a user may ask for at all is checked
// before, on the spec as asked (see [Knob]). Limits that depend on the
// device (inline size, path MTU for UD) are checked when the test starts.
func (s *Spec) Validate() error {
	t, ok := LookupTest(s.Test)
	if !ok {
		return fmt.Errorf("unknown test %q (tests: %s)", s.Test, strings.Join(TestNames(Tests), ", "))
	}
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	connOK := false
	for _, c := range t.Connections {
		if strings.EqualFold(c, s.Connection) {
			connOK = true
		}
	}
	if !connOK {
		bad("%s runs over %s, not %s", t.Name, strings.Join(t.Connections, " or "), s.Connection)
	}
	if s.Keep {
		if msg := s.keepProblem(); msg != "" {
			bad("%s", msg)
		}
	}
	if len(s.Sizes) == 0 {
		bad("no message size given")
	}
	for _, z := range s.Sizes {
		if z < 1 || z > MaxSize {
			bad("message size %d is outside 1 B..1 GiB", z)
		}
		if t.Op == OpAtomic && z != 8 {
			bad("atomic tests use 8-byte messages, not %d", z)
		}
		if s.Connection == "UD" && s.MTU > 0 && z > s.MTU {
			bad("UD send is limited to the path MTU (%d bytes); size %d is larger", s.MTU, z)
		}
	}
	if s.Iterations < 0 {
		bad("iterations %d must be positive", s.Iterations)
	}
	if s.Iterations > 0 && s.openEnded() {
		bad("iterations %d and a duration or precision both given: a size ends at one of them (-n, -D or --precision), not two", s.Iterations)
	}
	if s.Duration < 0 || (s.Duration > 0 && s.Duration < 100*time.Millisecond) {
		bad("duration %s must be at least 100ms", s.Duration)
	}
	if s.Interval <= 0 || (s.Duration > 0 && s.Interval > s.Duration) {
		bad("interval %s must be positive and no longer than the duration %s", s.Interval, s.Duration)
	}
	if s.Warmup != nil && *s.Warmup < 0 {
		bad("warm-up %d must not be negative", *s.Warmup)
	}
	if s.IdleTimeout <= 0 {
		bad("idle timeout %s must be positive", s.IdleTimeout)
	}
	if t.Metric == Latency && s.Bidirectional {
		bad("bidirectional (-b) is for bandwidth tests")
	}
	if s.CheckData && !t.IsRDMA() {
		bad("--validate applies to RDMA tests (TCP checks its own data)")
	}
	if s.Precision < 0 || s.Precision >= 1 || (s.Precision > 0 && s.Duration > 0) {
		bad("precision %g must be within 0..100%% and not with a duration (-D)", 100*s.Precision)
	}
	if s.PrecisionCap < 0 {
		bad("precision cap %s must be positive", s.PrecisionCap)
	}
	if t.IsRDMA() {
		s.validateRDMA(t, bad)
	}
	s.validateRanges(bad)
	s.validatePath(t, bad)
	s.validateFabric(t, bad)
	s.validateMem(t, bad)
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// validateRDMA checks the RDMA settings of a normalized spec.
func (s *Spec) validateRDMA(t TestInfo, bad func(string, ...any)) {
	if s.TxDepth < 1 {
		bad("tx-depth %d must be positive", s.TxDepth)
	}
	if t.Op == OpSend && s.RxDepth < 1 {
		bad("rx-depth %d must be positive", s.RxDepth)
	}
	if t.Metric == Latency && (s.CQMod != 1 || s.PostList != 1) {
		bad("latency tests post one operation at a time and signal each (cq-mod %d and post list %d do not apply)", s.CQMod, s.PostList)
	}
	if t.Op != OpSend && s.RxDepth != 0 {
		bad("rx-depth %d applies to SEND tests only", s.RxDepth)
	}
	if s.CQMod < 0 || s.CQMod > s.TxDepth || (t.Metric == Latency && s.CQMod < 1) {
		bad("completion moderation (-Q) %d must be within 1..tx-depth %d", s.CQMod, s.TxDepth)
	}
	if s.PostList < 1 || s.PostList > s.TxDepth {
		bad("post list %d must be within 1..tx-depth %d", s.PostList, s.TxDepth)
	}
	if s.QPs < 1 || s.QPs > 1024 {
		bad("QP count %d must be within 1..1024", s.QPs)
	}
	if t.Metric == Latency && s.QPs != 1 {
		bad("latency tests use one QP, not %d", s.QPs)
	}
	if t.Op == OpAtomic && s.AtomicType != FetchAdd && s.AtomicType != CmpSwap {
		bad("atomic type %q must be %s or %s", s.AtomicType, FetchAdd, CmpSwap)
	}
	if s.MTU != 0 && !slices.Contains(MTUs, s.MTU) {
		words := make([]string, len(MTUs))
		for i, m := range MTUs {
			words[i] = strconv.Itoa(m)
		}
		bad("MTU %d must be %s or %s", s.MTU, strings.Join(words[:len(words)-1], ", "), words[len(words)-1])
	}
	if s.Port < 1 {
		bad("port %d must be 1 or more", s.Port)
	}
}
