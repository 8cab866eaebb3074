package settings

// The settings that a workloads.Spec and a document's Params hold in the
// same order are structs of this package that both embed, as the path is
// (path.go): a setting of such a group is its row of the table, its field
// of the group's struct and its entry in the group's [Fields]; pkg/workloads
// binds it to its flag and records it, and pkg/report/compare reads it,
// from the entry.

// A Field is a setting held in a field of the group S, of type T: In
// points at it.
type Field[S, T any] struct {
	*Setting
	In func(*S) *T
}

// Fields are the settings of the group S, by the type of their values.
// An int's 0 leaves the setting unset, as a *int's nil, a bool's false, a
// string's "" and a list's nil do.
type Fields[S any] struct {
	Ints      []Field[S, int]
	Optionals []Field[S, *int] // 0 is a value
	Bools     []Field[S, bool]
	Strings   []Field[S, string]
	Lists     []Field[S, []int]
}

// Form says how the command line reads a string setting.
type Form int

// Forms.
const (
	Plain       Form = iota // as it is
	MemoryKind              // a kind of memory (workloads.ParseMem)
	LimiterKind             // what enforces a rate limit: sw or hw
)

// Queues are the QPs' and their queues' settings.
type Queues struct {
	// TxDepth is the send queue depth of each QP: the window of
	// outstanding sends of a bandwidth test.
	TxDepth int `json:"tx_depth,omitempty"`
	// RxDepth is the receive queue depth of SEND tests.
	RxDepth  int  `json:"rx_depth,omitempty"`
	QPs      int  `json:"qps,omitempty"`
	Inline   *int `json:"inline,omitempty"` // nil: default (220 for write and send latency, else 0)
	CQMod    int  `json:"cq_mod,omitempty"`
	PostList int  `json:"post_list,omitempty"`
	// Events: completions are waited for on a completion channel, not
	// busy-polled.
	Events bool `json:"events,omitempty"`
}

// Operation is what the timed operations do beyond their test's.
type Operation struct {
	// Bidirectional: both ends send at once (bandwidth tests).
	Bidirectional bool   `json:"bidirectional,omitempty"`
	AtomicType    string `json:"atomic_type,omitempty"` // "FETCH_AND_ADD" or "CMP_AND_SWAP"; empty: the first
}

// OperationFields are the fields of [Operation].
var OperationFields = Fields[Operation]{
	Bools:   []Field[Operation, bool]{{Bidirectional, func(o *Operation) *bool { return &o.Bidirectional }}},
	Strings: []Field[Operation, string]{{AtomicType, func(o *Operation) *string { return &o.AtomicType }}},
}

// DevicePort is the client's RDMA device and port (the server's, unless
// asked otherwise, are its own).
type DevicePort struct {
	Device string `json:"device,omitempty"` // -d; empty: the first device
	Port   int    `json:"port,omitempty"`   // -i
}

// DevicePortFields are the fields of [DevicePort].
var DevicePortFields = Fields[DevicePort]{
	Strings: []Field[DevicePort, string]{{Device, func(d *DevicePort) *string { return &d.Device }}},
	Ints:    []Field[DevicePort, int]{{Port, func(d *DevicePort) *int { return &d.Port }}},
}

// Loops are the loop threads' settings.
type Loops struct {
	// Threads spreads a bandwidth test's QPs over this many loop threads
	// on each end, each with its own CQs (--threads); 0 or 1: one.
	Threads int `json:"threads,omitempty"`
	// CPUs are the cores each end's loop threads are pinned to (--cpu);
	// ServerCPUs, when set, the server's instead (--server-cpu). Neither:
	// the cores of the device's NUMA node.
	CPUs       []int `json:"cpus,omitempty"`
	ServerCPUs []int `json:"server_cpus,omitempty"`
}

// LoopFields are the fields of [Loops].
var LoopFields = Fields[Loops]{
	Ints: []Field[Loops, int]{{Threads, func(l *Loops) *int { return &l.Threads }}},
	Lists: []Field[Loops, []int]{
		{CPUs, func(l *Loops) *[]int { return &l.CPUs }},
		{ServerCPUs, func(l *Loops) *[]int { return &l.ServerCPUs }},
	},
}

// Rate is the rate limit of each end's sending on each device.
type Rate struct {
	// RateLimitGbps (payload Gbit/s) or RateLimitMsgs (messages per
	// second) limits each end's sending on each device (--rate-limit), by
	// RateLimiter: "sw" (the timed loop paces its posts; the default) or
	// "hw" (the device's per-QP rate limiter).
	RateLimitGbps float64 `json:"rate_limit_gbps,omitempty"`
	RateLimitMsgs float64 `json:"rate_limit_msgs,omitempty"`
	RateLimiter   string  `json:"rate_limiter,omitempty"`
}

// RateFields are the fields of [Rate]. The limit itself, one of two
// fields, is bound and compared by pkg/workloads and pkg/report/compare
// by name.
var RateFields = Fields[Rate]{
	Strings: []Field[Rate, string]{{RateLimiter, func(r *Rate) *string { return &r.RateLimiter }}},
}

// Setup is how the two ends set the test up: which one initiates, and
// how their QPs connect.
type Setup struct {
	// Reverse: in a bandwidth test the server initiates (sends the WRITEs
	// or SENDs, issues the READs or atomics) and the client answers,
	// without swapping hosts.
	Reverse bool `json:"reverse,omitempty"`
	// RDMACM sets the QPs' connections up with rdma_cm (-R) instead of
	// exchanging their endpoints; the control connection still carries the
	// spec, the buffers' keys and the results.
	RDMACM bool `json:"rdma_cm,omitempty"`
}

// SetupFields are the fields of [Setup].
var SetupFields = Fields[Setup]{
	Bools: []Field[Setup, bool]{
		{Reverse, func(s *Setup) *bool { return &s.Reverse }},
		{RDMACM, func(s *Setup) *bool { return &s.RDMACM }},
	},
}

// Buffers are where both ends' registered buffers live and how they are
// registered.
type Buffers struct {
	// Mem is where the buffers live (--mem): "host" or empty,
	// "hugepages[:2M|:1G]", "cuda[:GPU]". ODP registers them for
	// on-demand paging (--odp).
	Mem string `json:"mem,omitempty"`
	ODP bool   `json:"odp,omitempty"`
}

// BufferFields are the fields of [Buffers].
var BufferFields = Fields[Buffers]{
	Strings: []Field[Buffers, string]{{Mem, func(b *Buffers) *string { return &b.Mem }}},
	Bools:   []Field[Buffers, bool]{{ODP, func(b *Buffers) *bool { return &b.ODP }}},
}

// QueueFields are the fields of [Queues].
var QueueFields = Fields[Queues]{
	Ints: []Field[Queues, int]{
		{TxDepth, func(q *Queues) *int { return &q.TxDepth }},
		{RxDepth, func(q *Queues) *int { return &q.RxDepth }},
		{QPs, func(q *Queues) *int { return &q.QPs }},
		{CQMod, func(q *Queues) *int { return &q.CQMod }},
		{PostList, func(q *Queues) *int { return &q.PostList }},
	},
	Optionals: []Field[Queues, *int]{{Inline, func(q *Queues) **int { return &q.Inline }}},
	Bools:     []Field[Queues, bool]{{Events, func(q *Queues) *bool { return &q.Events }}},
}
