package report_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/latency"
	"github.com/rdmabench/rdmabench/pkg/report"
)

func TestJSONRoundTrip(t *testing.T) {
	for name, doc := range map[string]*report.Document{"full": reporttest.FullDoc(), "duration": reporttest.DurationDoc(), "empty": report.NewDocument()} {
		var buf bytes.Buffer
		if err := report.WriteJSON(&buf, doc); err != nil {
			t.Fatal(err)
		}
		got, err := report.ReadJSON(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, buf.Bytes())
		}
		// time.Time keeps its location pointer; compare instants, then the rest.
		if !got.Start.Equal(doc.Start) || !got.End.Equal(doc.End) {
			t.Errorf("%s: times %v..%v, want %v..%v", name, got.Start, got.End, doc.Start, doc.End)
		}
		want := *doc
		want.Start, want.End = got.Start, got.End
		if !reflect.DeepEqual(got, &want) {
			t.Errorf("%s: round trip differs\n got %+v\nwant %+v", name, got, &want)
		}
		// And writing it again gives the same bytes: stable field order.
		var again bytes.Buffer
		if err := report.WriteJSON(&again, got); err != nil {
			t.Fatal(err)
		}
		if again.String() != buf.String() {
			t.Errorf("%s: second encoding differs", name)
		}
	}
}

func TestJSONFieldNames(t *testing.T) {
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, reporttest.FullDoc()); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	if !strings.HasPrefix(s, "{\n  \"schema\": \"rdmabench/result/v1\",\n  \"tool\": {") {
		t.Errorf("document does not start with the schema, then the tool:\n%.200s", s)
	}
	for _, f := range []string{
		`"go_version"`, `"verbs": true`, `"command"`, `"start"`, `"end"`, `"hosts"`, `"local"`, `"remote"`,
		`"node_guid"`, `"link_layer"`, `"active_mtu"`, `"gid_index"`, `"gid_type"`, `"clock"`, `"resolution_ns"`,
		`"reported_resolution_ns"`, `"read_cost_ns"`, `"params"`, `"tx_depth"`, `"cq_mod"`, `"results"`,
		`"test"`, `"connection"`, `"size"`, `"iterations"`, `"warmup"`, `"basis": "rtt_half"`, `"count"`,
		`"min_ns"`, `"mean_ns"`, `"stdev_ns"`, `"p50_ns"`, `"p90_ns"`, `"p99_ns"`, `"p99_9_ns"`, `"p99_99_ns"`,
		`"max_ns"`, `"histogram": "HISTFAAA`, `"bytes"`, `"messages"`, `"duration_ns"`, `"bw_gbps"`, `"bw_mibps"`,
		`"msg_rate_mpps"`, `"reverse"`, `"total"`, `"intervals"`, `"start_s"`, `"duration_s"`, `"warnings"`, `"error"`,
	} {
		if !strings.Contains(s, f) {
			t.Errorf("JSON lacks %s", f)
		}
	}
	// Loopback: no remote host at all rather than null.
	buf.Reset()
	if err := report.WriteJSON(&buf, reporttest.DurationDoc()); err != nil {
		t.Fatal(err)
	}
	var m map[string]map[string]any
	if err := json.Unmarshal(buf.Bytes(), &struct {
		Hosts *map[string]map[string]any `json:"hosts"`
	}{&m}); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["remote"]; ok {
		t.Error("loopback document has hosts.remote")
	}
}

func TestWriteJSONDefaults(t *testing.T) {
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, &report.Document{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"schema": "rdmabench/result/v1"`, `"command": []`, `"results": []`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("zero document: JSON lacks %s:\n%s", want, buf.String())
		}
	}
	if err := report.WriteJSON(&buf, nil); err == nil {
		t.Error("nil document: no error")
	}
}

func TestReadJSONErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, reporttest.FullDoc()); err != nil {
		t.Fatal(err)
	}
	good := buf.String()
	for _, tc := range []struct {
		name, in string
		want     []string // substrings of the error
	}{
		{"other schema", strings.Replace(good, report.Schema, "rdmabench/result/v2", 1), []string{`"rdmabench/result/v2"`, `"rdmabench/result/v1"`, "unsupported schema"}},
		{"foreign schema", `{"schema": "fortio/1", "results": []}`, []string{`"fortio/1"`}},
		{"no schema", `{"tool": {"name": "x"}}`, []string{`no "schema"`}},
		{"truncated", good[:len(good)/2], []string{"truncated"}},
		{"truncated early", `{"schema": "rdmabench/re`, []string{"truncated"}},
		{"empty", " \n", []string{"empty"}},
		{"malformed", "{\n  \"schema\": \"rdmabench/result/v1\",\n  \"results\": [}\n", []string{"malformed", "line 3"}},
		{"not an object", `[1, 2]`, []string{"JSON array, not a results document"}},
		{"wrong type", `{"schema": "rdmabench/result/v1", "results": [{"size": "big"}]}`, []string{"results.size", "string"}},
		{"trailing garbage", good + "}", []string{"malformed"}},
	} {
		_, err := report.ReadJSON(strings.NewReader(tc.in))
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		t.Logf("%s: %v", tc.name, err)
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", tc.name, err, w)
			}
		}
	}
}

func FuzzDecodeHistogram(f *testing.F) {
	rec := latency.NewRecorder(report.BasisRTT)
	rec.RecordBatch([]uint64{1, 1000, 1e6, 1e9})
	f.Add(rec.Snapshot().Histogram)
	f.Add("HISTFAAA")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := (&report.Latency{Histogram: s}).DecodeHistogram()
		if err == nil && h.TotalCount() < 0 {
			t.Fatalf("negative count %d", h.TotalCount())
		}
	})
}
