package reporttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/schema"
)

// CmpMesh is a mesh of N ranks (rank r on host node<r>, device mlx5_0,
// unless Host says otherwise), every link measured with write-lat (p50
// about Lat(from, to) ns) and write-bw (about 96 Gbit/s divided by
// SlowBW(from, to)), except the links Failed says failed.
type CmpMesh struct {
	N      int
	Host   func(r int) (string, string)
	Lat    func(from, to int) float64
	SlowBW func(from, to int) float64
	Failed func(from, to int) bool
}

func (c CmpMesh) Doc() *report.Document {
	doc := report.NewDocument()
	doc.Tool = report.Tool{Name: "rdmabench", Version: "0.1.0"}
	doc.Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := &report.Mesh{Size: c.N, Coordinator: "node0:19514", Tests: []string{"write-lat", "write-bw"}, Rounds: c.N - 1, Schedule: "round-robin"}
	for r := range c.N {
		host, dev := fmt.Sprintf("node%d", r), "mlx5_0"
		if c.Host != nil {
			host, dev = c.Host(r)
		}
		h := &report.Host{Hostname: host}
		if dev != "" {
			h.Device = &report.Device{Name: dev, Port: 1, LinkGbps: 100}
		}
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, State: report.RankOK, Host: h})
	}
	for from := range c.N {
		for to := range c.N {
			if from == to {
				continue
			}
			l := report.MeshLink{From: from, To: to, Round: 1}
			if c.Failed != nil && c.Failed(from, to) {
				l.Error = fmt.Sprintf("rank %d was lost", to)
				m.Links = append(m.Links, l)
				continue
			}
			ns := 1000 + float64((from*c.N+to)%5)*10
			if c.Lat != nil {
				ns = c.Lat(from, to)
			}
			rec := report.NewLatencyRecorder(report.BasisRTTHalf)
			for range 10 {
				rec.Record(uint64(2 * ns))
			}
			gbps := 96.0
			if c.SlowBW != nil {
				gbps /= c.SlowBW(from, to)
			}
			l.Results = []report.Result{
				{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 10, Latency: rec.Snapshot()},
				{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 1000,
					Bandwidth: report.NewBandwidth(1000*65536, 1000, time.Duration(float64(1000*65536*8)/gbps))},
			}
			m.Links = append(m.Links, l)
		}
	}
	b := report.NewMeshBuilder(m.Tests, report.Limits{}, 0)
	for i := range m.Links {
		b.Add(&m.Links[i])
	}
	b.Fill(m)
	doc.Mesh = m
	return doc
}

// MeshFixture is a mesh of three ranks: every link measured but 2 -> 0
// (rank 2 lost mid-run), the link 1 -> 2 four times slower than the others.
func MeshFixture(t testing.TB) *report.Document {
	t.Helper()
	lat := func(p50 float64) report.Result {
		rec := report.NewLatencyRecorder("rtt")
		rec.RecordBatch([]uint64{uint64(p50), uint64(p50), uint64(p50 * 2)})
		return report.Result{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 3, Latency: rec.Snapshot()}
	}
	bw := func(gbps float64) report.Result {
		return report.Result{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 100,
			Bandwidth: report.NewBandwidth(100*65536, 100, time.Duration(float64(100*65536*8)/gbps))}
	}
	doc := report.NewDocument()
	doc.Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	doc.End = doc.Start.Add(12 * time.Second)
	m := &report.Mesh{Size: 3, Launcher: "slurm", Coordinator: "node1:19514", Tests: []string{"write-lat", "write-bw"},
		Rounds: 3, Schedule: "round-robin"}
	for r := range 3 {
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, State: report.RankOK, Addr: "10.0.0.1:4000" + string(rune('0'+r)),
			Host: &report.Host{Hostname: "node" + string(rune('1'+r)), Device: &report.Device{Name: "rxe0", Port: 1, GID: "::ffff:10.0.0.1", GIDIndex: 1}}})
	}
	m.Ranks[2].State, m.Ranks[2].Error = report.RankLost, "rank at 10.0.0.3:5000 closed the connection"
	round := 0
	for from := range 3 {
		for to := range 3 {
			if from == to {
				continue
			}
			round++
			l := report.MeshLink{From: from, To: to, Round: round, Start: doc.Start, End: doc.Start.Add(time.Second)}
			switch {
			case from == 2 && to == 0:
				l.Start, l.End = time.Time{}, time.Time{}
				l.Error = "rank 2 lost: closed the connection"
			case from == 1 && to == 2:
				l.Results = []report.Result{lat(4000), bw(1)}
			default:
				l.Results = []report.Result{lat(1000), bw(4)}
			}
			if l.Results == nil {
				l.Results = []report.Result{}
			}
			m.Links = append(m.Links, l)
		}
	}
	m.BuildMatrices()
	doc.Mesh = m
	return doc
}

