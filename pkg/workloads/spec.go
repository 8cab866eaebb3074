package workloads

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/pkg/quantity"
	"github.com/rdmabench/rdmabench/pkg/settings"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// Metric is what a test measures.
type Metric string

// Metrics.
const (
	Latency   Metric = "latency"
	Bandwidth Metric = "bandwidth"
)

// Op is the operation a test times.
type Op string

// Operations.
const (
	OpWrite  Op = "write"
	OpRead   Op = "read"
	OpSend   Op = "send"
	OpAtomic Op = "atomic"
	OpTCP    Op = "tcp"
)

// TestInfo describes one test the tool runs: one row of [Tests], which is
// all a command, the suite, a mesh and the runners know of a test.
type TestInfo struct {
	Name        string
	Op          Op
	Metric      Metric
	Basis       string   // latency basis: "rtt_half" or "rtt"
	Connections []string // allowed connection types, the first is the default
	DefaultSize int
	// DefaultIters is the iterations per size when -n is not given, as
	// perftest's: 5000 for WRITE bandwidth, 1000 for every other test.
	DefaultIters int
	// Loop is the timed loop the initiating end runs, Responder the one
	// the other end runs (0: none, as a READ's or an atomic's target, or
	// a TCP test); pkg/verbs checks their kinds against the C loops' enum
	// at build time.
	Loop, Responder verbs.LoopKind
	// Opcode is the work request the loop posts; an atomic test posts
	// compare-and-swap instead of fetch-and-add when its spec asks (see
	// Spec.opcode).
	Opcode verbs.Opcode
	// Suite is the test's place in a suite run: latency, then bandwidth,
	// each ending with its TCP row.
	Suite int
	// Mesh: a mesh link runs the test unless others are named.
	Mesh    bool
	Summary string
	// Runner names what runs the test's ends: runnerRDMA or runnerTCP
	// (spec_end.go).
	Runner string
}

// Tests lists every test, in the order commands, completions and errors
// list them (a suite runs them in [TestInfo.Suite] order).
var Tests = []TestInfo{
	{Name: "write-lat", Op: OpWrite, Metric: Latency, Basis: "rtt_half", Connections: []string{"RC", "UC"},
		DefaultSize: 2, DefaultIters: 1000, Loop: verbs.LatWrite, Responder: verbs.LatWrite, Opcode: verbs.OpWrite, Suite: 1, Mesh: true,
		Summary: "RDMA WRITE ping-pong; one-way latency = RTT/2", Runner: runnerRDMA},
	{Name: "read-lat", Op: OpRead, Metric: Latency, Basis: "rtt", Connections: []string{"RC"},
		DefaultSize: 2, DefaultIters: 1000, Loop: verbs.LatPost, Opcode: verbs.OpRead, Suite: 2,
		Summary: "RDMA READ, post to completion (full RTT)", Runner: runnerRDMA},
	{Name: "send-lat", Op: OpSend, Metric: Latency, Basis: "rtt_half", Connections: []string{"RC", "UC", "UD"},
		DefaultSize: 2, DefaultIters: 1000, Loop: verbs.LatSend, Responder: verbs.LatSend, Opcode: verbs.OpSend, Suite: 3,
		Summary: "SEND/RECV ping-pong; one-way latency = RTT/2", Runner: runnerRDMA},
	{Name: "atomic-lat", Op: OpAtomic, Metric: Latency, Basis: "rtt", Connections: []string{"RC"},
		DefaultSize: 8, DefaultIters: 1000, Loop: verbs.LatPost, Opcode: verbs.OpFetchAdd, Suite: 4,
		Summary: "fetch-and-add or compare-and-swap, post to completion (full RTT)", Runner: runnerRDMA},
	{Name: "write-bw", Op: OpWrite, Metric: Bandwidth, Connections: []string{"RC", "UC"},
		DefaultSize: 65536, DefaultIters: 5000, Loop: verbs.BWSend, Opcode: verbs.OpWrite, Suite: 6, Mesh: true,
		Summary: "RDMA WRITE bandwidth, windowed posting", Runner: runnerRDMA},
	{Name: "read-bw", Op: OpRead, Metric: Bandwidth, Connections: []string{"RC"},
		DefaultSize: 65536, DefaultIters: 1000, Loop: verbs.BWSend, Opcode: verbs.OpRead, Suite: 7,
		Summary: "RDMA READ bandwidth, windowed posting", Runner: runnerRDMA},
	{Name: "send-bw", Op: OpSend, Metric: Bandwidth, Connections: []string{"RC", "UC", "UD"},
		DefaultSize: 65536, DefaultIters: 1000, Loop: verbs.BWSend, Responder: verbs.BWRecv, Opcode: verbs.OpSend, Suite: 8,
		Summary: "SEND bandwidth, windowed posting", Runner: runnerRDMA},
	{Name: "atomic-bw", Op: OpAtomic, Metric: Bandwidth, Connections: []string{"RC"},
		DefaultSize: 8, DefaultIters: 1000, Loop: verbs.BWSend, Opcode: verbs.OpFetchAdd, Suite: 9,
		Summary: "atomic operation rate, windowed posting", Runner: runnerRDMA},
	{Name: "tcp-lat", Op: OpTCP, Metric: Latency, Basis: "rtt_half", Connections: []string{"TCP"},
		DefaultSize: 2, DefaultIters: 1000, Suite: 5,
		Summary: "TCP ping-pong with TCP_NODELAY; one-way latency = RTT/2", Runner: runnerTCP},
	{Name: "tcp-bw", Op: OpTCP, Metric: Bandwidth, Connections: []string{"TCP"},
		DefaultSize: 65536, DefaultIters: 1000, Suite: 10,
		Summary: "TCP stream with TCP_NODELAY", Runner: runnerTCP},
}

