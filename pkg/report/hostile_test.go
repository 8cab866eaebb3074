package report_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// Hostile or broken files: each is refused with an error that names the
// file and says what is wrong, reading a bounded amount, or, when its
// values are merely absurd, renders in every format without a panic.

// hostileHead starts a document of the right schema.
const hostileHead = `{"schema":"rdmabench/result/v1",`

// repeated returns head, then n copies of elem separated by commas, then
// tail.
func repeated(head, elem string, n int, tail string) []byte {
	var b bytes.Buffer
	b.Grow(len(head) + n*(len(elem)+1) + len(tail))
	b.WriteString(head)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(elem)
	}
	b.WriteString(tail)
	return b.Bytes()
}

func TestReadHostileDocuments(t *testing.T) {
	var valid bytes.Buffer
	if err := report.WriteJSON(&valid, reporttest.DurationDoc()); err != nil {
		t.Fatal(err)
	}
	result := func(fields string) []byte {
		return []byte(hostileHead + `"results":[{"test":"write-lat","size":64,` + fields + `}]}`)
	}
	deep := func(n int, open, close string) []byte {
		return []byte(hostileHead + `"extra":` + strings.Repeat(open, n) + "0" + strings.Repeat(close, n) + `}`)
	}
	cases := []struct {
		name string
		in   []byte
		says string
	}{
		{"empty", nil, "empty input, not a results document"},
		{"blank", []byte(" \n\t\n"), "empty input"},
		{"truncated", valid.Bytes()[:valid.Len()/2], "truncated JSON: the input ends after"},
		{"truncated in a string", valid.Bytes()[:strings.Index(valid.String(), `"histogram"`)+5], "truncated JSON"},
		{"binary junk", []byte("\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe"), "malformed JSON at line 1, column 1 (byte 1): invalid character"},
		{"a zip file", []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00"), "malformed JSON at line 1, column 1"},
		{"NUL bytes", make([]byte, 4096), "malformed JSON"},
		{"a JSON array of documents", []byte(`[` + valid.String() + `]`), "the input is a JSON array, not a results document (an object)"},
		{"a JSON string", []byte(`"rdmabench/result/v1"`), "the input is a JSON string, not a results document"},
		{"a JSON number", []byte(`1e999`), "not a results document"},
		{"null", []byte(`null`), `no "schema" field`},
		{"another program's JSON", []byte(`{"benchmarks":[{"name":"x","value":1}]}`), `no "schema" field; not an rdmabench results document`},
		{"a later schema", []byte(`{"schema":"rdmabench/result/v2","results":[]}`), `unsupported schema "rdmabench/result/v2" (this rdmabench reads "rdmabench/result/v1")`},
		{"a schema that is not a string", []byte(`{"schema":1}`), `field "schema": cannot store JSON number in string`},
		{"NaN", result(`"latency":{"basis":"rtt","count":1,"p50_ns":NaN}`), "malformed JSON at line 1, column 118 (byte 118): invalid character 'N' looking for beginning of value"},
		{"Infinity", result(`"latency":{"p99_ns":Infinity}`), "invalid character 'I'"},
		{"negative infinity", result(`"latency":{"p99_ns":-Infinity}`), "malformed JSON"},
		{"a float too large", result(`"latency":{"p99_ns":1e400}`), `field "results.latency.p99_ns": cannot store JSON number 1e400 in float64`},
		{"an int too large", result(`"iterations":1e30`), `field "results.iterations": cannot store JSON number 1e30 in int`},
		{"an int beyond int64", result(`"size":9223372036854775808`), `cannot store JSON number 9223372036854775808 in int`},
		{"a fraction for an int", result(`"iterations":2.5`), `cannot store JSON number 2.5 in int`},
		{"a negative uint", result(`"bandwidth":{"bytes":-1}`), `field "results.bandwidth.bytes": cannot store JSON number -1 in uint64`},
		{"a string for a number", result(`"warmup":"100"`), `field "results.warmup": cannot store JSON string in int`},
		{"nested past encoding/json's limit", deep(20000, "[", "]"), "exceeded max depth"},
		{"nested deeper than a document", deep(report.MaxDocumentDepth+1, `{"a":`, "}"), fmt.Sprintf("nested more than %d levels deep", report.MaxDocumentDepth)},
		{"nested arrays deeper than a document", deep(100, "[", "]"), "nested more than"},
		{"millions of empty results", repeated(hostileHead+`"results":[`, "{}", 2_000_000, "]}"),
			`MiB of memory once decoded, most of it for "results", more than the 256 MiB limit`},
		{"millions of null results", repeated(hostileHead+`"results":[`, "null", 2_000_000, "]}"), `most of it for "results"`},
		{"an escaped key", repeated(hostileHead+`"\u0072esults":[`, "{}", 2_000_000, "]}"), `most of it for "results"`},
		{"a key in another case", repeated(hostileHead+`"RESULTS":[`, "{}", 2_000_000, "]}"), `once decoded, most of it for "RESULTS"`},
		{"negative size", result(`"size":-64`), "result 1 (write-lat, -64 B): negative size -64; no run produces that"},
		{"negative iterations", result(`"iterations":-1`), "result 1 (write-lat, 64 B): negative iterations -1"},
		{"negative count", result(`"latency":{"basis":"rtt","count":-5}`), "latency: negative count -5"},
		{"negative latency", result(`"latency":{"basis":"rtt","count":1,"min_ns":-3}`), "latency: negative min_ns -3"},
		{"negative duration", result(`"bandwidth":{"duration_ns":-1}`), "bandwidth: negative duration_ns -1"},
		{"negative interval", result(`"intervals":[{"start_s":0,"duration_s":1},{"start_s":-1,"duration_s":1}]`), "interval 2: negative start_s -1"},
		{"negative requested size", []byte(hostileHead + `"params":{"sizes":[2,-4]}}`), "params: negative sizes[1] -4"},
		{"negative runs", []byte(hostileHead + `"summaries":[{"test":"x","size":2,"runs":-2}]}`), "summary 1 (x, 2 B): negative runs -2"},
		{"several negative values", result(`"size":-1,"warmup":-1,"qps":-1`), "negative size -1 (and 2 more)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := report.ReadNamed(bytes.NewReader(tc.in), "hostile.json")
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.HasPrefix(err.Error(), "read hostile.json: ") {
				t.Errorf("%q does not start by naming the file", err)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("%q\ndoes not say %q", err, tc.says)
			}
		})
	}
}

