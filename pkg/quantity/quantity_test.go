package quantity_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/quantity"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]uint64{
		"4096": 4096, "4K": 4096, "4k": 4096, "4KiB": 4096, "4KB": 4096, "64M": 64 << 20, "1G": 1 << 30,
		"4G": 4 << 30, "64G": 64 << 30, "1.5M": 3 << 19, "2T": 2 << 40, " 8 MiB ": 8 << 20, "1B": 1,
	} {
		if got, err := quantity.ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"":      "want a number with a unit",
		"0":     "must be positive",
		"-4K":   "want a number with a unit",
		"4Q":    `unknown unit "Q"`,
		"4Kbps": `unknown unit "bps"`,
		"1.5":   "not a whole number of bytes",
		"1e30G": "too large",
		"K":     "want a number with a unit",
	} {
		if _, err := quantity.ParseBytes(in); err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "size") {
			t.Errorf("ParseBytes(%q): %v, want an error about the size containing %q", in, err, msg)
		}
	}
}

func TestParseLimitDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"20us": 20 * time.Microsecond, "20µs": 20 * time.Microsecond, "20μs": 20 * time.Microsecond,
		"1.5ms": 1500 * time.Microsecond, "800ns": 800, " 2us ": 2 * time.Microsecond,
	} {
		if got, err := quantity.ParseLimitDuration(in); err != nil || got != want {
			t.Errorf("ParseLimitDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"20": "has no unit: write e.g. 20us", "-3us": "must be positive", "0s": "must be positive", "fast": "want a duration", "": "want a duration",
	} {
		if _, err := quantity.ParseLimitDuration(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseLimitDuration(%q): %v, want %q", in, err, msg)
		}
	}
}

func TestParseBandwidth(t *testing.T) {
	for in, want := range map[string]float64{
		"90Gbps": 90, "90Gbit/s": 90, "90 Gb/s": 90, "100G": 100, "100g": 100, "800Mbps": 0.8, "1.5Tbps": 1500,
		"12.5GB/s": 100, "11GBps": 88, "1GiB/s": 8 * 1.073741824, "1e9bps": 1, "400000kbit/s": 0.4,
	} {
		got, err := quantity.ParseBandwidth(in)
		if err != nil || math.Abs(got-want) > 1e-9*want {
			t.Errorf("ParseBandwidth(%q) = %v, %v; want %v Gbit/s", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"90": "has no unit", "fast": "want a number", "90Gfoo": "unknown unit", "-5Gbps": "want a number", "0G": "must be positive",
		"90Xbps": "unknown unit", "": "want a number",
	} {
		if _, err := quantity.ParseBandwidth(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseBandwidth(%q): %v, want %q", in, err, msg)
		}
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{
		"10M": 10e6, "10m": 10e6, "10Mmsg/s": 10e6, "10Mpps": 10e6, "500k": 500e3, "2.5e6": 2.5e6, "2500000/s": 2.5e6, "10msg/s": 10,
	} {
		got, err := quantity.ParseRate(in)
		if err != nil || math.Abs(got-want) > 1e-9*want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"10Gbps", "lots", "10Q", "-1M"} {
		if _, err := quantity.ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q): no error", in)
		}
	}
}

func TestParseBandwidthLimit(t *testing.T) {
	for in, want := range map[string][2]float64{
		"90%link":    {0, 0.9},
		" 90 % LINK": {0, 0.9},
		"100%link":   {0, 1},
		"0.5%link":   {0, 0.005},
		"90Gbps":     {90, 0},
		"12.5GB/s":   {100, 0},
	} {
		g, f, err := quantity.ParseBandwidthLimit(in)
		if err != nil || g != want[0] || f != want[1] {
			t.Errorf("ParseBandwidthLimit(%q) = %v, %v, %v; want %v", in, g, f, err, want)
		}
	}
	for _, bad := range []string{"90link", "0%link", "101%link", "-5%link", "x%link", "%link", "90%lnk", "NaN%link"} {
		if g, f, err := quantity.ParseBandwidthLimit(bad); err == nil {
			t.Errorf("ParseBandwidthLimit(%q) = %v, %v; want an error", bad, g, f)
		}
	}
}

// FuzzParseUnits feeds arbitrary text to the parsers of sizes, bandwidths,
// message rates and latency limits, as a user types them in flags: none
// panics, and what each accepts is positive and finite.
func FuzzParseUnits(f *testing.F) {
	for _, s := range []string{"4096", "4K", "4KiB", "64M", "1G", "1.5M", "8T", "0", "-1", "1e400", "1e-400", "NaN", "Inf",
		"90Gbps", "90Gbit/s", "100G", "12.5GB/s", "10GiB/s", "800Mbps", "1.5e3Mb", "10", "10M", "10Mmsg/s", "10Mpps", "500k",
		"2.5e6", "2500000/s", "20us", "20µs", "1.5ms", "800ns", "1h", "-5ms", "9999999999h", " 4 K ", "4 KB", "1e", "1e+", "e5", ".", "1..2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if b, err := quantity.ParseBytes(s); err == nil && b == 0 {
			t.Fatalf("ParseBytes(%q) = 0", s)
		}
		for _, p := range []struct {
			name  string
			parse func(string) (float64, error)
		}{{"ParseBandwidth", quantity.ParseBandwidth}, {"ParseRate", quantity.ParseRate}} {
			if v, err := p.parse(s); err == nil && !(v > 0 && !math.IsInf(v, 0)) {
				t.Fatalf("%s(%q) = %v", p.name, s, v)
			}
		}
		if d, err := quantity.ParseLimitDuration(s); err == nil && d <= 0 {
			t.Fatalf("ParseLimitDuration(%q) = %v", s, d)
		}
	})
}