// LookupTest returns the test named name.
func LookupTest(name string) (TestInfo, bool) {
	for _, t := range Tests {
		if t.Name == name {
			return t, true
		}
	}
	return TestInfo{}, false
}

// SuiteTests are the tests of a suite, in the order it runs them.
func SuiteTests() []TestInfo {
	out := slices.Clone(Tests)
	slices.SortFunc(out, func(a, b TestInfo) int { return cmp.Compare(a.Suite, b.Suite) })
	return out
}

// MeshTests are the tests a mesh link runs unless others are named: a
// short latency and bandwidth test.
func MeshTests() []TestInfo {
	var out []TestInfo
	for _, t := range Tests {
		if t.Mesh {
			out = append(out, t)
		}
	}
	return out
}

// TestNames are the names of tests, in their order.
func TestNames(tests []TestInfo) []string {
	names := make([]string, len(tests))
	for i, t := range tests {
		names[i] = t.Name
	}
	return names
}

// Baseline is the TCP test beside which the RDMA test t runs with
// --baseline: the TCP test of its metric.
func (t TestInfo) Baseline() TestInfo {
	for _, b := range Tests {
		if !b.IsRDMA() && b.Metric == t.Metric {
			return b
		}
	}
	return TestInfo{}
}

// IsRDMA reports whether the test uses verbs.
func (t TestInfo) IsRDMA() bool { return t.Op != OpTCP }

// settingsTest is what a setting knows of t (see settings.Setting.Applies).
func (t TestInfo) settingsTest() settings.Test {
	return settings.Test{Op: string(t.Op), RDMA: t.IsRDMA(), Bandwidth: t.Metric == Bandwidth}
}

// Atomic types.
const (
	FetchAdd = "FETCH_AND_ADD"
	CmpSwap  = "CMP_AND_SWAP"
)

// Defaults, as perftest's where it has one.
const (
	// DefaultTxDepth is the send queue depth of bandwidth tests; latency
	// tests keep one operation outstanding and use 1, as perftest does.
	// Either is capped at the iterations of a size.
	DefaultTxDepth = 128
	// DefaultRxDepth is the receive queue depth of SEND tests, capped at
	// the iterations of a size; UC and UD receivers, which drop what finds
	// no receive posted, keep as many as the iterations (up to
	// maxUnreliableRxDepth), as perftest does.
	DefaultRxDepth       = 512
	maxUnreliableRxDepth = 16000
	// DefaultCQMod signals one send in this many in bandwidth tests, capped
	// at the send queue depth; above cqModSizeLimit bytes (on RC and UC,
	// without -e), every send is signalled, as perftest does. Latency tests
	// signal every operation.
	DefaultCQMod   = 100
	cqModSizeLimit = 8192
	// The inline sizes latency tests ask for unless -I is given, as
	// perftest's for WRITE, SEND over RC or UC, and SEND over UD.
	DefaultInlineWrite  = 220
	DefaultInlineSend   = 236
	DefaultInlineSendUD = 188
	DefaultIdleTimeout  = 10 * time.Second
	// DefaultPrecisionCap is how long a size may run in precision mode.
	DefaultPrecisionCap = 10 * time.Second
	MaxSize             = 1 << 30
	// sweep budgets: with no -n, a size gets at most this many bytes per
	// direction (and at least the minimum iterations), so a sweep to 8 MiB
	// stays short.
	latSweepBudget = 32 << 20
	bwSweepBudget  = 256 << 20
	minLatIters    = 10
	minBWIters     = 20
	// warmupBWBytes bounds the default warm-up of a bandwidth test: one
	// pass through a send queue of DefaultTxDepth 64 KiB messages, which
	// takes a millisecond on a 100 Gbit/s NIC and 0.1 s on Soft-RoCE in an
	// emulated VM.
	warmupBWBytes = DefaultTxDepth << 16
)

