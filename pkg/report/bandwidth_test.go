package report_test

import (
	"math"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
)

func TestNewBandwidth(t *testing.T) {
	// 1.25e9 bytes and 1e6 messages in 1 s: 10 Gbit/s, 1192.09 MiB/s, 1 Mmsg/s.
	b := report.NewBandwidth(1_250_000_000, 1_000_000, time.Second)
	if b.Bytes != 1_250_000_000 || b.Messages != 1_000_000 || b.DurationNs != 1e9 {
		t.Errorf("counters %+v", b)
	}
	if !relClose(b.Gbps, 10, 1e-15) || !relClose(b.MiBps, 1_250_000_000.0/1048576, 1e-15) || !relClose(b.Mmsgps, 1, 1e-15) {
		t.Errorf("rates %v Gbit/s, %v MiB/s, %v Mmsg/s", b.Gbps, b.MiBps, b.Mmsgps)
	}
	// Half the time, twice the rate.
	h := report.NewBandwidth(1_250_000_000, 1_000_000, 500*time.Millisecond)
	if !relClose(h.Gbps, 20, 1e-15) || !relClose(h.Mmsgps, 2, 1e-15) {
		t.Errorf("rates in 0.5 s: %+v", h)
	}
	for _, d := range []time.Duration{0, -time.Second} {
		z := report.NewBandwidth(100, 1, d)
		if z.Gbps != 0 || z.MiBps != 0 || z.Mmsgps != 0 || math.IsNaN(z.Gbps) {
			t.Errorf("duration %v: rates %+v, want 0", d, z)
		}
	}
}

func TestSum(t *testing.T) {
	a := report.NewBandwidth(1000, 10, time.Second)
	b := report.NewBandwidth(3000, 30, 2*time.Second)
	s := report.Sum(a, b)
	if s.Bytes != 4000 || s.Messages != 40 || s.DurationNs != int64(2*time.Second) {
		t.Errorf("sum counters %+v", s)
	}
	if s.Gbps != a.Gbps+b.Gbps || s.MiBps != a.MiBps+b.MiBps || s.Mmsgps != a.Mmsgps+b.Mmsgps {
		t.Errorf("sum rates %+v, want the rates added", s)
	}
	if got := report.Sum(a, nil); *got != *a || got == a {
		t.Errorf("Sum(a, nil) = %+v, want a copy of a", got)
	}
	if got := report.Sum(nil, b); *got != *b || got == b {
		t.Errorf("Sum(nil, b) = %+v, want a copy of b", got)
	}
	if report.Sum(nil, nil) != nil {
		t.Error("Sum(nil, nil) is not nil")
	}
}

// relClose reports whether got is within the fraction tol of want.
func relClose(got, want, tol float64) bool {
	if got == want {
		return true
	}
	return math.Abs(got-want) <= tol*math.Max(math.Abs(want), 1e-300)
}
