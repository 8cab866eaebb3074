package report_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/latency"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// TestMeshAggregateStream: a link stream of 520 ranks reads as the same
// summary as its builder made.
func TestMeshAggregateStream(t *testing.T) {
	const hosts, rails = 65, 8
	lat := func(from, to int) float64 { return float64(1000 + (from*7+to)%13*10) }
	want := reporttest.RailMesh(t, hosts, rails, lat, [2]int{-1, -1})
	var s bytes.Buffer
	head := *want
	hm := *want.Mesh
	hm.Links, hm.Matrices, hm.Aggregate, hm.LinkCount = nil, nil, nil, 0
	head.Mesh = &hm
	if err := report.WriteEvent(&s, report.Event{Event: report.EventStart, Document: &head}); err != nil {
		t.Fatal(err)
	}
	// The links as a stream, with their results.
	rec := map[float64]*report.Latency{}
	bw := report.NewBandwidth(1000*65536, 1000, time.Duration(1000*65536*8/100))
	for a := range hosts {
		for c := range hosts {
			if a == c {
				continue
			}
			for k := range rails {
				from, to := a*rails+k, c*rails+k
				ns := lat(from, to)
				if rec[ns] == nil {
					r := latency.NewRecorder(report.BasisRTT)
					r.Record(uint64(ns))
					rec[ns] = r.Snapshot()
				}
				l := report.MeshLink{From: from, To: to, Round: 1, Results: []report.Result{
					{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 1, Latency: rec[ns]},
					{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 1000, Bandwidth: bw}}}
				if err := report.WriteEvent(&s, report.Event{Event: report.EventLink, Link: &l}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	got, err := report.ReadJSON(&s)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := report.WriteJSON(&a, &report.Document{Mesh: &report.Mesh{Aggregate: want.Mesh.Aggregate}}); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJSON(&b, &report.Document{Mesh: &report.Mesh{Aggregate: got.Mesh.Aggregate}}); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() || got.Mesh.LinkTotal() != want.Mesh.LinkTotal() || len(got.Mesh.Matrices) != 0 {
		t.Errorf("the stream's aggregate differs from the builder's (%d links, %d matrices)", got.Mesh.LinkTotal(), len(got.Mesh.Matrices))
	}
}

// TestMeshAggregateHostile: an aggregate no mesh makes is refused when
// read, naming what is wrong, rather than rendered.
func TestMeshAggregateHostile(t *testing.T) {
	for _, tc := range []struct {
		name, json, want string
	}{
		{"ragged", `{"hosts":["a","b"],"rails":1,"figures":[{"test":"t","size":2,"figure":"p50","unit":"ns","links":1,"host_median":[[null,1]],"hosts":[],"nics":[],"rails":[]}]}`,
			"host_median has 1 rows for 2 hosts"},
		{"no rank", `{"hosts":["a"],"rails":1,"figures":[{"test":"t","size":2,"figure":"p50","unit":"ns","links":1,"host_median":[[null]],"hosts":[],"nics":[{"host":0,"rail":0,"links":1,"slow":0}],"rails":[]}]}`,
			"a row of nics without its rank"},
		{"negative", `{"hosts":["a"],"rails":1,"figures":[{"test":"t","size":2,"figure":"p50","unit":"ns","links":1,"host_median":[[-1]],"hosts":[],"nics":[],"rails":[]}]}`,
			"negative host_median value"},
	} {
		doc := `{"schema":"rdmabench/result/v1","results":[],"mesh":{"size":1,"coordinator":"x","tests":["t"],"rounds":0,"schedule":"round-robin","ranks":[],"links":[],"matrices":[],"aggregate":` + tc.json + `}}`
		_, err := report.ReadJSON(strings.NewReader(doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestMeshShape: a mesh says its ranks and the hosts they ran on, by host
// name, a rank whose host is unknown (it never registered) counted apart.
func TestMeshShape(t *testing.T) {
	mesh := func(size int, hosts ...string) *report.Mesh {
		m := &report.Mesh{Size: size}
		for r, h := range hosts {
			rk := report.MeshRank{Rank: r, State: report.RankOK}
			if h != "" {
				rk.Host = &report.Host{Hostname: h}
			}
			m.Ranks = append(m.Ranks, rk)
		}
		return m
	}
	for _, tc := range []struct {
		m    *report.Mesh
		want string
	}{
		{mesh(4, "node1", "node2", "node3", "node4"), "4 ranks on 4 hosts"},
		{mesh(2, "vm", "vm"), "2 ranks on 1 host"},
		{mesh(16, "a", "a", "a", "a", "a", "a", "a", "a", "b", "b", "b", "b", "b", "b", "b", "b"), "16 ranks on 2 hosts"},
		{mesh(3, "a", "b", ""), "3 ranks on 2 hosts (1 rank's host unknown)"},
		{mesh(4, "a", "a"), "4 ranks on 1 host (2 ranks' hosts unknown)"},
		{mesh(2), "2 ranks"},
		{reporttest.AggregateOnlyMesh(t).Mesh, "520 ranks on 65 hosts"},
	} {
		if got := tc.m.Shape(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.m.Ranks, got, tc.want)
		}
	}
}
