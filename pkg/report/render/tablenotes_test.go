package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// countersDoc is a run between two hosts whose write-bw at 64 KiB moved
// counters on both ends, whose 4 KiB moved none (though they were read),
// and whose send-bw failed after retrying.
func countersDoc() *report.Document {
	doc := report.NewDocument()
	doc.Hosts.Local = report.Host{Hostname: "node-a", Device: &report.Device{Name: "mlx5_0", Port: 1}}
	doc.Hosts.Remote = &report.Host{Hostname: "node-b", Device: &report.Device{Name: "mlx5_3", Port: 2}}
	bw := report.NewBandwidth(1000*65536, 1000, 50*time.Millisecond)
	doc.Results = []report.Result{
		{Test: "write-bw", Connection: "RC", Size: 4096, Iterations: 1000, QPs: 1, Bandwidth: report.NewBandwidth(1000*4096, 1000, 5*time.Millisecond),
			PortCounters: &report.PortCounters{Client: &report.CounterDeltas{Watched: 14}, Server: &report.CounterDeltas{Watched: 14}}},
		{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 1000, QPs: 1, Bandwidth: bw,
			PortCounters: &report.PortCounters{
				Client: &report.CounterDeltas{Watched: 14, Deltas: map[string]uint64{"duplicate_request": 544, "completer_retry_err": 19}},
				Server: &report.CounterDeltas{Watched: 14, Deltas: map[string]uint64{"rcvd_seq_err": 3}}}},
		{Test: "send-bw", Connection: "RC", Size: 65536, QPs: 1, Error: "work completion IBV_WC_RETRY_EXC_ERR",
			PortCounters: &report.PortCounters{Client: &report.CounterDeltas{Watched: 14, Deltas: map[string]uint64{"retry_exceeded_err": 1}}}},
	}
	return doc
}

// The port counters that moved are listed under the table, one line per
// test, size and end with its device and port; a size whose counters did
// not move has no line.
func TestTableShowsPortCountersThatMoved(t *testing.T) {
	doc := countersDoc()
	want := []string{
		"port counters that moved (each end's port over the test; other traffic on the port counts too):",
		"  write-bw RC 65536 B, client mlx5_0 port 1: completer_retry_err +19, duplicate_request +544",
		"  write-bw RC 65536 B, server mlx5_3 port 2: rcvd_seq_err +3",
		"  send-bw RC 65536 B, client mlx5_0 port 1: retry_exceeded_err +1",
	}
	table := renderTable(t, doc)
	if !strings.Contains(table, "\n\n"+strings.Join(want, "\n")+"\n") {
		t.Errorf("the table does not list the counters that moved as\n%s\n--- table:\n%s", strings.Join(want, "\n"), table)
	}
	if strings.Contains(table, "4096 B,") {
		t.Errorf("a size whose counters did not move has a line:\n%s", table)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, doc); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"- port counters that moved", "  - write-bw RC 65536 B, client mlx5\\_0 port 1: completer\\_retry\\_err +19, duplicate\\_request +544",
		"  - send-bw RC 65536 B, client mlx5\\_0 port 1: retry\\_exceeded\\_err +1"} {
		if !strings.Contains(md.String(), "\n"+l) {
			t.Errorf("markdown lacks the line %q:\n%s", l, md.String())
		}
	}

	// In loopback both ends count on one port; runs are named.
	doc.Hosts.Remote = nil
	doc.Params.Repeat = 2
	for i := range doc.Results {
		doc.Results[i].Run = 1
		doc.Results[i].PortCounters.Server = nil
	}
	second := doc.Results[1]
	second.Run = 2
	doc.Results = append(doc.Results, second)
	table = renderTable(t, doc)
	for _, l := range []string{
		"  write-bw RC 65536 B, run 1, both ends (loopback) mlx5_0 port 1: completer_retry_err +19, duplicate_request +544",
		"  write-bw RC 65536 B, run 2, both ends (loopback) mlx5_0 port 1: completer_retry_err +19, duplicate_request +544",
	} {
		if !strings.Contains(table, "\n"+l+"\n") {
			t.Errorf("the table of repeated runs in loopback lacks %q:\n%s", l, table)
		}
	}
}

// Nothing is said of counters when none moved, or none were read.
func TestTableNoPortCountersWhenNoneMoved(t *testing.T) {
	doc := countersDoc()
	doc.Results = doc.Results[:1] // read, none moved
	doc.Results = append(doc.Results, report.Result{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 10,
		Latency: &report.Latency{Basis: report.BasisRTTHalf}}) // not read
	table := renderTable(t, doc)
	var md bytes.Buffer
	if err := WriteMarkdown(&md, doc); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{table, md.String()} {
		if strings.Contains(out, "port counters") || strings.Contains(out, "+0") {
			t.Errorf("counters shown though none moved:\n%s", out)
		}
	}
}

