//go:build linux && cgo

package workloads

// The data check (--validate) on a real device: every test passes it, and
// a buffer corrupted on purpose between the pass and its check (checkHook)
// is caught, named with its QP, round and offset, for WRITE, READ, SEND
// and atomics, in loopback and through a server end (runRemote).

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

func TestValidateEveryTest(t *testing.T) {
	cases := []struct {
		test, conn string
		sizes      []int
		mutate     func(*Spec)
	}{
		{"write-lat", "RC", []int{2, 13, 5000}, nil},
		{"write-lat", "UC", []int{64}, nil},
		{"read-lat", "RC", []int{2, 4099}, nil},
		{"send-lat", "RC", []int{2, 4096}, nil},
		{"send-lat", "UC", []int{100}, nil},
		{"send-lat", "UD", []int{2, 1000}, nil},
		{"atomic-lat", "RC", []int{8}, nil},
		{"atomic-lat", "RC", []int{8}, func(s *Spec) { s.AtomicType = CmpSwap }},
		{"write-bw", "RC", []int{2, 65536}, func(s *Spec) { s.QPs = 3 }},
		{"write-bw", "UC", []int{1000}, nil},
		{"read-bw", "RC", []int{8, 65536}, func(s *Spec) { s.QPs = 2 }},
		{"send-bw", "RC", []int{2, 65536}, func(s *Spec) { s.QPs = 2 }},
		{"send-bw", "RC", []int{4096}, func(s *Spec) { s.Bidirectional = true }},
		{"send-bw", "UD", []int{512}, nil},
		{"atomic-bw", "RC", []int{8}, func(s *Spec) { s.QPs = 2 }},
		{"atomic-bw", "RC", []int{8}, func(s *Spec) { s.AtomicType = CmpSwap; s.QPs = 2 }},
		{"atomic-bw", "RC", []int{8}, func(s *Spec) { s.Bidirectional = true }},
		{"write-bw", "RC", []int{4096}, func(s *Spec) { s.Reverse = true; s.QPs = 2 }},
		{"read-bw", "RC", []int{4096}, func(s *Spec) { s.Reverse = true }},
		{"send-bw", "RC", []int{4096}, func(s *Spec) { s.Reverse = true }},
		{"atomic-bw", "RC", []int{8}, func(s *Spec) { s.Reverse = true }},
		{"write-bw", "RC", []int{4096}, func(s *Spec) { s.RDMACM = true; s.GIDIndex = nil }},
		{"send-lat", "UD", []int{512}, func(s *Spec) { s.RDMACM = true; s.GIDIndex = nil }},
		{"atomic-bw", "RC", []int{8}, func(s *Spec) {
			s.Iterations = 0
			s.Duration = 200 * time.Millisecond
			s.Interval = 100 * time.Millisecond
		}},
		// Open-ended streams leave the warm-up's last messages in flight
		// into the measured period: every message is still counted once.
		{"send-bw", "RC", []int{4096}, func(s *Spec) {
			s.Iterations = 0
			s.Duration = 200 * time.Millisecond
			s.Interval = 100 * time.Millisecond
			s.QPs = 2
		}},
		{"atomic-bw", "RC", []int{8}, func(s *Spec) {
			s.Iterations = 0
			s.Precision, s.PrecisionCap = 1e-9, 300*time.Millisecond
			s.QPs = 2
		}},
	}
	for _, c := range cases {
		s := rdmaSpec(c.test, func(s *Spec) {
			s.Connection, s.Sizes, s.CheckData, s.Iterations = c.conn, c.sizes, true, 20
			if c.mutate != nil {
				c.mutate(s)
			}
		})
		name := fmt.Sprintf("%s-%s-q%d", c.test, c.conn, s.QPs)
		if s.Bidirectional {
			name += "-b"
		}
		if s.Reverse {
			name += "-reverse"
		}
		if s.RDMACM {
			name += "-R"
		}
		if s.AtomicType == CmpSwap {
			name += "-cas"
		}
		if s.Duration > 0 {
			name += "-D"
		}
		if s.Precision > 0 {
			name += "-precision"
		}
		t.Run(name, func(t *testing.T) {
			res, err := loopback(t, s)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Results) != len(c.sizes) {
				t.Fatalf("%d results for %d sizes", len(res.Results), len(c.sizes))
			}
			want := checkRounds * s.QPs * len(s.checkDirs())
			for _, r := range res.Results {
				v := r.Validation
				if v == nil || !v.OK || v.Mismatch != nil || v.Rounds != checkRounds || v.Messages != want {
					t.Fatalf("%d B: validation %+v, want %d messages checked and no mismatch", r.Size, v, want)
				}
				payload := r.Size
				if s.Info().Op == OpAtomic {
					payload = 8
				}
				if v.Bytes != uint64(want*payload) {
					t.Fatalf("%d B: %d bytes checked, want %d", r.Size, v.Bytes, want*payload)
				}
				fetchAdd := s.Info().Op == OpAtomic && s.AtomicType == FetchAdd
				if fetchAdd != (v.Counters > 0) {
					t.Fatalf("%d B: %d counters checked", r.Size, v.Counters)
				}
				if r.Effective == nil || !r.Effective.CheckData {
					t.Fatalf("%d B: effective %+v does not record the check", r.Size, r.Effective)
				}
			}
		})
	}
}

