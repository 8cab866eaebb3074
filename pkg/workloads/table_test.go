package workloads

import (
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// The table's orders: the suite's (latency, then bandwidth, each kind's
// TCP row last) and a mesh link's default tests.
func TestTableOrders(t *testing.T) {
	want := "write-lat read-lat send-lat atomic-lat tcp-lat write-bw read-bw send-bw atomic-bw tcp-bw"
	if got := strings.Join(TestNames(SuiteTests()), " "); got != want {
		t.Errorf("suite order %q, want %q", got, want)
	}
	seen := map[int]string{}
	for _, ti := range Tests {
		if ti.Suite < 1 || seen[ti.Suite] != "" {
			t.Errorf("%s: suite place %d is not a fresh one of 1.. (%s has it)", ti.Name, ti.Suite, seen[ti.Suite])
		}
		seen[ti.Suite] = ti.Name
	}
	if got := strings.Join(TestNames(MeshTests()), " "); got != "write-lat write-bw" {
		t.Errorf("mesh tests %q, want write-lat write-bw", got)
	}
	if got := strings.Join(TestNames(Tests), " "); got != "write-lat read-lat send-lat atomic-lat write-bw read-bw send-bw atomic-bw tcp-lat tcp-bw" {
		t.Errorf("tests %q", got)
	}
}

// Each RDMA test's row names the loops (the initiator's, the other end's)
// and the opcode that verbs accepts for them; TCP tests name none; each RDMA test has a TCP baseline of its
// metric (a TCP test is its own).
func TestTableLoops(t *testing.T) {
	wantLoop := map[string]verbs.LoopKind{
		"write-lat": verbs.LatWrite, "send-lat": verbs.LatSend, "read-lat": verbs.LatPost, "atomic-lat": verbs.LatPost,
		"write-bw": verbs.BWSend, "read-bw": verbs.BWSend, "send-bw": verbs.BWSend, "atomic-bw": verbs.BWSend,
	}
	wantResponder := map[string]verbs.LoopKind{"write-lat": verbs.LatWrite, "send-lat": verbs.LatSend, "send-bw": verbs.BWRecv}
	for _, ti := range Tests {
		if !ti.IsRDMA() {
			if ti.Loop != 0 || ti.Responder != 0 || ti.Opcode != 0 || ti.Baseline().Name != ti.Name {
				t.Errorf("%s: a TCP test has loop %v, opcode %v, baseline %q", ti.Name, ti.Loop, ti.Opcode, ti.Baseline().Name)
			}
			continue
		}
		if ti.Loop != wantLoop[ti.Name] || ti.Responder != wantResponder[ti.Name] {
			t.Errorf("%s: loops %v and %v, want %v and %v", ti.Name, ti.Loop, ti.Responder, wantLoop[ti.Name], wantResponder[ti.Name])
		}
		if b := ti.Baseline(); b.IsRDMA() || b.Metric != ti.Metric || !strings.HasPrefix(b.Name, "tcp-") {
			t.Errorf("%s: baseline %q", ti.Name, b.Name)
		}
		types := []string{""}
		if ti.Op == OpAtomic {
			types = []string{FetchAdd, CmpSwap}
		}
		for _, at := range types {
			s := NewSpec(ti.Name)
			s.AtomicType = at
			if err := s.Normalize(); err != nil {
				t.Fatalf("%s: %v", ti.Name, err)
			}
			op := s.opcode()
			switch {
			case at == CmpSwap && op != verbs.OpCompSwap, at == FetchAdd && op != verbs.OpFetchAdd:
				t.Errorf("%s %s: opcode %v", ti.Name, at, op)
			}
			cfg := verbs.LoopConfig{Kind: ti.Loop, Opcode: op, Size: uint32(s.Sizes[0]), Total: 1, RxDepth: 1,
				TxDepth: s.TxDepth, CQMod: s.CQModFor(s.Sizes[0]), PostList: s.PostList}
			if err := cfg.Validate(); err != nil {
				t.Errorf("%s %s: the row's loop and opcode: %v", ti.Name, at, err)
			}
			if ti.Responder != 0 {
				cfg.Kind, cfg.Role = ti.Responder, verbs.Responder
				if err := cfg.Validate(); err != nil {
					t.Errorf("%s %s: the row's responder loop and opcode: %v", ti.Name, at, err)
				}
			}
		}
	}
}

// Each test's row names a runner that this build has (every build has
// both: without verbs the RDMA runner refuses to open), the RDMA runner
// for the tests that use verbs.
func TestTableRunners(t *testing.T) {
	for _, ti := range Tests {
		if _, ok := runners[ti.Runner]; !ok {
			t.Errorf("%s: runner %q is not in the runners' table", ti.Name, ti.Runner)
		}
		if want := map[bool]string{true: runnerRDMA, false: runnerTCP}[ti.IsRDMA()]; ti.Runner != want {
			t.Errorf("%s: runner %q, want %q", ti.Name, ti.Runner, want)
		}
	}
	if len(runners) != 2 {
		t.Errorf("%d runners, want 2 (rdma, tcp)", len(runners))
	}
}
