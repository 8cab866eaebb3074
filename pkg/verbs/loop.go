package verbs

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// LoopKind selects the timed loop.
type LoopKind int

// Timed loops.
const (
	// LatWrite is the RDMA WRITE ping-pong: each side writes the peer's
	// buffer and spins on the last byte of its own (perftest's write_lat).
	LatWrite LoopKind = 1
	// LatSend is the SEND/RECV ping-pong.
	LatSend LoopKind = 2
	// LatPost times one READ or atomic from post to completion.
	LatPost LoopKind = 3
	// BWSend posts windows of WRITE, READ, SEND or atomics.
	BWSend LoopKind = 4
	// BWRecv receives, reposts and counts SENDs.
	BWRecv LoopKind = 5
)

func (k LoopKind) String() string {
	switch k {
	case LatWrite:
		return "write ping-pong"
	case LatSend:
		return "send ping-pong"
	case LatPost:
		return "post to completion"
	case BWSend:
		return "bandwidth sender"
	case BWRecv:
		return "bandwidth receiver"
	}
	return fmt.Sprintf("LoopKind(%d)", int(k))
}

// Role is the side a loop plays in a ping-pong.
type Role int

// Roles.
const (
	Initiator Role = 0 // starts each round trip and times it
	Responder Role = 1 // answers
)

// LoopConfig is the plain description of a timed loop.
type LoopConfig struct {
	Kind   LoopKind
	Role   Role
	Opcode Opcode // WRITE for LatWrite, SEND for LatSend and BWRecv, READ or an atomic for LatPost
	Size   uint32 // message size in bytes
	// RecvSize is the payload capacity of each posted receive; 0 means
	// Size. A test that sweeps sizes on the same QPs posts receives of the
	// largest size, so receives left posted by one size fit the next.
	RecvSize uint32
	// Inline sends the payload inline (size must not exceed the QP's limit).
	Inline bool
	// TxDepth bounds outstanding send WRs per QP (bandwidth).
	TxDepth int
	// RxDepth is the number of receives kept posted per QP.
	RxDepth int
	// CQMod signals one send WR in CQMod (completion moderation).
	CQMod int
	// PostList is the number of WRs posted by one ibv_post_send (bandwidth).
	PostList int
	// Compare and SwapAdd are the atomic operands.
	Compare, SwapAdd uint64
	// IdleTimeout ends a loop whose peer stops making progress; 0 waits forever.
	IdleTimeout time.Duration
	// NapAfter and Nap make a latency loop's long waits sleep: a wait for
	// the peer (a ping-pong's answer, a completion) that has lasted
	// NapAfter sleeps Nap between looks, so a slow answer costs this CPU
	// little, and its sample up to about Nap more. Nap 0: the loop spins
	// throughout, as perftest's do (every test; the agent's kept sessions
	// nap).
	NapAfter, Nap time.Duration
	// Total is the number of ping-pong iterations the loop will run in all
	// (so the last one is signalled), or for BWRecv the receives expected
	// (0: until Stop).
	Total uint64
	// PaceNs, when positive, paces a bandwidth sender (the software rate
	// limiter): each QP posts one message per PaceNs nanoseconds at most,
	// and one that fell behind (a stall, a full window) catches up at most
	// PaceBurst messages at once (0: 1).
	PaceNs    float64
	PaceBurst int
}

