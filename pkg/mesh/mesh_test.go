package mesh

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/render"
	"github.com/rdmabench/rdmabench/pkg/report/schema"
	"github.com/rdmabench/rdmabench/pkg/topology"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// These tests run whole meshes in one process, every rank a goroutine with
// its own test server on 127.0.0.1, over the TCP tests (no device needed):
// the same code paths as ranks on many hosts, but for the verbs loops,
// which the device tests and the launcher runs in the VMs cover.

func freePort(t *testing.T) int { return testutil.FixedPort(t) }

type meshRun struct {
	n         int
	start     []int // the ranks to start (default: all)
	timeout   time.Duration
	links     []Link
	limits    report.Limits
	outlier   float64
	tests     []string
	device    string // -d; "" for the TCP tests
	blame     bool
	duplex    bool
	hostLevel bool
	progress  func(p Progress, cancel func(rank int))
	// topology is rank 0's (--topology), hosts the host each rank stands
	// for (--host); noDoc: rank 0 is to return no document (an error).
	topology *topology.Topology
	hosts    []string
	noDoc    bool
	// pattern runs a load pattern (--pattern), its flows for duration.
	pattern       *Pattern
	patternLimits report.PatternLimits
	duration      time.Duration
}

// run runs the mesh and returns rank 0's document and every rank's error.
func (m meshRun) run(t *testing.T) (*report.Document, map[int]error) {
	t.Helper()
	doc, errs, _ := m.runStream(t)
	return doc, errs
}

