package workloads

// The data check's logic, with no device: directions, groups, patterns,
// what a difference looks like, the order differences are reported in.

import (
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
)

func TestCheckDirs(t *testing.T) {
	up, down := "client to server", "server to client"
	cases := []struct {
		test   string
		bidi   bool
		rev    bool
		want   []string
		starts []role // the initiator of each direction
	}{
		{"write-lat", false, false, []string{up, down}, []role{clientEnd, serverEnd}},
		{"send-lat", false, false, []string{up, down}, []role{clientEnd, serverEnd}},
		{"read-lat", false, false, []string{down}, []role{clientEnd}},
		{"atomic-lat", false, false, []string{up}, []role{clientEnd}},
		{"write-bw", false, false, []string{up}, []role{clientEnd}},
		{"write-bw", true, false, []string{up, down}, []role{clientEnd, serverEnd}},
		{"read-bw", true, false, []string{down, up}, []role{clientEnd, serverEnd}},
		{"atomic-bw", true, false, []string{up, down}, []role{clientEnd, serverEnd}},
		{"write-bw", false, true, []string{down}, []role{serverEnd}},
		{"read-bw", false, true, []string{up}, []role{serverEnd}},
		{"atomic-bw", false, true, []string{down}, []role{serverEnd}},
	}
	for _, c := range cases {
		s := NewSpec(c.test)
		s.Bidirectional, s.Reverse = c.bidi, c.rev
		dirs := s.checkDirs()
		if len(dirs) != len(c.want) {
			t.Fatalf("%s -b=%v --reverse=%v: %v", c.test, c.bidi, c.rev, dirs)
		}
		for i, d := range dirs {
			if d.String() != c.want[i] || d.initiator != c.starts[i] {
				t.Errorf("%s -b=%v --reverse=%v: direction %d is %s started by the %s; want %s by the %s", c.test, c.bidi, c.rev, i, d, d.initiator, c.want[i], c.starts[i])
			}
		}
	}
}

func TestCheckGroups(t *testing.T) {
	for _, c := range []struct {
		test        string
		qps, size   int
		groups, per int // how many groups, QPs in the first
	}{
		{"write-bw", 3, 2, 1, 3},     // 64-byte slots: all in one page
		{"write-bw", 3, 65536, 3, 1}, // a slot per half: one at a time
		{"write-bw", 130, 64, 3, 64}, // 64 slots of 64 bytes in a 4 KiB half
		{"send-bw", 4, 2, 4, 1},      // SENDs: one at a time
		{"atomic-bw", 100, 8, 2, 64}, // one cache line per target word
		{"read-bw", 2, 2048, 1, 2},   // 2 KiB + 64 rounds the half to 8 KiB
		{"write-lat", 1, 1 << 20, 1, 1},
	} {
		s := NewSpec(c.test)
		s.QPs, s.Sizes = c.qps, []int{c.size}
		g := s.checkGroups(c.size)
		n := 0
		for _, grp := range g {
			for _, q := range grp {
				if q != n {
					t.Fatalf("%+v: groups %v do not list the QPs in order", c, g)
				}
				n++
			}
		}
		if len(g) != c.groups || len(g[0]) != c.per || n != c.qps {
			t.Errorf("%s -q %d -s %d: %d groups, the first of %d, %d QPs; want %d of %d", c.test, c.qps, c.size, len(g), len(g[0]), n, c.groups, c.per)
		}
	}
}

func TestPattern(t *testing.T) {
	k := checkKey{seed: 42}
	for _, size := range []int{1, 7, 8, 13, 4096, 4099} {
		buf := make([]byte, size)
		base := patternBase(k.seed, 0, 1, 2)
		fillPattern(buf, base)
		if off := firstDiff(buf, base); off != -1 {
			t.Fatalf("%d B: a filled message differs at %d", size, off)
		}
		buf[size-1] ^= 1
		if off := firstDiff(buf, base); off != size-1 {
			t.Fatalf("%d B: a flipped last byte found at %d", size, off)
		}
	}
	// Messages of other QPs, rounds, directions and seeds differ in every word.
	a, b := make([]byte, 64), make([]byte, 64)
	fillPattern(a, patternBase(1, 0, 0, 0))
	for _, base := range []uint64{patternBase(1, 0, 1, 0), patternBase(1, 0, 0, 1), patternBase(1, 1, 0, 0), patternBase(2, 0, 0, 0)} {
		fillPattern(b, base)
		for w := 0; w < 8; w++ {
			if string(a[8*w:8*w+8]) == string(b[8*w:8*w+8]) {
				t.Fatalf("word %d is the same in two messages", w)
			}
		}
	}
}

