package render

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// The CSV form of a load pattern mesh: its steps in long form, a row per
// flow, receiver (rank and host) figure and probe percentile; a failed
// flow and a lost probe with their errors; several pattern meshes in one
// table with their sources, and refused beside a pair mesh.
func TestMeshStepsCSV(t *testing.T) {
	doc := reporttest.PatternDoc()
	var b bytes.Buffer
	if err := Write(&b, FormatCSV, doc); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != strings.Join(MeshStepsCSVHeader, ",") {
		t.Fatalf("header %v", rows[0])
	}
	got := map[string]bool{}
	kinds := map[string]int{}
	for _, r := range rows[1:] {
		got[strings.Join(r, ",")] = true
		kinds[r[0]+" "+r[1]]++
	}
	for _, want := range []string{
		"1,flow,write-bw,0,node0,1,node0,bw,Gbit/s,40,",
		"1,flow,write-bw,2,node1,1,node0,bw,Gbit/s,50,",
		"1,receiver,write-bw,,,1,node0,aggregate,Gbit/s,90,",
		"1,receiver,write-bw,,,1,node0,link,Gbit/s,100,",
		"1,receiver,write-bw,,,1,node0,share,ratio,0.9,",
		"1,receiver,write-bw,,,1,node0,flows,count,2,",
		"1,probe,write-lat,0,node0,1,node0,p50,ns,2000,",
		"1,probe,write-lat,0,node0,1,node0,p99,ns,5000,",
		"2,flow,write-bw,1,node0,3,node1,bw,Gbit/s,,IBV_WC_RETRY_EXC_ERR",
		"2,receiver,write-bw,,,3,node1,measured,count,1,",
		"2,probe,write-lat,0,node0,3,node1,,,,rank 3 was lost",
		"3,host,write-bw,,,,node0,aggregate,Gbit/s,105,",
		"3,host,write-bw,,,,node0,link,Gbit/s,200,",
		"3,receiver,write-bw,,,1,node0,jain,index,1,",
	} {
		if !got[want] {
			t.Errorf("no row %q in\n%s", want, b.String())
		}
	}
	// Step 3: 12 flows, 4 ranks and 2 hosts of 9 figures each (flows,
	// measured, aggregate, link, share, Jain, min and max over the
	// median), the probe's p50, p99 and p99.9.
	for k, n := range map[string]int{"1 flow": 2, "2 flow": 2, "3 flow": 12, "3 receiver": 4 * 8, "3 host": 2 * 8, "3 probe": 3, "2 probe": 1} {
		if kinds[k] != n {
			t.Errorf("%s: %d rows, want %d", k, kinds[k], n)
		}
	}

	// TCP: no link, no share: those rows are absent.
	tcp := reporttest.PatternDoc()
	tcp.Mesh.Steps = tcp.Mesh.Steps[:1]
	rc := &tcp.Mesh.Steps[0].Receivers[0]
	rc.Share, rc.LinkGbps, rc.NoShare = nil, 0, "tcp-bw: TCP has no nominal rate of its own"
	b.Reset()
	if err := WriteSources(&b, FormatCSV, []report.Source{{Name: "a.json", Doc: doc}, {Name: "tcp.json", Doc: tcp}}); err != nil {
		t.Fatal(err)
	}
	rows, err = csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if rows[0][0] != "source" || len(rows[0]) != 1+len(MeshStepsCSVHeader) {
		t.Errorf("header of several %v", rows[0])
	}
	sources := map[string]int{}
	for _, r := range rows[1:] {
		sources[r[0]]++
		if r[0] == "tcp.json" && (r[8] == "share" || r[8] == "link") {
			t.Errorf("a %s row without a nominal rate: %v", r[8], r)
		}
	}
	if sources["a.json"] != len(got) || sources["tcp.json"] != 2+6+3 {
		t.Errorf("rows per source %v (want %d of a.json)", sources, len(got))
	}
	err = WriteSources(&bytes.Buffer{}, FormatCSV, []report.Source{{Name: "a.json", Doc: doc}, {Name: "mesh.json", Doc: reporttest.MeshPlotDoc()}})
	if err == nil || !strings.Contains(err.Error(), "load pattern meshes (their steps) and other documents have different columns") {
		t.Errorf("a pattern beside a pair mesh: %v", err)
	}
}
