// Package report holds the results model of rdmabench (schema
// "rdmabench/result/v1"), the latency recorder and bandwidth figures that
// fill it, its reading and writing as JSON ([ReadJSON], [ReadFile],
// [WriteJSON], the link and run streams) with the limits of what it reads,
// the statistics over repeated runs ([Document.Summarize]) and the absolute limits
// of a run ([Document.CheckLimits]).
//
// A run produces one self-describing [Document], whatever the number of tests,
// message sizes and repeated runs; `rdmabench report` renders any saved one
// offline with pkg/report/render (the table, CSV, Markdown, Go benchmark
// and OpenMetrics formats); `rdmabench compare` compares two with
// pkg/report/compare (the changes and the gates) and renders the
// comparison with pkg/report/render; `rdmabench plot` draws them with
// pkg/report/plot. All three import this package, which imports none of
// them. The package is pure Go: it does not import pkg/verbs and builds
// with CGO_ENABLED=0.
//
// Conventions:
//   - Latencies are nanoseconds in JSON (`_ns` fields) and microseconds with
//     two decimals in tables. [Latency.Basis] says whether a value is half a
//     round trip (one-way, "rtt_half") or a full round trip ("rtt").
//   - Statistics: count, min, mean, population stdev, p50, p90, p99, p99.9,
//     p99.99, max. Nothing is trimmed (perftest drops its two largest
//     samples; rdmabench does not). Warm-up iterations are excluded and
//     reported in [Result.Warmup].
//   - Bandwidth counts payload bytes only: Gbit/s is 10^9 bit/s, MiB/s is
//     2^20 byte/s, Mmsg/s is 10^6 messages/s.
//   - Repeated runs (--repeat N) are N results per test and size in one
//     document, told apart by [Result.Run] (1..N); [Document.Summaries] holds
//     the median of each figure over the runs with its 95% confidence
//     interval (golang.org/x/perf/benchmath, as benchstat computes them).
package report

import (
	"fmt"
	"time"

	"github.com/rdmabench/rdmabench/pkg/settings"
)

// Schema is the value of [Document.Schema] for documents this package writes
// and reads.
const Schema = "rdmabench/result/v1"

// Document is the results of one run: one or more tests at one or more
// message sizes. Results before a run-level [Document.Error] (the run
// stopped there) are kept.
type Document struct {
	Schema  string    `json:"schema"`
	Tool    Tool      `json:"tool"`
	Command []string  `json:"command"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Hosts   Hosts     `json:"hosts"`
	// Clocks are the clocks the results were timed with, by name; each
	// result names its own ([Result.Clock]): the RDMA loops read one, the
	// TCP baseline another.
	Clocks  map[string]Clock `json:"clocks,omitempty"`
	Params  Params           `json:"params"`
	Results []Result         `json:"results"`
	// Summaries are, in a document of repeated runs, the spread of each
	// figure per test, connection and size over its runs; see [Document.Summarize].
	Summaries []Summary `json:"summaries,omitempty"`
	Warnings  []string  `json:"warnings,omitempty"`
	// Error says why the run stopped before its end (interrupted, or its
	// file could no longer be written); the results before it are kept.
	// A test that failed is no such error: its result records it, and the
	// run goes on with the next test. See [Document.Stopped].
	Error string `json:"error,omitempty"`
	// Partial marks a document written while the run was still going: the
	// results so far, rewritten after each measurement.
	Partial bool `json:"partial,omitempty"`
	// Mesh is the matrix of a mesh run (`rdmabench mesh`): its ranks and
	// links, each link with its own results.
	Mesh *Mesh `json:"mesh,omitempty"`
}

// NewDocument returns a Document with Schema set and empty, non-nil Command
// and Results, so that it encodes as `[]` rather than `null`.
func NewDocument() *Document {
	return &Document{Schema: Schema, Command: []string{}, Results: []Result{}}
}

// Tool identifies the rdmabench binary that produced a document.
type Tool struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"go_version,omitempty"`
	// Verbs reports whether the binary was built with libibverbs (cgo).
	Verbs bool `json:"verbs"`
}

