package textfmt

import (
	"slices"
	"testing"
)

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{0.5: "0.5", 98.4123: "98.412", 200: "200", 0: "0", 1.25: "1.25", 3.0001: "3"} {
		if got := Num(v); got != want {
			t.Errorf("Num(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestClean(t *testing.T) {
	if got := Clean("a\tb\nc\x1bd"); got != "a b c d" {
		t.Errorf("Clean = %q", got)
	}
}

func TestIntRanges(t *testing.T) {
	if got := IntRanges([]int{8, 0, 1, 2, 5, 2}); !slices.Equal(got, []string{"0-2", "5", "8"}) {
		t.Errorf("IntRanges = %q", got)
	}
	if got := IntRanges(nil); got != nil {
		t.Errorf("IntRanges(nil) = %q", got)
	}
}

// TestLimits: a limit is written with the prefix its figures take and the
// digits given, no float noise.
func TestLimits(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{GbitLimit(90), "90 Gbit/s"}, {GbitLimit(0.5), "500 Mbit/s"}, {GbitLimit(0.1 + 0.2), "300 Mbit/s"},
		{MmsgLimit(1), "1 Mmsg/s"}, {MmsgLimit(0.0025), "2.5 kmsg/s"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestLatencyUnitOf: µs unless every p50 is below 1 µs (ns) or at least
// 1 ms (ms).
func TestLatencyUnitOf(t *testing.T) {
	for _, c := range []struct {
		p50s []float64
		want string
	}{{nil, "µs"}, {[]float64{500, 999}, "ns"}, {[]float64{999.5}, "µs"}, {[]float64{500, 2000}, "µs"}, {[]float64{1e6, 3e6}, "ms"}} {
		if got := LatencyUnitOf(c.p50s).Name; got != c.want {
			t.Errorf("LatencyUnitOf(%v) = %s, want %s", c.p50s, got, c.want)
		}
	}
}
