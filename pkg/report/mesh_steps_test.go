package report

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

func TestJain(t *testing.T) {
	for _, c := range []struct {
		x    []float64
		want float64
	}{{nil, 0}, {[]float64{0, 0}, 0}, {[]float64{5}, 1}, {[]float64{3, 3, 3}, 1}, {[]float64{1, 0, 0, 0}, 0.25}, {[]float64{1, 2}, 0.9}} {
		if got := Jain(c.x); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Jain(%v) = %v, want %v", c.x, got, c.want)
		}
	}
}

// A counter's change, the congestion ones named, those the device lacks
// said absent; a counter that went back counts from 0.
func TestCounterChange(t *testing.T) {
	before := map[string]uint64{"np_cnp_sent": 5, "rcvd_pkts": 100, "netdev:tx_pause_frames": 1, "reset": 50}
	after := map[string]uint64{"np_cnp_sent": 9, "rcvd_pkts": 100, "netdev:tx_pause_frames": 1, "reset": 3, "new": 2}
	sc := CounterChange(2, "mlx5_0", 1, before, after)
	if sc.Watched != 5 || fmt.Sprint(sc.Deltas) != "map[new:2 np_cnp_sent:4 reset:3]" ||
		fmt.Sprint(sc.Congestion) != "map[netdev:tx_pause_frames:0 np_cnp_sent:4]" ||
		!slices.Equal(sc.Absent, []string{"np_ecn_marked_roce_packets", "rp_cnp_handled", "rp_cnp_ignored", "out_of_sequence", "packet_seq_err"}) {
		t.Errorf("%+v", sc)
	}
}

func flowLink(from, to int, gbps float64, start, end time.Time) MeshLink {
	return MeshLink{From: from, To: to, Start: start, End: end, Results: []Result{{Test: "write-bw", Bandwidth: &Bandwidth{Gbps: gbps}}}}
}

// A step's receivers: aggregate, share of the nominal rate, Jain,
// min/max over median; per host when two ranks of one host receive; the
// overlap and its warning; the gates naming step and receiver.
func TestNewMeshStep(t *testing.T) {
	t0 := time.Unix(1000, 0).UTC()
	s := func(d float64) time.Time { return t0.Add(time.Duration(d * float64(time.Second))) }
	in := StepInput{Step: 2, Receiver: -1, Ranks: []int{0, 1, 2, 3},
		Flows:    []MeshLink{flowLink(2, 0, 10, s(0), s(2)), flowLink(3, 0, 30, s(0), s(2)), flowLink(2, 1, 20, s(0), s(2)), flowLink(3, 1, 20, s(0.1), s(2))},
		Probe:    &MeshLink{From: 2, To: 0, Results: []Result{{Test: "write-lat", Size: 2, Latency: &Latency{Count: 10, P99Ns: 5000}}}},
		LinkGbps: map[int]float64{0: 100, 1: 100}, Hosts: []string{"a", "a", "b", "c"}}
	st := NewMeshStep(in)
	if len(st.Receivers) != 2 || st.Receiver != nil || st.Error != "" || len(st.Warnings) != 0 || math.Abs(st.Overlap-0.95) > 1e-9 {
		t.Fatalf("%+v", st)
	}
	r0 := st.Receivers[0]
	if *r0.Rank != 0 || r0.AggregateGbps != 40 || *r0.Share != 0.4 || math.Abs(r0.Jain-0.8) > 1e-12 || r0.MinOverMedian != 0.5 || r0.MaxOverMedian != 1.5 {
		t.Errorf("rank 0: %+v", r0)
	}
	if len(st.Hosts) != 1 || st.Hosts[0].Host != "a" || st.Hosts[0].AggregateGbps != 80 || *st.Hosts[0].Share != 0.4 || st.Hosts[0].Flows != 4 {
		t.Errorf("hosts %+v", st.Hosts)
	}
	if st.Probe == nil || st.Probe.Test != "write-lat" || st.Probe.Latency.P99Ns != 5000 {
		t.Errorf("probe %+v", st.Probe)
	}
	fails := CheckSteps([]MeshStep{st}, PatternLimits{MinShare: 0.5, MinJain: 0.9, MaxLoadP99Ns: 4000})
	var got []string
	for _, f := range fails {
		got = append(got, f.Gate+" "+f.Receiver)
	}
	if !slices.Equal(got, []string{"share rank 0", "fairness rank 0", "share rank 1", "share a", "fairness a", "load-p99 probe 2 -> 0"}) {
		t.Errorf("failures %q", got)
	}
	if fails[0].Message != "step 2, rank 0: aggregate 40 Gbit/s is 40.0% of its 100 Gbit/s link, below the limit 50.0%" {
		t.Errorf("message %q", fails[0].Message)
	}
	// Flows that did not overlap, one failed, and no nominal rate (TCP).
	in = StepInput{Step: 1, Receiver: 0, Flows: []MeshLink{flowLink(1, 0, 10, s(0), s(1)), flowLink(2, 0, 10, s(0.9), s(2)), {From: 3, To: 0, Error: "refused"}},
		NoShare: "tcp-bw: TCP has no nominal rate of its own"}
	st = NewMeshStep(in)
	if len(st.Warnings) != 1 || st.Error != "1 of 3 flows failed: 3 -> 0: refused" || st.Receivers[0].Share != nil ||
		st.Receivers[0].NoShare == "" || st.Receivers[0].Measured != 2 || st.Receivers[0].Flows != 3 || *st.Receiver != 0 {
		t.Errorf("%+v", st)
	}
}
