package report_test

import (
	"math"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// streamStart is the first line of a two-rank mesh's link stream.
const streamStart = `{"event":"start","time":"2026-01-02T03:04:05Z","document":{"schema":"rdmabench/result/v1","results":[],"mesh":{"size":2,"coordinator":"a:1","tests":["tcp-lat"],"rounds":1,"schedule":"round-robin","ranks":[{"rank":0,"state":"ok"},{"rank":1,"state":"ok"}],"links":null,"matrices":null}}}`

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
		if b, err := report.ParseBytes(s); err == nil && b == 0 {
			t.Fatalf("ParseBytes(%q) = 0", s)
		}
		for _, p := range []struct {
			name  string
			parse func(string) (float64, error)
		}{{"ParseBandwidth", report.ParseBandwidth}, {"ParseRate", report.ParseRate}} {
			if v, err := p.parse(s); err == nil && !(v > 0 && !math.IsInf(v, 0)) {
				t.Fatalf("%s(%q) = %v", p.name, s, v)
			}
		}
		if d, err := report.ParseLimitDuration(s); err == nil && d <= 0 {
			t.Fatalf("ParseLimitDuration(%q) = %v", s, d)
		}
	})
}