// corruptOnce sets checkHook to change, once, the bytes an end is about to
// check at point p (matching role, check, direction index, round and QP),
// and restores it when the test ends.
func corruptOnce(t *testing.T, role role, check string, di, round, qp int, change func(k checkKey, b []byte)) {
	t.Helper()
	var once sync.Once
	checkHook = func(p checkPoint, b []byte) {
		if p.role == role && p.check == check && p.key.di == di && p.key.round == round && p.qp == qp {
			once.Do(func() { change(p.key, b) })
		}
	}
	t.Cleanup(func() { checkHook = nil })
}

// wantMismatch checks that err and the failing result name the mismatch.
func wantMismatch(t *testing.T, res *endResult, err error, check, checker string, qp, round int, offset uint64, note string) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, ErrValidation) {
		t.Fatalf("want a validation error, got %v", err)
	}
	m := ve.M
	if m.Check != check || m.Checker != checker || m.QP != qp || m.Round != round || m.Offset != offset || !strings.Contains(m.Note, note) {
		t.Fatalf("mismatch %+v; want %s found by the %s at QP %d, round %d, offset %d, note %q", m, check, checker, qp, round, offset, note)
	}
	if !strings.Contains(err.Error(), "validation failed") || (check != "counters" && !strings.Contains(err.Error(), fmt.Sprintf("QP %d", qp))) {
		t.Fatalf("error %q does not name the check and the QP", err)
	}
	if res == nil || len(res.Results) == 0 {
		t.Fatalf("no result kept: %+v", res)
	}
	r := res.Results[len(res.Results)-1]
	if r.Validation == nil || r.Validation.OK || r.Validation.Mismatch == nil || r.Error == "" {
		t.Fatalf("the failing result records %+v, error %q", r.Validation, r.Error)
	}
	if r.Latency == nil && r.Bandwidth == nil {
		t.Fatalf("the failing result lost its figures: %+v", r)
	}
	t.Logf("caught: %v", err)
}

