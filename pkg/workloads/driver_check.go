package workloads

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// The data check (--validate). A timed loop moves the same bytes again and
// again (a bandwidth loop rewrites one buffer, a ping-pong one message), so
// checking what it left would prove little, and writing a fresh pattern
// per iteration would put work inside the timed loop. Instead each size of
// an RDMA test is followed, once its measured loops have ended on both
// ends, by an untimed validation pass, as fabtests' -v and perftest's data
// checks move a pattern and compare it:
//
//   - the pass moves checkRounds messages per QP in each direction the test
//     moves data, with the test's own operation (WRITE, READ, SEND with
//     immediate data, CMP_AND_SWAP, FETCH_AND_ADD), QPs, connection and
//     size, as ordinary work requests (not inline);
//   - every message carries a pattern of its own: 64-bit words that are a
//     function of a seed drawn by the client for each size, the direction,
//     the QP, the round and the word's offset, so that a misplaced (another
//     QP's), stale (an earlier round's) or torn (partly either) message
//     differs from what was expected;
//   - the receiving side compares every byte: the target of a WRITE, the
//     initiator of a READ, the receiver of a SEND (at the buffer its
//     receive completion names); an atomic's target compares its word's
//     value after each round, and the initiator the value each atomic
//     fetched (the rounds chain compare-and-swaps, or add known amounts);
//   - besides the pass, the targets of a FETCH_AND_ADD test's measured
//     run must hold the count of adds that reached them.
//
// Messages of a round go, one per QP, to slots of their own in both
// ends' buffers (as many QPs at once as slots fit in a buffer half; SENDs
// one at a time, since a SEND lands where the receiver's next receive
// points). Each round is two barriers on the Link: "filled" (the source
// wrote its messages, the destination finished checking the round before)
// and "moved" (the initiator's operations completed). The first mismatch
// found on either end travels in the last exchange, "checked/i"; it fails
// the size with a *ValidationError, and the run exits 1.

// checkRounds is how many messages the validation pass moves per QP and
// direction: more than one, so that a stale message is caught.
const checkRounds = 3

// checkAlign aligns each message's slot in the validation pass (a cache
// line; an atomic's 8-byte target takes a whole one).
const checkAlign = 64

// ErrValidation marks a size whose data check found a difference.
var ErrValidation = errors.New("validation failed")

// ValidationError is a difference the data check found.
type ValidationError struct{ M report.Mismatch }

func (e *ValidationError) Error() string { return ErrValidation.Error() + ": " + describeMismatch(e.M) }

// Unwrap makes errors.Is(err, ErrValidation) true.
func (e *ValidationError) Unwrap() error { return ErrValidation }

// describeMismatch says where and how checked data differed.
func describeMismatch(m report.Mismatch) string {
	var s string
	switch m.Check {
	case "counters":
		s = fmt.Sprintf("the %s's FETCH_AND_ADD target at byte %d holds %s after the measured run, expected %s (the adds the %s completed)",
			m.Checker, m.Offset, m.Got, m.Expected, otherEnd(m.Checker))
	case "fetched":
		s = fmt.Sprintf("the atomic of QP %d, round %d (%s) fetched %s, expected %s", m.QP, m.Round, m.Direction, m.Got, m.Expected)
	case "target":
		s = fmt.Sprintf("the %s found QP %d's atomic target (%s) holding %s after round %d, expected %s",
			m.Checker, m.QP, m.Direction, m.Got, m.Round, m.Expected)
	default:
		s = fmt.Sprintf("the %s found that QP %d's round %d message (%s) differs from byte %d: expected %s, got %s",
			m.Checker, m.QP, m.Round, m.Direction, m.Offset, m.Expected, m.Got)
	}
	if m.Note != "" {
		s += " (" + m.Note + ")"
	}
	return s
}

func otherEnd(end string) string {
	if end == "server" {
		return "client"
	}
	return "server"
}

// checkDir is one direction data moves in a test: from the end that holds
// the source to the end that receives it, moved by the initiator.
type checkDir struct{ from, to, initiator role }

func (d checkDir) String() string { return d.from.String() + " to " + d.to.String() }

// checkDirs are the directions the validation pass checks: those the test
// moves data in.
func (s *Spec) checkDirs() []checkDir {
	t := s.Info()
	up := checkDir{clientEnd, serverEnd, clientEnd}   // WRITE, SEND, atomics of the client
	down := checkDir{serverEnd, clientEnd, serverEnd} // the same of the server
	if t.Op == OpRead {
		up, down = checkDir{serverEnd, clientEnd, clientEnd}, checkDir{clientEnd, serverEnd, serverEnd}
	}
	// Ping-pongs (latency tests whose other end answers) and bidirectional
	// tests move data both ways.
	if s.Bidirectional || (t.Metric == Latency && t.Responder != 0) {
		return []checkDir{up, down}
	}
	if s.Reverse { // the server initiates
		return []checkDir{down}
	}
	return []checkDir{up}
}

