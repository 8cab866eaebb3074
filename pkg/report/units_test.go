package report_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]uint64{
		"4096": 4096, "4K": 4096, "4k": 4096, "4KiB": 4096, "4KB": 4096, "64M": 64 << 20, "1G": 1 << 30,
		"4G": 4 << 30, "64G": 64 << 30, "1.5M": 3 << 19, "2T": 2 << 40, " 8 MiB ": 8 << 20, "1B": 1,
	} {
		if got, err := report.ParseBytes(in); err != nil || got != want {
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
		if _, err := report.ParseBytes(in); err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "size") {
			t.Errorf("ParseBytes(%q): %v, want an error about the size containing %q", in, err, msg)
		}
	}
}

func TestParseLimitDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"20us": 20 * time.Microsecond, "20µs": 20 * time.Microsecond, "20μs": 20 * time.Microsecond,
		"1.5ms": 1500 * time.Microsecond, "800ns": 800, " 2us ": 2 * time.Microsecond,
	} {
		if got, err := report.ParseLimitDuration(in); err != nil || got != want {
			t.Errorf("ParseLimitDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"20": "has no unit: write e.g. 20us", "-3us": "must be positive", "0s": "must be positive", "fast": "want a duration", "": "want a duration",
	} {
		if _, err := report.ParseLimitDuration(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseLimitDuration(%q): %v, want %q", in, err, msg)
		}
	}
}

func TestParseBandwidth(t *testing.T) {
	for in, want := range map[string]float64{
		"90Gbps": 90, "90Gbit/s": 90, "90 Gb/s": 90, "100G": 100, "100g": 100, "800Mbps": 0.8, "1.5Tbps": 1500,
		"12.5GB/s": 100, "11GBps": 88, "1GiB/s": 8 * 1.073741824, "1e9bps": 1, "400000kbit/s": 0.4,
	} {
		got, err := report.ParseBandwidth(in)
		if err != nil || math.Abs(got-want) > 1e-9*want {
			t.Errorf("ParseBandwidth(%q) = %v, %v; want %v Gbit/s", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"90": "has no unit", "fast": "want a number", "90Gfoo": "unknown unit", "-5Gbps": "want a number", "0G": "must be positive",
		"90Xbps": "unknown unit", "": "want a number",
	} {
		if _, err := report.ParseBandwidth(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseBandwidth(%q): %v, want %q", in, err, msg)
		}
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{
		"10M": 10e6, "10m": 10e6, "10Mmsg/s": 10e6, "10Mpps": 10e6, "500k": 500e3, "2.5e6": 2.5e6, "2500000/s": 2.5e6, "10msg/s": 10,
	} {
		got, err := report.ParseRate(in)
		if err != nil || math.Abs(got-want) > 1e-9*want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"10Gbps", "lots", "10Q", "-1M"} {
		if _, err := report.ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q): no error", in)
		}
	}
}
