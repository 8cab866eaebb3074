package report

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseLimitDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"20us": 20 * time.Microsecond, "20µs": 20 * time.Microsecond, "20μs": 20 * time.Microsecond,
		"1.5ms": 1500 * time.Microsecond, "800ns": 800, " 2us ": 2 * time.Microsecond,
	} {
		if got, err := ParseLimitDuration(in); err != nil || got != want {
			t.Errorf("ParseLimitDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"20": "has no unit: write e.g. 20us", "-3us": "must be positive", "0s": "must be positive", "fast": "want a duration", "": "want a duration",
	} {
		if _, err := ParseLimitDuration(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseLimitDuration(%q): %v, want %q", in, err, msg)
		}
	}
}

func TestParseBandwidth(t *testing.T) {
	for in, want := range map[string]float64{
		"90Gbps": 90, "90Gbit/s": 90, "90 Gb/s": 90, "100G": 100, "100g": 100, "800Mbps": 0.8, "1.5Tbps": 1500,
		"12.5GB/s": 100, "11GBps": 88, "1GiB/s": 8 * 1.073741824, "1e9bps": 1, "400000kbit/s": 0.4,
	} {
		got, err := ParseBandwidth(in)
		if err != nil || math.Abs(got-want) > 1e-9*want {
			t.Errorf("ParseBandwidth(%q) = %v, %v; want %v Gbit/s", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"90": "has no unit", "fast": "want a number", "90Gfoo": "unknown unit", "-5Gbps": "want a number", "0G": "must be positive",
		"90Xbps": "unknown unit", "": "want a number",
	} {
		if _, err := ParseBandwidth(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseBandwidth(%q): %v, want %q", in, err, msg)
		}
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{
		"10M": 10e6, "10m": 10e6, "10Mmsg/s": 10e6, "10Mpps": 10e6, "500k": 500e3, "2.5e6": 2.5e6, "2500000/s": 2.5e6, "10msg/s": 10,
	} {
		got, err := ParseRate(in)
		if err != nil || math.Abs(got-want) > 1e-9*want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"10Gbps", "lots", "10Q", "-1M"} {
		if _, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q): no error", in)
		}
	}
}

func TestCheckLimits(t *testing.T) {
	limits := func(l Limits) []string {
		var s []string
		for _, f := range CheckLimits(suiteDoc(), l) {
			s = append(s, f.String())
		}
		return s
	}
	// Every figure within its limit.
	if got := limits(Limits{P99: 20 * time.Microsecond, MinGbps: 0.5, MinMsgRate: 50e3}); len(got) != 0 {
		t.Errorf("within limits: %q", got)
	}
	eq(t, "p99 2 µs", limits(Limits{P99: 2 * time.Microsecond}), []string{
		"read-lat RC 64 B: p99 2.42 µs > limit 2 µs",
		"atomic-lat RC 8 B: p99 2.47 µs > limit 2 µs",
		"tcp-lat TCP 64 B: p99 19.93 µs > limit 2 µs",
	})
	// In the order of the results, then of the limits.
	got := limits(Limits{MinGbps: 90, MinMsgRate: 1e6, Mean: 13 * time.Microsecond})
	eq(t, "bandwidth and rate", got, []string{
		"tcp-lat TCP 64 B: mean 13.31 µs > limit 13 µs",
		"write-bw RC 65536 B: message rate 0.1879 Mmsg/s < limit 1 Mmsg/s",
		"read-bw RC 65536 B: message rate 0.1819 Mmsg/s < limit 1 Mmsg/s",
		"atomic-bw RC 8 B: bandwidth 0.54 Gbit/s < limit 90 Gbit/s",
		"send-bw RC 65536 B: message rate 0.1874 Mmsg/s < limit 1 Mmsg/s",
		"tcp-bw TCP 65536 B: bandwidth 27.98 Gbit/s < limit 90 Gbit/s",
		"tcp-bw TCP 65536 B: message rate 0.0534 Mmsg/s < limit 1 Mmsg/s",
	})

	// A limit no result can be checked against fails: the gate would
	// otherwise pass without checking anything.
	lat := NewDocument()
	lat.Results = []Result{{Test: "write-lat", Connection: "RC", Size: 2, Latency: latAt(BasisRTTHalf, 1, 2)}}
	fs := CheckLimits(lat, Limits{MinGbps: 10, P50: time.Microsecond / 2})
	eq(t, "unchecked", messages2(fs), []string{
		"write-lat RC 2 B: p50 1 µs > limit 0.5 µs",
		"limit bandwidth 10 Gbit/s: no result has a bandwidth to check it against",
	})
	if fs[0].Figure != FigP50 || fs[0].Value != 1000 || fs[0].Limit != 500 || fs[0].Run != 0 {
		t.Errorf("failure fields: %+v", fs[0])
	}

	// Failed results are not checked; the failure is the run's.
	lat.Results[0].Error = "timeout"
	eq(t, "failed result", messages2(CheckLimits(lat, Limits{P50: time.Microsecond / 2})), []string{
		"limit p50 0.5 µs: no result has a latency to check it against",
	})
	if CheckLimits(lat, Limits{}) != nil || CheckLimits(nil, Limits{P50: 1}) != nil {
		t.Error("no limits: failures")
	}
}

// TestCheckLimitsRepeated: with repeated runs the median over the runs is
// checked: one slow run alone does not fail.
func TestCheckLimitsRepeated(t *testing.T) {
	doc := baseRuns() // p99 1.30 .. 1.33 µs; bandwidth 98.3 .. 98.6, median 98.5
	doc.Results[0].Latency.P99Ns = 5000
	if fs := CheckLimits(doc, Limits{P99: 1400 * time.Nanosecond, MinGbps: 98}); len(fs) != 0 {
		t.Errorf("one slow run failed the median: %v", messages2(fs))
	}
	eq(t, "median over limit", messages2(CheckLimits(doc, Limits{P99: 1300 * time.Nanosecond, MinGbps: 99})), []string{
		"write-lat RC 2 B: p99 1.32 µs (median of 5 runs) > limit 1.3 µs",
		"write-bw RC 65536 B: bandwidth 98.50 Gbit/s (median of 5 runs) < limit 99 Gbit/s",
	})
}

func messages2(fs []LimitFailure) []string {
	s := []string{}
	for _, f := range fs {
		s = append(s, f.String())
	}
	return s
}
