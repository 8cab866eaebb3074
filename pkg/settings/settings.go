// Package settings is the one home of the settings a user chooses for a
// test: for each its key (the command line's long flag), its letter, its
// help, the range of its values (said once, used by the flag, the check of
// a spec from the wire and the error), the tests it applies to, how the
// documents and comparisons name it, and its place in a comparison (the
// order of [Table]).
//
// The package sits below pkg/workloads (which binds each setting to its
// field of a Spec and runs it), pkg/report (which records it in a
// document's Params) and pkg/verbs (which applies the path's settings to a
// QP): it imports none of them. The settings that travel as one group
// (the path: [Path], [PathValues], [AddressVector]; the queues: [Queues]
// and the other groups of groups.go) are structs of this package that
// those packages embed, so that a field of theirs is named, on the wire
// and in documents, once, and bound to its flag, recorded and compared
// from its entry in the group's [Fields].
package settings

import (
	"fmt"
	"slices"
	"strings"
)

// Test is what a setting needs to know of a test to say whether it
// applies to it.
type Test struct {
	Op        string // "write", "read", "send", "atomic" or "tcp"
	RDMA      bool   // the test uses verbs
	Bandwidth bool   // a bandwidth test (else a latency test)
}

// Which tests a setting applies to.
var (
	AllTests      = func(Test) bool { return true }
	RDMA          = func(t Test) bool { return t.RDMA }
	RDMABandwidth = func(t Test) bool { return t.RDMA && t.Bandwidth }
	RDMALatency   = func(t Test) bool { return t.RDMA && !t.Bandwidth }
	Bandwidth     = func(t Test) bool { return t.Bandwidth }
)

// Ops is the tests whose operation is one of ops.
func Ops(ops ...string) func(Test) bool {
	return func(t Test) bool { return slices.Contains(ops, t.Op) }
}

// Range bounds the values of an integer setting: Min..Max.
type Range struct{ Min, Max int }

// String is the range as every message says it: "0..255".
func (r Range) String() string { return fmt.Sprintf("%d..%d", r.Min, r.Max) }

// Contains reports whether v is within the range.
func (r Range) Contains(v int) bool { return v >= r.Min && v <= r.Max }

// Setting is one row of the table.
type Setting struct {
	// Key is the command line's long flag; Short its letter (perftest's
	// where it has one), "" for none.
	Key   string
	Short string
	Help  string
	// What names its value in errors: "service level 16 is outside 0..15".
	What string
	// Range bounds an integer setting's values (nil: no bound of its own).
	Range *Range
	// Applies says which tests the setting means something for; nil: all.
	// Why says, when set, why it does not apply to the RDMA tests it does
	// not apply to (for TCP, the list of tests says enough).
	Applies func(Test) bool
	Why     string
	// Shared marks a setting of the device and the path that a background
	// load (--load) takes from the latency test it runs under.
	Shared bool
	// Name is how documents, settings lines and comparisons name it
	// ("qps" for -q); empty: its Key. Compared says a comparison of two
	// documents weighs it: a difference is warned about, in table order.
	Name     string
	Compared bool
	// Form says how the command line reads a string setting. Blank: a
	// comparison reads the string even unset, as "" (else it is not
	// there, and an older document's Params.Extra may say it).
	Form  Form
	Blank bool
	// Of is, for another way to say a setting, that setting (--dscp, a DS
	// field's upper 6 bits); it applies where its setting does.
	Of *Setting
}

// AppliesTo reports whether the setting means something for t.
func (s *Setting) AppliesTo(t Test) bool { return s.Applies == nil || s.Applies(t) }

// Label is how documents and comparisons name the setting.
func (s *Setting) Label() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Key
}

// OutOfRange is the error of v outside the setting's range, or nil.
func (s *Setting) OutOfRange(v int) error {
	if s.Range == nil || s.Range.Contains(v) {
		return nil
	}
	return fmt.Errorf("%s %d is outside %s", s.What, v, s.Range)
}

