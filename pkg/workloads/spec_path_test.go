package workloads

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/settings"
)

func TestPathSettingsValidate(t *testing.T) {
	for _, c := range []struct {
		set  func(*Spec)
		want string
	}{
		{func(s *Spec) { s.TClass = ptr(256) }, "traffic class 256 is outside 0..255"},
		{func(s *Spec) { s.SL = ptr(16) }, "service level 16 is outside 0..15"},
		{func(s *Spec) { s.FlowLabel = ptr(1 << 20) }, "flow label 1048576 is outside 0..1048575"},
		{func(s *Spec) { s.HopLimit = ptr(0) }, "hop limit 0 is outside 1..255"},
	} {
		s := NewSpec("write-lat")
		c.set(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate = %v, want %q", err, c.want)
		}
	}
	s := NewSpec("send-bw")
	s.TClass, s.SL, s.FlowLabel, s.HopLimit = ptr(255), ptr(15), ptr(0xfffff), ptr(1)
	if err := s.Validate(); err != nil {
		t.Errorf("the largest values: %v", err)
	}
}

// TestPathKnobs: the traffic class applies to TCP (IP_TOS), the rest of the
// address vector to RDMA tests only; a suite leaves them out where they do
// not apply; the document records what was asked.
func TestPathKnobs(t *testing.T) {
	asked := Spec{Path: settings.Path{TClass: ptr(0x68), SL: ptr(3)}}
	if _, err := NewPlan(Request{Tests: []string{"tcp-lat"}, Spec: asked}); err == nil || !strings.Contains(err.Error(), "--sl does not apply to tcp-lat") {
		t.Fatalf("--sl on tcp-lat: %v", err)
	}
	r, err := NewPlan(Request{Tests: []string{"write-lat", "tcp-lat"}, Spec: asked, Suite: true})
	if err != nil {
		t.Fatal(err)
	}
	if w, tcp := r.Specs()[0], r.Specs()[1]; *w.TClass != 0x68 || *w.SL != 3 || *tcp.TClass != 0x68 || tcp.SL != nil {
		t.Fatalf("suite specs: write-lat %v %v, tcp-lat %v %v", w.TClass, w.SL, tcp.TClass, tcp.SL)
	}
	p := asked.requested()
	if *p.TClass != 0x68 || *p.SL != 3 || p.FlowLabel != nil || p.HopLimit != nil {
		t.Fatalf("params %+v", p)
	}
}

// TestTCPTrafficClassOnTheWire: with --tclass both ends of a TCP test send
// with that IP_TOS (the kernel keeps the ECN bits of TCP), seen on the
// loopback interface by tcpdump; the result records what the socket took.
func TestTCPTrafficClassOnTheWire(t *testing.T) {
	// An address of its own on the loopback interface, so that the capture
	// sees no other program's traffic.
	host := fmt.Sprintf("127.%d.%d.%d", 1+rand.IntN(254), rand.IntN(256), 1+rand.IntN(254))
	capture := testutil.StartCapture(t, "lo", "tcp and host "+host)
	s := tcpTestSpec("tcp-lat", []int{64}, 20, 2)
	s.TClass = ptr(0x6a)
	res, err := runEnds(t, s, endOptions{peerHost: host}, endOptions{listenHost: host})
	pkts := capture.Stop()
	if err != nil {
		t.Fatal(err)
	}
	r := res.Results[0]
	if r.Effective.IPTOS == nil || *r.Effective.IPTOS != 0x68 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "ECN") {
		t.Fatalf("effective %+v, warnings %q; want IP_TOS 0x68 and a warning about ECN", r.Effective, r.Warnings)
	}
	ports := map[int]bool{}
	for _, p := range pkts {
		if p.TOS&^3 != 0x68 {
			t.Fatalf("on the wire: %s, want DSCP 26 (tos 0x68)", p)
		}
		ports[p.SrcPort] = true
	}
	if len(ports) < 2 {
		t.Fatalf("want packets of both ends, got %d packets from ports %v:\n%s", len(pkts), ports, capture.Output())
	}
}

func TestTCPTrafficClassDefault(t *testing.T) {
	res := tcpLoopback(t, tcpTestSpec("tcp-bw", []int{4096}, 20, 2), endOptions{})
	if e := res.Results[0].Effective; e.IPTOS == nil || *e.IPTOS != 0 {
		t.Fatalf("effective %+v: want IP_TOS 0 recorded", e)
	}
}

