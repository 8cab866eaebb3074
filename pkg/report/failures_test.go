package report_test

import (
	"reflect"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// A document's Error says why its run stopped; a failed test's error is
// its result's. Documents of earlier versions held the first failed
// test's error (or a mesh's count of failed links) there too: that is no
// stop.
func TestStopped(t *testing.T) {
	failed := []report.Result{
		{Test: "tcp-lat", Size: 2},
		{Test: "write-lat", Size: 2, Error: "write-lat: no RDMA device found"}, // failed before its first size
		{Test: "write-bw", Size: 65536, Error: "post send: IBV_WC_RETRY_EXC_ERR"},
	}
	for _, tc := range []struct {
		name    string
		doc     report.Document
		stopped string
	}{
		{"ran to its end", report.Document{Results: failed}, ""},
		{"interrupted", report.Document{Results: failed, Error: "interrupted (SIGINT)"}, "interrupted (SIGINT)"},
		{"its file not written", report.Document{Results: failed, Error: "write run.json: no space left on device"}, "write run.json: no space left on device"},
		{"an earlier version's first failure", report.Document{Results: failed, Error: "write-lat: no RDMA device found"}, ""},
		{"an earlier version's first failure at a size", report.Document{Results: failed[2:], Error: "write-bw: post send: IBV_WC_RETRY_EXC_ERR"}, ""},
		{"an earlier version's interrupted run", report.Document{Results: failed[2:], Error: "interrupted"}, "interrupted"},
		{"an earlier version's mesh", report.Document{Mesh: &report.Mesh{}, Error: "4 of 6 links failed"}, ""},
	} {
		if got := tc.doc.Stopped(); got != tc.stopped {
			t.Errorf("%s: Stopped() = %q, want %q", tc.name, got, tc.stopped)
		}
	}
}

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
	fails := doc.Failures()
	want := []report.Failure{{Cause: "no RDMA device found", Results: []int{0, 2, 4}}, {Cause: "validation failed", Results: []int{3}}}
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
	fails = rep.Failures()
	if len(fails) != 1 || fails[0].Where(rep) != "write-lat 2 B (every run), send-bw 65536 B (run 2)" {
		t.Errorf("repeated: %+v, %q", fails, fails[0].Where(rep))
	}
}
