package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/settings"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

func TestParseSizes(t *testing.T) {
	cases := map[string][]int{
		"2,64,4K":    {2, 64, 4096},
		"4k,2,4K":    {2, 4096},
		"2..16":      {2, 4, 8, 16},
		"1KiB,1MB":   {1024, 1 << 20},
		"2..8M":      AllSizes(),
		"64, 1..4":   {1, 2, 4, 64},
		"1G":         {1 << 30},
		"65536":      {65536},
		"8..8":       {8},
		"1..1":       {1},
		"2,2..4,512": {2, 4, 512},
		"1.5K":       {1536},
	}
	for in, want := range cases {
		got, err := ParseSizes(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseSizes(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-4", "x", "4Q", "2..", "16..2", "2,,4", "2G", "1.5", "4Kbps"} {
		if got, err := ParseSizes(bad); err == nil {
			t.Errorf("ParseSizes(%q) = %v, want an error", bad, got)
		}
	}
	// A range's ends are powers of two: anything else would run sizes it
	// does not name and drop one it names. The refusal says what to write.
	for in, want := range map[string]string{
		"3..100":     "-s 3..100: a range runs powers of two, and 3 and 100 are not; write -s 4..64, or list sizes: -s 3,100",
		"2,3..16,1K": "-s 2,3..16,1K: a range runs powers of two, and 3 is not; write -s 2,4..16,1K, or list sizes: -s 2,3,16,1K",
		"100..300":   "-s 100..300: a range runs powers of two, and 100 and 300 are not; write -s 128..256, or list sizes: -s 100,300",
		"3K..100K":   "-s 3K..100K: a range runs powers of two, and 3K and 100K are not; write -s 4K..64K, or list sizes: -s 3K,100K",
		"2..3":       "-s 2..3: a range runs powers of two, and 3 is not; write -s 2, or list sizes: -s 2,3",
		"5..7":       "-s 5..7: a range runs powers of two, and 5 and 7 are not (none is within it); list sizes: -s 5,7",
	} {
		got, err := ParseSizes(in)
		var sr *SizeRangeError
		if !errors.As(err, &sr) || sr.Say("-s") != want {
			t.Errorf("ParseSizes(%q) = %v, %v\nwant %s", in, got, err, want)
		}
	}
	if n := len(AllSizes()); n != 23 || AllSizes()[0] != 2 || AllSizes()[22] != 8<<20 {
		t.Errorf("AllSizes has %d sizes from %d to %d; want 23 from 2 B to 8 MiB", n, AllSizes()[0], AllSizes()[n-1])
	}
}

// TestZeroSpecAsksDefaults: a zero Spec leaves every setting to the test,
// on the wire too (nothing said), and 0 asked is kept apart from unset.
func TestZeroSpecAsksDefaults(t *testing.T) {
	s, def := Spec{Test: "write-lat"}, NewSpec("write-lat")
	if s.WarmupFor(2) != def.WarmupFor(2) || orAuto(s.GIDIndex) != -1 {
		t.Errorf("zero spec: warm-up %d, GID index %d; want the default and automatic", s.WarmupFor(2), orAuto(s.GIDIndex))
	}
	if in, auto := s.InlineFor(); in != DefaultInlineWrite || !auto {
		t.Errorf("zero spec: inline %d auto %v", in, auto)
	}
	wire, _ := json.Marshal(s)
	for _, k := range []string{"warmup", "inline", "gid_index"} {
		if strings.Contains(string(wire), `"`+k+`"`) {
			t.Errorf("zero spec sends %s: %s", k, wire)
		}
	}
	s.Warmup, s.Inline, s.GIDIndex = ptr(0), ptr(0), ptr(0)
	wire, _ = json.Marshal(s)
	var got Spec
	if err := json.Unmarshal(wire, &got); err != nil || got.Warmup == nil || *got.Warmup != 0 ||
		got.Inline == nil || *got.Inline != 0 || got.GIDIndex == nil || *got.GIDIndex != 0 {
		t.Errorf("0 asked did not cross as 0: %s, %v", wire, err)
	}
	if in, auto := got.InlineFor(); in != 0 || auto || got.WarmupFor(2) != 0 || orAuto(got.GIDIndex) != 0 {
		t.Errorf("0 asked: inline %d auto %v, warm-up %d, GID index %d", in, auto, got.WarmupFor(2), orAuto(got.GIDIndex))
	}
}

func TestSpecDefaults(t *testing.T) {
	for _, info := range Tests {
		s := NewSpec(info.Name)
		if err := s.Validate(); err != nil {
			t.Errorf("%s: defaults do not validate: %v", info.Name, err)
		}
		if s.Connection != info.Connections[0] || len(s.Sizes) != 1 || s.Sizes[0] != info.DefaultSize {
			t.Errorf("%s: defaults %s %v", info.Name, s.Connection, s.Sizes)
		}
	}
	s := NewSpec("write-lat")
	if s.ItersFor(2) != 1000 || s.WarmupFor(2) != 100 {
		t.Errorf("write-lat: %d iterations, %d warm-up", s.ItersFor(2), s.WarmupFor(2))
	}
	if in, auto := s.InlineFor(); in != DefaultInlineWrite || !auto {
		t.Errorf("write-lat inline %d auto %v", in, auto)
	}
	b := NewSpec("write-bw")
	b.Sizes = []int{2, 8 << 20, 1 << 30} // a sweep
	if b.ItersFor(2) != 5000 || b.ItersFor(8<<20) != 32 || b.ItersFor(1<<30) != minBWIters {
		t.Errorf("write-bw sweep iterations: %d, %d, %d", b.ItersFor(2), b.ItersFor(8<<20), b.ItersFor(1<<30))
	}
	// A tenth of the iterations, at most 8 MiB of messages, at least 10.
	if w := []int{b.WarmupFor(2), b.WarmupFor(64 << 10), b.WarmupFor(8 << 20)}; w[0] != 500 || w[1] != 128 || w[2] != 10 {
		t.Errorf("write-bw sweep warm-up: %v, want [500 128 10]", w)
	}
	if in, _ := b.InlineFor(); in != 0 {
		t.Errorf("write-bw inline %d", in)
	}
	b.Iterations = 7
	if b.ItersFor(8<<20) != 7 {
		t.Error("-n must win over sweep scaling")
	}
	// A run shorter than a second reports once, at its end.
	d := NewSpec("write-bw")
	d.Duration, d.Interval = 200*time.Millisecond, 0
	if err := d.Normalize(); err != nil || d.Interval != d.Duration {
		t.Errorf("-D 0.2: interval %v, %v", d.Interval, err)
	}
}

// TestDefaultsAsPerftest: what a test runs with when nothing is asked is
// what perftest runs with (perftest_parameters.c: iterations, queue
// depths capped at the iterations, CQ moderation off above 8 KiB, inline
// for latency tests).
func TestDefaultsAsPerftest(t *testing.T) {
	cases := []struct {
		test, conn        string
		size, iters       int // iters: 0 leaves -n to the default
		wantIters, tx, rx int
		cqMod, inline     int
		events            bool
	}{
		{"write-lat", "RC", 2, 0, 1000, 1, 0, 1, 220, false},
		{"send-lat", "RC", 2, 0, 1000, 1, 512, 1, 236, false},
		{"send-lat", "UD", 2, 0, 1000, 1, 1000, 1, 188, false},
		{"read-lat", "RC", 2, 0, 1000, 1, 0, 1, 0, false},
		{"atomic-lat", "RC", 8, 0, 1000, 1, 0, 1, 0, false},
		{"write-bw", "RC", 65536, 0, 5000, 128, 0, 1, 0, false},
		{"write-bw", "RC", 8192, 0, 5000, 128, 0, 100, 0, false},
		{"write-bw", "RC", 65536, 0, 5000, 128, 0, 100, 0, true},
		{"read-bw", "RC", 65536, 0, 1000, 128, 0, 1, 0, false},
		{"send-bw", "RC", 65536, 0, 1000, 128, 512, 1, 0, false},
		{"send-bw", "UD", 1024, 0, 1000, 128, 1000, 100, 0, false},
		{"send-bw", "UC", 65536, 0, 1000, 128, 1000, 1, 0, false},
		{"atomic-bw", "RC", 8, 0, 1000, 128, 0, 100, 0, false},
		{"write-bw", "RC", 2, 50, 50, 50, 0, 50, 0, false},
		{"send-bw", "RC", 2, 20, 20, 20, 20, 20, 0, false},
	}
	for _, c := range cases {
		s := Spec{Test: c.test, Connection: c.conn, Sizes: []int{c.size}, Iterations: c.iters, Queues: settings.Queues{Events: c.events}}
		if err := s.Normalize(); err != nil {
			t.Fatalf("%s: %v", c.test, err)
		}
		inline, _ := s.InlineFor()
		got := []int{s.ItersFor(c.size), s.TxDepth, s.RxDepth, s.CQModFor(c.size), inline}
		want := []int{c.wantIters, c.tx, c.rx, c.cqMod, c.inline}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s %d B -n %d events %v: iterations, tx-depth, rx-depth, cq-mod, inline = %v; want %v",
				c.test, c.conn, c.size, c.iters, c.events, got, want)
		}
	}
}

