package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/render"
)

// refusingRemote is a server that refuses every RDMA test (as one
// without a device would) and runs the TCP ones.
type refusingRemote struct{ pipeRemote }

var errNoDeviceThere = errors.New("no RDMA device found")

func (r refusingRemote) Start(ctx context.Context, test string, spec json.RawMessage) (RemoteTest, error) {
	if t, _ := LookupTest(test); t.IsRDMA() {
		return nil, errNoDeviceThere
	}
	return r.pipeRemote.Start(ctx, test, spec)
}

func runRefused(t *testing.T, tests []string, checkpoint func(*report.Document) error) (*report.Document, error) {
	t.Helper()
	r, err := NewPlan(Request{Tests: tests, Spec: Spec{Iterations: 20, Warmup: ptr(2)}, Checkpoint: checkpoint})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return r.Execute(ctx, Target{Remote: refusingRemote{pipeRemote{&Server{}}}, Host: "127.0.0.1"})
}

// A test that fails does not stop the run: its result says why, the tests
// after it run, and the document has no run-level error (which would say
// the run stopped). The failures of one cause are one Failure.
func TestFailedTestsDoNotStopTheRun(t *testing.T) {
	doc, err := runRefused(t, []string{"write-lat", "tcp-lat", "write-bw", "tcp-bw"}, nil)
	if !errors.Is(err, errNoDeviceThere) {
		t.Errorf("Execute: %v, want the first test's error", err)
	}
	if doc.Error != "" || doc.Stopped() != "" {
		t.Errorf("document error %q: the run did not stop", doc.Error)
	}
	var tests []string
	for _, r := range doc.Results {
		tests = append(tests, r.Test)
		if failed := r.Error != ""; failed != (r.Test == "write-lat" || r.Test == "write-bw") {
			t.Errorf("%s: error %q", r.Test, r.Error)
		}
	}
	if strings.Join(tests, " ") != "write-lat tcp-lat write-bw tcp-bw" {
		t.Errorf("results of %v", tests)
	}
	fails := render.Failures(doc)
	if len(fails) != 1 || fails[0].Cause != "no RDMA device found" || len(fails[0].Results) != 2 || fails[0].Where(doc) != "write-lat, write-bw" {
		t.Errorf("failures %+v", fails)
	}
}

// A checkpoint that fails (the --out file cannot be written) stops the
// run after the test under way, and the document says so.
func TestCheckpointFailureStopsTheRun(t *testing.T) {
	full := errors.New("write run.json: no space left on device")
	doc, err := runRefused(t, []string{"tcp-lat", "tcp-bw"}, func(*report.Document) error { return full })
	if !errors.Is(err, full) {
		t.Errorf("Execute: %v, want the checkpoint's error", err)
	}
	if doc.Stopped() != full.Error() || doc.Partial {
		t.Errorf("document error %q, partial %v; want %q", doc.Error, doc.Partial, full)
	}
	if len(doc.Results) != 1 || doc.Results[0].Test != "tcp-lat" || doc.Results[0].Error != "" {
		t.Errorf("results %+v: want tcp-lat measured, nothing after it", doc.Results)
	}
}
