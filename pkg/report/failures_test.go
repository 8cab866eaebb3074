package report_test

import (
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