// DuplexFixture is a duplex mesh of three ranks: each pair ran once, from
// its lower rank, its ping-pong and a bidirectional stream whose reverse
// (the server's direction) is half as fast; the pair 0 <-> 2 failed. The
// pair 1 <-> 2's ping-pong is four times slower.
func DuplexFixture(t testing.TB) *report.Document {
	t.Helper()
	lat := func(p50 float64) report.Result {
		rec := report.NewLatencyRecorder("rtt")
		rec.RecordBatch([]uint64{uint64(p50), uint64(p50), uint64(p50 * 2)})
		return report.Result{Test: "tcp-lat", Connection: "TCP", Size: 2, Iterations: 3, Latency: rec.Snapshot()}
	}
	bw := func(gbps float64) *report.Bandwidth {
		return report.NewBandwidth(100*65536, 100, time.Duration(float64(100*65536*8)/gbps))
	}
	bidi := func(fwd, rev float64) report.Result {
		r := report.Result{Test: "tcp-bw", Connection: "TCP", Size: 65536, Iterations: 100, Bandwidth: bw(fwd), Reverse: bw(rev),
			Direction: report.DirectionBoth}
		r.Total = report.Sum(r.Bandwidth, r.Reverse)
		return r
	}
	doc := report.NewDocument()
	m := &report.Mesh{Size: 3, Coordinator: "node1:19514", Tests: []string{"tcp-lat", "tcp-bw"}, Rounds: 3, Schedule: "round-robin",
		Duplex: true}
	for r := range 3 {
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, State: report.RankOK, Host: &report.Host{Hostname: "node" + string(rune('1'+r))}})
	}
	m.Links = []report.MeshLink{
		{From: 0, To: 1, Round: 1, Duplex: true, Results: []report.Result{lat(1000), bidi(4, 2)}},
		{From: 2, To: 0, Round: 2, Duplex: true, Error: "rank 2 lost", Results: []report.Result{}},
		{From: 1, To: 2, Round: 3, Duplex: true, Results: []report.Result{lat(4000), bidi(6, 3)}},
	}
	m.BuildMatrices()
	doc.Mesh = m
	return doc
}