// runStream is run, also returning the links of rank 0's link stream, with
// their results; it checks that the stream, read back, makes the same
// summary as rank 0's.
func (m meshRun) runStream(t *testing.T) (*report.Document, map[int]error, []report.MeshLink) {
	t.Helper()
	if m.start == nil {
		for r := range m.n {
			m.start = append(m.start, r)
		}
	}
	if m.tests == nil {
		m.tests = []string{"tcp-lat", "tcp-bw"}
	}
	coord := "127.0.0.1:" + strconv.Itoa(freePort(t))
	ctx, cancelAll := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelAll()
	cancels := map[int]context.CancelCauseFunc{}
	ctxs := map[int]context.Context{}
	for _, r := range m.start {
		ctxs[r], cancels[r] = context.WithCancelCause(ctx)
	}
	var mu sync.Mutex
	errs := map[int]error{}
	var doc *report.Document
	var stream bytes.Buffer
	var wg sync.WaitGroup
	for _, r := range m.start {
		cfg := Config{
			Launch:          Launch{Rank: r, Size: m.n, Launcher: LauncherFlags},
			Coordinator:     coord,
			Token:           "t0ken",
			Listen:          "127.0.0.1:0",
			Request:         workloads.Request{Tests: m.tests, Spec: workloads.Spec{Iterations: 100, Sizes: []int{64}}, Command: []string{"rdmabench", "mesh"}},
			RegisterTimeout: m.timeout,
			Links:           m.links,
			Limits:          m.limits,
			Outlier:         m.outlier,
			Blame:           m.blame,
			Duplex:          m.duplex,
			HostLevel:       m.hostLevel,
		}
		if m.device != "" {
			cfg.Devices = strings.Split(m.device, ",")
		}
		if m.pattern != nil {
			cfg.Pattern, cfg.PatternLimits = m.pattern, m.patternLimits
			cfg.Request.Spec.Iterations, cfg.Request.Spec.Duration, cfg.Request.Spec.Sizes = 0, m.duration, nil
			cfg.Schedule.Seed = 5
		}
		if r < len(m.hosts) {
			cfg.Host = m.hosts[r]
		}
		if r == 0 {
			cfg.Topology = m.topology
		}
		if cfg.RegisterTimeout == 0 {
			cfg.RegisterTimeout = 20 * time.Second
		}
		if r == 0 {
			cfg.Stream = func(e report.Event) error { return report.WriteEvent(&stream, e) }
		}
		if r == 0 && m.progress != nil {
			cfg.Progress = func(p Progress) {
				m.progress(p, func(rank int) { cancels[rank](context.Canceled) })
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := Run(ctxs[r], cfg)
			mu.Lock()
			defer mu.Unlock()
			errs[r] = err
			if r == 0 {
				doc = d
			}
		}()
	}
	wg.Wait()
	if m.noDoc {
		if doc != nil {
			t.Fatal("rank 0 returned a document")
		}
		return nil, errs, nil
	}
	if doc == nil {
		t.Fatalf("rank 0 returned no document: %v", errs[0])
	}
	var js bytes.Buffer
	if err := report.WriteJSON(&js, doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(js.Bytes()); err != nil {
		t.Errorf("the mesh document does not follow the schema: %v", err)
	}
	return doc, errs, checkStream(t, doc, stream.Bytes())
}

// checkStream reads a link stream back and checks that it makes rank 0's
// summary; it returns the stream's links.
func checkStream(t *testing.T, doc *report.Document, stream []byte) []report.MeshLink {
	t.Helper()
	var links []report.MeshLink
	for line := range bytes.Lines(stream) {
		var e report.Event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("link stream: %v: %s", err, line)
		}
		if e.Event == report.EventLink {
			links = append(links, *e.Link)
		}
	}
	back, err := report.ReadNamed(bytes.NewReader(stream), "the link stream")
	if err != nil {
		t.Fatal(err)
	}
	if back.Partial || len(back.Warnings) != len(doc.Warnings) {
		t.Errorf("the stream read back: partial %v, warnings %q", back.Partial, back.Warnings)
	}
	for _, x := range []struct {
		what      string
		got, want any
	}{
		{"links", back.Mesh.Links, doc.Mesh.Links},
		{"matrices", back.Mesh.Matrices, doc.Mesh.Matrices},
		{"failures", back.Mesh.Failures, doc.Mesh.Failures},
		{"ranks", back.Mesh.Ranks, doc.Mesh.Ranks},
		{"steps", back.Mesh.Steps, doc.Mesh.Steps},
		{"step failures", back.Mesh.StepFailures, doc.Mesh.StepFailures},
		{"error", back.Error, doc.Error},
	} {
		g, _ := json.Marshal(x.got)
		w, _ := json.Marshal(x.want)
		if !bytes.Equal(g, w) {
			t.Errorf("the stream read back: %s differ:\n%s\nrank 0's:\n%s", x.what, g, w)
		}
	}
	measured := 0
	for _, l := range links {
		if !l.Retest && l.Step == 0 {
			measured++
		}
	}
	if measured != len(doc.Mesh.Links) {
		t.Errorf("the stream has %d links (retests aside), the summary %d", measured, len(doc.Mesh.Links))
	}
	return links
}

func TestMeshAllPairs(t *testing.T) {
	doc, errs, links := meshRun{n: 4}.runStream(t)
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	m := doc.Mesh
	if m.Rounds != 3 || len(m.Links) != 12 || len(m.FailedLinks()) != 0 || doc.Error != "" {
		t.Fatalf("rounds %d, links %d, failed %v, error %q", m.Rounds, len(m.Links), m.FailedLinks(), doc.Error)
	}
	for _, l := range m.Links {
		if len(l.Results) != 0 {
			t.Errorf("link %d -> %d: the summary holds %d results", l.From, l.To, len(l.Results))
		}
	}
	for _, l := range links {
		if len(l.Results) != 2 || l.Results[0].Test != "tcp-lat" || l.Results[1].Test != "tcp-bw" {
			t.Errorf("link %d -> %d: %+v", l.From, l.To, l.Results)
		}
	}
	if len(m.Matrices) != 3 {
		t.Fatalf("%d matrices", len(m.Matrices))
	}
	for _, mx := range m.Matrices {
		for i, row := range mx.Values {
			for j, v := range row {
				if (i == j) != (v == nil) {
					t.Errorf("%s %s [%d][%d] = %v", mx.Key(), mx.Figure, i, j, v)
				}
			}
		}
	}
	for _, r := range m.Ranks {
		if r.State != report.RankOK || r.Addr == "" || r.Host == nil || !strings.HasPrefix(r.Addr, "127.0.0.1:") {
			t.Errorf("rank %+v", r)
		}
	}
	if doc.Params.Iterations != 100 || doc.Partial {
		t.Errorf("params %+v partial %v", doc.Params, doc.Partial)
	}
	var tb bytes.Buffer
	if err := render.Write(&tb, render.FormatTable, doc); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", tb.String())
}

// A rank that never registers: the links it is part of fail, the others
// are measured.
func TestMeshUnregistered(t *testing.T) {
	doc, errs := meshRun{n: 3, start: []int{0, 1}, timeout: 2 * time.Second}.run(t)
	if errs[0] != nil || errs[1] != nil {
		t.Errorf("errors %v", errs)
	}
	m := doc.Mesh
	if len(m.Links) != 6 || m.Ranks[2].State != report.RankUnregistered {
		t.Fatalf("links %d, rank 2 %+v", len(m.Links), m.Ranks[2])
	}
	for _, l := range m.Links {
		involves := l.From == 2 || l.To == 2
		if involves != (l.Error != "") {
			t.Errorf("link %d -> %d: error %q", l.From, l.To, l.Error)
		}
		if involves && !strings.Contains(l.Error, "rank 2 never registered: it did not register within 2s") {
			t.Errorf("link %d -> %d: error %q", l.From, l.To, l.Error)
		}
	}
	// The mesh ran to its end: its failed links are no run-level error.
	if n := len(m.FailedLinks()); n != 4 || doc.Error != "" {
		t.Errorf("%d failed links, document error %q; want 4 and none", n, doc.Error)
	}
}

// A rank that stops mid-run: every link it is part of from then on fails,
// the rest of the matrix completes, and rank 0's document says which.
func TestMeshRankLost(t *testing.T) {
	var once sync.Once
	doc, errs := meshRun{n: 4, progress: func(p Progress, cancel func(int)) {
		if p.Done >= 4 {
			once.Do(func() { cancel(2) })
		}
	}}.run(t)
	if errs[0] != nil || errs[1] != nil || errs[3] != nil {
		t.Errorf("errors %v", errs)
	}
	m := doc.Mesh
	if len(m.Links) != 12 || m.Ranks[2].State != report.RankLost {
		t.Fatalf("links %d, rank 2 %+v", len(m.Links), m.Ranks[2])
	}
	failed := 0
	for _, l := range m.Links {
		if l.Error != "" {
			failed++
			if l.From != 2 && l.To != 2 {
				t.Errorf("link %d -> %d failed without rank 2: %s", l.From, l.To, l.Error)
			}
		}
	}
	// Rank 2 is in 6 links, 2 per round; it stops after round 2's first
	// links at the latest.
	if failed < 2 {
		t.Errorf("%d links failed", failed)
	}
	if ok := len(m.Links) - failed; ok < 6 {
		t.Errorf("only %d links measured", ok)
	}
	for _, l := range m.FailedLinks() {
		if !strings.Contains(l.Error, "rank 2") {
			t.Errorf("link %d -> %d: %q does not name rank 2", l.From, l.To, l.Error)
		}
	}
}

// --pairs, a limit and the outlier check.
func TestMeshPairsAndGates(t *testing.T) {
	doc, _ := meshRun{n: 3, links: []Link{{0, 1}, {2, 0}}, limits: report.Limits{P50: time.Nanosecond}, outlier: 0.5,
		tests: []string{"tcp-lat"}}.run(t)
	m := doc.Mesh
	if len(m.Links) != 2 || m.Rounds != 2 || m.Schedule != "pairs-file" {
		t.Fatalf("links %+v rounds %d", m.Links, m.Rounds)
	}
	if m.Matrices[0].Values[1][0] != nil || m.Matrices[0].Values[0][1] == nil {
		t.Errorf("matrix %v", m.Matrices[0].Values)
	}
	limits := 0
	for _, f := range m.Failures {
		if f.Kind == report.FailLimit && f.Figure == report.FigP50 {
			limits++
		}
	}
	if limits != 2 {
		t.Errorf("p50 limit of 1 ns: %d failures, want 2: %+v", limits, m.Failures)
	}
	if m.Gates == nil || m.Gates.OutlierFraction != 0.5 {
		t.Errorf("gates %+v", m.Gates)
	}
}

// A rank with the wrong token is refused by name.
func TestMeshWrongToken(t *testing.T) {
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := Config{Coordinator: "127.0.0.1:" + strconv.Itoa(port), Listen: "127.0.0.1:0", RegisterTimeout: 3 * time.Second,
		Request: workloads.Request{Tests: []string{"tcp-lat"}, Spec: workloads.Spec{Iterations: 10}}}
	done := make(chan *report.Document, 1)
	go func() {
		c := base
		c.Launch, c.Token = Launch{Rank: 0, Size: 2}, "right"
		d, _ := Run(ctx, c)
		done <- d
	}()
	c := base
	c.Launch, c.Token = Launch{Rank: 1, Size: 2}, "wrong"
	_, err := Run(ctx, c)
	if err == nil || !strings.Contains(err.Error(), "refused it") || !strings.Contains(err.Error(), "authentication failed") {
		t.Errorf("rank 1 with a wrong token: %v", err)
	}
	d := <-done
	if d == nil || d.Mesh.Ranks[1].State != report.RankUnregistered {
		t.Errorf("rank 0's document %+v", d)
	}
}

// TestMeshRDMA runs a mesh of three ranks over the RDMA device (in the
// Soft-RoCE VM: rxe0), each rank with its own server and QPs: the default
// tests, every link measured, each result recording the device and the
// effective settings.
func TestMeshRDMA(t *testing.T) {
	testutil.NoLeaks(t)
	dev := testutil.Device(t)
	doc, errs, links := meshRun{n: 3, tests: []string{"write-lat", "write-bw"}, device: dev}.runStream(t)
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	m := doc.Mesh
	if len(m.Links) != 6 || len(m.FailedLinks()) != 0 {
		t.Fatalf("%d links, failed: %+v", len(m.Links), m.FailedLinks())
	}
	for _, l := range links {
		for _, r := range l.Results {
			if r.Effective == nil || r.Effective.QPTimeout != 14 || r.Effective.PathMTU == 0 {
				t.Errorf("link %d -> %d %s: effective %+v", l.From, l.To, r.Test, r.Effective)
			}
		}
	}
	for _, r := range m.Ranks {
		if r.Host == nil || r.Host.Device == nil || r.Host.Device.Name != dev || len(r.Devices) == 0 || len(r.Devices[0].GIDs) == 0 {
			t.Errorf("rank %d: host %+v devices %+v", r.Rank, r.Host, r.Devices)
		}
	}
	if len(m.Matrices) != 3 || m.Matrices[2].Figure != report.FigGbps {
		t.Errorf("matrices %+v", m.Matrices)
	}

	// Duplex: one pair, once, write-bw bidirectional, both cells filled.
	start := time.Now()
	doc, errs, links = meshRun{n: 2, tests: []string{"write-lat", "write-bw"}, device: dev, duplex: true}.runStream(t)
	for r, err := range errs {
		if err != nil {
			t.Errorf("duplex: rank %d: %v", r, err)
		}
	}
	checkDuplex(t, doc.Mesh, links, 2)
	t.Logf("the duplex mesh of two ranks took %v", time.Since(start).Round(time.Millisecond))
}

// checkDuplex checks a duplex mesh of n ranks: one link a pair, each
// marked and run with its bandwidth tests bidirectional, and every cell
// off the diagonal filled.
func checkDuplex(t *testing.T, m *report.Mesh, links []report.MeshLink, n int) {
	t.Helper()
	if !m.Duplex || len(m.Links) != n*(n-1)/2 || len(m.FailedLinks()) != 0 {
		t.Fatalf("duplex %v, %d links, failed %+v", m.Duplex, len(m.Links), m.FailedLinks())
	}
	pairs := map[[2]int]bool{}
	for _, l := range m.Links {
		pairs[[2]int{min(l.From, l.To), max(l.From, l.To)}] = true
	}
	if len(pairs) != len(m.Links) {
		t.Errorf("links %+v: a pair twice", m.Links)
	}
	for _, l := range links {
		if !l.Duplex {
			t.Errorf("link %d -> %d not duplex", l.From, l.To)
		}
		for _, r := range l.Results {
			if r.Latency == nil && (r.Reverse == nil || r.Total == nil || r.Direction != report.DirectionBoth) {
				t.Errorf("link %d <-> %d %s: not bidirectional: %+v", l.From, l.To, r.Test, r)
			}
		}
	}
	for _, mx := range m.Matrices {
		want := report.DuplexBidirectional
		if mx.Figure.IsLatency() {
			want = report.DuplexPingPong
		}
		if mx.Duplex != want {
			t.Errorf("%s %s: duplex %q, want %q", mx.Key(), mx.Figure, mx.Duplex, want)
		}
		for i := range n {
			for j := range n {
				if v := mx.Values[i][j]; (v == nil) != (i == j) {
					t.Errorf("%s %s: cell %d -> %d is %v", mx.Key(), mx.Figure, i, j, v)
				}
			}
		}
	}
}

// A duplex mesh over the TCP tests, with blame: half the links, every
// cell filled, and any suspect retested as a duplex link (both its
// directions in one run).
func TestMeshDuplex(t *testing.T) {
	if os.Getenv("RDMABENCH_IN_VM") == "1" {
		t.Skip("a mesh over the TCP tests: the host's run of scripts/test.sh covers it; in the emulated VM it takes half a minute")
	}
	doc, errs, links := meshRun{n: 5, blame: true, duplex: true}.runStream(t)
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	m := doc.Mesh
	if m.Rounds != 5 || len(m.Matrices) != 3 { // five ranks: one rests in each round
		t.Errorf("%d rounds, %d matrices", m.Rounds, len(m.Matrices))
	}
	checkDuplex(t, m, links, 5)
	for _, v := range m.Verdicts {
		t.Logf("%s %s: %s", v.Kind, v.Subject, v.Message)
		if v.Subject != report.SubjectRound && v.Retested == 0 {
			t.Errorf("a %s verdict not retested: %+v", v.Subject, v)
		}
	}
	// A rank 0 with a read-lat refuses to start.
	_, err := Run(context.Background(), Config{Launch: Launch{Rank: 0, Size: 2}, Duplex: true,
		Request: workloads.Request{Tests: []string{"tcp-lat", "read-lat"}}})
	if err == nil || !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--duplex: read-lat times one rank's operations") {
		t.Errorf("duplex read-lat: %v", err)
	}
}