// Spec is a plain description of one test: it validates and serializes
// with no device, travels to the server as is, and both ends run from it.
//
// A Spec as the user asks for it leaves a field zero (nil for a pointer)
// to mean "the test's default", so that a zero Spec asks for every
// default; [Spec.Normalize] fills in every default once, before the test
// runs, and both ends then run the same normalized Spec.
type Spec struct {
	Test       string `json:"test"`
	Connection string `json:"connection"`
	Sizes      []int  `json:"sizes"`
	// Iterations per size; 0 picks the default, scaled down for large sizes.
	Iterations int `json:"iterations,omitempty"`
	// Duration, when positive, runs each size for this long instead of a
	// number of iterations, reporting every Interval.
	Duration time.Duration `json:"duration_ns,omitempty"`
	Interval time.Duration `json:"interval_ns,omitempty"`
	// Warmup iterations run before measuring and are excluded; nil picks
	// the default (a tenth of the iterations, 10 to 1000); 0 is no warm-up.
	Warmup *int `json:"warmup,omitempty"`
	// Queues are the QPs' and their queues' settings (see pkg/settings).
	settings.Queues
	// Operation: both ends send at once, the atomic operation.
	settings.Operation
	MTU int `json:"mtu,omitempty"`
	// QPTimeout is the local ACK timeout of each QP, an exponent: 4.096 µs
	// × 2^QPTimeout (perftest's -u); 0 leaves it at 14 (67 ms).
	QPTimeout int  `json:"qp_timeout,omitempty"`
	GIDIndex  *int `json:"gid_index,omitempty"` // nil: automatic
	// DevicePort is the client's device and port; the server uses its own unless
	// ServerDevice is set.
	settings.DevicePort
	ServerDevice string        `json:"server_device,omitempty"`
	IdleTimeout  time.Duration `json:"idle_timeout_ns,omitempty"`
	// CPUUtil records the CPU time each end's loops use (--cpu-util).
	CPUUtil bool `json:"cpu_util,omitempty"`
	// CheckData follows each size of an RDMA test with a data check
	// (--validate): see driver_check.go.
	CheckData bool `json:"validate,omitempty"`
	// Keep makes the test a kept probe session (see Kept): after its
	// setup the two ends keep their endpoints and the client runs bursts
	// of ping-pongs on them until it ends the session. Only tcp-lat, one
	// size; a server asked for one must say so in its hello
	// (KeptFeature), since an older one would ignore the field.
	Keep bool `json:"keep,omitempty"`

	// Loops: the loop threads (--threads) and their cores (--cpu,
	// --server-cpu).
	settings.Loops
	// Rate limits each end's sending on each device (--rate-limit, by
	// --rate-limiter).
	settings.Rate
	// Load runs a bandwidth test in the background of a latency test,
	// between the same two ends, on QPs of its own (--load).
	Load *LoadSpec `json:"load,omitempty"`
	// Precision, when positive, runs each size in rounds until the 95%
	// confidence interval of its headline figure (p50 latency, bandwidth)
	// over the rounds is within this fraction of their median, or
	// PrecisionCap has passed (default DefaultPrecisionCap).
	Precision    float64       `json:"precision,omitempty"`
	PrecisionCap time.Duration `json:"precision_cap_ns,omitempty"`
	// Path sets the address vector of both ends' QPs, and its first
	// setting the TCP sockets' IP_TOS (see pkg/settings and spec_path.go).
	settings.Path
	// Setup: which end initiates (--reverse), how the QPs connect (-R).
	settings.Setup
	// Buffers: where both ends' registered buffers live (--mem, see
	// spec_mem.go) and whether they are registered for on-demand paging
	// (--odp).
	settings.Buffers
}

// openEnded tells whether a size's count of iterations is known only when
// it ends (duration and precision modes).
func (s *Spec) openEnded() bool { return s.Duration > 0 || s.Precision > 0 }

// Info returns the test's description (zero if unknown).
func (s *Spec) Info() TestInfo {
	t, _ := LookupTest(s.Test)
	return t
}

