// Command meshgen writes a synthetic mesh of HOSTS hosts × RAILS NICs,
// rail-aligned (NIC i of every host with NIC i of every other, both ways),
// every link with write-lat (p50 about 2 µs) and write-bw (about 390
// Gbit/s) as `-n` runs record them: its summary, as rank 0 makes it from
// the links (report.MeshBuilder), and optionally its link stream. One NIC
// (host 17, rail 3) is 3× slower with every peer and one link (host 100 ->
// host 200, rail 5) 2.5×, where the mesh has them. It measures what
// `rdmabench report`, `plot` and `compare` take on a mesh of that size
// (docs/mesh.md) without running one.
//
// Usage: go run ./internal/tools/meshgen -hosts 1024 -rails 8 -summary fabric.json [-stream fabric.links.ndjson] [-seed N]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rdmabench/rdmabench/internal/atomicfile"
	"github.com/rdmabench/rdmabench/pkg/latency"
	"github.com/rdmabench/rdmabench/pkg/report"
)

func main() {
	hosts := flag.Int("hosts", 1024, "hosts")
	rails := flag.Int("rails", 8, "NICs per host: the rails")
	summary := flag.String("summary", "", "write the summary to this file")
	stream := flag.String("stream", "", "write the link stream to this file too")
	seed := flag.Uint64("seed", 1, "the seed of the links' noise")
	flag.Parse()
	if *hosts < 2 || *rails < 1 || *summary == "" {
		fmt.Fprintln(os.Stderr, "usage: meshgen -hosts H -rails R -summary FILE [-stream FILE] [-seed N]")
		os.Exit(2)
	}
	if err := run(*hosts, *rails, *summary, *stream, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "meshgen:", err)
		os.Exit(1)
	}
}

// noise is a deterministic value in [-1, 1) of a link and seed.
func noise(seed uint64, a, b, k int) float64 {
	x := seed ^ uint64(a)*0x9e3779b97f4a7c15 ^ uint64(b)*0xc2b2ae3d27d4eb4f ^ uint64(k)*0x165667b19e3779f9
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return float64(x>>11)/float64(1<<52) - 1
}

// results makes a link's results, sharing one histogram and one bandwidth
// per value: the links' values are quantised to 0.1%.
type results struct {
	cache map[[2]int][]report.Result
}

func (r *results) of(latNS, gbps float64) []report.Result {
	k := [2]int{int(latNS), int(gbps * 10)}
	if res, ok := r.cache[k]; ok {
		return res
	}
	rec := latency.NewRecorder(report.BasisRTTHalf)
	for i := range 100 {
		rec.Record(uint64(2 * float64(k[0]) * (1 + 0.002*float64(i%10))))
	}
	bw := float64(k[1]) / 10
	res := []report.Result{
		{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 100, Latency: rec.Snapshot()},
		{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 1000,
			Bandwidth: report.NewBandwidth(1000*65536, 1000, time.Duration(1000*65536*8/bw))},
	}
	r.cache[k] = res
	return res
}

func run(hosts, rails int, summaryPath, streamPath string, seed uint64) error {
	n := hosts * rails
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	doc := report.NewDocument()
	doc.Tool = report.Tool{Name: "rdmabench", Version: "meshgen"}
	doc.Command = []string{"rdmabench", "mesh", "--rails", "-n", "100", "--out", "fabric.json"}
	doc.Start = start
	rounds := hosts - 1
	if hosts%2 == 1 {
		rounds = hosts
	}
	m := &report.Mesh{Size: n, Launcher: "slurm", Coordinator: "node0000:19514", Tests: []string{"write-lat", "write-bw"},
		Rounds: rounds, Schedule: "rail-aligned", LinksFile: "fabric.links.ndjson"}
	for r := range n {
		h, k := r/rails, r%rails
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, LocalRank: k, State: report.RankOK,
			Addr: fmt.Sprintf("node%04d:%d", h, 20000+k),
			Host: &report.Host{Hostname: fmt.Sprintf("node%04d", h), Device: &report.Device{Name: fmt.Sprintf("mlx5_%d", k), Port: 1}}})
	}
	doc.Mesh = m

	var sw *bufio.Writer
	if streamPath != "" {
		f, err := os.Create(streamPath)
		if err != nil {
			return err
		}
		defer f.Close()
		sw = bufio.NewWriterSize(f, 1<<20)
		if err := report.WriteEvent(sw, report.Event{Event: report.EventStart, Time: start, Document: header(doc)}); err != nil {
			return err
		}
	}
	b := report.NewMeshBuilder(m.Tests, report.Limits{}, 0)
	b.SetRanks(n)
	res := &results{cache: map[[2]int][]report.Result{}}
	slowNIC := 17*rails + 3
	slowFrom, slowTo := 100*rails+5, 200*rails+5
	link := func(from, to, round int) error {
		lat := 2000 * (1 + 0.03*noise(seed, from, to, 0))
		bw := 390 * (1 + 0.02*noise(seed, from, to, 1))
		if rails > 3 && (from == slowNIC || to == slowNIC) {
			lat, bw = lat*3, bw/2
		}
		if rails > 5 && from == slowFrom && to == slowTo {
			lat *= 2.5
		}
		l := report.MeshLink{From: from, To: to, Round: round, Start: start, End: start, Results: res.of(lat, bw)}
		b.Add(&l)
		if sw != nil {
			return report.WriteEvent(sw, report.Event{Event: report.EventLink, Time: start, Link: &l})
		}
		return nil
	}
	for a := range hosts {
		for c := a + 1; c < hosts; c++ {
			round := (a+c)%max(rounds, 1) + 1
			for k := range rails {
				x, y := a*rails+k, c*rails+k
				if err := link(x, y, round); err != nil {
					return err
				}
				if err := link(y, x, round); err != nil {
					return err
				}
			}
		}
	}
	doc.End = start.Add(time.Duration(rounds) * 100 * time.Millisecond)
	b.Fill(m)
	if sw != nil {
		end := *doc
		em := *m
		em.Links, em.Matrices, em.Aggregate, em.LinkCount = nil, nil, nil, 0
		end.Mesh = &em
		if err := report.WriteEvent(sw, report.Event{Event: report.EventEnd, Time: doc.End, Document: &end}); err != nil {
			return err
		}
		if err := sw.Flush(); err != nil {
			return err
		}
	}
	return atomicfile.Write(summaryPath, func(w io.Writer) error { return report.WriteJSON(w, doc) })
}

// header is the document of the stream's start event: no links.
func header(doc *report.Document) *report.Document {
	d := *doc
	m := *doc.Mesh
	m.Links, m.Matrices = nil, nil
	d.Mesh = &m
	return &d
}
