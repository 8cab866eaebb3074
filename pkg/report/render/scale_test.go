package render

import (
	"bytes"
	"github.com/rdmabench/rdmabench/internal/reporttest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/compare"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
	"github.com/rdmabench/rdmabench/pkg/settings"
)

// unitsDoc is a run whose latency tables need other units than µs: a
// fast NIC's write-lat and send-lat below 1 µs (ns), then write-bw, then
// tcp-lat of 8 MiB messages over an emulated link, milliseconds each (ms).
func unitsDoc() *report.Document {
	start := time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC)
	return &report.Document{
		Schema:  report.Schema,
		Tool:    report.Tool{Name: "rdmabench", Version: "0.1.0", Commit: "3f2a9c1", GoVersion: "go1.26.8", Verbs: true},
		Command: []string{"rdmabench", "suite", "node-b", "-d", "mlx5_0", "-n", "10000"},
		Start:   start,
		End:     start.Add(12 * time.Second),
		Hosts: report.Hosts{
			Local:  report.Host{Hostname: "node-a", Kernel: "6.8.0-45-generic", CPUs: 64},
			Remote: &report.Host{Hostname: "node-b", Kernel: "6.8.0-45-generic", CPUs: 64},
		},
		Params: report.Params{Server: "node-b", DevicePort: settings.DevicePort{Device: "mlx5_0"}, GIDIndex: -1, Iterations: 10000},
		Results: []report.Result{
			{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 10000, QPs: 1,
				Latency: reporttest.Latency(report.BasisRTTHalf, 10000, 0.481, 0.523, 0.5314, 0.0421, 0.552, 0.613, 1.204, 3.41, 3.41)},
			{Test: "send-lat", Connection: "RC", Size: 2, Iterations: 10000, QPs: 1,
				Latency: reporttest.Latency(report.BasisRTTHalf, 10000, 0.532, 0.581, 0.5902, 0.0388, 0.611, 0.702, 1.398, 4.022, 4.022)},
			{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 10000, QPs: 1,
				Bandwidth: report.NewBandwidth(655360000, 10000, 53_210_000*time.Nanosecond)},
			{Test: "tcp-lat", Connection: "TCP", Size: 8388608, Iterations: 100,
				Latency: reporttest.Latency(report.BasisRTTHalf, 100, 3901.2, 4210.5, 4302.25, 210.71, 4603.9, 5207.3, 8109.6, 9112.4, 9112.4)},
		},
	}
}

// A table shows each latency section in one unit, the one its p50s read
// in: below 1 µs ns, 1 ms and more ms, µs otherwise (and with none); the
// other forms keep nanoseconds.
func TestLatencyUnits(t *testing.T) {
	for _, c := range []struct {
		p50s []float64
		want string
	}{
		{nil, "µs"},
		{[]float64{523, 581}, "ns"},
		{[]float64{999.4}, "ns"},
		{[]float64{999.6}, "µs"},
		{[]float64{523, 1040}, "µs"},
		{[]float64{1040, 187_350}, "µs"},
		{[]float64{1e6, 4_210_500}, "ms"},
		{[]float64{999_000, 4_210_500}, "µs"},
	} {
		if got := textfmt.LatencyUnitOf(c.p50s).Name; got != c.want {
			t.Errorf("latencyUnitOf(%v) = %s, want %s", c.p50s, got, c.want)
		}
	}
	doc := unitsDoc()
	table := renderTable(t, doc)
	for _, want := range []string{
		"Latency, ns (rtt/2",
		"write-lat  RC          2  10000  rtt/2  481  523   531     42  552  613   1204    3410  3410",
		"Latency, ms (rtt/2",
		"tcp-lat    TCP   8388608    100  rtt/2  3.901  4.210  4.302  0.211  4.604  5.207  8.110   9.112  9.112",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q\n%s", want, table)
		}
	}
	csv := string(render(t, FormatCSV, doc))
	if !strings.Contains(csv, ",523,") || !strings.Contains(csv, ",4210500,") {
		t.Errorf("CSV is not in ns:\n%s", csv)
	}
	bench := string(render(t, FormatGobench, doc))
	if !strings.Contains(bench, "523.0 ns/op") && !strings.Contains(bench, "523 ns/op") {
		t.Errorf("gobench is not in ns/op:\n%s", bench)
	}
}

// The repeated-runs table, the comparison and a mesh matrix pick their
// unit likewise.
func TestLatencyUnitsElsewhere(t *testing.T) {
	fast := func(run int, p50us float64) report.Result {
		return report.Result{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 1000, Run: run,
			Latency: reporttest.Latency(report.BasisRTTHalf, 1000, p50us-0.05, p50us, p50us+0.01, 0.04, p50us+0.03, p50us+0.1, p50us+0.6, p50us+2, p50us+2)}
	}
	base, next := report.NewDocument(), report.NewDocument()
	base.Params.Repeat, next.Params.Repeat = 3, 3
	for run := 1; run <= 3; run++ {
		base.Results = append(base.Results, fast(run, 0.52+0.001*float64(run)))
		next.Results = append(next.Results, fast(run, 0.61+0.001*float64(run)))
	}
	if table := renderTable(t, base); !strings.Contains(table, "Latency, ns: median of the runs") || !strings.Contains(table, "  522  ") {
		t.Errorf("repeated runs below 1 µs are not in ns:\n%s", table)
	}
	var cmp bytes.Buffer
	if err := WriteComparison(&cmp, FormatTable, compare.Compare(base, next, compare.Options{}), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cmp.String(), "p50 ns") || !strings.Contains(cmp.String(), "522 ±∞") {
		t.Errorf("a comparison below 1 µs is not in ns:\n%s", cmp.String())
	}

	slow := reporttest.RailMesh(t, 3, 1, func(from, to int) float64 { return 2_000_000 + 1000*float64(from+to) }, [2]int{-1, -1})
	var mesh bytes.Buffer
	if err := Write(&mesh, FormatTable, slow); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(mesh.String(), "p50 latency (ms), from the row's rank") || !strings.Contains(mesh.String(), "2.001") ||
		!strings.Contains(mesh.String(), "; median of the 6 links 2.002 ms") {
		t.Errorf("a mesh matrix of milliseconds is not in ms:\n%s", mesh.String())
	}
}