// opcode is the work request the test's loop posts: its row's, or for an
// atomic test asked for CMP_AND_SWAP, compare-and-swap (0 for TCP tests).
func (s *Spec) opcode() verbs.Opcode {
	op := s.Info().Opcode
	if op.IsAtomic() && s.AtomicType == CmpSwap {
		return verbs.OpCompSwap
	}
	return op
}

// sendsFromBuffer tells whether op's local buffer is its source (so the
// payload may go inline): not for READ and atomics, whose local buffer
// is written.
func sendsFromBuffer(op verbs.Opcode) bool { return op != verbs.OpRead && !op.IsAtomic() }

// loopSwapAdd is a timed loop's add operand for op: 1 for a
// fetch-and-add, so each operation moves the remote word on; 0 (the
// compare-and-swap's swap, unused by other operations) otherwise.
func loopSwapAdd(op verbs.Opcode) uint64 {
	if op == verbs.OpFetchAdd {
		return 1
	}
	return 0
}

// LoadSpec is the bandwidth test a latency test runs under (--load): on
// QPs of its own, between the same two ends, for as long as the latency
// test runs.
type LoadSpec struct {
	Test string `json:"test"`
	QPs  int    `json:"qps,omitempty"`
	Size int    `json:"size,omitempty"`
}

// ItersFor returns the measured iterations for a message size: the
// explicit count, else the test's default (perftest's), scaled down in a
// sweep of several sizes so that a large size moves at most the sweep
// budget.
func (s *Spec) ItersFor(size int) int {
	if s.Iterations > 0 {
		return s.Iterations
	}
	t := s.Info()
	if len(s.Sizes) < 2 {
		return t.DefaultIters
	}
	budget, floor := latSweepBudget, minLatIters
	if t.Metric == Bandwidth {
		budget, floor = bwSweepBudget, minBWIters
	}
	return max(floor, min(t.DefaultIters, budget/max(size, 1)))
}

// maxIters is the most iterations any size runs (0 in duration mode, which
// has no count).
func (s *Spec) maxIters() int {
	if s.openEnded() {
		return 0
	}
	n := 0
	for _, z := range s.Sizes {
		n = max(n, s.ItersFor(z))
	}
	return n
}

// CQModFor is the completion moderation of size: the one asked for, else
// 1 above cqModSizeLimit (RC and UC, without events) and DefaultCQMod below,
// capped at the send queue depth. Latency tests signal every operation.
func (s *Spec) CQModFor(size int) int {
	t := s.Info()
	switch {
	case !t.IsRDMA():
		return 0
	case t.Metric == Latency:
		return 1
	case s.CQMod > 0:
		return s.CQMod
	case size > cqModSizeLimit && s.Connection != "UD" && !s.Events:
		return 1
	}
	return min(DefaultCQMod, s.TxDepth)
}

// WarmupFor returns the warm-up iterations for a size: --warmup, else a
// tenth of the iterations, 10 to 1000, and for a bandwidth test at most
// warmupBWBytes of messages (still at least 10).
func (s *Spec) WarmupFor(size int) int {
	if s.Warmup != nil {
		return *s.Warmup
	}
	n := min(1000, max(10, s.ItersFor(size)/10))
	if s.Info().Metric == Bandwidth {
		n = min(n, max(10, warmupBWBytes/max(size, 1)))
	}
	return n
}

// InlineFor returns the inline size to ask the device for, and whether it
// is the default (then a device that refuses it gets no inline, with a
// warning, rather than an error).
func (s *Spec) InlineFor() (size int, auto bool) {
	if s.Inline != nil {
		return *s.Inline, false
	}
	t := s.Info()
	switch {
	case t.Metric != Latency:
	case t.Op == OpWrite:
		return DefaultInlineWrite, true
	case t.Op == OpSend && s.Connection == "UD":
		return DefaultInlineSendUD, true
	case t.Op == OpSend:
		return DefaultInlineSend, true
	}
	return 0, true
}

// BufferHalf is the size of each half of an RDMA test's registered buffer
// (send area and receive/target area): the largest message plus room for
// UD's 40-byte GRH, rounded up to a page.
func (s *Spec) BufferHalf() uint64 {
	largest := 0
	for _, z := range s.Sizes {
		largest = max(largest, z)
	}
	const page = 4096
	return (uint64(largest) + 64 + page - 1) / page * page
}

// RegisteredBytes is the memory an end registers for the test (0 for TCP
// tests, whose buffers are not registered).
func (s *Spec) RegisteredBytes() uint64 {
	if !s.Info().IsRDMA() {
		return 0
	}
	return 2 * s.BufferHalf()
}