// RailMesh is a rail-aligned mesh of hosts × rails ranks (rank h*rails+k
// on host node<h> with local rank k), every link measured with write-lat
// at p50 lat(from, to) ns and write-bw at 100 Gbit/s, but the link failed
// says failed; made by a MeshBuilder as rank 0 makes it.
func RailMesh(t testing.TB, hosts, rails int, lat func(from, to int) float64, failed [2]int) *report.Document {
	t.Helper()
	n := hosts * rails
	doc := report.NewDocument()
	doc.Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := &report.Mesh{Size: n, Coordinator: "node0:19514", Tests: []string{"write-lat", "write-bw"}, Rounds: hosts - 1, Schedule: "rail-aligned"}
	for r := range n {
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, LocalRank: r % rails, State: report.RankOK,
			Host: &report.Host{Hostname: fmt.Sprintf("node%d", r/rails), Device: &report.Device{Name: fmt.Sprintf("mlx5_%d", r%rails), Port: 1}}})
	}
	b := report.NewMeshBuilder(m.Tests, report.Limits{}, 0)
	b.SetRanks(n)
	lats := map[float64]*report.Latency{}
	bw := report.NewBandwidth(1000*65536, 1000, time.Duration(1000*65536*8/100))
	for a := range hosts {
		for c := range hosts {
			if a == c {
				continue
			}
			for k := range rails {
				from, to := a*rails+k, c*rails+k
				l := report.MeshLink{From: from, To: to, Round: 1}
				if [2]int{from, to} == failed {
					l.Error = "rank lost"
				} else {
					ns := lat(from, to)
					if lats[ns] == nil {
						rec := report.NewLatencyRecorder(report.BasisRTT)
						rec.Record(uint64(ns))
						lats[ns] = rec.Snapshot()
					}
					l.Results = []report.Result{{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 1, Latency: lats[ns]},
						{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 1000, Bandwidth: bw}}
				}
				b.Add(&l)
			}
		}
	}
	b.Fill(m)
	doc.Mesh = m
	return doc
}

// AggregateOnlyMesh is a mesh of 520 ranks, 65 hosts of 8 rails (33,280
// links), every link at 2 µs but 8 -> 16, which failed.
func AggregateOnlyMesh(t testing.TB) *report.Document {
	return RailMesh(t, 65, 8, func(from, to int) float64 { return 2000 }, [2]int{8, 16})
}

// OneHostMesh is 72 ranks on one host (a mesh of processes), every pair
// measured, rank 5 slow.
func OneHostMesh(t testing.TB) *report.Document {
	doc := RailMesh(t, 1, 1, func(from, to int) float64 { return 1000 }, [2]int{-1, -1})
	m := doc.Mesh
	// 72 ranks on one host, every pair measured, rank 5 slow.
	m.Size, m.Ranks = 72, nil
	for r := range 72 {
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, State: report.RankOK, Host: &report.Host{Hostname: "vm"}})
	}
	b := report.NewMeshBuilder(m.Tests, report.Limits{}, 0)
	rec := func(ns uint64) *report.Latency {
		l := report.NewLatencyRecorder(report.BasisRTT)
		l.Record(ns)
		return l.Snapshot()
	}
	fast, slow := rec(1000), rec(3000)
	for from := range 72 {
		for to := range 72 {
			if from != to {
				lat := fast
				if from == 5 || to == 5 {
					lat = slow
				}
				b.Add(&report.MeshLink{From: from, To: to, Round: 1, Results: []report.Result{{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 1, Latency: lat}}})
			}
		}
	}
	b.Fill(m)
	return doc
}

// SchemaNode is one schema object of the published schema.
type SchemaNode = map[string]any

func LoadSchema(t *testing.T) SchemaNode {
	t.Helper()
	var s SchemaNode
	if err := json.Unmarshal(schema.JSON(), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// JSONField is a field of a struct as encoding/json sees it: the fields of
// an embedded struct without a json name are its own.
type JSONField struct {
	name, opts string
	goName     string
	typ        reflect.Type
}

func JSONFields(typ reflect.Type) []JSONField {
	var out []JSONField
	for f := range typ.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				out = append(out, JSONFields(et)...)
				continue
			}
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, JSONField{name: name, opts: opts, goName: typ.Name() + "." + f.Name, typ: f.Type})
	}
	return out
}