// endless yields bytes for ever: '[' then spaces, like a file of gigabytes
// that starts as JSON.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	if e.n == 0 && len(p) > 0 {
		p[0] = '['
	}
	e.n += int64(len(p))
	return len(p), nil
}

// A stream of gigabytes is refused once it passes the limit: what is read
// (and held) stays bounded.
func TestReadEndlessInput(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 256 MiB")
	}
	r := &endless{}
	_, err := report.ReadNamed(r, "standard input")
	want := "read standard input: more than 268435456 bytes (256 MiB): too large for a results document (the limit is 268435456 bytes (256 MiB))"
	if err == nil || err.Error() != want {
		t.Fatalf("%v\nwant %s", err, want)
	}
	if r.n > report.MaxDocumentBytes+1<<20 {
		t.Errorf("read %d bytes, more than the limit of %d and a buffer", r.n, report.MaxDocumentBytes)
	}
}

// A regular file over the limit is refused by its size, unread: a sparse
// file of 1 GiB takes no disk and would take seconds to read.
func TestReadFileTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(hostileHead + `"results":[`); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = report.ReadFile(path)
	want := "read " + path + ": 1073741824 bytes (1 GiB): too large for a results document (the limit is 268435456 bytes (256 MiB))"
	if err == nil || err.Error() != want {
		t.Errorf("%v\nwant %s", err, want)
	}

	// Exactly at the limit is read (and refused for what it holds).
	if err := os.Truncate(path, report.MaxDocumentBytes); err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		return
	}
	_, err = report.ReadFile(path)
	if err == nil || strings.Contains(err.Error(), "too large") || !strings.HasPrefix(err.Error(), "read "+path+": malformed JSON") {
		t.Errorf("a file at the limit: %v", err)
	}
}

