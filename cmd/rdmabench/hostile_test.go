package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/render"
)

// hostileFiles writes, in dir, files that are not results documents or are
// broken ones, and returns each path with what its error must say.
func hostileFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	var good bytes.Buffer
	if err := report.WriteJSON(&good, runsDoc("mlx5_0", []float64{1.31}, []float64{98.5})); err != nil {
		t.Fatal(err)
	}
	head := `{"schema":"rdmabench/result/v1",`
	result := func(fields string) string {
		return head + `"results":[{"test":"write-lat","size":2,` + fields + `}]}`
	}
	files := map[string]struct{ content, says string }{
		"truncated.json":    {good.String()[:good.Len()/2], "truncated JSON"},
		"nested.json":       {head + `"x":` + strings.Repeat("[", 50_000) + strings.Repeat("]", 50_000) + `}`, "exceeded max depth"},
		"nested-some.json":  {head + `"x":` + strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40) + `}`, "nested more than 32 levels deep"},
		"nan.json":          {result(`"latency":{"basis":"rtt","count":1,"p99_ns":NaN}`), "malformed JSON at line 1"},
		"huge-number.json":  {result(`"latency":{"basis":"rtt","count":1,"p99_ns":1e999}`), `field "results.latency.p99_ns": cannot store JSON number 1e999 in float64`},
		"huge-int.json":     {result(`"iterations":123456789012345678901234567890`), `field "results.iterations": cannot store JSON number`},
		"negative.json":     {result(`"latency":{"basis":"rtt","count":-7}`), "result 1 (write-lat, 2 B): latency: negative count -7"},
		"v2.json":           {`{"schema":"rdmabench/result/v2","results":[]}`, `unsupported schema "rdmabench/result/v2"`},
		"not-ours.json":     {`{"benchmarks":[]}`, `no "schema" field`},
		"array.json":        {"[" + good.String() + "]", "the input is a JSON array, not a results document"},
		"binary.json":       {"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff\xfe", "malformed JSON at line 1, column 1"},
		"empty.json":        {"", "empty input"},
		"amplifier.json":    {head + `"results":[` + strings.Repeat("{},", 1_500_000) + `{}]}`, "of memory once decoded, most of it for \"results\", more than the 256 MiB limit"},
		"a-directory.json/": {"", "is a directory"},
	}
	out := map[string]string{}
	for name, f := range files {
		path := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(path, []byte(f.content), 0o644); err != nil {
			t.Fatal(err)
		}
		out[path] = f.says
	}
	// 1 GiB, sparse: refused by its size, never read.
	huge := filepath.Join(dir, "huge.json")
	fh, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(head + `"results":[`); err != nil {
		t.Fatal(err)
	}
	if err := fh.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	out[huge] = "1073741824 bytes (1 GiB): too large for a results document (the limit is 268435456 bytes (256 MiB))"
	return out
}

// report, compare and plot refuse each hostile file with exit status 1 and
// an error that names it, and print nothing on stdout.
func TestHostileFiles(t *testing.T) {
	dir := t.TempDir()
	good := writeDoc(t, dir, "good.json", runsDoc("mlx5_0", []float64{1.31}, []float64{98.5}))
	for path, says := range hostileFiles(t, dir) {
		name := filepath.Base(path)
		for _, args := range [][]string{
			{"report", path},
			{"report", good, path, "-o", "csv"},
			{"compare", path, good},
			{"compare", good, path, "--max-regression", "5%"},
			{"plot", path, "-o", filepath.Join(dir, "plot.html")},
		} {
			t.Run(name+"/"+args[0], func(t *testing.T) {
				stdout, stderr, code := cli(t, args...)
				if code != 1 {
					t.Errorf("%v: exit %d, want 1\nstderr: %s", args, code, stderr)
				}
				if stdout != "" {
					t.Errorf("%v printed %q", args, stdout)
				}
				if !strings.Contains(stderr, path) {
					t.Errorf("%v: %q does not name the file", args, stderr)
				}
				if !strings.Contains(stderr, says) {
					t.Errorf("%v: %q does not say %q", args, stderr, says)
				}
			})
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "plot.html")); err == nil {
		t.Error("plot wrote a page for a file it refused")
	}
}

// A document whose values are absurd but decodable (the largest numbers
// JSON and the schema allow) renders in every format and compares, with
// exit status 0.
func TestHugeValues(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "huge-values.json")
	doc := `{"schema":"rdmabench/result/v1","params":{"sizes":[9223372036854775807]},"results":[` +
		`{"test":"write-lat","connection":"RC","size":9223372036854775807,"iterations":9223372036854775807,"warmup":9223372036854775807,` +
		`"latency":{"basis":"rtt_half","count":9223372036854775807,"min_ns":1.7e308,"mean_ns":1.7e308,"stdev_ns":1.7e308,"p50_ns":1.7e308,` +
		`"p90_ns":1.7e308,"p99_ns":1.7e308,"p99_9_ns":1.7e308,"p99_99_ns":1.7e308,"max_ns":1.7e308,"histogram":"HISTFAAAAB"}},` +
		`{"test":"write-bw","connection":"RC","size":1,"iterations":1,"warmup":0,"bandwidth":{"bytes":18446744073709551615,` +
		`"messages":18446744073709551615,"duration_ns":1,"bw_gbps":1.7e308,"bw_mibps":1.7e308,"msg_rate_mpps":1.7e308},` +
		`"reverse":{"bw_gbps":1.7e308},"intervals":[{"start_s":1e308,"duration_s":0,"bandwidth":{"bw_gbps":1.7e308}}]}]}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range render.Formats {
		if _, stderr, code := cli(t, "report", path, "-o", format); code != 0 {
			t.Errorf("report -o %s: exit %d: %s", format, code, stderr)
		}
	}
	for _, format := range render.CompareFormats {
		if _, stderr, code := cli(t, "compare", path, path, "-o", format, "--max-regression", "1%"); code != 0 {
			t.Errorf("compare -o %s: exit %d: %s", format, code, stderr)
		}
	}
	if _, stderr, code := cli(t, "plot", path, "-o", filepath.Join(dir, "p.html")); code != 0 {
		t.Errorf("plot: exit %d: %s", code, stderr)
	}
}
