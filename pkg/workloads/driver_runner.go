package workloads

// What the driver asks of a runner: its end's resources (runner), its part
// in each size (stage) and its timed loops (pingLoop, streamLoop).

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// clockInfo names a clock and says what it is.
type clockInfo struct {
	name string
	report.Clock
}

// runner is one end of one test on one transport.
type runner interface {
	// open makes this end's resources: device objects and buffers, a
	// listener. It returns what the peer needs to connect (JSON-encodable)
	// and the RDMA device this end uses (nil for TCP).
	open(ctx context.Context) (local any, dev *report.Device, err error)
	// connect connects to the peer, given its open message. It may return
	// wait, which completes the connection after the "connected" barrier (a
	// TCP server accepts during it).
	connect(ctx context.Context, peer json.RawMessage) (wait func() error, err error)
	// prepare readies one size and returns this end's part in it.
	prepare(size int) (*stage, error)
	// now reads the clock the loops time with, in ns.
	now() uint64
	clock() clockInfo
	close()
}

// stage is one end's part in one size of a test. Any of ping, stream and
// passive may be nil.
type stage struct {
	// ping is the client's timed loop of a latency test.
	ping pingLoop
	// stream is the sending side of a bandwidth test; streams, instead,
	// its parts on loop threads of their own (--threads), in thread order.
	stream  streamLoop
	streams []streamLoop
	// passive runs until its traffic ends or settle ends it: the ping-pong
	// responder, the receiver of a stream; passives, instead, its parts,
	// side by side on loop threads of their own.
	passive  func() error
	passives []func() error
	// settle ends passive once the peer's sending is over: peerOK tells
	// whether the peer's sending went well, peerSent how many messages it
	// sent in all (perThread: on each of its threads, with --threads).
	// Nil when there is nothing to settle.
	settle func(peerOK bool, peerSent uint64, perThread []uint64)
	// received counts the messages passive received, warm-up included
	// (nil when it does not count them).
	received func() uint64
	// abort stops every loop of the stage at once, from any goroutine.
	abort func()
	// release frees what prepare made.
	release func()
	// check is this end's part in the size's validation pass
	// (--validate); nil when the runner has none.
	check dataCheck
	// counters, when set, returns how the port's error and retransmission
	// counters changed since prepare.
	counters func() *report.CounterDeltas
	// effective are the values the size runs with.
	effective report.Effective
	// warnings are notes for the size's result.
	warnings []string
}

// pingLoop is the timed loop of a latency test.
type pingLoop interface {
	// ping runs up to len(samples) iterations, and returns early after the
	// first sample that ends at or after until (0: no deadline). It returns
	// how many ran and how many samples (ns) it stored at the front of
	// samples: a sample whose clock ran backwards is dropped.
	ping(samples []uint64, until uint64) (ran, valid int, err error)
	// done tells the peer the ping-pong is over (after the last sample).
	done() error
}

// streamLoop is the sending side of a bandwidth test.
type streamLoop interface {
	// warmup sends n messages (per QP), not measured, and waits for all of
	// them; when flowing (duration and precision modes: the measured
	// stream follows at once), it waits for n completions (per QP) and
	// leaves the rest in flight, so the first interval starts with the
	// queue as full as every later one.
	warmup(n int, flowing bool) error
	// round sends n more measured messages (per QP) and waits until every
	// one completed.
	round(n uint64) error
	// send sends until the clock passes until (duration mode).
	send(until uint64) error
	// finish sends no more (duration mode) and waits for what is in flight;
	// whether that counts as measured is the stream's to say (TCP: yes, the
	// ack of the last byte ends the measured period; RDMA: no, the
	// completions reaped after the stop end nothing that was timed).
	finish() error
	// end tells the receiver the stream is over, after the last round.
	end() error
	// measured are the measured messages complete so far (every QP), the
	// clock at the first one's start and at the last one's completion.
	measured() (msgs, firstNs, lastNs uint64)
	// sent counts every message sent, warm-up included.
	sent() uint64
}

// latBatch is how many latency samples one loop call returns at most.
const latBatch = 4096

// precisionRound is how long a round of precision mode lasts.
const precisionRound = 50 * time.Millisecond

// errPeerClosed marks a connection the other end closed or reset, and
// errPeerSilent a peer that stopped answering: both are usually the
// consequence of a failure the peer reports itself.
var (
	errPeerClosed = errors.New("the peer closed the connection")
	errPeerSilent = errors.New("the peer stopped answering")
)