// checkShape's estimate against a lower limit: maps and strings count
// too, the fields of an embedded struct as the document's own, and what
// the document does not decode (unknown fields) does not.
func TestCheckShape(t *testing.T) {
	const limit = 1 << 20
	cases := []struct {
		name string
		in   []byte
		ok   bool
	}{
		{"a real document", mustJSON(t, reporttest.SweepDoc(false)), true},
		{"many map entries", repeated(hostileHead+`"params":{"extra":{`, `"k":"v"`, 40_000, "}}}"), false},
		{"many distinct clocks", []byte(string(repeated(hostileHead+`"clocks":{`, `"c":{}`, 20_000, "}}"))), false},
		{"a long string", []byte(hostileHead + `"error":"` + strings.Repeat("x", limit+1) + `"}`), false},
		{"many warnings", repeated(hostileHead+`"warnings":[`, `""`, 100_000, "]}"), false},
		{"many sizes", repeated(hostileHead+`"params":{"sizes":[`, `0`, 200_000, "]}}"), false},
		// cpus is a field of a struct Params embeds (settings.Loops).
		{"many cores", repeated(hostileHead+`"params":{"cpus":[`, `0`, 200_000, "]}}"), false},
		{"many intervals", repeated(hostileHead+`"results":[{"intervals":[`, `{"bandwidth":{}}`, 20_000, "]}]}"), false},
		{"an unknown field holds much", repeated(hostileHead+`"unknown":[`, `{}`, 400_000, "]}"), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !json.Valid(tc.in) {
				t.Fatal("not valid JSON")
			}
			err := report.CheckShape(tc.in, limit)
			if (err == nil) != tc.ok {
				t.Errorf("checkShape: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func mustJSON(t *testing.T, doc *report.Document) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := report.WriteJSON(&b, doc); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// hostileDocs are documents whose values are absurd but that encoding/json
// would decode: huge, zero, negative (as a Document built in Go may hold),
// broken histograms, names full of markup.
func hostileDocs() map[string]*report.Document {
	huge := func() *report.Document {
		d := report.NewDocument()
		big := math.MaxFloat64
		d.Params.Sizes = []int{math.MaxInt, 1}
		d.Params.Iterations, d.Params.QPs, d.Params.DurationS, d.Params.Repeat = math.MaxInt, math.MaxInt, big, math.MaxInt
		d.Clocks = map[string]report.Clock{"tsc": {Source: "x", ResolutionNs: big, ReadCostNs: big}}
		lat := &report.Latency{Basis: report.BasisRTT, Count: math.MaxInt64, MinNs: big, MeanNs: big, StdevNs: big, P50Ns: big, P90Ns: big,
			P99Ns: big, P999Ns: big, P9999Ns: big, MaxNs: big}
		bw := &report.Bandwidth{Bytes: math.MaxUint64, Messages: math.MaxUint64, DurationNs: math.MaxInt64, Gbps: big, MiBps: big, Mmsgps: big}
		for i, test := range []string{"write-lat", "write-bw", "send-bw", "tcp-lat"} {
			d.Results = append(d.Results, report.Result{Test: test, Connection: "RC", Size: math.MaxInt - i, Run: math.MaxInt,
				Iterations: math.MaxInt, Warmup: math.MaxInt, QPs: math.MaxInt, DurationS: big, Clock: "tsc",
				Effective: &report.Effective{TxDepth: math.MaxInt, CQMod: math.MaxInt, InlineMax: math.MaxInt, PathMTU: math.MaxInt},
				Latency:   lat, Bandwidth: bw, Reverse: bw, Total: bw,
				Intervals: []report.Interval{{StartS: big, DurationS: big, Bandwidth: bw, Latency: lat}, {StartS: 0, DurationS: 0, Bandwidth: bw}}})
		}
		return d
	}
	zero := func() *report.Document {
		d := report.NewDocument()
		d.Results = []report.Result{
			{Test: "write-lat", Latency: &report.Latency{}},
			{Test: "write-bw", Bandwidth: &report.Bandwidth{}, Intervals: []report.Interval{{}, {Bandwidth: &report.Bandwidth{}}, {Latency: &report.Latency{}}}},
			{Test: "send-bw", Bandwidth: &report.Bandwidth{}, Reverse: &report.Bandwidth{}, Total: &report.Bandwidth{}},
			{},
		}
		d.Summaries = []report.Summary{{Latency: &report.LatencySummary{}, Bandwidth: &report.BandwidthSummary{}}}
		return d
	}
	negative := func() *report.Document {
		d := report.NewDocument()
		d.Params.Sizes = []int{-1, 0, -1 << 62}
		lat := &report.Latency{Basis: report.BasisRTTHalf, Count: -1, MinNs: -5, MeanNs: -1e300, P50Ns: -1, P99Ns: -math.MaxFloat64, MaxNs: -1, Histogram: "HISTFAAAAB"}
		bw := &report.Bandwidth{DurationNs: math.MinInt64, Gbps: -1, MiBps: -math.MaxFloat64, Mmsgps: -1}
		for i := range 14 { // more sizes than the plot labels one by one
			d.Results = append(d.Results, report.Result{Test: "write-lat", Connection: "RC", Size: -i * 1000, Run: -i, Iterations: -1,
				Warmup: math.MinInt, QPs: -3, DurationS: -1, Latency: lat},
				report.Result{Test: "write-bw", Connection: "RC", Size: -i, Bandwidth: bw, Intervals: []report.Interval{{StartS: -1, DurationS: -1, Bandwidth: bw}}})
		}
		return d
	}
	nonFinite := func() *report.Document {
		d := report.NewDocument()
		nan, inf := math.NaN(), math.Inf(1)
		lat := &report.Latency{Basis: report.BasisRTT, Count: 3, MinNs: nan, MeanNs: inf, StdevNs: nan, P50Ns: inf, P90Ns: math.Inf(-1), P99Ns: nan, P999Ns: nan, P9999Ns: nan, MaxNs: inf}
		bw := &report.Bandwidth{Bytes: 1, Messages: 1, DurationNs: 1, Gbps: nan, MiBps: inf, Mmsgps: math.Inf(-1)}
		for run := 1; run <= 6; run++ {
			d.Results = append(d.Results, report.Result{Test: "write-lat", Size: 2, Run: run, Latency: lat},
				report.Result{Test: "write-bw", Size: 2, Run: run, Bandwidth: bw, Intervals: []report.Interval{{StartS: nan, DurationS: inf, Bandwidth: bw}}})
		}
		d.Params.Repeat = 6
		return d
	}
	histograms := func() *report.Document {
		d := report.NewDocument()
		for i, h := range []string{"", "HISTFAAA", "not base64!", "HISTFAAAAAAAAAAA", strings.Repeat("A", 4096), "HISTFAAAACx42pNpmSzMwMDAxQABzFCaEUzOmPXJHsL8AACfGAVj"} {
			d.Results = append(d.Results, report.Result{Test: "read-lat", Size: 1 << i, Iterations: 1,
				Latency: &report.Latency{Basis: report.BasisRTT, Count: 1, MinNs: 1, MeanNs: 1, P50Ns: 1, P90Ns: 1, P99Ns: 1, P999Ns: 1, P9999Ns: 1, MaxNs: 1, Histogram: h}})
		}
		return d
	}
	markup := func() *report.Document {
		d := report.NewDocument()
		evil := "<script>alert(1)</script>|\"a,b\"\n# HELP x\r\n\x00\x1b[31m}{"
		d.Command = []string{evil}
		d.Tool = report.Tool{Name: evil, Version: evil}
		d.Hosts.Local = report.Host{Hostname: evil, CPU: evil, Device: &report.Device{Name: evil, Firmware: evil, LinkLayer: evil}}
		d.Params.Extra = map[string]string{evil: evil}
		d.Params.Device, d.Params.Connection = evil, evil
		d.Warnings = []string{evil}
		d.Error = evil
		d.Results = []report.Result{
			{Test: evil, Connection: evil, Size: 2, Clock: evil, Latency: &report.Latency{Basis: evil, Count: 1, P50Ns: 1}, Warnings: []string{evil}, Error: evil},
			{Test: "write-bw", Connection: evil, Size: 2, Bandwidth: &report.Bandwidth{Bytes: 1, Messages: 1, DurationNs: 1, Gbps: 1}},
			{Test: "", Size: 2, Latency: &report.Latency{Basis: "", Count: 1}},
		}
		return d
	}
	duplicates := func() *report.Document {
		d := report.NewDocument()
		r := report.Result{Test: "write-lat", Size: 2, Latency: &report.Latency{Basis: report.BasisRTT, Count: 1, P50Ns: 1}}
		d.Results = []report.Result{r, r, r}
		d.Summaries = d.Summarize()
		d.Summaries = append(d.Summaries, d.Summaries...)
		return d
	}
	return map[string]*report.Document{"huge values": huge(), "zero values": zero(), "negative values": negative(),
		"non-finite values": nonFinite(), "broken histograms": histograms(), "markup in names": markup(),
		"duplicate results": duplicates(), "empty": report.NewDocument(), "no results": {}}
}

// tryRender runs f; a panic fails the test, naming what panicked.
func tryRender(t *testing.T, what string, f func() error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
		}
	}()
	_ = f()
}

// checkText runs the renderer f as tryRender does. Text meant for a
// terminal carries no control character from the document (an escape
// sequence, a carriage return).
func checkText(t *testing.T, what string, f func(w io.Writer) error) {
	t.Helper()
	tryRender(t, what, func() error {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			return err
		}
		if i := bytes.IndexFunc(b.Bytes(), func(r rune) bool { return r < ' ' && r != '\n' && r != '\t' || r == 0x7f }); i >= 0 {
			t.Errorf("%s wrote a control character: %q", what, b.Bytes()[max(i-40, 0):min(i+40, b.Len())])
		}
		return nil
	})
}