// ParseSizes parses perftest-style sizes: a comma-separated list of sizes
// and ranges, each size a number with an optional K, M or G (binary) suffix,
// each range LO..HI covering the powers of two from LO to HI ("2,64,4K",
// "2..8M"). The result is sorted and free of duplicates. A range whose
// ends are not both powers of two is a *SizeRangeError: it would not run
// what it says.
func ParseSizes(s string) ([]int, error) {
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("size list %q has an empty entry", s)
		}
		if lo, hi, ok := strings.Cut(part, ".."); ok {
			a, err := parseSize(lo)
			if err != nil {
				return nil, err
			}
			b, err := parseSize(hi)
			if err != nil {
				return nil, err
			}
			if a > b {
				return nil, fmt.Errorf("size range %q runs backwards", part)
			}
			if !isPow2(a) || !isPow2(b) {
				return nil, &SizeRangeError{Sizes: s, Range: part, Lo: strings.TrimSpace(lo), Hi: strings.TrimSpace(hi), lo: a, hi: b}
			}
			for p := a; p <= b; p <<= 1 {
				seen[p] = true
			}
			continue
		}
		v, err := parseSize(part)
		if err != nil {
			return nil, err
		}
		seen[v] = true
	}
	out := make([]int, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Ints(out)
	return out, nil
}

func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// SizeRangeError is a size range LO..HI whose ends are not both powers of
// two. A range runs the powers of two from LO to HI, so such a one would
// run sizes it does not name and drop an end it names: it is refused, with
// what to write instead.
type SizeRangeError struct {
	Sizes  string // the whole list, as written: "2,3..100"
	Range  string // the range in it: "3..100"
	Lo, Hi string // its ends, as written
	lo, hi int
}

func (e *SizeRangeError) Error() string {
	return "size range " + strconv.Quote(e.Range) + ": " + e.explain("")
}

// Say is the error as the flag named flag ("-s") takes the list: "-s
// 3..100: a range runs powers of two, and 3 and 100 are not; write -s
// 4..64, or list sizes: -s 3,100".
func (e *SizeRangeError) Say(flag string) string {
	return flag + " " + e.Sizes + ": " + e.explain(flag+" ")
}

func (e *SizeRangeError) explain(flag string) string {
	var bad []string
	for _, end := range []struct {
		text string
		n    int
	}{{e.Lo, e.lo}, {e.Hi, e.hi}} {
		if !isPow2(end.n) {
			bad = append(bad, end.text)
		}
	}
	not := bad[0] + " is not"
	if len(bad) == 2 {
		not = bad[0] + " and " + bad[1] + " are not"
	}
	// The list with the range replaced: by the powers of two within it,
	// or by its ends as sizes of their own.
	with := func(r string) string {
		parts := strings.Split(e.Sizes, ",")
		for i, p := range parts {
			if strings.TrimSpace(p) == strings.TrimSpace(e.Range) {
				parts[i] = r
				break
			}
		}
		return flag + strings.Join(parts, ",")
	}
	ends := with(e.Lo + "," + e.Hi)
	lo := 1 << bits.Len(uint(e.lo-1)) // the first power of two from lo
	hi := 1 << (bits.Len(uint(e.hi)) - 1)
	switch {
	case lo > hi:
		return fmt.Sprintf("a range runs powers of two, and %s (none is within it); list sizes: %s", not, ends)
	case lo == hi:
		return fmt.Sprintf("a range runs powers of two, and %s; write %s, or list sizes: %s", not, with(sizeText(lo)), ends)
	}
	return fmt.Sprintf("a range runs powers of two, and %s; write %s, or list sizes: %s", not, with(sizeText(lo)+".."+sizeText(hi)), ends)
}

// sizeText writes a size as -s takes it: with K, M or G where it is a
// whole number of them.
func sizeText(n int) string {
	for _, u := range []struct {
		suffix string
		n      int
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.n && n%u.n == 0 {
			return strconv.Itoa(n/u.n) + u.suffix
		}
	}
	return strconv.Itoa(n)
}

// AllSizes is -a: every power of two from 2 B to 8 MiB (23 sizes).
func AllSizes() []int {
	var out []int
	for v := 2; v <= 8<<20; v <<= 1 {
		out = append(out, v)
	}
	return out
}

// parseSize parses one message size ("4096", "4K", "4KiB", "8M", "1G")
// with quantity.ParseBytes, within 1 B..1 GiB.
func parseSize(s string) (int, error) {
	v, err := quantity.ParseBytes(s)
	if err != nil {
		return 0, err
	}
	if v > MaxSize {
		return 0, fmt.Errorf("size %q exceeds 1 GiB, the largest message", s)
	}
	return int(v), nil
}