func TestSpecValidate(t *testing.T) {
	cases := []struct {
		test   string
		mutate func(*Spec)
		want   string
	}{
		{"atomic-lat", func(s *Spec) { s.Sizes = []int{16} }, "atomic tests use 8-byte messages"},
		{"send-bw", func(s *Spec) { s.Connection = "UD"; s.MTU = 1024; s.Sizes = []int{2048} }, "UD send is limited to the path MTU (1024 bytes)"},
		{"read-lat", func(s *Spec) { s.Connection = "UC" }, "read-lat runs over RC, not UC"},
		{"write-bw", func(s *Spec) { s.Connection = "UD" }, "write-bw runs over RC or UC, not UD"},
		{"write-lat", func(s *Spec) { s.QPs = 2 }, "latency tests use one QP"},
		{"write-lat", func(s *Spec) { s.Bidirectional = true }, "bidirectional (-b) is for bandwidth tests"},
		{"write-bw", func(s *Spec) { s.CQMod = 500 }, "completion moderation (-Q) 500 must be within 1..tx-depth 128"},
		{"write-bw", func(s *Spec) { s.PostList = 200 }, "post list 200"},
		{"write-bw", func(s *Spec) { s.MTU = 1500 }, "MTU 1500"},
		{"atomic-bw", func(s *Spec) { s.AtomicType = "XOR" }, "atomic type \"XOR\""},
		{"write-bw", func(s *Spec) { s.Sizes = []int{0} }, "outside 1 B..1 GiB"},
		{"write-bw", func(s *Spec) { s.Duration = time.Millisecond }, "at least 100ms"},
		{"write-bw", func(s *Spec) { s.Inline = ptr(-5) }, "inline size -5"},
		{"write-bw", func(s *Spec) { s.GIDIndex = ptr(-3) }, "GID index -3"},
		{"write-bw", func(s *Spec) { s.GIDIndex = ptr(256) }, "GID index 256 is outside 0..255"},
		{"write-bw", func(s *Spec) { s.Warmup = ptr(-1) }, "warm-up -1 must not be negative"},
		{"nope-lat", func(s *Spec) {}, "unknown test \"nope-lat\""},
	}
	for _, c := range cases {
		s := NewSpec(c.test)
		s.Test = c.test
		c.mutate(&s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.test, err, c.want)
		}
	}
}