// runEnds runs both ends of the normalized spec in this process, each with
// its options, and returns the client's result and the first error.
func runEnds(t *testing.T, s Spec, client, server endOptions) (*endResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, b, hangupA, hangupB := pipe()
	serr := make(chan error, 1)
	go func() {
		defer hangupB()
		_, err := runEnd(ctx, &s, serverEnd, b, server)
		serr <- err
	}()
	res, err := runEnd(ctx, &s, clientEnd, a, client)
	hangupA()
	if err != nil {
		cancel()
	}
	if e := <-serr; err == nil && e != nil {
		err = fmt.Errorf("server side: %w", e)
	}
	return res, err
}

// TestTCPReverse: with --reverse the server streams and the client
// receives, on the same connection; the result is the server's
// measurement and says which way the data went, in every mode.
func TestTCPReverse(t *testing.T) {
	for _, mode := range []string{"iterations", "duration", "precision"} {
		t.Run(mode, func(t *testing.T) {
			s := tcpTestSpec("tcp-bw", []int{4096, 65536}, 50, 5)
			s.Reverse = true
			switch mode {
			case "duration":
				s.Iterations, s.Duration, s.Interval = 0, 300*time.Millisecond, 100*time.Millisecond
			case "precision":
				s.Iterations, s.Precision, s.PrecisionCap = 0, 0.5, 500*time.Millisecond
			}
			if err := s.Normalize(); err != nil {
				t.Fatal(err)
			}
			res := tcpLoopback(t, s, endOptions{})
			for _, r := range res.Results {
				b := r.Bandwidth
				if b == nil || r.Direction != "server_to_client" || !r.Reversed() || r.Reverse != nil {
					t.Fatalf("%d B: bandwidth %+v, direction %q, effective %+v", r.Size, b, r.Direction, r.Effective)
				}
				if b.Messages != uint64(r.Iterations) || b.Bytes != b.Messages*uint64(r.Size) || b.Messages == 0 {
					t.Fatalf("%d B: %d iterations, bandwidth %+v", r.Size, r.Iterations, b)
				}
				switch mode {
				case "iterations":
					if b.Messages != 50 {
						t.Fatalf("%d B: %d messages, want 50", r.Size, b.Messages)
					}
				case "duration":
					// How many intervals fit depends on the machine's speed;
					// that the server's reach the result, with every message
					// it counted, does not.
					var msgs uint64
					for _, iv := range r.Intervals {
						if iv.Bandwidth != nil {
							msgs += iv.Bandwidth.Messages
						}
					}
					if len(r.Intervals) == 0 || msgs != b.Messages {
						t.Fatalf("%d B: %d intervals of %d messages, %d in all: the server's must reach the client's result", r.Size, len(r.Intervals), msgs, b.Messages)
					}
				case "precision":
					if r.Precision == nil || r.Precision.Rounds > len(r.Intervals) || r.Precision.Rounds == 0 {
						t.Fatalf("%d B: precision %+v with %d intervals", r.Size, r.Precision, len(r.Intervals))
					}
				}
			}
		})
	}
}

func TestReverseKnob(t *testing.T) {
	asked := Spec{Setup: settings.Setup{Reverse: true}}
	if _, err := NewPlan(Request{Tests: []string{"write-lat"}, Spec: asked}); err == nil || !strings.Contains(err.Error(), "--reverse does not apply to write-lat") {
		t.Fatalf("--reverse on write-lat: %v", err)
	}
	asked.Bidirectional = true
	if _, err := NewPlan(Request{Tests: []string{"write-bw"}, Spec: asked}); err == nil || !strings.Contains(err.Error(), "exclusive") {
		t.Fatalf("--reverse -b: %v", err)
	}
	for test, want := range map[string]string{"write-bw": "server_to_client", "send-bw": "server_to_client", "read-bw": "client_to_server",
		"atomic-bw": "server_to_client", "tcp-bw": "server_to_client", "write-lat": ""} {
		s := NewSpec(test)
		s.Reverse = test != "write-lat"
		if got := s.direction(); got != want {
			t.Errorf("%s --reverse: direction %q, want %q", test, got, want)
		}
		s.Reverse = false
		if got, fwd := s.direction(), map[string]string{"server_to_client": "client_to_server", "client_to_server": "server_to_client"}[want]; got != fwd {
			t.Errorf("%s: direction %q, want %q", test, got, fwd)
		}
	}
}