// The settings of the device, the QPs and the test. The path's are in
// path.go.
var (
	Device = &Setting{Key: "ib-dev", Short: "d", Applies: RDMA, Shared: true,
		Help: "RDMA device, or several at once (mlx5_0,mlx5_1, or all), each paired with the server's (default: the first one)"}
	ServerDevice = &Setting{Key: "server-dev", Applies: RDMA, Shared: true,
		Help: "device the server uses, or one per -d device (default: its own -d, or its first device)"}
	Port = &Setting{Key: "ib-port", Short: "i", Applies: RDMA, Shared: true,
		Help: "device port (default 1)"}
	Connection = &Setting{Key: "connection", Short: "c", Applies: RDMA, Compared: true,
		Help: "connection type: RC, UC or UD (default RC)"}
	MTU = &Setting{Key: "mtu", Short: "m", Applies: RDMA, Shared: true, Compared: true,
		Help: "path MTU: 256, 512, 1024, 2048 or 4096 (default: the port's active MTU)"}
	GIDIndex = &Setting{Key: "gid-index", Short: "x", What: "GID index", Range: &Range{0, 255}, Applies: RDMA, Shared: true, Compared: true,
		Help: "GID index (default: chosen automatically, as rdmabench devices shows)"}
	TxDepth = &Setting{Key: "tx-depth", Short: "t", Applies: RDMA, Compared: true,
		Help: "send queue depth of each QP, the outstanding sends of a bandwidth test (default 128 for bandwidth, 1 for latency)"}
	RxDepth = &Setting{Key: "rx-depth", Short: "r", Applies: Ops("send"), Why: "only SENDs consume receives", Compared: true,
		Help: "receive queue depth: receives kept posted (default 512 for bandwidth, 16 for latency)"}
	QPs = &Setting{Key: "qp", Short: "q", Name: "qps", Applies: RDMABandwidth, Why: "a latency test times one QP", Compared: true,
		Help: "number of QPs (default 1)"}
	Inline = &Setting{Key: "inline-size", Short: "I", Name: "inline", What: "inline size", Range: &Range{0, 65536},
		Applies: Ops("write", "send"), Why: "READ and atomics write their local buffer; they send no payload", Compared: true,
		Help: "inline data size in bytes; 0 for none (default 220 for latency, where the device allows it, else 0)"}
	CQMod = &Setting{Key: "cq-mod", Short: "Q", Applies: RDMABandwidth, Why: "latency tests signal every operation", Compared: true,
		Help: "signal one send in this many (default 100, at most the tx-depth)"}
	PostList = &Setting{Key: "post-list", Short: "l", Applies: RDMABandwidth, Why: "latency tests post one operation at a time", Compared: true,
		Help: "work requests per post call (default 1)"}
	Events = &Setting{Key: "events", Short: "e", Applies: RDMA, Compared: true,
		Help: "wait for completion events instead of busy polling"}
	// QPTimeout's 0 leaves the device its default (14: 67 ms).
	QPTimeout = &Setting{Key: "qp-timeout", Short: "u", What: "qp-timeout", Range: &qpTimeouts, Applies: RDMA, Shared: true, Compared: true,
		Help: "QP local ACK timeout: 4.096 us x 2^N, N within " + qpTimeouts.String() + "; raise it on a slow or emulated network (default 14: 67 ms)"}
	Bidirectional = &Setting{Key: "bidirectional", Short: "b", Applies: Bandwidth, Compared: true,
		Help: "both ends send at once"}
	AtomicType = &Setting{Key: "atomic_type", Short: "A", Name: "atomic", Applies: Ops("atomic"), Compared: true, Blank: true,
		Help: "atomic operation: FETCH_AND_ADD or CMP_AND_SWAP (default FETCH_AND_ADD)"}

	// How long a size runs, and how often the whole run does: flags of
	// every test (not a knob, which applies to some), compared all the
	// same.
	Iterations = &Setting{Key: "iters", Short: "n", Name: "iterations", Compared: true,
		Help: "measured iterations per size (default 1000 for latency, 5000 for bandwidth, fewer for large sizes)"}
	Duration = &Setting{Key: "duration", Short: "D", Compared: true,
		Help: "run each size for this many seconds instead of -n, reporting every interval"}
	Warmup = &Setting{Key: "warmup", Name: "warm-up", Compared: true,
		Help: "warm-up iterations per size, excluded from the results; 0 for none (default: a tenth of the iterations, 10..1000; bandwidth: at most 8 MiB of messages, at least 10)"}
	Precision = &Setting{Key: "precision", Compared: true,
		Help: "run each size in rounds of 50 ms until the 95% confidence interval of its p50 (latency) or bandwidth is within this share of its median, e.g. 1%"}
	PrecisionCap = &Setting{Key: "precision-cap", Compared: true,
		Help: "with --precision, stop a size after this long even if imprecise (default 10s)"}
	Repeat = &Setting{Key: "repeat", Compared: true,
		Help: "run everything N times, in one document with the median and spread of each figure (default 1)"}

	Reverse = &Setting{Key: "reverse", Applies: Bandwidth, Compared: true,
		Help: "the server sends and the client receives (the server issues READs and atomics), without swapping hosts"}
	RDMACM = &Setting{Key: "rdma-cm", Short: "R", Applies: RDMA, Shared: true, Compared: true,
		Help: "connect the QPs with rdma_cm (RC and UD), as perftest's -R"}
	Threads = &Setting{Key: "threads", Applies: RDMABandwidth, Why: "a latency test times one QP", Compared: true,
		Help: "spread the QPs over this many loop threads on each end, each with its own CQs (default 1)"}
	// The loop threads' cores: flags of every test.
	CPUs = &Setting{Key: "cpu", Compared: true,
		Help: "pin each end's loop threads to these cores, e.g. 0-3,8 (default: the cores of the device's NUMA node)"}
	ServerCPUs = &Setting{Key: "server-cpu", Compared: true,
		Help: "pin the server's loop threads to these cores instead of --cpu's"}
	RateLimit = &Setting{Key: "rate-limit", Applies: RDMABandwidth, Why: "a latency test sends one message at a time", Compared: true,
		Help: "limit each end's sending on each device to this payload rate (5Gbps, 800Mbps, 1GB/s; a bare number is Gbit/s) or message rate (2Mpps)"}
	RateLimiter = &Setting{Key: "rate-limiter", Applies: RDMABandwidth, Why: "a latency test sends one message at a time", Compared: true,
		Form: LimiterKind, Help: "what enforces --rate-limit: sw (the timed loop paces its posts) or hw (the device's per-QP rate limiter) (default sw)"}
	Load = &Setting{Key: "load", Applies: RDMALatency, Why: "the load runs under a latency test", Compared: true,
		Help: "run this bandwidth test (write-bw, read-bw, send-bw, atomic-bw) in the background, on QPs of its own, while the latency is measured"}
	LoadQPs = &Setting{Key: "load-qps", Applies: RDMALatency, Why: "the load runs under a latency test",
		Help: "QPs of the --load test (default 1)"}
	LoadSize = &Setting{Key: "load-size", Applies: RDMALatency, Why: "the load runs under a latency test",
		Help: "message size of the --load test (default its own: 64K, atomics 8)"}
	Mem = &Setting{Key: "mem", Applies: RDMA, Compared: true, Form: MemoryKind,
		Help: "where both ends' buffers live: host, hugepages (2 MiB pages; hugepages:1G for 1 GiB), or cuda[:GPU] (GPU memory; GPU an index or PCI bus id, default the GPU nearest the NIC), as perftest's --use_hugepages and --use_cuda (default host)"}
	ODP = &Setting{Key: "odp", Applies: RDMA, Compared: true,
		Help: "register the buffers for on-demand paging (IBV_ACCESS_ON_DEMAND), as perftest's --odp; refused where the device lacks ODP for the transport and operation"}
	CheckData = &Setting{Key: "validate", Applies: RDMA, Compared: true,
		Help: "after each size, check the data: an untimed pass moves 3 messages per QP and direction, each with its own pattern, and the receiving side compares every byte (exit 1 on a difference)"}
)