// CheckSchemaModel checks the schema root against the Go type typ as
// TestSchemaMatchesModel says. References into the results document's
// schema (result-v1.json#/$defs/...) are followed there.
func CheckSchemaModel(t *testing.T, root SchemaNode, typ reflect.Type) {
	t.Helper()
	defs, _ := root["$defs"].(SchemaNode)
	resultDefs := LoadSchema(t)["$defs"].(SchemaNode)
	used := map[string]bool{}
	// resolve follows n's reference, if any, from the definitions cur
	// (root's or the results document's), and returns the definitions
	// the references under it are relative to.
	resolve := func(n, cur SchemaNode) (SchemaNode, SchemaNode) {
		ref, ok := n["$ref"].(string)
		if !ok {
			return n, cur
		}
		in, name := cur, strings.TrimPrefix(ref, "#/$defs/")
		if after, ok := strings.CutPrefix(ref, "result-v1.json#/$defs/"); ok {
			in, name = resultDefs, after
		}
		if reflect.ValueOf(in).Pointer() == reflect.ValueOf(defs).Pointer() {
			used[name] = true
		}
		d, ok := in[name].(SchemaNode)
		if !ok {
			t.Fatalf("$ref %s: no such definition", ref)
		}
		return d, in
	}
	timeType := reflect.TypeFor[time.Time]()
	var walk func(path string, typ reflect.Type, n, cur SchemaNode)
	walk = func(path string, typ reflect.Type, n, cur SchemaNode) {
		// A pointer inside an array (a matrix cell) may be null.
		nullable := typ.Kind() == reflect.Pointer && strings.HasSuffix(path, "[]")
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		n, cur = resolve(n, cur)
		want := ""
		switch {
		case typ == timeType:
			want = "string"
			if n["format"] != "date-time" {
				t.Errorf("%s: a time without format date-time", path)
			}
		case typ.Kind() == reflect.Struct:
			want = "object"
		case typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array:
			want = "array"
		case typ.Kind() == reflect.Map:
			want = "object"
		case typ.Kind() == reflect.String:
			want = "string"
		case typ.Kind() == reflect.Bool:
			want = "boolean"
		case typ.Kind() >= reflect.Int && typ.Kind() <= reflect.Uint64:
			want = "integer"
		case typ.Kind() == reflect.Float32 || typ.Kind() == reflect.Float64:
			want = "number"
		default:
			t.Fatalf("%s: Go type %s has no JSON type in this test", path, typ)
		}
		if nullable {
			if ts, _ := n["type"].([]any); len(ts) == 2 && ts[0] == want && ts[1] == "null" {
				n = maps.Clone(n)
				n["type"] = want
			}
		}
		if n["type"] != want {
			t.Errorf("%s: schema type %v, Go type %s encodes as %s", path, n["type"], typ, want)
			return
		}
		switch {
		case typ == timeType:
		case typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array:
			items, ok := n["items"].(SchemaNode)
			if !ok {
				t.Errorf("%s: array without items", path)
				return
			}
			walk(path+"[]", typ.Elem(), items, cur)
		case typ.Kind() == reflect.Map:
			add, ok := n["additionalProperties"].(SchemaNode)
			if !ok {
				t.Errorf("%s: map without additionalProperties", path)
				return
			}
			walk(path+"{}", typ.Elem(), add, cur)
		case typ.Kind() == reflect.Struct:
			props, _ := n["properties"].(SchemaNode)
			var required []string
			reqs, _ := n["required"].([]any) // absent: nothing is required
			for _, r := range reqs {
				required = append(required, r.(string))
			}
			fields := map[string]bool{}
			for _, f := range JSONFields(typ) {
				name := f.name
				if fields[name] {
					t.Fatalf("%s: two fields named %s: this test does not resolve them as encoding/json does", path, name)
				}
				fields[name] = true
				fp := path + "." + name
				p, ok := props[name].(SchemaNode)
				if !ok {
					t.Errorf("%s: field %s is not in the schema", fp, f.goName)
					continue
				}
				if d, _ := p["description"].(string); len(d) < 8 {
					t.Errorf("%s: no description", fp)
				}
				omit := slices.Contains(strings.Split(f.opts, ","), "omitempty")
				if req := slices.Contains(required, name); req == omit {
					t.Errorf("%s: required %v in the schema, omitempty %v in %s", fp, req, omit, f.goName)
				}
				walk(fp, f.typ, p, cur)
			}
			for name, p := range props {
				if !fields[name] && p.(SchemaNode)["deprecated"] != true {
					t.Errorf("%s.%s: in the schema, not in %s (mark it deprecated if older documents have it)", path, name, typ.Name())
				}
			}
			for _, r := range required {
				if !fields[r] {
					t.Errorf("%s: required %q is not a field of %s", path, r, typ.Name())
				}
			}
		}
	}
	walk("$", typ, root, defs)
	for name := range defs {
		if !used[name] {
			t.Errorf("$defs/%s: not used by any property", name)
		}
	}
}