// Blame over a real mesh: whatever the verdicts on this host's noise, each
// bad or flaky one was retested in the rounds after the schedule, the
// retests are in the stream (marked, and not in the summary), and every
// verdict names its figure and says itself.
func TestMeshBlame(t *testing.T) {
	doc, errs, links := meshRun{n: 6, blame: true}.runStream(t)
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	m := doc.Mesh
	if len(m.Links) != 30 || len(m.FailedLinks()) != 0 {
		t.Fatalf("%d links, failed %v", len(m.Links), m.FailedLinks())
	}
	retests := 0
	for _, l := range links {
		if l.Retest {
			retests++
			if l.Round <= m.Rounds {
				t.Errorf("retest %d -> %d in round %d, within the schedule's %d", l.From, l.To, l.Round, m.Rounds)
			}
		}
	}
	if (retests > 0) != (m.RetestRounds > 0) {
		t.Errorf("%d retests in %d retest rounds", retests, m.RetestRounds)
	}
	for _, v := range m.Verdicts {
		t.Logf("%s %s: %s", v.Kind, v.Subject, v.Message)
		if v.Message == "" || (v.Figure != report.FigP50 && v.Figure != report.FigGbps) || v.Ratio <= 0 {
			t.Errorf("verdict %+v", v)
		}
		if v.Subject != report.SubjectRound && v.Retested == 0 {
			t.Errorf("a %s verdict not retested: %+v", v.Subject, v)
		}
	}
}

