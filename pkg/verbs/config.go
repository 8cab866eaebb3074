package verbs

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/rdmabench/rdmabench/pkg/settings"
)

// DefaultQPTimeout is the local ACK timeout exponent of a QP unless its
// config says otherwise: 4.096 us * 2^14 = 67 ms, perftest's.
const DefaultQPTimeout = 14

// MRConfig describes a memory region: a buffer of Length bytes allocated in
// C (page-aligned, never on the Go heap) and registered with Access.
type MRConfig struct {
	Length uint64
	Access Access
	// HugePageSize, when not 0, backs the buffer with huge pages of this
	// size, bytes (MAP_HUGETLB: 2 MiB or 1 GiB, a power of two).
	HugePageSize uint64
	// OnDemand registers it for on-demand paging (IBV_ACCESS_ON_DEMAND).
	OnDemand bool
}

// Validate checks the config without a device.
func (c MRConfig) Validate() error {
	if c.Length == 0 {
		return errors.New("mr config: length must be positive")
	}
	if c.Length > 1<<40 {
		return fmt.Errorf("mr config: length %d is beyond any sane registration", c.Length)
	}
	if p := c.HugePageSize; p != 0 && (p < 4096 || p&(p-1) != 0) {
		return fmt.Errorf("mr config: huge page size %d is not a power of two of 4 KiB or more", p)
	}
	return nil
}

// CQConfig describes a completion queue.
type CQConfig struct {
	Depth int // number of entries
	// Events attaches a completion channel, so the CQ can be waited on
	// (event-driven completion, perftest's -e) instead of busy-polled.
	Events bool
}

// Validate checks the config without a device.
func (c CQConfig) Validate() error {
	if c.Depth <= 0 {
		return fmt.Errorf("cq config: depth %d must be positive", c.Depth)
	}
	return nil
}

// QPConfig describes a queue pair. It validates with no device, but it is
// not plain data: SendCQ and RecvCQ are live CQs, which the QP shares.
type QPConfig struct {
	Type          QPType
	Port          int // 1-based port number; 0 means 1
	SendCQ        *CQ
	RecvCQ        *CQ
	MaxSendWR     int
	MaxRecvWR     int
	MaxSendSGE    int // 0 means 1
	MaxRecvSGE    int // 0 means 1
	MaxInlineData int
	// GIDIndex selects the source GID; negative means automatic selection
	// (see SelectGID).
	GIDIndex int
	// MTU caps the path MTU; 0 means the port's active MTU.
	MTU MTU
	// PSN is the initial packet sequence number; 0 picks a random one.
	PSN uint32
	// QKey is the UD queue key; 0 means DefaultQKey.
	QKey uint32
	// MaxRdAtomic is the number of outstanding RDMA READs and atomics the QP
	// may issue and accept; 0 means the device maximum (max_qp_rd_atom).
	MaxRdAtomic int
	// QPTimeout is the local ACK timeout exponent (4.096 us * 2^QPTimeout);
	// 0 means DefaultQPTimeout.
	QPTimeout int
	// RetryCnt is the transport retry count; 0 means 6 (Soft-RoCE treats
	// 7 as unlimited, which would hide a dead peer). RNRRetry is the RNR
	// retry count; 0 means 7, retry forever (a slow receiver is not an
	// error).
	RetryCnt int
	RNRRetry int
	// PathValues are the address vector (ibv_ah_attr) toward the peer
	// beyond its address, each within its setting's range (see
	// pkg/settings); a 0 leaves the device its default.
	settings.PathValues
}

// QPCaps are a QP's queue sizes: work requests in its send and receive
// queues, and the inline data size.
type QPCaps struct {
	MaxSendWR     int `json:"max_send_wr"`
	MaxRecvWR     int `json:"max_recv_wr"`
	MaxInlineData int `json:"max_inline_data"`
}

// DefaultQKey is the Q_Key UD QPs use unless told otherwise (perftest's).
const DefaultQKey = 0x11111111

