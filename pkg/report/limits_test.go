package report_test

import (
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/report"
)

func TestCheckLimits(t *testing.T) {
	limits := func(l report.Limits) []string {
		var s []string
		for _, f := range reporttest.SuiteDoc().CheckLimits(l) {
			s = append(s, f.String())
		}
		return s
	}
	// Every figure within its limit.
	if got := limits(report.Limits{P99: 20 * time.Microsecond, MinGbps: 0.5, MinMsgRate: 50e3}); len(got) != 0 {
		t.Errorf("within limits: %q", got)
	}
	reporttest.Equal(t, "p99 2 µs", limits(report.Limits{P99: 2 * time.Microsecond}), []string{
		"read-lat RC 64 B: p99 2.42 µs > limit 2 µs",
		"atomic-lat RC 8 B: p99 2.47 µs > limit 2 µs",
		"tcp-lat TCP 64 B: p99 19.93 µs > limit 2 µs",
	})
	// In the order of the results, then of the limits.
	got := limits(report.Limits{MinGbps: 90, MinMsgRate: 1e6, Mean: 13 * time.Microsecond})
	reporttest.Equal(t, "bandwidth and rate", got, []string{
		"tcp-lat TCP 64 B: mean 13.31 µs > limit 13 µs",
		"write-bw RC 65536 B: message rate 187.9 kmsg/s < limit 1 Mmsg/s",
		"read-bw RC 65536 B: message rate 181.9 kmsg/s < limit 1 Mmsg/s",
		"atomic-bw RC 8 B: bandwidth 537.8 Mbit/s < limit 90 Gbit/s",
		"send-bw RC 65536 B: message rate 187.4 kmsg/s < limit 1 Mmsg/s",
		"tcp-bw TCP 65536 B: bandwidth 27.98 Gbit/s < limit 90 Gbit/s",
		"tcp-bw TCP 65536 B: message rate 53.36 kmsg/s < limit 1 Mmsg/s",
	})

	// A limit no result can be checked against fails: the gate would
	// otherwise pass without checking anything.
	lat := report.NewDocument()
	lat.Results = []report.Result{{Test: "write-lat", Connection: "RC", Size: 2, Latency: reporttest.LatAt(report.BasisRTTHalf, 1, 2)}}
	fs := lat.CheckLimits(report.Limits{MinGbps: 10, P50: time.Microsecond / 2})
	reporttest.Equal(t, "unchecked", messages2(fs), []string{
		"write-lat RC 2 B: p50 1 µs > limit 0.5 µs",
		"limit bandwidth 10 Gbit/s: no result has a bandwidth to check it against",
	})
	if fs[0].Figure != report.FigP50 || fs[0].Value != 1000 || fs[0].Limit != 500 || fs[0].Run != 0 {
		t.Errorf("failure fields: %+v", fs[0])
	}

	// Failed results are not checked; the failure is the run's.
	lat.Results[0].Error = "timeout"
	reporttest.Equal(t, "failed result", messages2(lat.CheckLimits(report.Limits{P50: time.Microsecond / 2})), []string{
		"limit p50 500 ns: no result has a latency to check it against",
	})
	if lat.CheckLimits(report.Limits{}) != nil || (*report.Document)(nil).CheckLimits(report.Limits{P50: 1}) != nil {
		t.Error("no limits: failures")
	}
}

// TestCheckLimitsRepeated: with repeated runs the median over the runs is
// checked: one slow run alone does not fail.
func TestCheckLimitsRepeated(t *testing.T) {
	doc := reporttest.BaseRuns() // p99 1.30 .. 1.33 µs; bandwidth 98.3 .. 98.6, median 98.5
	doc.Results[0].Latency.P99Ns = 5000
	if fs := doc.CheckLimits(report.Limits{P99: 1400 * time.Nanosecond, MinGbps: 98}); len(fs) != 0 {
		t.Errorf("one slow run failed the median: %v", messages2(fs))
	}
	reporttest.Equal(t, "median over limit", messages2(doc.CheckLimits(report.Limits{P99: 1300 * time.Nanosecond, MinGbps: 99})), []string{
		"write-lat RC 2 B: p99 1.32 µs (median of 5 runs) > limit 1.3 µs",
		"write-bw RC 65536 B: bandwidth 98.50 Gbit/s (median of 5 runs) < limit 99 Gbit/s",
	})
}

func messages2(fs []report.LimitFailure) []string {
	s := []string{}
	for _, f := range fs {
		s = append(s, f.String())
	}
	return s
}