// Hosts are the two ends of a run. Remote is nil when both ends ran in one
// process (loopback).
type Hosts struct {
	Local  Host  `json:"local"`
	Remote *Host `json:"remote,omitempty"`
}

// Host describes one end of a run.
type Host struct {
	Hostname string  `json:"hostname"`
	Kernel   string  `json:"kernel,omitempty"`
	OS       string  `json:"os,omitempty"`
	CPU      string  `json:"cpu,omitempty"`
	CPUs     int     `json:"cpus,omitempty"`
	Device   *Device `json:"device,omitempty"`
	// Devices are, when a test ran on several devices at once (-d A,B),
	// each of them, in order; Device is the first.
	Devices []Device `json:"devices,omitempty"`
	// Memory is where this end's registered buffers lived and how they
	// were registered (RDMA tests; the last test's when a run has several).
	Memory *Memory `json:"memory,omitempty"`
}

// Memory kinds: where a test's buffers live (--mem, Memory.Kind); and
// registrations: how a buffer was registered with the device
// (Memory.Registration).
const (
	MemHost      = "host"
	MemHugePages = "hugepages"
	MemCUDA      = "cuda"

	RegMR       = "ibv_reg_mr"
	RegDmabufMR = "ibv_reg_dmabuf_mr"
)

// Memory is where one end's registered buffers lived (--mem, --odp) and
// how they reached the device.
type Memory struct {
	// Kind is "host" (pages of the process), "hugepages" (MAP_HUGETLB) or
	// "cuda" (GPU memory from cuMemAlloc).
	Kind string `json:"kind"`
	// PageBytes is the size of the pages backing the buffer, bytes: the
	// system page size, the huge page size, or for GPU memory 0 (unknown).
	PageBytes uint64 `json:"page_bytes,omitempty"`
	// Pages is how many huge pages the buffers of this end took.
	Pages int `json:"pages,omitempty"`
	// Registration is "ibv_reg_mr" or "ibv_reg_dmabuf_mr" (an exported
	// dma-buf file descriptor).
	Registration string `json:"registration"`
	// ODP: registered with IBV_ACCESS_ON_DEMAND (on-demand paging, --odp).
	ODP bool `json:"odp,omitempty"`
	// Note says why this registration was chosen ("the driver cannot
	// export a dma-buf: CUDA_ERROR_NOT_SUPPORTED; registered the device
	// pointer through the peer-memory path").
	Note string `json:"note,omitempty"`
	// GPU is the device the memory lives on (kind cuda).
	GPU *GPU `json:"gpu,omitempty"`
}

// GPU is a GPU whose memory a test registered, as its driver describes it.
type GPU struct {
	// Index is the device ordinal (cuDeviceGet).
	Index int `json:"index"`
	// PCIBusID is its PCI address, "0000:3b:00.0".
	PCIBusID string `json:"pci_bus_id,omitempty"`
	Name     string `json:"name,omitempty"`
	// Chosen says how the GPU was chosen: "asked by index", "asked by PCI
	// bus id", "nearest the NIC (...)".
	Chosen string `json:"chosen,omitempty"`
	// Library is the driver library loaded (dlopen), and DriverVersion the
	// version it reports (cuDriverGetVersion: 1000*major + 10*minor).
	Library       string `json:"library,omitempty"`
	DriverVersion int    `json:"driver_version,omitempty"`
}

// Text describes m for people: "hugepages 2 MiB pages, ibv_reg_mr".
func (m *Memory) Text() string {
	if m == nil {
		return ""
	}
	s := m.Kind
	if m.GPU != nil {
		s += fmt.Sprintf(":%d", m.GPU.Index)
	}
	if m.Kind == MemHugePages && m.PageBytes > 0 {
		s += " " + pageText(m.PageBytes) + " pages"
	}
	s += ", " + m.Registration
	if m.ODP {
		s += " (ODP)"
	}
	return s
}

