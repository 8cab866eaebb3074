package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// A runner whose bandwidth loop fails by itself, as a work completion in
// error does, with no device.
type failingRunner struct{ err error }

func (failingRunner) open(context.Context) (any, *report.Device, error) { return struct{}{}, nil, nil }
func (failingRunner) connect(context.Context, json.RawMessage) (func() error, error) {
	return nil, nil
}
func (f failingRunner) prepare(int) (*stage, error) {
	return &stage{stream: failingStream(f), abort: func() {}, release: func() {}}, nil
}
func (failingRunner) now() uint64      { return 0 }
func (failingRunner) clock() clockInfo { return clockInfo{name: "fake"} }
func (failingRunner) close()           {}

type failingStream struct{ err error }

func (failingStream) warmup(int, bool) error             { return nil }
func (f failingStream) round(uint64) error               { return f.err }
func (failingStream) send(uint64) error                  { return nil }
func (failingStream) finish() error                      { return nil }
func (failingStream) end() error                         { return nil }
func (failingStream) measured() (uint64, uint64, uint64) { return 0, 0, 0 }
func (failingStream) sent() uint64                       { return 0 }

// lostLink answers every exchange until phase lost, where the server is
// lost (as a partitioned link makes the control connection fail).
type lostLink struct {
	lost   string
	cancel context.CancelCauseFunc
}

func (l lostLink) Exchange(ctx context.Context, phase string, _, _ any) error {
	if phase == l.lost {
		l.cancel(errors.New("lost the server mid-test: no message for 10s"))
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// TestOwnFailureIsReported: a loop that failed by itself (the device gave
// up retransmitting) is what the result says, not the lost link that
// followed, which is added.
func TestOwnFailureIsReported(t *testing.T) {
	s := NewSpec("write-bw")
	s.Warmup, s.Iterations = ptr(0), 10
	if err := s.Normalize(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	loopErr := errors.New("work completion failed: IBV_WC_RETRY_EXC_ERR")
	d := &driver{spec: &s, role: clientEnd, link: lostLink{"finished/0", cancel}, r: failingRunner{loopErr}}
	res, err := d.run(ctx)
	if !errors.Is(err, loopErr) || !strings.Contains(err.Error(), "; then lost the server mid-test") {
		t.Fatalf("error %v; want the loop's, then the lost server", err)
	}
	if res == nil || len(res.Results) != 1 || !strings.HasPrefix(res.Results[0].Error, loopErr.Error()) {
		t.Fatalf("result %+v", res)
	}
}

// A runner whose stream never completes a message: a path so slow, or a
// peer so stalled, that a duration ends with nothing measured.
type stalledRunner struct{ failingRunner }

func (stalledRunner) prepare(int) (*stage, error) {
	return &stage{stream: failingStream{}, abort: func() {}, release: func() {}}, nil
}
func (stalledRunner) now() uint64 { return uint64(time.Now().UnixNano()) }

// TestNothingMeasuredIsAnError: a duration in which no message completed
// is ErrNothingMeasured, in the result and its error, never a bandwidth
// of zero over a negative span that reads as a figure.
func TestNothingMeasuredIsAnError(t *testing.T) {
	s := NewSpec("write-bw")
	s.Warmup, s.Duration, s.Interval = ptr(0), 100*time.Millisecond, 100*time.Millisecond
	if err := s.Normalize(); err != nil {
		t.Fatal(err)
	}
	d := &driver{spec: &s, role: clientEnd, link: lostLink{lost: "never"}, r: stalledRunner{}}
	res, err := d.run(context.Background())
	if !errors.Is(err, ErrNothingMeasured) {
		t.Fatalf("error %v; want ErrNothingMeasured", err)
	}
	if res == nil || len(res.Results) != 1 {
		t.Fatalf("result %+v", res)
	}
	r := res.Results[0]
	if !strings.Contains(r.Error, "no message of 65536 B completed") || r.Bandwidth != nil && r.Bandwidth.DurationNs < 0 {
		t.Fatalf("result error %q, bandwidth %+v", r.Error, r.Bandwidth)
	}
}

// TestElapsed: a span is never negative, as a stream with no last
// completion would make it.
func TestElapsed(t *testing.T) {
	if got := elapsed(100, 40); got != 0 {
		t.Errorf("elapsed(100, 40) = %v, want 0", got)
	}
	if got := elapsed(40, 100); got != 60 {
		t.Errorf("elapsed(40, 100) = %v, want 60ns", got)
	}
}