// Validate checks the config without a device.
func (c LoopConfig) Validate() error {
	var errs []string
	switch c.Kind {
	case LatWrite:
		if c.Opcode != OpWrite {
			errs = append(errs, "the write ping-pong uses RDMA_WRITE")
		}
	case LatSend, BWRecv:
		if c.Opcode != OpSend {
			errs = append(errs, c.Kind.String()+" uses SEND")
		}
	case LatPost:
		if c.Opcode != OpRead && !c.Opcode.IsAtomic() {
			errs = append(errs, "post-to-completion timing is for READ and atomics")
		}
	case BWSend:
		switch c.Opcode {
		case OpWrite, OpRead, OpSend, OpCompSwap, OpFetchAdd:
		default:
			errs = append(errs, fmt.Sprintf("bandwidth cannot use %s", c.Opcode))
		}
	default:
		errs = append(errs, fmt.Sprintf("unknown loop kind %d", int(c.Kind)))
	}
	if c.Size == 0 {
		errs = append(errs, "message size must be at least 1 byte")
	}
	if c.RecvSize != 0 && c.RecvSize < c.Size {
		errs = append(errs, fmt.Sprintf("receive size %d is smaller than the message size %d", c.RecvSize, c.Size))
	}
	if c.Opcode.IsAtomic() && c.Size != 8 {
		errs = append(errs, fmt.Sprintf("atomics use 8-byte messages, not %d", c.Size))
	}
	if (c.Kind == LatWrite || c.Kind == LatSend || c.Kind == LatPost) && c.Total == 0 {
		errs = append(errs, "latency loops need the total iteration count")
	}
	if c.Nap < 0 || c.NapAfter < 0 || c.Nap >= time.Second || (c.Nap > 0 && c.Kind != LatWrite && c.Kind != LatSend && c.Kind != LatPost) {
		errs = append(errs, fmt.Sprintf("a nap of %v after %v: naps are under a second, after a wait of 0 or more, in latency loops", c.Nap, c.NapAfter))
	}
	if c.Kind == BWSend {
		if c.TxDepth <= 0 {
			errs = append(errs, "tx depth must be positive")
		}
		if c.CQMod <= 0 || c.CQMod > c.TxDepth {
			errs = append(errs, fmt.Sprintf("completion moderation %d must be within 1..tx depth %d", c.CQMod, c.TxDepth))
		}
		if c.PostList <= 0 || c.PostList > c.TxDepth {
			errs = append(errs, fmt.Sprintf("post list %d must be within 1..tx depth %d", c.PostList, c.TxDepth))
		}
	} else if c.CQMod < 0 {
		errs = append(errs, "completion moderation must not be negative")
	}
	if c.PaceNs < 0 || c.PaceBurst < 0 || (c.PaceNs > 0 && c.Kind != BWSend) {
		errs = append(errs, fmt.Sprintf("pacing (%g ns, burst %d) is for bandwidth senders, and not negative", c.PaceNs, c.PaceBurst))
	}
	if (c.Kind == LatSend || c.Kind == BWRecv) && c.RxDepth <= 0 {
		errs = append(errs, "receive depth must be positive")
	}
	if len(errs) > 0 {
		return errors.New("loop config: " + strings.Join(errs, "; "))
	}
	return nil
}

// The cycle of small bandwidth messages, as perftest's: each operation
// moves on by the message size rounded up to a cache line, through a page.
const (
	cycleBuffer = 4096
	cacheLine   = 64
)

// cycle returns the stride and slot count of messages of size bytes in a
// buffer of room bytes: slots 0 when they do not cycle (more than half a
// page, or too little room).
func cycle(size, room uint64) (stride, slots uint32) {
	if size == 0 || size > cycleBuffer/2 || room < cycleBuffer {
		return 0, 0
	}
	st := (size + cacheLine - 1) / cacheLine * cacheLine
	return uint32(st), uint32(cycleBuffer / st)
}

// CycleOf returns the stride and slot count of the cycle bandwidth loops
// move size-byte messages through in a buffer of room bytes (slots 0: they
// do not cycle, every message uses the buffer's start): where a FETCH_AND_ADD
// bandwidth loop's adds land.
func CycleOf(size, room uint64) (stride, slots uint32) { return cycle(size, room) }

// Checkpoint is where a bandwidth sender stood at one moment of its timed
// loop (see Loop.Checkpoints).
type Checkpoint struct {
	AtNs      uint64 // on the Now clock
	Posted    uint64 // WRs posted, all QPs, counted from ResetCounters (those in flight then first)
	Completed uint64 // WRs complete, counted from ResetCounters
}

// LoopStats are a loop's counters.
type LoopStats struct {
	Iterations uint64 // latency iterations run
	Completed  uint64 // bandwidth: WRs completed (sender) or receives (receiver) since ResetCounters
	RecvBytes  uint64 // receiver: bytes received (UD includes the 40-byte GRH)
	FirstNs    uint64 // first post (sender) or first receive (receiver), on the Now clock
	LastNs     uint64 // last completion
}