// Validate checks the config without a device.
func (c QPConfig) Validate() error {
	var errs []string
	switch c.Type {
	case RC, UC, UD:
	default:
		errs = append(errs, fmt.Sprintf("unknown QP type %d", int(c.Type)))
	}
	if c.SendCQ == nil || c.RecvCQ == nil {
		errs = append(errs, "send and receive CQs are required")
	}
	if c.MaxSendWR <= 0 || c.MaxRecvWR <= 0 {
		errs = append(errs, fmt.Sprintf("queue depths must be positive (send %d, recv %d)", c.MaxSendWR, c.MaxRecvWR))
	}
	if c.MaxInlineData < 0 {
		errs = append(errs, fmt.Sprintf("inline size %d is negative", c.MaxInlineData))
	}
	if c.MTU != 0 && !c.MTU.Valid() {
		errs = append(errs, fmt.Sprintf("MTU %d is not one of 256, 512, 1024, 2048, 4096", c.MTU))
	}
	if c.QPTimeout != 0 {
		if err := settings.QPTimeout.OutOfRange(c.QPTimeout); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if c.RetryCnt < 0 || c.RetryCnt > 7 || c.RNRRetry < 0 || c.RNRRetry > 7 {
		errs = append(errs, "retry counts must be within 0..7")
	}
	if err := c.PathValues.Check(); err != nil {
		errs = append(errs, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if c.PSN > 0xffffff {
		errs = append(errs, fmt.Sprintf("PSN 0x%x exceeds 24 bits", c.PSN))
	}
	if len(errs) > 0 {
		return errors.New("qp config: " + strings.Join(errs, "; "))
	}
	return nil
}

func (c QPConfig) port() int {
	if c.Port == 0 {
		return 1
	}
	return c.Port
}

func orDefault(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// ClockInfo describes the clock the timed loops read.
type ClockInfo struct {
	// Name is short: "tsc" or "monotonic".
	Name   string `json:"name"`
	Source string `json:"source"`
	// ResolutionNs is the clock's resolution: the smallest non-zero step
	// seen between consecutive reads, or the reported resolution if larger.
	ResolutionNs float64 `json:"resolution_ns"`
	// ReportedResolutionNs is what clock_getres says.
	ReportedResolutionNs float64 `json:"reported_resolution_ns"`
	// ReadCostNs is the mean cost of one clock read.
	ReadCostNs float64 `json:"read_cost_ns"`
	// CalibrationPPM bounds the error of the TSC's scale to ns, in 10^-6
	// (0 for CLOCK_MONOTONIC, which needs none).
	CalibrationPPM float64 `json:"calibration_ppm,omitempty"`
}

// The registry counts live verbs objects, so tests can prove that every
// object was closed (like cilium/ebpf's leak tracer), and tell where a
// leaked one was made.
var registry = struct {
	sync.Mutex
	next int
	objs map[int]liveObject
}{objs: map[int]liveObject{}}

type liveObject struct {
	kind  string
	stack string
}

func track(kind string) int {
	var pcs [8]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	var b strings.Builder
	for {
		f, more := frames.Next()
		fmt.Fprintf(&b, "\n\t%s (%s:%d)", f.Function, f.File, f.Line)
		if !more {
			break
		}
	}
	registry.Lock()
	defer registry.Unlock()
	registry.next++
	registry.objs[registry.next] = liveObject{kind, b.String()}
	return registry.next
}

func untrack(id int) {
	registry.Lock()
	delete(registry.objs, id)
	registry.Unlock()
}

// OpenObjects describes every verbs object (context, PD, MR, CQ, QP, AH,
// completion channel, timed loop) that is open now, with where it was
// created. It returns nil when there are none.
func OpenObjects() []string {
	registry.Lock()
	defer registry.Unlock()
	var out []string
	for _, o := range registry.objs {
		out = append(out, o.kind+" created at"+o.stack)
	}
	sort.Strings(out)
	return out
}