func LoadSchemaFile(t *testing.T, data []byte) SchemaNode {
	t.Helper()
	var s SchemaNode
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// LinkStream writes the link stream rank 0 writes for doc (a mesh document
// with its links' full results): the start, a link event per link, the
// end.
func LinkStream(t *testing.T, doc *report.Document) []byte {
	t.Helper()
	var b bytes.Buffer
	head := *doc
	m := *doc.Mesh
	m.Links, m.Matrices, m.Gates, m.Failures = nil, nil, nil, nil
	head.Mesh = &m
	head.Partial = true
	if err := report.WriteEvent(&b, report.Event{Event: report.EventStart, Document: &head}); err != nil {
		t.Fatal(err)
	}
	for i := range doc.Mesh.Links {
		if err := report.WriteEvent(&b, report.Event{Event: report.EventLink, Link: &doc.Mesh.Links[i]}); err != nil {
			t.Fatal(err)
		}
	}
	end := *doc
	em := *doc.Mesh
	em.Links, em.Matrices = nil, nil
	end.Mesh = &em
	if err := report.WriteEvent(&b, report.Event{Event: report.EventEnd, Document: &end}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func JSONOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func Equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// FabricDoc is a document with each fabric part: a bandwidth result on two
// threads with its placement, one on two devices, and a latency under load.
func FabricDoc() *report.Document {
	doc := report.NewDocument()
	doc.Tool = report.Tool{Name: "rdmabench", Version: "dev"}
	bw := func(msgs uint64, size int, ns int64) *report.Bandwidth {
		return report.NewBandwidth(msgs*uint64(size), msgs, time.Duration(ns))
	}
	rec := report.NewLatencyRecorder(report.BasisRTTHalf)
	rec.RecordBatch([]uint64{3000, 3200, 5000})
	node := 0
	doc.Results = []report.Result{
		{Test: "write-bw", Connection: "RC", Size: 2, Iterations: 100, QPs: 4, Bandwidth: bw(400, 2, 1e6),
			Effective: &report.Effective{TxDepth: 128, Threads: 2, RateLimitGbps: 0.5, RateLimiter: "sw"},
			Threads: []report.Thread{{End: "client", Index: 0, QPs: []int{0, 1}, Bandwidth: bw(200, 2, 1e6)},
				{End: "client", Index: 1, QPs: []int{2, 3}, Bandwidth: bw(200, 2, 9e5)}},
			Placement: &report.Placement{Client: &report.EndPlacement{Policy: report.PlaceCPUList, CPUs: []int{0, 1}, Used: []int{0, 1}},
				Server: &report.EndPlacement{Policy: report.PlaceNUMA, NUMANode: &node, CPUs: []int{0, 1, 2, 3}}}},
		{Test: "send-bw", Connection: "RC", Size: 4096, Iterations: 100, QPs: 1, Bandwidth: report.Sum(bw(100, 4096, 1e6), bw(100, 4096, 2e6)),
			Devices: []report.DeviceResult{{Device: "mlx5_0", ServerDevice: "mlx5_2", Iterations: 100, Bandwidth: bw(100, 4096, 1e6)},
				{Device: "mlx5_1", ServerDevice: "mlx5_3", Iterations: 100, Bandwidth: bw(100, 4096, 2e6)}}},
		{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 3, Latency: rec.Snapshot(),
			Load: &report.Load{Test: "write-bw", Connection: "RC", Size: 65536, QPs: 4, Bandwidth: bw(1000, 65536, 1e8)}},
	}
	return doc
}

// FullDoc is suiteDoc with real histograms from recorders.
func FullDoc() *report.Document {
	doc := SuiteDoc()
	gen := Distributions()["rdma"]
	for i := range doc.Results {
		r := &doc.Results[i]
		if r.Latency == nil {
			continue
		}
		rec := report.NewLatencyRecorder(r.Latency.Basis)
		rec.RecordBatch(Samples(gen, 1000, uint64(i)))
		r.Latency = rec.Snapshot()
	}
	d := DurationDoc()
	doc.Results = append(doc.Results, d.Results...)
	doc.Error = d.Error
	return doc
}

// SweepLatency is a latency result of n samples around a one-way (or
// round-trip, on BasisRTT) latency of us µs: a narrow body, 1% of samples
// delayed by up to a third more, 0.1% by 3 to 8 times.
func SweepLatency(basis string, us float64, n int, seed uint64) *report.Latency {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	rec := report.NewLatencyRecorder(basis)
	scale := 1.0
	if basis == report.BasisRTTHalf {
		scale = 2 // the recorder halves round trips
	}
	for range n {
		v := us * (1 + 0.03*math.Abs(rng.NormFloat64()))
		switch u := rng.Float64(); {
		case u < 0.001:
			v *= 3 + 5*rng.Float64()
		case u < 0.011:
			v *= 1 + rng.ExpFloat64()/3
		}
		rec.Record(uint64(math.Round(v * 1e3 * scale)))
	}
	return rec.Snapshot()
}

// SweepDoc is `rdmabench suite node-b -d mlx5_0 -s 2,64,1K,16K,256K`,
// with -m 1024 when mtu1024.
func SweepDoc(mtu1024 bool) *report.Document {
	doc := SuiteDoc()
	doc.Warnings = nil
	doc.Command = []string{"rdmabench", "suite", "node-b", "-d", "mlx5_0", "-s", "2,64,1K,16K,256K", "-n", "10000"}
	doc.Params.Sizes = SweepSizes
	pathMTU, seed := 4096, uint64(1)
	if mtu1024 {
		doc.Command = append(doc.Command, "-m", "1024")
		doc.Params.MTU = 1024
		doc.Start = doc.Start.Add(time.Hour)
		doc.End = doc.End.Add(time.Hour)
		pathMTU, seed = 1024, 2
	}
	// One-way (or round-trip) latency at size s: a fixed part, the time on
	// the wire at 100 Gbit/s, and a cost per packet.
	latUs := func(fixed float64, s int, rtt bool) float64 {
		packets := float64(max(1, (s+pathMTU-1)/pathMTU))
		v := fixed + float64(s)*8/100e3 + 0.012*packets
		if rtt {
			v += float64(s) * 8 / 100e3
		}
		return v
	}
	// Bandwidth at size s: a ceiling reached at large sizes, lower with
	// more packets per byte.
	gbps := func(ceiling float64, half, s int) float64 {
		if pathMTU == 1024 {
			ceiling *= 0.91
		}
		return ceiling * float64(s) / float64(s+half)
	}
	rdmaEff := &report.Effective{TxDepth: 1, CQMod: 1, InlineMax: 220, PathMTU: pathMTU}
	tcpEff := &report.Effective{Connections: 1, NoDelay: true, SendBuf: 2626560, RecvBuf: 131072}
	var res []report.Result
	addLat := func(test, conn, basis, clock string, fixed float64, sizes []int, eff *report.Effective) {
		for _, s := range sizes {
			seed++
			res = append(res, report.Result{Test: test, Connection: conn, Size: s, Iterations: 10000, Warmup: 1000, QPs: 1,
				Clock: clock, Effective: eff, Latency: SweepLatency(basis, latUs(fixed, s, basis == report.BasisRTT), 10000, seed)})
		}
	}
	addBW := func(test, conn, clock string, ceiling float64, half int, sizes []int, eff *report.Effective) {
		for _, s := range sizes {
			g := gbps(ceiling, half, s)
			bytes := uint64(s) * 10000
			res = append(res, report.Result{Test: test, Connection: conn, Size: s, Iterations: 10000, Warmup: 1000, QPs: 1,
				Clock: clock, Effective: eff, Bandwidth: report.NewBandwidth(bytes, 10000, time.Duration(float64(bytes)*8/g))})
		}
	}
	addLat("write-lat", "RC", report.BasisRTTHalf, "tsc", 0.98, SweepSizes, rdmaEff)
	addLat("read-lat", "RC", report.BasisRTT, "tsc", 1.92, SweepSizes, rdmaEff)
	addLat("send-lat", "RC", report.BasisRTTHalf, "tsc", 1.06, SweepSizes, rdmaEff)
	addLat("atomic-lat", "RC", report.BasisRTT, "tsc", 1.96, []int{8}, rdmaEff)
	addLat("tcp-lat", "TCP", report.BasisRTTHalf, "go", 11.4, SweepSizes, tcpEff)
	bwEff := &report.Effective{TxDepth: 128, CQMod: 100, PostList: 1, PathMTU: pathMTU}
	addBW("write-bw", "RC", "tsc", 98.4, 2048, SweepSizes, bwEff)
	addBW("read-bw", "RC", "tsc", 97.1, 3072, SweepSizes, bwEff)
	addBW("send-bw", "RC", "tsc", 97.9, 2560, SweepSizes, bwEff)
	addBW("atomic-bw", "RC", "tsc", 0.54, 1, []int{8}, bwEff)
	addBW("tcp-bw", "TCP", "go", 31.5, 16384, SweepSizes, tcpEff)
	doc.Results = res
	return doc
}

// ReadFixture reads a fixture document of pkg/report/testdata (a bare
// name, from one of pkg/report's packages) or of any path as `rdmabench
// plot` would. Those documents are made by generators in pkg/report's
// tests: sweep.json and sweep-mtu1024.json a suite at five sizes with
// latency histograms, mesh.json a mesh of four ranks with one link lost
// and one four times slower than the others.
func ReadFixture(t *testing.T, path string) report.Source {
	t.Helper()
	if filepath.Dir(path) == "." {
		path = filepath.Join("..", "testdata", path)
	}
	doc, err := report.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return report.Source{Name: filepath.Base(path), Doc: doc}
}

// MeshPlotDoc is `rdmabench mesh --out fabric.json --outlier 0.8` over four
// ranks: every link measured but 3 -> 1 (rank 3 lost the connection), the
// link 0 -> 2 four times slower than the others (an outlier in latency
// and in bandwidth).
func MeshPlotDoc() *report.Document {
	doc := report.NewDocument()
	doc.Tool = report.Tool{Name: "rdmabench", Version: "0.1.0"}
	doc.Command = []string{"rdmabench", "mesh", "--out", "fabric.json", "--outlier", "0.8"}
	doc.Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	doc.End = doc.Start.Add(24 * time.Second)
	const n = 4
	m := &report.Mesh{Size: n, Launcher: "slurm", Coordinator: "node1:19514", Tests: []string{"write-lat", "write-bw"},
		Rounds: 3, Schedule: "round-robin"}
	for r := range n {
		host := fmt.Sprintf("node%d", r+1)
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, State: report.RankOK, Addr: fmt.Sprintf("10.0.0.%d:40000", r+1),
			Host: &report.Host{Hostname: host, Device: &report.Device{Name: "mlx5_0", Port: 1, GID: fmt.Sprintf("::ffff:10.0.0.%d", r+1), GIDIndex: 3}}})
	}
	lat := func(ns float64) report.Result {
		rec := report.NewLatencyRecorder(report.BasisRTTHalf)
		for k := range 100 {
			rec.Record(uint64(2*ns) + uint64(k%5)*20)
		}
		return report.Result{Test: "write-lat", Connection: "RC", Size: 2, Iterations: 100, Latency: rec.Snapshot()}
	}
	bw := func(gbps float64) report.Result {
		return report.Result{Test: "write-bw", Connection: "RC", Size: 65536, Iterations: 1000,
			Bandwidth: report.NewBandwidth(1000*65536, 1000, time.Duration(float64(1000*65536*8)/gbps))}
	}
	round := 0
	for from := range n {
		for to := range n {
			if from == to {
				continue
			}
			round++
			l := report.MeshLink{From: from, To: to, Round: (round+1)/2%3 + 1, Start: doc.Start.Add(time.Duration(round) * time.Second)}
			l.End = l.Start.Add(time.Second)
			spread := float64((from*n+to)%5) * 0.01 // a link differs from the next by a few percent
			switch {
			case from == 3 && to == 1:
				l.Start, l.End = time.Time{}, time.Time{}
				l.Error = "rank 3 (node4) was lost: rank at 10.0.0.4:52114 closed the connection (reset)"
				l.Results = []report.Result{}
			case from == 0 && to == 2:
				l.Results = []report.Result{lat(4000), bw(23.1)}
			default:
				l.Results = []report.Result{lat(1000 * (1 + spread)), bw(96.5 * (1 - spread))}
			}
			m.Links = append(m.Links, l)
		}
	}
	m.BuildMatrices()
	report.CheckMesh(m, report.Limits{}, 0.8)
	doc.Mesh = m
	return doc
}

// BigMeshDoc is the matrices of a mesh of n ranks without the links'
// results (too large to keep as a file): bandwidth around 95 Gbit/s, the
// links of rank 7 as a client at half of it, and every link to rank 3
// failed.
func BigMeshDoc(n int) *report.Document {
	doc := report.NewDocument()
	m := &report.Mesh{Size: n, Coordinator: "node0:19514", Tests: []string{"write-bw"}, Rounds: n - 1, Schedule: "round-robin"}
	for r := range n {
		m.Ranks = append(m.Ranks, report.MeshRank{Rank: r, State: report.RankOK, Host: &report.Host{Hostname: fmt.Sprintf("node%d", r)}})
	}
	mx := report.Matrix{Test: "write-bw", Connection: "RC", Size: 65536, Figure: report.FigGbps, Unit: "Gbit/s", Values: make([][]*float64, n)}
	for i := range n {
		mx.Values[i] = make([]*float64, n)
		for j := range n {
			if i == j || j == 3 {
				continue
			}
			v := 95 + float64((i*7+j*13)%11)/5
			if i == 7 {
				v /= 2
			}
			mx.Values[i][j] = &v
		}
	}
	med := 95.0
	mx.Median = &med
	m.Matrices = []report.Matrix{mx}
	doc.Mesh = m
	return doc
}

// SweepSizes are the sizes of the sweep fixtures: -s 2,64,1K,16K,256K.
var SweepSizes = []int{2, 64, 1024, 16384, 262144}

// Distributions of raw samples (ns) the recorder must get right.
func Distributions() map[string]func(r *rand.Rand) uint64 {
	return map[string]func(r *rand.Rand) uint64{
		// A narrow RDMA-like peak with a long tail.
		"rdma": func(r *rand.Rand) uint64 {
			if r.IntN(1000) == 0 {
				return 2000 + uint64(r.ExpFloat64()*50000)
			}
			return 1800 + uint64(r.NormFloat64()*40+40)
		},
		// Log-uniform over 1 ns .. 60 s: every histogram bucket.
		"wide": func(r *rand.Rand) uint64 {
			return uint64(math.Exp(r.Float64() * math.Log(report.HistHighestNs)))
		},
		// A large offset and a small spread: naive sum-of-squares variance
		// loses everything here.
		"offset": func(r *rand.Rand) uint64 { return 50_000_000_000 + uint64(r.IntN(1000)) },
		// Tiny values including 0 and odd values (rtt/2 rounding).
		"tiny": func(r *rand.Rand) uint64 { return uint64(r.IntN(8)) },
	}
}

func Samples(gen func(*rand.Rand) uint64, n int, seed uint64) []uint64 {
	r := rand.New(rand.NewPCG(seed, 42))
	s := make([]uint64, n)
	for i := range s {
		s[i] = gen(r)
	}
	return s
}
