package report

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzReadJSON feeds arbitrary files to the results reader. It never
// panics and its errors say what they read; a document it accepts renders
// in every format, plots and compares without a panic (renderAll), and
// reads back the same once written.
// streamStart is the first line of a two-rank mesh's link stream.
const streamStart = `{"event":"start","time":"2026-01-02T03:04:05Z","document":{"schema":"rdmabench/result/v1","results":[],"mesh":{"size":2,"coordinator":"a:1","tests":["tcp-lat"],"rounds":1,"schedule":"round-robin","ranks":[{"rank":0,"state":"ok"},{"rank":1,"state":"ok"}],"links":null,"matrices":null}}}`

func FuzzReadJSON(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
	for _, s := range []string{
		hostileHead + `"results":[{"test":"write-lat","size":-1}]}`,
		hostileHead + `"results":[{"test":"write-bw","size":2,"bandwidth":{"bytes":18446744073709551615,"duration_ns":1,"bw_gbps":1.7e308}}]}`,
		hostileHead + `"results":[{"test":"x","size":3,"run":1},{"test":"x","size":3,"run":2}],"params":{"repeat":2}}`,
		hostileHead + `"results":[{"test":"read-lat","size":2,"latency":{"basis":"rtt","count":1,"histogram":"HISTFAAAAB"}}]}`,
		hostileHead + `"results":[null,{},[]]}`,
		hostileHead + `"clocks":{"a":{"resolution_ns":1e308}},"summaries":[{"runs":1,"latency":{"p50_ns":{"median":1,"n":1}}}]}`,
		hostileHead + `"x":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
		`{"schema":"rdmabench/result/v2"}`, `[]`, `NaN`, "\x00", `{"schema":`,
		`{"schema": "rdmabench/result/v1", "results": [{"test": "write-bw", "run": 2, "total": {"bw_gbps": 1}}, {"test": "write-bw", "run": 1, "error": "x"}]}`,
		`{"schema": "rdmabench/result/v1", "results": [{"latency": {"histogram": "HISTFAAAACB4nJNpmSzMwMDAxQABzFCaEUzOmNZg/wEi0NQFAC7aAw4="}}]}`,
		streamStart + "\n" + `{"event":"link","link":{"from":0,"to":1,"round":1,"start":"0001-01-01T00:00:00Z","end":"0001-01-01T00:00:00Z","results":[{"test":"tcp-lat","size":64,"latency":{"basis":"rtt_half","count":1,"p50_ns":5}}]}}` + "\n",
		streamStart + "\n" + `{"event":"link","link":{"from":7,"to":-1,"round":1,"results":[{"test":"tcp-bw","size":64,"bandwidth":{"bw_gbps":1}}]}}` + "\n" + `{"event":"end"}`,
		streamStart + "\n" + `{"event":"link","link":{"from":0,"to":1,"res`,
		`{"event":"link"}`, `{"event":"start","document":{"schema":"rdmabench/result/v1"}}` + "\n" + `{"event":"result","result":{"test":"x","size":-1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := ReadJSON(bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "report: read results: ") {
				t.Fatalf("error without its prefix: %v", err)
			}
			return
		}
		// The text formats of a document read cannot fail.
		for _, format := range []string{FormatTable, FormatCSV, FormatMarkdown, FormatGobench, FormatOpenMetrics} {
			if doc.Mesh != nil && !slices.Contains(MeshFormats, format) {
				continue // refused by name
			}
			if err := Write(io.Discard, format, doc); err != nil {
				t.Fatalf("%s of a document ReadJSON accepted: %v", format, err)
			}
		}
		renderAll(t, doc, doc)
		for _, r := range doc.Results {
			if r.Latency != nil && r.Latency.Histogram != "" {
				_, _ = DecodeHistogram(r.Latency.Histogram)
			}
		}
		var out bytes.Buffer
		if err := WriteJSON(&out, doc); err != nil {
			return // a time JSON cannot hold, say
		}
		if _, err := ReadJSON(&out); err != nil {
			t.Fatalf("a document read, written again, does not read back: %v", err)
		}
	})
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
		if b, err := ParseBytes(s); err == nil && b == 0 {
			t.Fatalf("ParseBytes(%q) = 0", s)
		}
		for _, p := range []struct {
			name  string
			parse func(string) (float64, error)
		}{{"ParseBandwidth", ParseBandwidth}, {"ParseRate", ParseRate}} {
			if v, err := p.parse(s); err == nil && !(v > 0 && !math.IsInf(v, 0)) {
				t.Fatalf("%s(%q) = %v", p.name, s, v)
			}
		}
		if d, err := ParseLimitDuration(s); err == nil && d <= 0 {
			t.Fatalf("ParseLimitDuration(%q) = %v", s, d)
		}
	})
}