// pageText writes a page size: "4 KiB", "2 MiB", "1 GiB".
func pageText(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// Device is the RDMA device and port an end used, as `ibv_devinfo -v` and the
// GID table show them.
type Device struct {
	Name      string `json:"name"`
	Firmware  string `json:"firmware,omitempty"`
	NodeGUID  string `json:"node_guid,omitempty"`
	Transport string `json:"transport,omitempty"` // "InfiniBand", "iWARP", ...
	Port      int    `json:"port"`
	PortState string `json:"port_state,omitempty"` // "ACTIVE", ...
	LinkLayer string `json:"link_layer,omitempty"` // "InfiniBand" or "Ethernet"
	ActiveMTU int    `json:"active_mtu,omitempty"` // bytes
	GID       string `json:"gid,omitempty"`
	GIDIndex  int    `json:"gid_index"`
	GIDType   string `json:"gid_type,omitempty"` // "IB/RoCE v1", "RoCE v2"
	// GIDReason says why this GID index was chosen ("auto: RoCE v2, IPv4",
	// "requested with -x").
	GIDReason string `json:"gid_reason,omitempty"`
	Netdev    string `json:"netdev,omitempty"`
	// ActiveSpeed and ActiveWidth are the port's, as ibv_devinfo names
	// them ("25.0 Gbps (EDR)", "4X"); LinkGbps their product, the port's
	// nominal rate, Gbit/s (absent: unknown). On RoCE the kernel derives
	// them from the network interface's speed.
	ActiveSpeed string  `json:"active_speed,omitempty"`
	ActiveWidth string  `json:"active_width,omitempty"`
	LinkGbps    float64 `json:"link_gbps,omitempty"`
}

// Clock is a timestamp source of the timed loops and its measured
// properties.
type Clock struct {
	Source string `json:"source"` // e.g. "TSC (rdtsc, 2.4000 GHz, scaled against CLOCK_MONOTONIC)"
	// ResolutionNs is the smallest non-zero difference between two
	// consecutive reads, as measured.
	ResolutionNs float64 `json:"resolution_ns"`
	// ReportedResolutionNs is what the system claims (clock_getres).
	ReportedResolutionNs float64 `json:"reported_resolution_ns,omitempty"`
	// ReadCostNs is the mean cost of one read.
	ReadCostNs float64 `json:"read_cost_ns,omitempty"`
	// CalibrationPPM bounds the error of a TSC's scale to ns, in 10^-6;
	// DriftPPM is how far it had drifted from CLOCK_MONOTONIC by the end of
	// the run. Both are absent for a clock that reads ns itself.
	CalibrationPPM float64 `json:"calibration_ppm,omitempty"`
	DriftPPM       float64 `json:"drift_ppm,omitempty"`
}

// Params are what the command line asked for, common to every test of a
// run: a zero (or absent) field asked for nothing and left the test its
// default. What each test ran with, as it reached the device or the socket,
// is in its [Result.Effective]; the device and GID each end used are in
// [Hosts].
//
// The settings of pkg/settings' table that a comparison weighs are
// compared in the table's order (see pkg/report/compare); the path's
// settings are its [settings.Path], the same struct a spec embeds.
type Params struct {
	Server string `json:"server,omitempty"` // HOST as given; empty on loopback
	settings.DevicePort
	GIDIndex   int    `json:"gid_index"` // -x; -1: selected automatically
	Connection string `json:"connection,omitempty"`
	MTU        int    `json:"mtu,omitempty"`   // -m, bytes; 0: the port's active MTU
	Sizes      []int  `json:"sizes,omitempty"` // -s / -a, bytes
	// Queues: -t, -r, -q, -I (bytes), -Q, -l, -e.
	settings.Queues
	// QPTimeout (-u) is the QPs' local ACK timeout exponent: 4.096 µs ×
	// 2^QPTimeout; 0 left the default.
	QPTimeout int `json:"qp_timeout,omitempty"`
	// Operation: -b (both ends send at once), -A.
	settings.Operation
	Iterations int     `json:"iterations,omitempty"` // -n
	DurationS  float64 `json:"duration_s,omitempty"` // -D; duration mode when > 0
	Warmup     *int    `json:"warmup,omitempty"`     // --warmup, iterations per size
	// PrecisionPct (--precision) runs each size until its headline figure
	// is known to this half-width, percent, or for at most PrecisionCapS.
	PrecisionPct  float64 `json:"precision_pct,omitempty"`
	PrecisionCapS float64 `json:"precision_cap_s,omitempty"`
	Loopback      bool    `json:"loopback,omitempty"`
	// CheckData (--validate): each size of each RDMA test is followed by
	// a data check (see [Validation]).
	CheckData bool `json:"validate,omitempty"`
	// Repeat is the number of runs requested (--repeat); 0 or 1: one.
	Repeat int `json:"repeat,omitempty"`
	// Setup: --reverse (in bandwidth tests the server initiated), -R
	// (rdma_cm set up the QPs' connections).
	settings.Setup
	// Path is the path asked for; what reached the device is in each
	// result's effective.av.
	settings.Path

	// Threads (--threads), the loop threads' cores (--cpu, --server-cpu),
	// the server's device (--server-dev; compare leaves it out as it does
	// -d), the rate limit (--rate-limit: Gbit/s of payload, or messages
	// per second) and its limiter (--rate-limiter), the load (--load).
	settings.Loops
	ServerDevice string `json:"server_device,omitempty"`
	settings.Rate
	Load *LoadParams `json:"load,omitempty"`
	// Buffers: where the buffers were asked to live (--mem: "hugepages",
	// "hugepages:1G", "cuda:0", ...; empty: host memory), and whether to
	// be registered for on-demand paging (--odp).
	settings.Buffers
	// Extra holds parameters without a field of their own.
	Extra map[string]string `json:"extra,omitempty"`
}

// Effective are the values one test ran with at one size, as they reached
// the device (RDMA) or the socket (TCP): not the flags, which may leave a
// value to its default or be adjusted by the device.
type Effective struct {
	// RDMA. TxDepth is the send queue depth each QP was created with, the
	// window of outstanding sends; RxDepth the receive queue depth (SEND
	// tests, whose receiver keeps that many receives posted).
	TxDepth int `json:"tx_depth,omitempty"`
	RxDepth int `json:"rx_depth,omitempty"`
	// CQMod: one send in CQMod was signalled (1: every one).
	CQMod int `json:"cq_mod,omitempty"`
	// PostList: work requests per ibv_post_send call.
	PostList int `json:"post_list,omitempty"`
	// InlineMax is the inline size the device granted each QP, bytes;
	// Inline says whether this size's payload went inline (posted with the
	// work request, not read by DMA).
	InlineMax int  `json:"inline_max,omitempty"`
	Inline    bool `json:"inline,omitempty"`
	// PathMTU is the MTU agreed by the two ends' QPs, bytes.
	PathMTU int `json:"path_mtu,omitempty"`
	// MaxRdAtomic is how many RDMA READs or atomics each QP kept
	// outstanding at most (READ and atomic tests).
	MaxRdAtomic int `json:"max_rd_atomic,omitempty"`
	// CheckData: the size was followed by a data check, whose outcome is
	// [Result.Validation].
	CheckData bool `json:"validate,omitempty"`
	// Events: completions were waited for on a completion channel, not
	// busy-polled.
	Events bool `json:"events,omitempty"`
	// QPTimeout is the local ACK timeout exponent each QP was made with:
	// 4.096 µs × 2^QPTimeout (14: 67 ms).
	QPTimeout  int    `json:"qp_timeout,omitempty"`
	AtomicType string `json:"atomic_type,omitempty"` // "FETCH_AND_ADD" or "CMP_AND_SWAP"
	// Threads is the loop threads each end's QPs were spread over, each
	// with its own CQs (bandwidth tests with --threads).
	Threads int `json:"threads,omitempty"`
	// RateLimitGbps is the payload rate each end's sending was limited
	// to at this size, all its QPs together, by RateLimiter: "sw" (the
	// timed loop paces its posts) or "hw" (the device, per QP).
	RateLimitGbps float64 `json:"rate_limit_gbps,omitempty"`
	RateLimiter   string  `json:"rate_limiter,omitempty"`

	// TCP. Connections is the number of TCP connections (two when
	// bidirectional); NoDelay says TCP_NODELAY was set; SendBuf and RecvBuf
	// are the client socket's SO_SNDBUF and SO_RCVBUF as the kernel set
	// them, bytes.
	Connections int  `json:"connections,omitempty"`
	NoDelay     bool `json:"tcp_nodelay,omitempty"`
	SendBuf     int  `json:"so_sndbuf,omitempty"`
	RecvBuf     int  `json:"so_rcvbuf,omitempty"`

	// AV is the RDMA QPs' address vector toward the peer as the device took
	// it; IPTOS the TCP client socket's IP_TOS (or its IPv6 twin) as the
	// kernel set it (it keeps the ECN bits to itself).
	AV    *AddressVector `json:"av,omitempty"`
	IPTOS *int           `json:"ip_tos,omitempty"`

	// RDMACM is what rdma_cm chose for the connections, when it set them
	// up (-R).
	RDMACM *RDMACM `json:"rdma_cm,omitempty"`

	// LinkGbps is the nominal rate of the slower of the two ports the
	// test ran between (RDMA), Gbit/s: what --limit-bw 90%link measures
	// against. Absent when a port does not say.
	LinkGbps float64 `json:"link_gbps,omitempty"`

	// Reverse: the server initiated this bandwidth test (--reverse): it
	// sent the WRITEs, SENDs or TCP stream, or issued the READs or
	// atomics, and measured them; the client answered.
	Reverse bool `json:"reverse,omitempty"`

	// Memory is where the client's registered buffers lived and how they
	// were registered (RDMA); ServerMemory the server's, as it told the
	// client (also in its host's memory).
	Memory       *Memory `json:"memory,omitempty"`
	ServerMemory *Memory `json:"server_memory,omitempty"`
}

// RDMACM is what rdma_cm chose for a test's connections (-R), as the
// client's first QP saw it: every QP connects alike, each from a port of
// its own.
type RDMACM struct {
	// PortSpace is "RDMA_PS_TCP" (RC) or "RDMA_PS_UDP" (UD).
	PortSpace string `json:"port_space"`
	// ClientAddr and ServerAddr are the two ends' addresses (IP:port): the
	// client's rdma_cm id's, the server's listening one's.
	ClientAddr string `json:"client_addr"`
	ServerAddr string `json:"server_addr"`
	// GID and GIDIndex are the client's source GID of the route rdma_cm
	// resolved (its -x).
	GID      string `json:"gid"`
	GIDIndex int    `json:"gid_index"`
}

// The directions of a bandwidth test's payload ([Result.Direction]).
// READs carry data from the target to the reader: a read-bw moves data
// from the server to the client, or with --reverse from the client to the
// server.
const (
	DirectionClientToServer = "client_to_server"
	DirectionServerToClient = "server_to_client"
	DirectionBoth           = "both"
)

// AddressVector is what a QP's address vector (ibv_ah_attr) says beyond the
// peer's address, as the device took it: see [settings.AddressVector].
type AddressVector = settings.AddressVector

// Result is one test at one message size.
type Result struct {
	Test       string `json:"test"`                 // "write-lat", "tcp-bw", ...
	Connection string `json:"connection,omitempty"` // "RC", "UC", "UD"; "TCP" for tcp tests
	Size       int    `json:"size"`                 // message size, bytes
	// Run is the 1-based index of the run this result belongs to, in a
	// document of repeated runs (--repeat); 0 in a document of one run.
	Run        int `json:"run,omitempty"`
	Iterations int `json:"iterations"` // measured iterations (warm-up excluded)
	Warmup     int `json:"warmup"`     // warm-up iterations run and excluded
	QPs        int `json:"qps,omitempty"`
	// DurationS is the requested duration in duration mode.
	DurationS float64 `json:"duration_s,omitempty"`
	// Clock names the clock this result was timed with, a key of
	// [Document.Clocks].
	Clock string `json:"clock,omitempty"`
	// Effective holds the values this test ran with at this size.
	Effective *Effective `json:"effective,omitempty"`
	Latency   *Latency   `json:"latency,omitempty"`
	// Bandwidth is this side's (the client's) direction; in a
	// unidirectional test the only one.
	Bandwidth *Bandwidth `json:"bandwidth,omitempty"`
	// Reverse is, in a bidirectional test, the other side's direction.
	Reverse *Bandwidth `json:"reverse,omitempty"`
	// Total is, in a bidirectional test, the sum of both directions.
	Total *Bandwidth `json:"total,omitempty"`
	// Direction says which way a bandwidth test's payload went (see
	// DirectionClientToServer); absent for latency tests.
	Direction string     `json:"direction,omitempty"`
	Intervals []Interval `json:"intervals,omitempty"`
	// Precision says how well the headline figure is known, when the size
	// ran until it was (--precision).
	Precision *Precision `json:"precision,omitempty"`
	// Validation is the outcome of the data check that followed this size
	// (--validate).
	Validation *Validation `json:"validation,omitempty"`
	// PortCounters are the changes of each end's port error and
	// retransmission counters over this size, where the device exposes
	// them.
	PortCounters *PortCounters `json:"port_counters,omitempty"`
	// CPU is the CPU time each end's loops used at this size (--cpu-util).
	CPU *CPUUse `json:"cpu,omitempty"`
	// Threads, Devices, Load and Placement: see their types.
	Threads   []Thread       `json:"threads,omitempty"`
	Devices   []DeviceResult `json:"devices,omitempty"`
	Load      *Load          `json:"load,omitempty"`
	Placement *Placement     `json:"placement,omitempty"`

	Warnings []string `json:"warnings,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// Precision is how well a result's headline figure is known when its size
// ran in rounds until the figure was precise enough (--precision): the
// rounds' figures (each one a [Result.Intervals] entry), their median and
// its 95% confidence interval.
type Precision struct {
	// Figure is the headline figure: "p50_ns" (latency) or "bw_gbps".
	Figure string `json:"figure"`
	// TargetPct is the half-width asked for, in percent of the median.
	TargetPct float64 `json:"target_pct"`
	// HalfWidthPct is the half-width reached: the larger distance from the
	// median to a bound of its confidence interval, in percent of the
	// median. Absent when too few rounds ran for an interval.
	HalfWidthPct *float64 `json:"half_width_pct,omitempty"`
	// Met says the half-width reached the target (else the time cap ended
	// the size).
	Met    bool `json:"met"`
	Rounds int  `json:"rounds"`
	// Median is the median of the rounds' figures; Lo and Hi bound its
	// confidence interval (absent with too few rounds). Same unit as Figure.
	Median float64  `json:"median"`
	Lo     *float64 `json:"lo,omitempty"`
	Hi     *float64 `json:"hi,omitempty"`
}

// CPUUse is the CPU time the loops of each end of a test used at one size,
// warm-up included, as the kernel accounts it to their threads (busy
// polling shows as one core per loop; -e as little).
type CPUUse struct {
	Client *CPUSide `json:"client,omitempty"`
	Server *CPUSide `json:"server,omitempty"`
}

// CPUSide is one end's CPU time over the wall time of its loops.
type CPUSide struct {
	UserS float64 `json:"user_s"`
	SysS  float64 `json:"sys_s"`
	WallS float64 `json:"wall_s"`
	// Cores is (user + sys) / wall: 1 is one core busy the whole time.
	Cores float64 `json:"cores"`
}

// Bidirectional reports whether r holds figures for both directions.
func (r *Result) Bidirectional() bool { return r.Reverse != nil || r.Total != nil }

// Reversed reports whether the server initiated r, a bandwidth test run
// with --reverse.
func (r *Result) Reversed() bool { return r.Effective != nil && r.Effective.Reverse }

// Interval is one period of a duration-mode test (normally 1 s).
type Interval struct {
	StartS    float64    `json:"start_s"` // since the end of warm-up
	DurationS float64    `json:"duration_s"`
	Bandwidth *Bandwidth `json:"bandwidth,omitempty"`
	Latency   *Latency   `json:"latency,omitempty"`
}