func TestPatternMismatchNotes(t *testing.T) {
	s := NewSpec("write-bw")
	s.QPs = 2
	k := checkKey{seed: 7, dir: s.checkDirs()[0], round: 2}
	buf := make([]byte, 256)
	fill := func(qp, round int) { fillPattern(buf, patternBase(k.seed, 0, qp, round)) }
	for _, c := range []struct {
		name   string
		change func()
		off    uint64
		note   string
	}{
		{"right", func() { fill(0, 2) }, 0, "-"},
		{"stale", func() { fill(0, 1) }, 0, "stale: the bytes of round 1"},
		{"misplaced", func() { fill(1, 2) }, 0, "misplaced: the bytes of QP 1's round 2 message"},
		{"zeros", func() { fill(0, 2); clear(buf[100:]) }, 100, "zeros"},
		{"torn", func() { fill(0, 2); fillPattern(buf[128:], patternBase(k.seed, 0, 0, 1)) }, 128, ""},
		{"shifted", func() { fill(0, 2); copy(buf[64:72], buf[8:16]) }, 64, "misplaced within the message: the bytes of offset 8"},
	} {
		c.change()
		m := s.patternMismatch(k, 0, buf, serverEnd)
		if c.note == "-" {
			if m != nil {
				t.Fatalf("%s: %+v", c.name, m)
			}
			continue
		}
		if m == nil || m.Offset != c.off || !strings.HasPrefix(m.Note, c.note) || m.Checker != "server" || m.Round != 2 || m.Direction != "client to server" {
			t.Fatalf("%s: %+v, want offset %d, note %q", c.name, m, c.off, c.note)
		}
		if len(m.Expected) != 16 || len(m.Got) != 16 {
			t.Fatalf("%s: want 8 bytes in hex: %+v", c.name, m)
		}
	}
}

func TestAtomicChain(t *testing.T) {
	k := checkKey{seed: 9}
	for _, fa := range []bool{true, false} {
		v := atomicValue(k, 3, 0, fa)
		for r := 0; r < checkRounds; r++ {
			k.round = r
			cmp, add := atomicOperands(k, 3, fa)
			if fa {
				v += add
			} else {
				if cmp != v {
					t.Fatalf("CAS round %d compares with %#x, the target holds %#x", r, cmp, v)
				}
				v = add
			}
			if want := atomicValue(k, 3, r+1, fa); v != want {
				t.Fatalf("fetch-add %v: after round %d the target holds %#x, atomicValue says %#x", fa, r, v, want)
			}
		}
		k.round = 2
		if m := atomicMismatch(k, 3, 2, fa, "fetched", clientEnd, atomicValue(k, 3, 1, fa), atomicValue(k, 3, 2, fa)); m == nil || m.Note != "the value after round 0" {
			t.Fatalf("stale fetched value: %+v", m)
		}
	}
}

func TestEarlierMismatch(t *testing.T) {
	s := NewSpec("write-lat") // two directions
	m := func(check, dir string, round int) *report.Mismatch {
		return &report.Mismatch{Check: check, Direction: dir, Round: round}
	}
	up, down := "client to server", "server to client"
	for _, c := range []struct {
		a, b *report.Mismatch
		want bool
	}{
		{m("pass", up, 1), nil, true},
		{nil, m("pass", up, 1), false},
		{m("pass", up, 2), m("pass", down, 0), true},
		{m("pass", down, 0), m("pass", up, 2), false},
		{m("target", up, 1), m("fetched", up, 2), true},
		{m("target", up, 1), m("fetched", up, 1), true},
		{m("counters", up, 0), m("pass", up, 0), true},
	} {
		if got := s.earlier(c.a, c.b); got != c.want {
			t.Errorf("earlier(%+v, %+v) = %v", c.a, c.b, got)
		}
	}
}

func TestValidateRefusedForTCP(t *testing.T) {
	s := NewSpec("tcp-bw")
	s.CheckData = true
	if err := s.Normalize(); err == nil || !strings.Contains(err.Error(), "--validate") {
		t.Fatalf("tcp-bw with a data check: %v", err)
	}
	if _, err := NewPlan(Request{Tests: []string{"tcp-lat"}, Spec: Spec{CheckData: true}}); err == nil || !strings.Contains(err.Error(), "--validate does not apply to tcp-lat") {
		t.Fatalf("tcp-lat --validate: %v", err)
	}
	r, err := NewPlan(Request{Tests: []string{"write-lat", "tcp-lat"}, Suite: true, Spec: Spec{CheckData: true}})
	if err != nil {
		t.Fatal(err)
	}
	if sp := r.Specs(); !sp[0].CheckData || sp[1].CheckData {
		t.Fatalf("a suite checks the RDMA tests only: %v %v", sp[0].CheckData, sp[1].CheckData)
	}
}