// TestMeshHostLevel runs a host-level mesh of two ranks on two devices
// each (in the Soft-RoCE VM: rxe0 and rxe1, on netdevs of their own),
// duplex to keep it short: the link runs on both devices at once, the
// client's paired with the server's as it registered them, and records
// their sum, both ways, with each device's own figures.
func TestMeshHostLevel(t *testing.T) {
	testutil.NoLeaks(t)
	devs := testutil.Devices(t, 2)
	doc, errs, links := meshRun{n: 2, tests: []string{"write-bw"}, device: strings.Join(devs, ","), hostLevel: true,
		duplex: true}.runStream(t)
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	m := doc.Mesh
	if !m.HostLevel || len(m.Links) != 1 || len(m.FailedLinks()) != 0 || len(m.Matrices) != 1 {
		t.Fatalf("host level %v, %d links, failed %+v, %d matrices", m.HostLevel, len(m.Links), m.FailedLinks(), len(m.Matrices))
	}
	for _, r := range m.Ranks {
		if strings.Join(r.Lanes, ",") != strings.Join(devs, ",") {
			t.Errorf("rank %d: lanes %q, want %q", r.Rank, r.Lanes, devs)
		}
	}
	near := func(b *report.Bandwidth, sum float64) bool {
		return b != nil && b.Gbps >= 0.999*sum && b.Gbps <= 1.001*sum
	}
	for _, l := range links {
		for _, r := range l.Results {
			if len(r.Devices) != 2 {
				t.Fatalf("link %d -> %d %s: devices %+v", l.From, l.To, r.Test, r.Devices)
			}
			fwd, rev := 0.0, 0.0
			for i, d := range r.Devices {
				if d.Device != devs[i] || d.ServerDevice != devs[i] || d.Error != "" || d.Bandwidth == nil || d.Reverse == nil {
					t.Fatalf("link %d -> %d %s: device %d %+v, want %s to %s both ways", l.From, l.To, r.Test, i, d, devs[i], devs[i])
				}
				fwd += d.Bandwidth.Gbps
				rev += d.Reverse.Gbps
			}
			if !near(r.Bandwidth, fwd) || !near(r.Reverse, rev) {
				t.Errorf("link %d -> %d %s: bandwidth %+v and %+v, the devices' sums %g and %g", l.From, l.To, r.Test, r.Bandwidth, r.Reverse, fwd, rev)
			}
		}
	}
	checkDuplex(t, m, links, 2)
}