// Messages of gates and limits write figures as tables do: rates scaled,
// the latencies of one message in one unit; a limit with the digits
// given.
func TestFormatAll(t *testing.T) {
	for _, c := range []struct {
		f    report.Figure
		vs   []float64
		want string
	}{
		{report.FigP50, []float64{4021, 1312.5, 1050}, "4.021 µs 1.312 µs 1.05 µs"},
		{report.FigP50, []float64{523, 900}, "523 ns 900 ns"},
		{report.FigP99, []float64{1_234_000, 1_000_000}, "1.234 ms 1 ms"},
		{report.FigP99, []float64{1_234_000, 900_000}, "1234 µs 900 µs"},
		{report.FigGbps, []float64{0.2092, 23.1}, "209.2 Mbit/s 23.10 Gbit/s"},
		{report.FigMsgRate, []float64{0.000399}, "399.0 msg/s"},
		{report.FigMiBps, []float64{24.94}, "24.94 MiB/s"},
	} {
		if got := strings.Join(c.f.FormatAll(c.vs...), " "); got != c.want {
			t.Errorf("%s.FormatAll(%v) = %q, want %q", c.f, c.vs, got, c.want)
		}
	}
	doc := unitsDoc()
	fails := doc.CheckLimits(report.Limits{P99: 5 * time.Millisecond, MinGbps: 100, MinMsgRate: 500_000})
	var got []string
	for _, f := range fails {
		got = append(got, f.Message)
	}
	want := []string{
		"write-bw RC 65536 B: bandwidth 98.53 Gbit/s < limit 100 Gbit/s",
		"write-bw RC 65536 B: message rate 187.9 kmsg/s < limit 500 kmsg/s",
		"tcp-lat TCP 8388608 B: p99 5.207 ms > limit 5 ms",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("limit messages:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A bandwidth section takes one unit per column, picked from its largest
// figure and named in the label; the cells are plain numbers with four
// significant digits, so a sweep's rows read against each other.
func TestRateUnitPerColumn(t *testing.T) {
	for _, c := range []struct {
		gbps []float64
		want string
	}{
		{nil, "Gbit/s"},
		{[]float64{0.0002899, 0.4953}, "Mbit/s"},
		{[]float64{0.0002899, 98.53}, "Gbit/s"},
		{[]float64{0.99996}, "Gbit/s"}, // 1.000 once rounded
		{[]float64{0.0000009}, "bit/s"},
	} {
		if got := textfmt.BandwidthUnitOf(c.gbps).Name; got != c.want {
			t.Errorf("BandwidthUnitOf(%v) = %s, want %s", c.gbps, got, c.want)
		}
	}
	u := textfmt.BandwidthUnitOf([]float64{0.0002899, 0.4953})
	for v, want := range map[float64]string{0.4953: "495.3", 0.0002899: "0.2899", 0.0000028991: "0.002899", 0.0123: "12.30", 1.5: "1500", 0: "0"} {
		if got := u.Cell(v); got != want {
			t.Errorf("%s cell of %v Gbit/s = %q, want %q", u.Name, v, got, want)
		}
	}
	if got := textfmt.MsgRateUnitOf([]float64{0.1879, 8.403}).Name; got != "Mmsg/s" {
		t.Errorf("message rate unit %s, want Mmsg/s", got)
	}
	if got := textfmt.MsgRateUnitOf([]float64{0.000399}).Name; got != "msg/s" {
		t.Errorf("message rate unit %s, want msg/s", got)
	}

	// A sweep on Soft-RoCE: 2 B to 8 MiB.
	doc := report.NewDocument()
	for _, c := range []struct {
		size int
		gbps float64
	}{{2, 0.0002899}, {4096, 0.2211}, {8388608, 0.4953}} {
		b := reporttest.BwAt(c.size, c.gbps)
		doc.Results = append(doc.Results, report.Result{Test: "write-bw", Connection: "RC", Size: c.size, Iterations: 10000, QPs: 1, Bandwidth: b})
	}
	table := renderTable(t, doc)
	for _, want := range []string{"BW Mbit/s  peak Mbit/s", "kmsg/s"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table's labels lack %q:\n%s", want, table)
		}
	}
	rows := map[int][]string{}
	for _, l := range strings.Split(table, "\n") {
		if f := strings.Fields(l); len(f) > 6 && f[0] == "write-bw" {
			size, _ := strconv.Atoi(f[2])
			rows[size] = f
		}
	}
	for size, want := range map[int]string{2: "0.2899", 4096: "221.1", 8388608: "495.3"} {
		if f := rows[size]; len(f) < 7 || f[6] != want {
			t.Errorf("the %d B row's bandwidth is not %s Mbit/s: %v", size, want, f)
		}
	}
	for _, f := range rows {
		if strings.Contains(strings.Join(f, " "), "/s") {
			t.Errorf("a unit in a row's cells: %v", f)
		}
	}
}