func TestValidateCatchesCorruption(t *testing.T) {
	flip := func(off int) func(checkKey, []byte) {
		return func(_ checkKey, b []byte) { b[off] ^= 0x5a }
	}
	cases := []struct {
		name, test string
		mutate     func(*Spec)
		role       role
		check      string
		di, round  int
		qp         int
		change     func(checkKey, []byte)
		offset     uint64
		note       string
	}{
		// A byte of a WRITE flipped at its target (torn).
		{"write-torn", "write-bw", func(s *Spec) { s.QPs = 2; s.Sizes = []int{4096} }, serverEnd, "pass", 0, 1, 1, flip(1000), 1000, ""},
		// QP 0's WRITE replaced by QP 1's message of the same round (misplaced).
		{"write-misplaced", "write-bw", func(s *Spec) { s.QPs = 2; s.Sizes = []int{256} }, serverEnd, "pass", 0, 2, 0,
			func(k checkKey, b []byte) { fillPattern(b, patternBase(k.seed, k.di, 1, k.round)) }, 0, "misplaced"},
		// The ping-pong's reply (server to client) replaced by the round before's (stale).
		{"write-lat-stale", "write-lat", func(s *Spec) { s.Sizes = []int{64} }, clientEnd, "pass", 1, 2, 0,
			func(k checkKey, b []byte) { fillPattern(b, patternBase(k.seed, k.di, 0, k.round-1)) }, 0, "stale"},
		// What a READ brought back, zeroed from byte 24.
		{"read-zeros", "read-lat", func(s *Spec) { s.Sizes = []int{100} }, clientEnd, "pass", 0, 0, 0,
			func(_ checkKey, b []byte) { clear(b[24:]) }, 24, "zeros"},
		// A SEND as it landed in the receiver's buffer, last byte flipped.
		{"send-bw", "send-bw", func(s *Spec) { s.QPs = 2; s.Sizes = []int{65536} }, serverEnd, "pass", 0, 1, 1, flip(65535), 65535, ""},
		{"send-lat-ud", "send-lat", func(s *Spec) { s.Connection = "UD"; s.Sizes = []int{512} }, serverEnd, "pass", 0, 0, 0, flip(7), 7, ""},
		// The target word of a compare-and-swap round, and the value one fetched.
		{"cas-target", "atomic-lat", func(s *Spec) { s.AtomicType = CmpSwap }, serverEnd, "target", 0, 1, 0, flip(3), 0, ""},
		{"faa-fetched", "atomic-bw", func(s *Spec) { s.QPs = 2 }, clientEnd, "fetched", 0, 2, 1,
			func(_ checkKey, b []byte) { binary.NativeEndian.PutUint64(b, binary.NativeEndian.Uint64(b)+1) }, 0, ""},
		// The counters of the measured run's fetch-and-adds: one add lost.
		{"faa-counters", "atomic-bw", func(s *Spec) { s.QPs = 2 }, serverEnd, "counters", 0, 0, 0,
			func(_ checkKey, b []byte) {
				binary.NativeEndian.PutUint64(b[128:], binary.NativeEndian.Uint64(b[128:])-1)
			}, 128, ""},
		{"faa-lat-counters", "atomic-lat", nil, serverEnd, "counters", 0, 0, 0,
			func(_ checkKey, b []byte) { binary.NativeEndian.PutUint64(b, 0) }, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := rdmaSpec(c.test, func(s *Spec) {
				s.CheckData, s.Iterations = true, 30
				if c.mutate != nil {
					c.mutate(s)
				}
			})
			corruptOnce(t, c.role, c.check, c.di, c.round, c.qp, c.change)
			res, err := loopback(t, s)
			wantMismatch(t, res, err, c.check, c.role.String(), c.qp, c.round, c.offset, c.note)
		})
	}
}

// TestValidateRemote: through a server end, the server's check result
// travels back to the client in the last exchange of the pass.
func TestValidateRemote(t *testing.T) {
	dev := testutil.Device(t)
	testutil.NoLeaks(t)
	remote := pipeRemote{&Server{Device: dev}}
	run := func(s Spec) (*endResult, error) {
		s.Device = dev
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return runRemote(ctx, remote, &s, endOptions{})
	}
	s := rdmaSpec("write-bw", func(s *Spec) { s.CheckData, s.QPs, s.Sizes = true, 2, []int{4096} })
	res, err := run(s)
	if err != nil {
		t.Fatal(err)
	}
	if v := res.Results[0].Validation; v == nil || !v.OK || v.Messages != checkRounds*2 {
		t.Fatalf("clean run: validation %+v", v)
	}
	// Each end's port counters, the server's through the result message.
	if pc := res.Results[0].PortCounters; pc == nil || pc.Client == nil || pc.Server == nil || pc.Client.Watched == 0 || pc.Server.Watched == 0 {
		t.Fatalf("port counters %+v", pc)
	}
	corruptOnce(t, serverEnd, "pass", 0, 2, 1, func(_ checkKey, b []byte) { b[4095] ^= 1 })
	res, err = run(s)
	wantMismatch(t, res, err, "pass", "server", 1, 2, 4095, "")
}

// TestPortCountersLoopback: in loopback both ends share the device, whose
// counters are recorded once, as the client's.
func TestPortCountersLoopback(t *testing.T) {
	res, err := loopback(t, rdmaSpec("write-bw", nil))
	if err != nil {
		t.Fatal(err)
	}
	pc := res.Results[0].PortCounters
	if pc == nil || pc.Client == nil || pc.Client.Watched == 0 || pc.Server != nil {
		t.Fatalf("port counters %+v", pc)
	}
	for name := range pc.Client.Deltas {
		if !verbs.IsErrorCounter(name) {
			t.Fatalf("counter %s is not an error or retransmission counter", name)
		}
	}
}
