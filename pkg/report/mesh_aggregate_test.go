package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestMeshAggregateStream: a link stream of 520 ranks reads as the same
// summary as its builder made.
func TestMeshAggregateStream(t *testing.T) {
	const hosts, rails = 65, 8
	lat := func(from, to int) float64 { return float64(1000 + (from*7+to)%13*10) }
	want := railMesh(t, hosts, rails, lat, [2]int{-1, -1})
	var s bytes.Buffer
	head := *want
	hm := *want.Mesh
	hm.Links, hm.Matrices, hm.Aggregate, hm.LinkCount = nil, nil, nil, 0
	head.Mesh = &hm
	if err := WriteEvent(&s, Event{Event: EventStart, Document: &head}); err != nil {
		t.Fatal(err)
	}
	// The links as a stream, with their results.
	rec := map[float64]*Latency{}
	bw := NewBandwidth(1000*65536, 1000, time.Duration(1000*65536*8/100))
	for a := range hosts {
		for c := range hosts {
			if a == c {
				continue
			}
			for k := range rails {
				from, to := a*rails+k, c*rails+k
				ns := lat(from, to)
				if rec[ns] == nil {
					r := NewLatencyRecorder(BasisRTT)
					r.Record(uint64(ns))
					rec[ns] = r.Snapshot()
				}
				l := MeshLink{From: from, To: to, Round: 1, Results: []Result{
					{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 1, Latency: rec[ns]},
					{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 1000, Bandwidth: bw}}}
				if err := WriteEvent(&s, Event{Event: EventLink, Link: &l}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	got, err := ReadJSON(&s)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := WriteJSON(&a, &Document{Mesh: &Mesh{Aggregate: want.Mesh.Aggregate}}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&b, &Document{Mesh: &Mesh{Aggregate: got.Mesh.Aggregate}}); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() || got.Mesh.LinkTotal() != want.Mesh.LinkTotal() || len(got.Mesh.Matrices) != 0 {
		t.Errorf("the stream's aggregate differs from the builder's (%d links, %d matrices)", got.Mesh.LinkTotal(), len(got.Mesh.Matrices))
	}
}

// TestCompareMeshHosts: two summaries of 520 ranks (no rank matrices)
// compare per host pair: the host pair made slower on every rail is the
// most changed, and the comparison says how it compared.
func TestCompareMeshHosts(t *testing.T) {
	const hosts, rails = 65, 8
	base := railMesh(t, hosts, rails, func(from, to int) float64 { return 2000 }, [2]int{-1, -1})
	slow := railMesh(t, hosts, rails, func(from, to int) float64 {
		if from/rails == 3 && to/rails == 4 {
			return 3000
		}
		return 2000
	}, [2]int{-1, -1})
	c, err := CompareMesh(base, slow, MeshCompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Matrices) != 3 || c.Base.Ranks != 520 || c.New.Links != hosts*(hosts-1)*rails {
		t.Fatalf("%d matrices, %d ranks, %d links", len(c.Matrices), c.Base.Ranks, c.New.Links)
	}
	p50 := c.Matrices[0]
	if p50.Links != hosts*(hosts-1) || len(p50.Top) != 1 || p50.Top[0].From != 3 || p50.Top[0].To != 4 ||
		p50.Top[0].FromHost != "node3" || p50.Top[0].Change == nil || *p50.Top[0].Change < 0.49 || *p50.Top[0].Change > 0.51 {
		t.Errorf("p50: %d host pairs, top %+v", p50.Links, p50.Top)
	}
	if len(c.Warnings) == 0 || !strings.HasPrefix(c.Warnings[0], "compared per host pair (65 and 65 hosts)") {
		t.Errorf("warnings %q", c.Warnings)
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
		_, err := ReadJSON(strings.NewReader(doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