// The peak column shows perftest's BW peak where it was measured, and
// says once why it is "-" elsewhere.
func TestTablePeakColumn(t *testing.T) {
	one := report.NewBandwidth(1000*65536, 1000, 50*time.Millisecond) // 10.49 Gbit/s
	one.PeakGbps = 11.2
	back := report.NewBandwidth(1000*65536, 1000, 60*time.Millisecond)
	back.PeakGbps = 9.5
	doc := report.NewDocument()
	doc.Results = []report.Result{
		{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 1000, QPs: 1, Bandwidth: one},
		{Test: "read-bw", Connection: "RC", Size: 65536, Iterations: 1000, QPs: 1, Bandwidth: one, Reverse: back, Total: report.Sum(one, back)},
		{Test: "tcp-bw", Connection: "TCP", Size: 65536, Iterations: 1000, Bandwidth: report.NewBandwidth(1000*65536, 1000, 80*time.Millisecond)},
	}
	table := renderTable(t, doc)
	fields := map[string]string{}
	for _, l := range strings.Split(table, "\n") {
		if f := strings.Fields(l); len(f) > 7 {
			fields[f[0]] = strings.Join(f[4:8], " ")
		}
	}
	for test, want := range map[string]string{"write-bw": "-> 1 10.49 11.20", "read-bw": "<-> 1 19.22 -", "tcp-bw": "-> - 6.554 -"} {
		if fields[test] != want {
			t.Errorf("%s row: dir, QPs, BW and peak %q, want %q", test, fields[test], want)
		}
	}
	for _, want := range []string{
		"BW Gbit/s  peak Gbit/s",
		"\n                              ->            10.49        11.20",
		"\npeak: perftest's BW peak, the fastest stretch",
		"\nno peak (-): <-> sums the two directions, whose fastest stretches need not coincide (perftest adds their\n" +
			"      peaks); TCP: its stream is timed as a whole\n",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	if strings.Count(table, "peak: perftest's BW peak") != 1 {
		t.Errorf("the peak is explained more than once:\n%s", table)
	}

	// A document that predates the peak says so; one without bandwidth
	// says nothing of it.
	one.PeakGbps, back.PeakGbps = 0, 0
	doc.Results = doc.Results[:1]
	if table := renderTable(t, doc); !strings.Contains(table, "no peak (-): not in this document") || strings.Contains(table, "peak: perftest's") {
		t.Errorf("an old document's table:\n%s", table)
	}
	doc.Results = []report.Result{{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 10, Latency: &report.Latency{Basis: report.BasisRTTHalf}}}
	if table := renderTable(t, doc); strings.Contains(table, "peak") {
		t.Errorf("a latency table speaks of the peak:\n%s", table)
	}
}

// On several devices at once each device's counters have their line,
// named by device; in loopback with a server device of its own, each end
// is named.
func TestTablePortCountersPerDevice(t *testing.T) {
	doc := report.NewDocument()
	doc.Hosts.Local = report.Host{Hostname: "node-a", Device: &report.Device{Name: "mlx5_0", Port: 1},
		Devices: []report.Device{{Name: "mlx5_0", Port: 1}, {Name: "mlx5_1", Port: 1}}}
	doc.Hosts.Remote = &report.Host{Hostname: "node-b", Device: &report.Device{Name: "mlx5_0", Port: 1},
		Devices: []report.Device{{Name: "mlx5_0", Port: 1}, {Name: "mlx5_1", Port: 2}}}
	bw := report.NewBandwidth(1000*65536, 1000, 50*time.Millisecond)
	moved := func(name string, n uint64) *report.CounterDeltas {
		return &report.CounterDeltas{Watched: 14, Deltas: map[string]uint64{name: n}}
	}
	doc.Results = []report.Result{{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 2000, QPs: 1, Bandwidth: report.Sum(bw, bw),
		Devices: []report.DeviceResult{
			{Device: "mlx5_0", ServerDevice: "mlx5_0", Iterations: 1000, Bandwidth: bw, PortCounters: &report.PortCounters{Client: &report.CounterDeltas{Watched: 14}}},
			{Device: "mlx5_1", ServerDevice: "mlx5_1", Iterations: 1000, Bandwidth: bw,
				PortCounters: &report.PortCounters{Client: moved("local_ack_timeout_err", 2), Server: moved("packet_seq_err", 5)}},
		}}}
	table := renderTable(t, doc)
	for _, l := range []string{
		"  write-bw RC 65536 B, client mlx5_1 port 1: local_ack_timeout_err +2\n",
		"  write-bw RC 65536 B, server mlx5_1 port 2: packet_seq_err +5\n",
	} {
		if !strings.Contains(table, l) {
			t.Errorf("the table lacks %q:\n%s", l, table)
		}
	}
	if strings.Contains(table, "mlx5_0 port 1:") {
		t.Errorf("a device whose counters did not move has a line:\n%s", table)
	}

	doc = report.NewDocument()
	doc.Hosts.Local = report.Host{Device: &report.Device{Name: "rxe0", Port: 1}}
	doc.Params.ServerDevice = "rxe1"
	doc.Results = []report.Result{{Test: "send-bw", Connection: "UC", Size: 4096, Iterations: 1000, QPs: 1, Bandwidth: bw,
		PortCounters: &report.PortCounters{Client: moved("rcvd_seq_err", 1), Server: moved("rcvd_seq_err", 7)}}}
	table = renderTable(t, doc)
	for _, l := range []string{"  send-bw UC 4096 B, client rxe0 port 1: rcvd_seq_err +1\n", "  send-bw UC 4096 B, server rxe1: rcvd_seq_err +7\n"} {
		if !strings.Contains(table, l) {
			t.Errorf("the loopback table with --server-dev lacks %q:\n%s", l, table)
		}
	}
}
