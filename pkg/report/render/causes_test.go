package render

import (
	"reflect"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// Failed results are grouped by cause, the test's name aside, each cause
// once with the results it failed.
func TestFailures(t *testing.T) {
	doc := &report.Document{Results: []report.Result{
		{Test: "write-lat", Size: 2, Error: "write-lat: no RDMA device found"},
		{Test: "tcp-lat", Size: 2},
		{Test: "write-bw", Size: 4096, Error: "write-bw: no RDMA device found"},
		{Test: "write-bw", Size: 8192, Error: "validation failed"},
		{Test: "read-bw", Size: 65536, Error: "no RDMA device found"},
	}}
	fails := Failures(doc)
	want := []Failure{{Cause: "no RDMA device found", Results: []int{0, 2, 4}}, {Cause: "validation failed", Results: []int{3}}}
	if !reflect.DeepEqual(fails, want) {
		t.Fatalf("Failures = %+v, want %+v", fails, want)
	}
	if w := fails[0].Where(doc); w != "write-lat, write-bw 4096 B, read-bw" {
		t.Errorf("Where = %q", w)
	}

	// Repeated runs: each test and size with the runs it failed in.
	rep := &report.Document{Params: report.Params{Repeat: 3}}
	for run := 1; run <= 3; run++ {
		rep.Results = append(rep.Results,
			report.Result{Test: "write-lat", Size: 2, Run: run, Error: "no RDMA device found"},
			report.Result{Test: "send-bw", Size: 65536, Run: run})
	}
	rep.Results[3].Error = "no RDMA device found" // send-bw, run 2
	fails = Failures(rep)
	if len(fails) != 1 || fails[0].Where(rep) != "write-lat 2 B (every run), send-bw 65536 B (run 2)" {
		t.Errorf("repeated: %+v, %q", fails, fails[0].Where(rep))
	}
}