// checkSlot is the room one message of the pass takes in a buffer half.
func checkSlot(size int) uint64 {
	return (uint64(size) + checkAlign - 1) / checkAlign * checkAlign
}

// checkGroups splits the QPs into the groups a round of the pass moves at
// once: as many as slots fit in a buffer half, one at a time for SENDs.
func (s *Spec) checkGroups(size int) [][]int {
	per := 1
	if s.Info().Op != OpSend {
		per = max(1, int(s.BufferHalf()/checkSlot(size)))
	}
	var groups [][]int
	for q := 0; q < s.QPs; q += per {
		g := make([]int, 0, min(per, s.QPs-q))
		for j := q; j < min(q+per, s.QPs); j++ {
			g = append(g, j)
		}
		groups = append(groups, g)
	}
	return groups
}

// checkKey names one round of the pass in one direction.
type checkKey struct {
	seed  uint64
	dir   checkDir
	di    int // the direction's index in checkDirs
	round int
}

// mix is splitmix64's finalizer: a bijection that scatters its input's
// bits.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// patternBase is the pattern of one message: direction di, QP qp, round.
func patternBase(seed uint64, di, qp, round int) uint64 {
	return mix(seed ^ mix(uint64(di)<<56|uint64(qp)<<24|uint64(round)+1))
}

// patternWord is word w (bytes 8w..8w+7) of the message whose pattern is
// base.
func patternWord(base uint64, w int) uint64 { return mix(base + uint64(w)*0x9e3779b97f4a7c15) }

// fillPattern writes the message whose pattern is base into buf.
func fillPattern(buf []byte, base uint64) {
	w := 0
	for ; 8*w+8 <= len(buf); w++ {
		binary.LittleEndian.PutUint64(buf[8*w:], patternWord(base, w))
	}
	if rest := buf[8*w:]; len(rest) > 0 {
		var last [8]byte
		binary.LittleEndian.PutUint64(last[:], patternWord(base, w))
		copy(rest, last[:])
	}
}

// firstDiff returns the offset of the first byte of buf that differs from
// the message whose pattern is base, or -1.
func firstDiff(buf []byte, base uint64) int {
	var want [8]byte
	for w := 0; 8*w < len(buf); w++ {
		binary.LittleEndian.PutUint64(want[:], patternWord(base, w))
		part := buf[8*w : min(len(buf), 8*w+8)]
		for i, b := range part {
			if b != want[i] {
				return 8*w + i
			}
		}
	}
	return -1
}

// patternMismatch describes the first difference of buf, which should
// hold QP qp's message of round k, with what the bytes found look like.
func (s *Spec) patternMismatch(k checkKey, qp int, buf []byte, checker role) *report.Mismatch {
	base := patternBase(k.seed, k.di, qp, k.round)
	off := firstDiff(buf, base)
	if off < 0 {
		return nil
	}
	want := make([]byte, len(buf))
	fillPattern(want, base)
	end := min(len(buf), off+8)
	m := &report.Mismatch{Check: "pass", Direction: k.dir.String(), Checker: checker.String(), QP: qp, Round: k.round,
		Offset: uint64(off), Expected: hex.EncodeToString(want[off:end]), Got: hex.EncodeToString(buf[off:end])}
	m.Note = s.lookalike(k, qp, buf, off)
	return m
}