// TestSpecJSON: the spec crosses the wire as JSON and must come back equal.
func TestSpecJSON(t *testing.T) {
	s := NewSpec("send-bw")
	s.Sizes = []int{2, 4096}
	s.Duration = 3 * time.Second
	s.Bidirectional = true
	s.Connection = "UD"
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Spec
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, back) {
		t.Fatalf("round trip changed the spec:\n%+v\n%+v", s, back)
	}
}

func TestPipeExchange(t *testing.T) {
	a, b := Pipe()
	ctx := context.Background()
	type msg struct{ N int }
	done := make(chan error, 1)
	var got msg
	go func() { done <- b.Exchange(ctx, "p1", msg{2}, &got) }()
	var fromB msg
	if err := a.Exchange(ctx, "p1", msg{1}, &fromB); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || fromB.N != 2 || got.N != 1 {
		t.Fatalf("exchange gave %v %v %v", fromB, got, err)
	}
	// Phases must match.
	go func() { done <- b.Exchange(ctx, "p3", nil, nil) }()
	if err := a.Exchange(ctx, "p2", nil, nil); !errors.Is(err, ErrPhaseMismatch) {
		t.Fatalf("mismatched phases: %v", err)
	}
	<-done
	// A failure reaches the peer as a PeerError without waiting.
	if err := a.Exchange(ctx, "p4", Fail(errors.New("device on fire")), nil); err != nil {
		t.Fatal(err)
	}
	err := b.Exchange(ctx, "p4", nil, nil)
	var pe *PeerError
	if !errors.As(err, &pe) || !strings.Contains(pe.Error(), "device on fire") {
		t.Fatalf("peer failure: %v", err)
	}
	// A silent peer: the context ends the wait.
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	a2, _ := Pipe()
	if err := a2.Exchange(cctx, "p5", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("silent peer: %v", err)
	}
}

// TestRefusedBeforeAllocation: what a test needs is known from its spec,
// and a test over a limit or a device's maximum is refused, by name, with
// the figures.
func TestRefusedBeforeAllocation(t *testing.T) {
	s := Spec{Test: "write-bw", Sizes: []int{1 << 30}, Queues: settings.Queues{QPs: 64}}
	if err := s.Normalize(); err != nil {
		t.Fatal(err)
	}
	err := s.checkMemory(256<<20, 2, false)
	if !errors.Is(err, ErrOverLimit) || !strings.Contains(err.Error(), "4.0 GiB") || !strings.Contains(err.Error(), "--max-mem") {
		t.Errorf("1 GiB messages under a 256 MiB cap: %v", err)
	}
	dev := verbs.DeviceInfo{Name: "rxe0", MaxQP: 32, MaxQPWR: 64, MaxCQE: 1024, MaxMRSize: 1 << 29}
	err = fitsDevice(&s, dev)
	for _, want := range []string{"QP count 64 exceeds rxe0's 32", "send queue depth 128 exceeds rxe0's 64",
		"send completion queue 8192 exceeds rxe0's 1024", "max_mr_size"} {
		if !errors.Is(err, ErrOverLimit) || !strings.Contains(err.Error(), want) {
			t.Errorf("device limits: %v; want %q", err, want)
		}
	}
	// TCP streams any size through bounded buffers.
	tcp := Spec{Test: "tcp-lat", Sizes: []int{1 << 30}}
	if err := tcp.Normalize(); err != nil {
		t.Fatal(err)
	}
	if need := tcp.EndMemory(false); need > 2*tcpChunk {
		t.Errorf("tcp-lat at 1 GiB takes %d bytes, want at most %d", need, 2*tcpChunk)
	}
}