// qpTimeouts are the ACK timeout exponents a QP may be asked for.
var qpTimeouts = Range{1, 31}

// Table is every setting, in the order a comparison weighs them (and the
// commands define their flags); the device's and port's lead, which a
// comparison leaves to the devices each end used.
var Table = slices.Concat([]*Setting{
	Device, ServerDevice, Port,
	Connection, MTU, GIDIndex, TxDepth, RxDepth, QPs, Inline, CQMod, PostList, Events, QPTimeout, Bidirectional, AtomicType,
	Iterations, Duration, Warmup, Precision, PrecisionCap, Repeat,
}, pathTable(), []*Setting{
	Reverse, RDMACM,
	Threads, CPUs, ServerCPUs, RateLimit, RateLimiter, Load, LoadQPs, LoadSize, Mem, ODP, CheckData,
})

// Lookup returns the setting whose key is key.
func Lookup(key string) (*Setting, bool) {
	for _, s := range Table {
		if s.Key == key {
			return s, true
		}
	}
	return nil, false
}

// Order is s's place in the table (-1 when it is not in it).
func Order(s *Setting) int { return slices.Index(Table, s) }

// Compared are the settings a comparison weighs, in table order.
func Compared() []*Setting {
	var out []*Setting
	for _, s := range Table {
		if s.Compared {
			out = append(out, s)
		}
	}
	return out
}

// List writes names as a sentence does: "a, b and c".
func List(names []string) string {
	if n := len(names); n > 1 {
		return strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	}
	return strings.Join(names, "")
}