// lookalike says whose data the word holding off looks like: another QP's
// or round's message of the pass (misplaced, stale), or zeros.
func (s *Spec) lookalike(k checkKey, qp int, buf []byte, off int) string {
	if allZero(buf[off:min(len(buf), off+8)]) {
		return "zeros: never written"
	}
	w := off / 8
	if 8*w+8 > len(buf) {
		return ""
	}
	got := binary.LittleEndian.Uint64(buf[8*w:])
	for di := range s.checkDirs() {
		for q := 0; q < s.QPs; q++ {
			for r := 0; r < checkRounds; r++ {
				if (di == k.di && q == qp && r == k.round) || patternWord(patternBase(k.seed, di, q, r), w) != got {
					continue
				}
				switch {
				case q != qp:
					return fmt.Sprintf("misplaced: the bytes of QP %d's round %d message", q, r)
				case r < k.round:
					return fmt.Sprintf("stale: the bytes of round %d", r)
				default:
					return fmt.Sprintf("the bytes of round %d of another direction or a later round", r)
				}
			}
		}
	}
	for w2 := 0; 8*w2+8 <= len(buf) && w2 < 1<<16; w2++ {
		if w2 != w && patternWord(patternBase(k.seed, k.di, qp, k.round), w2) == got {
			return fmt.Sprintf("misplaced within the message: the bytes of offset %d", 8*w2)
		}
	}
	return ""
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// atomicValue is the value QP qp's target word holds after step rounds of
// direction k (step 0: the value the target starts from).
func atomicValue(k checkKey, qp, step int, fetchAdd bool) uint64 {
	v := patternBase(k.seed, k.di, qp, -1)
	for r := 0; r < step; r++ {
		if fetchAdd {
			v += patternBase(k.seed, k.di, qp, r)
		} else {
			v = patternBase(k.seed, k.di, qp, r)
		}
	}
	return v
}

// atomicOperands are round k's operands for QP qp: the compare and swap
// values of a CMP_AND_SWAP (compare is the value the target holds if every
// round before landed), or the addend of a FETCH_AND_ADD.
func atomicOperands(k checkKey, qp int, fetchAdd bool) (compare, swapAdd uint64) {
	if fetchAdd {
		return 0, patternBase(k.seed, k.di, qp, k.round)
	}
	return atomicValue(k, qp, k.round, false), patternBase(k.seed, k.di, qp, k.round)
}

// atomicMismatch describes an atomic target or fetched value that differs
// from want, the value after step rounds.
func atomicMismatch(k checkKey, qp, step int, fetchAdd bool, check string, checker role, got, want uint64) *report.Mismatch {
	if got == want {
		return nil
	}
	m := &report.Mismatch{Check: check, Direction: k.dir.String(), Checker: checker.String(), QP: qp, Round: k.round,
		Expected: fmt.Sprintf("%#x", want), Got: fmt.Sprintf("%#x", got)}
	switch {
	case got == 0:
		m.Note = "zeros: never written"
	case got == atomicValue(k, qp, 0, fetchAdd):
		m.Note = "the starting value: no round landed"
	default:
		for r := 1; r <= checkRounds; r++ {
			if r != step && got == atomicValue(k, qp, r, fetchAdd) {
				m.Note = fmt.Sprintf("the value after round %d", r-1)
			}
		}
	}
	return m
}

// earlier reports whether a was found before b in the order of the pass
// (the measured run's counters first, then by direction, round, and the
// target before what an atomic fetched, which is its consequence): the
// first difference is the one to report.
func (s *Spec) earlier(a, b *report.Mismatch) bool {
	if a == nil || b == nil {
		return b == nil && a != nil
	}
	key := func(m *report.Mismatch) [3]int {
		if m.Check == "counters" {
			return [3]int{-1}
		}
		di := 0
		for i, d := range s.checkDirs() {
			if d.String() == m.Direction {
				di = i
			}
		}
		late := 0
		if m.Check == "fetched" {
			late = 1
		}
		return [3]int{di, m.Round, late}
	}
	ka, kb := key(a), key(b)
	for i := range ka {
		if ka[i] != kb[i] {
			return ka[i] < kb[i]
		}
	}
	return false
}

// checkTally is what one end checked in a round.
type checkTally struct {
	messages int
	bytes    uint64
}

// dataCheck is one end's part in a size's validation pass: the driver runs
// the pass's phases (see driver.validate) and calls these between them.
// Each is called on both ends; each end does what its role in the
// direction asks.
type dataCheck interface {
	// counters checks, on an end whose buffer the peer's FETCH_AND_ADDs
	// targeted, what the measured run left there: peerSent is how many
	// the peer completed. It returns how many counters it checked.
	counters(peerSent uint64) (int, *report.Mismatch)
	// fill readies round k for qps: the source writes each message, an
	// atomic's target its starting values.
	fill(k checkKey, qps []int)
	// move posts round k's operations of qps, on the direction's
	// initiator, and waits until they completed.
	move(ctx context.Context, k checkKey, qps []int) error
	// check compares what this end holds of round k with what was sent.
	check(ctx context.Context, k checkKey, qps []int) (checkTally, *report.Mismatch, error)
	// reset clears what the pass wrote.
	reset()
}

// checkPoint is where an end is about to check data; checkHook, when
// tests set it, is called there with the bytes about to be checked (a
// message, an atomic's target or fetched word, the measured run's
// FETCH_AND_ADD targets), and may change them.
type checkPoint struct {
	role  role
	check string // "pass", "target", "fetched" or "counters"
	key   checkKey
	qp    int
}

var checkHook func(p checkPoint, data []byte)

func runCheckHook(p checkPoint, data []byte) {
	if checkHook != nil {
		checkHook(p, data)
	}
}
