package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// Mesh is the part of a document that `rdmabench mesh` writes: every
// rank, every link (an ordered pair of ranks: the client that measured, the
// server it measured against) with its full results, and per test, size
// and figure the N×N matrix of all links, with the links that failed a
// gate. A mesh document's top-level results are empty: each link holds its
// own.
type Mesh struct {
	// Size is the number of ranks the launcher started (or --size said).
	Size int `json:"size"`
	// Launcher is where rank and size came from: "slurm", "openmpi",
	// "pmi", "pmix", "kubernetes" or "flags".
	Launcher string `json:"launcher,omitempty"`
	// Coordinator is rank 0's address, as the ranks were told it.
	Coordinator string `json:"coordinator"`
	// Tests are the tests each link ran, in order.
	Tests []string `json:"tests"`
	// Rounds is the number of rounds of the schedule: in each, every rank
	// is in at most one pair.
	Rounds int `json:"rounds"`
	// Schedule says where the pairs came from: "round-robin" (every pair,
	// both directions), "pairs-file", "rail-aligned" (NIC i of every host
	// pair, the rails of a pair at once), "sample" or "rail-aligned-sample"
	// (K rounds of random perfect matchings of the ranks, or of the hosts
	// on every rail: Sample says K and the seed).
	Schedule string     `json:"schedule"`
	Ranks    []MeshRank `json:"ranks"`
	// Links are every scheduled link, in the order they ended, without
	// their results (see LinksFile); in the summary of a mesh of more than
	// MeshRankMatrixRanks ranks, only the links that failed or warned.
	Links []MeshLink `json:"links"`
	// LinkCount is the number of scheduled links when Links lists only
	// those that failed or warned (see LinkTotal).
	LinkCount int `json:"link_count,omitempty"`
	// LinksFile names the link stream written beside this document, as it
	// went: newline-delimited JSON events (see Event), one "link" event
	// per link with its full results. Relative to this document's folder.
	LinksFile string `json:"links_file,omitempty"`
	// Matrices are, per test, connection, size and headline figure (p50
	// and p99 of latency tests, Gbit/s of bandwidth tests), the figure of
	// every link; empty in the summary of a mesh of more than
	// MeshRankMatrixRanks ranks (see Aggregate).
	Matrices []Matrix `json:"matrices"`
	// Aggregate is, for a mesh of more than MeshAggregateRanks ranks, the
	// same figures per host pair, host, NIC and rail.
	Aggregate *MeshAggregate `json:"aggregate,omitempty"`
	// Gates are the per-link checks asked for; Failures the links that
	// failed them.
	Gates    *MeshGates    `json:"gates,omitempty"`
	Failures []LinkFailure `json:"failures,omitempty"`
	// RetestRounds is the number of rounds after the schedule's that
	// retested suspect links (numbered on from Rounds+1).
	RetestRounds int `json:"retest_rounds,omitempty"`
	// Verdicts are the blame for the bad figures: ranks and links judged
	// bad or flaky, rounds slow as a whole.
	Verdicts []Verdict `json:"verdicts,omitempty"`
	// Blame is what the verdicts were judged by, when blame ran.
	Blame *MeshBlame `json:"blame,omitempty"`

	// Sample is a sampled schedule's K and seed.
	Sample *MeshSample `json:"sample,omitempty"`

	// Duplex: each pair of ranks ran once (--duplex), both directions in
	// one link: its latency tests as a ping-pong, whose figure fills both
	// cells of the pair, its bandwidth tests bidirectional (both ends
	// sending at once), each direction's figure in its own cell. Links
	// then holds one link per pair (see MeshLink.Duplex and
	// Matrix.Duplex).
	Duplex bool `json:"duplex,omitempty"`
	// HostLevel: ranks are hosts, each link measured on every device of
	// both at once (--host-level), paired one by one (MeshRank.Lanes): a
	// cell is the sum over the devices, each device's own figures in the
	// link's results (Result.Devices, in the link stream).
	HostLevel bool `json:"host_level,omitempty"`
	// Topology is the fabric the mesh was told (--topology).
	Topology *MeshTopology `json:"topology,omitempty"`

	// Pattern is the load pattern the mesh ran (--pattern) in place of
	// the pairs; Steps its steps, StepFailures the steps that failed its
	// gates. A pattern's flows are in the link stream, each a link tagged
	// with its step, not in Links or the matrices.
	Pattern      *MeshPattern  `json:"pattern,omitempty"`
	Steps        []MeshStep    `json:"steps,omitempty"`
	StepFailures []StepFailure `json:"step_failures,omitempty"`
}

// The values of a mesh's string fields.
const (
	// What a matrix of a duplex mesh holds (Matrix.Duplex).
	// DuplexPingPong: a ping-pong's figure, crossing both ways; the two
	// cells of a pair hold the same value.
	DuplexPingPong = "ping-pong"
	// DuplexBidirectional: each direction of a bidirectional test, both
	// sending at once; values[i][j] is what rank i initiated towards rank j.
	DuplexBidirectional = "bidirectional"

	// Verdict kinds and subjects (Verdict.Kind, Verdict.Subject).
	VerdictBad   = "bad"   // slow, and slow again on retest (or not retested)
	VerdictFlaky = "flaky" // slow, but good again on retest
	VerdictSlow  = "slow"  // a round slow as a whole: its links judged against it

	SubjectRank   = "rank"
	SubjectLink   = "link"
	SubjectRound  = "round"
	SubjectSwitch = "switch" // a switch blamed: its links through its uplinks slow

	// Rank states (MeshRank.State).
	RankOK           = "ok"           // registered and there to the end
	RankLost         = "lost"         // registered, then died or went silent
	RankUnregistered = "unregistered" // never registered within the deadline

	// Kinds of LinkFailure (LinkFailure.Kind).
	FailLimit   = "limit"
	FailOutlier = "outlier"
)

// MeshBlame is what blame judged a mesh by: its options and, per figure
// judged, the fleet's median, spread and limit.
type MeshBlame struct {
	// Multiplier: a link is bad past this many spreads from its
	// baseline. MinSpread and MaxSpread (0: none) bound the spread, as
	// shares of a figure.
	Multiplier float64       `json:"multiplier"`
	MinSpread  float64       `json:"min_spread"`
	MaxSpread  float64       `json:"max_spread,omitempty"`
	Figures    []BlameFigure `json:"figures"`
}

// BlameFigure is one figure as blame judged it.
type BlameFigure struct {
	Test       string `json:"test"`
	Connection string `json:"connection,omitempty"`
	Size       int    `json:"size"`
	Figure     Figure `json:"figure"`
	// Links were judged; FleetMedian is the median the fleet's links were
	// judged against, Spread their spread (a share of the figure), Limit
	// the ratio to the baseline past which a link was bad (above 1 for a
	// latency, below for a bandwidth).
	Links       int     `json:"links"`
	FleetMedian float64 `json:"fleet_median"`
	Spread      float64 `json:"spread"`
	Limit       float64 `json:"limit"`
	// Unjudged says why the fleet could not be judged on this figure:
	// then it has no verdict, and Limit means nothing.
	Unjudged string `json:"unjudged,omitempty"`
}

// MeshSample is a sampled schedule's K and seed: the same ranks, K and
// seed give the same rounds.
type MeshSample struct {
	Rounds int    `json:"rounds"`
	Seed   uint64 `json:"seed"`
}

// Verdict is blame for bad figures of a mesh, judged from the fleet's own
// distribution (docs/mesh.md, "Blame"): a rank slow with most of its peers
// (one end's fault), a link slow while neither end is (the link's), or a
// round slow as a whole (a busy moment: its links were judged against the
// round, not the fleet), or, with a topology, a switch whose uplinks are
// slow while its inner links are not (SubjectSwitch, with Switch).
type Verdict struct {
	Subject string `json:"subject"` // "rank", "link", "round" or "switch"
	Kind    string `json:"kind"`    // "bad", "flaky" or, for a round, "slow"
	// Test, Connection, Size and Figure are the figure judged.
	Test       string `json:"test"`
	Connection string `json:"connection,omitempty"`
	Size       int    `json:"size"`
	Figure     Figure `json:"figure"`
	// Rank is the rank at fault (subject "rank"); From and To the link
	// (subject "link"); Round the round.
	Rank  *int `json:"rank,omitempty"`
	From  *int `json:"from,omitempty"`
	To    *int `json:"to,omitempty"`
	Round int  `json:"round,omitempty"`
	// Value is the figure (a rank's: the median of its bad links; a
	// round's: its median), in the figure's unit; Baseline what it was
	// judged against (the fleet median, or a slow round's); Ratio the one
	// to the other.
	Value    float64 `json:"value"`
	Baseline float64 `json:"baseline"`
	Ratio    float64 `json:"ratio"`
	// BadPeers of a rank's Peers had a bad link with it.
	BadPeers int `json:"bad_peers,omitempty"`
	Peers    int `json:"peers,omitempty"`
	// Retested links were measured again in rounds of their own;
	// Recovered of them were good.
	Retested  int `json:"retested,omitempty"`
	Recovered int `json:"recovered,omitempty"`
	// Message is the verdict as a sentence, as stderr prints it.
	Message string `json:"message"`
	// Switch is a switch verdict's evidence (subject "switch"); its Value
	// is the median figure of its cross-switch links.
	Switch *SwitchEvidence `json:"switch,omitempty"`
}

// MeshRank is one rank of a mesh.
type MeshRank struct {
	Rank int `json:"rank"`
	// LocalRank is the rank's index among the ranks of its host (it picks
	// the device when -d lists several).
	LocalRank int `json:"local_rank"`
	// State is "ok", "lost" or "unregistered"; Error says why when not ok.
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Addr is its test server's address (host:port), as the others dial it.
	Addr string `json:"addr,omitempty"`
	// Host is the rank's host and, once it ran a test, the device and GID
	// it used.
	Host *Host `json:"host,omitempty"`
	// Devices are the RDMA devices the rank found, with their GIDs, when it
	// registered.
	Devices []MeshDevice `json:"devices,omitempty"`
	// Lanes are, in a host-level mesh, the devices the rank measured on
	// at once, in the order a link pairs them with its peer's.
	Lanes []string `json:"lanes,omitempty"`
	// Clocks are the clocks its results were timed with (as a client).
	Clocks map[string]Clock `json:"clocks,omitempty"`
}

// ResultError is the error of one test and size of a link.
type ResultError struct {
	Test       string `json:"test"`
	Connection string `json:"connection,omitempty"`
	Size       int    `json:"size"`
	Error      string `json:"error"`
}

// Key is the test, connection and size of the result that failed.
func (e *ResultError) Key() Key { return Key{Test: e.Test, Connection: e.Connection, Size: e.Size} }

// MeshDevice is an RDMA device and port of a rank, as it registered it.
type MeshDevice struct {
	Name      string    `json:"name"`
	Port      int       `json:"port"`
	State     string    `json:"state,omitempty"`
	LinkLayer string    `json:"link_layer,omitempty"`
	GIDs      []MeshGID `json:"gids,omitempty"`
}

// MeshGID is one entry of a port's GID table.
type MeshGID struct {
	Index  int    `json:"index"`
	GID    string `json:"gid"`
	Type   string `json:"type,omitempty"`
	Netdev string `json:"netdev,omitempty"`
}

// MeshLink is one direction between two ranks: From ran the client end of
// every test against To's server.
type MeshLink struct {
	From  int `json:"from"`
	To    int `json:"to"`
	Round int `json:"round"` // 1-based
	// Start and End bound the link's tests; zero when it never ran.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Results are the link's, as `rdmabench TEST HOST` records them: in
	// the link's record of the mesh's link stream (and in a mesh document
	// of an earlier version), not in the summary, whose matrices hold the
	// link's figures.
	Results []Result `json:"results,omitempty"`
	// ResultErrors are the errors of the link's results that failed, in
	// the summary.
	ResultErrors []ResultError `json:"result_errors,omitempty"`
	Warnings     []string      `json:"warnings,omitempty"`
	// Duplex: the link ran both directions at once (a duplex mesh): its
	// results are From's as the client, a bandwidth result's Reverse
	// being To's direction, and its figures fill the cells From -> To
	// and To -> From.
	Duplex bool `json:"duplex,omitempty"`
	// Switches are the switches the link crossed, from From's leaf to
	// To's, when the mesh was given its topology.
	Switches []string `json:"switches,omitempty"`
	// Retest: the link was measured again, in the rounds of the
	// suspects after the schedule (in the link stream only; its figures are
	// in the verdicts, not the matrices).
	Retest bool `json:"retest,omitempty"`
	// Step is, for a load pattern's flow, its step (1-based; in the link
	// stream only: its figures are in Mesh.Steps); Probe marks the
	// step's ping-pong.
	Step  int  `json:"step,omitempty"`
	Probe bool `json:"probe,omitempty"`
	// Error says why the link failed: a test's error, or a rank lost or
	// never registered (then Results is empty).
	Error string `json:"error,omitempty"`
}

// Matrix is one figure of one test and size over every link: Values[i][j]
// is the figure of the link from rank i to rank j, null where there is
// none (i == j, a link that failed or was not scheduled).
type Matrix struct {
	Test       string       `json:"test"`
	Connection string       `json:"connection,omitempty"`
	Size       int          `json:"size"`
	Figure     Figure       `json:"figure"`
	Unit       string       `json:"unit"`
	Values     [][]*float64 `json:"values"`
	// Median is the median over the links that have the figure; absent
	// when none has.
	Median *float64 `json:"median,omitempty"`
	// Duplex, in a duplex mesh, says what a cell holds: DuplexPingPong or
	// DuplexBidirectional.
	Duplex string `json:"duplex,omitempty"`
}

// Between says, for tables, what a cell of mx holds: the row's rank to the
// column's, or in a duplex mesh the pair's ping-pong or one direction of
// its bidirectional test.
func (mx *Matrix) Between() string {
	switch mx.Duplex {
	case DuplexPingPong:
		return "each pair's ping-pong, both ways at once, in both its cells"
	case DuplexBidirectional:
		return "from the row's rank to the column's, both directions sending at once"
	}
	return "from the row's rank to the column's"
}

// Arrow joins a link's ranks in messages: "->", or "<->" for a link that
// ran both directions at once.
func (l *MeshLink) Arrow() string {
	if l.Duplex {
		return "<->"
	}
	return "->"
}

// Directions are the link as the matrices see it: itself, or for a duplex
// link its two directions, each with the results of its own direction (a
// bidirectional result's Bandwidth for From -> To, its Reverse for To ->
// From, neither with the other nor the total); a latency result (a
// ping-pong) is in both.
func (l *MeshLink) Directions() []MeshLink {
	if !l.Duplex {
		return []MeshLink{*l}
	}
	fwd, rev := *l, *l
	fwd.Duplex, rev.Duplex = false, false
	rev.From, rev.To = l.To, l.From
	fwd.Results = make([]Result, len(l.Results))
	rev.Results = make([]Result, len(l.Results))
	for i, r := range l.Results {
		f, b := r, r
		if r.Bidirectional() {
			f.Reverse, f.Total = nil, nil
			b.Bandwidth, b.Reverse, b.Total = r.Reverse, nil, nil
		}
		fwd.Results[i], rev.Results[i] = f, b
	}
	return []MeshLink{fwd, rev}
}

// Key is the test, connection and size of the matrix.
func (m *Matrix) Key() Key { return Key{Test: m.Test, Connection: m.Connection, Size: m.Size} }

// MeshGates are the per-link checks of a mesh.
type MeshGates struct {
	// Limits, as --limit-* gave them: figure name to value, in the figure's
	// unit (ns, Gbit/s, Mmsg/s).
	Limits map[string]float64 `json:"limits,omitempty"`
	// LinkShares, as --limit-bw 90%link gave them: figure name to the share
	// of each link's nominal rate (0.9) that every link must reach.
	LinkShares map[string]float64 `json:"link_shares,omitempty"`
	// OutlierFraction marks a link as an outlier when its figure is below
	// this fraction of the median of all links (bandwidth), or its latency
	// above the median divided by it.
	OutlierFraction float64 `json:"outlier_fraction,omitempty"`
}

// IsMesh reports whether doc is a mesh document (`rdmabench mesh`).
func (doc *Document) IsMesh() bool { return doc != nil && doc.Mesh != nil }

// LinkFailure is a link that failed a gate. From and To are -1 for a
// limit that no link has a figure for.
type LinkFailure struct {
	From       int     `json:"from"`
	To         int     `json:"to"`
	Test       string  `json:"test,omitempty"`
	Connection string  `json:"connection,omitempty"`
	Size       int     `json:"size,omitempty"`
	Kind       string  `json:"kind"` // "limit" or "outlier"
	Figure     Figure  `json:"figure"`
	Value      float64 `json:"value"`
	// Threshold is the limit, or the outlier bound (fraction × median), in
	// the figure's unit.
	Threshold float64 `json:"threshold"`
	Message   string  `json:"message"`
}

// Hostname is the host name rank registered with; empty for a rank the
// document does not hold or that sent no host.
func (m *Mesh) Hostname(rank int) string {
	if rank >= 0 && rank < len(m.Ranks) && m.Ranks[rank].Host != nil {
		return m.Ranks[rank].Host.Hostname
	}
	return ""
}

// FailedLinks returns the links that failed to measure.
func (m *Mesh) FailedLinks() []MeshLink {
	var out []MeshLink
	for _, l := range m.Links {
		if l.Error != "" {
			out = append(out, l)
		}
	}
	return out
}

// Failure returns the first error of a link: its own, else the first of
// its results'.
func (l *MeshLink) Failure() string {
	if l.Error != "" {
		return l.Error
	}
	for _, r := range l.Results {
		if r.Error != "" {
			return r.Error
		}
	}
	for _, e := range l.ResultErrors {
		return e.Error
	}
	return ""
}

// matrixFigures are the figures a mesh matrix shows for a result.
func matrixFigures(r *Result) []Figure {
	if r.Latency != nil {
		return []Figure{FigP50, FigP99}
	}
	if r.Headline() != nil {
		return []Figure{FigGbps}
	}
	return nil
}

// linkDoc is a link's results as a document of their own, for the checks
// and statistics made per document.
func linkDoc(l *MeshLink) *Document {
	d := NewDocument()
	d.Results = l.Results
	return d
}

// linkFigure is the figure of key in a link: the result's, or in repeated
// runs the median over the runs.
func linkFigure(l *MeshLink, k Key, f Figure) (float64, bool) {
	d := linkDoc(l)
	if d.Repeated() {
		for _, s := range d.Summarize() {
			if s.Key() == k {
				if sp, ok := s.Spread(f); ok && sp.N > 0 {
					return sp.Median, true
				}
			}
		}
		return 0, false
	}
	for i := range l.Results {
		r := &l.Results[i]
		if r.Key() == k && r.Error == "" {
			return f.Of(r)
		}
	}
	return 0, false
}

// BuildMatrices fills m.Matrices from the links' results: one matrix per
// test, connection, size and figure found in any link's results, in the
// order of m.Tests, then size.
func (m *Mesh) BuildMatrices() {
	b := NewMeshBuilder(m.Tests, Limits{}, 0)
	for i := range m.Links {
		b.Add(&m.Links[i])
	}
	m.Matrices = b.matrices(max(m.Size, len(m.Ranks)))
}

// CheckGates applies the per-link gates to the links of m (with its
// matrices built): each limit of l to every link's results (a link of
// repeated runs by the median of its runs), and, with outlier > 0, the
// outlier check to the p50 and bandwidth matrices: a bandwidth below
// outlier × the median of all links, or a p50 above the median / outlier.
// It records the gates and the failures in m and returns the failures.
func (m *Mesh) CheckGates(l Limits, outlier float64) []LinkFailure {
	b := NewMeshBuilder(m.Tests, l, outlier)
	for i := range m.Links {
		b.checkLink(m.Links[i].Directions())
	}
	m.Gates, m.Failures = b.gates(m.Matrices)
	return m.Failures
}

// CheckMatrixLimits checks the limits l on every link of m's matrices, as
// `rdmabench compare` checks them on its NEW mesh (a summary's matrices,
// without the links' results): each link that misses one fails. A limit
// relative to the link (90%link) takes the slower of the two ranks' ports'
// nominal rates; a limit no link has a figure for fails too, its message
// naming the mesh as of says ("new"). linkName names a link in messages:
// "0 -> 2 (node1 -> node3)".
func (m *Mesh) CheckMatrixLimits(l Limits, of string, linkName func(from, to int) string) []LinkFailure {
	var fails []LinkFailure
	rate := map[int]float64{}
	for i := range m.Ranks {
		r := &m.Ranks[i]
		if r.Rank >= 0 && r.Host != nil && r.Host.Device != nil {
			rate[r.Rank] = r.Host.Device.LinkGbps
		}
	}
	for _, lim := range l.list() {
		checked := false
		for i := range m.Matrices {
			mx := &m.Matrices[i]
			if mx.Figure != lim.fig || (lim.link > 0 && strings.HasPrefix(mx.Test, "tcp-")) {
				continue
			}
			for from, row := range mx.Values {
				for to, v := range row {
					if v == nil || from == to {
						continue
					}
					checked = true
					var linkGbps float64
					if rate[from] > 0 && rate[to] > 0 {
						linkGbps = min(rate[from], rate[to])
					}
					where := fmt.Sprintf("%s %s", linkName(from, to), mx.Key())
					limValue, ok := lim.against(linkGbps)
					if !ok {
						fails = append(fails, LinkFailure{From: from, To: to, Test: mx.Test, Connection: mx.Connection, Size: mx.Size,
							Kind: FailLimit, Figure: lim.fig, Value: *v,
							Message: fmt.Sprintf("%s: %s %s: the ranks record no port rate to measure it against", where, lim.name, formatLimit(lim, 0))})
						continue
					}
					over, op := *v > limValue, ">"
					if lim.fig.HigherIsBetter() {
						over, op = *v < limValue, "<"
					}
					if over {
						val, limText := limitFigures(lim, *v, linkGbps)
						fails = append(fails, LinkFailure{From: from, To: to, Test: mx.Test, Connection: mx.Connection, Size: mx.Size,
							Kind: FailLimit, Figure: lim.fig, Value: *v, Threshold: limValue,
							Message: fmt.Sprintf("%s: %s %s %s limit %s", where, lim.name, val, op, limText)})
					}
				}
			}
		}
		if !checked {
			fails = append(fails, LinkFailure{From: -1, To: -1, Kind: FailLimit, Figure: lim.fig, Threshold: lim.value,
				Message: fmt.Sprintf("limit %s %s: no link of %s has a figure to check it against", lim.name, formatLimit(lim, 0), of)})
		}
	}
	return fails
}

// A MeshBuilder makes a mesh's summary from its links as they arrive (rank
// 0 during a mesh, or a reader of a mesh's link stream): of each link it
// keeps the headline figures (the matrices' cells), its errors and
// warnings, and the failures of its limits, never its full results. Its
// memory is linear in the links, about 200 bytes each.
type MeshBuilder struct {
	tests   []string
	limits  Limits
	outlier float64
	links   []MeshLink // without their results
	// ranks, once SetRanks said it, is the mesh's number of ranks: past
	// MeshRankMatrixRanks, links keeps only the links that failed or
	// warned, and total counts them all.
	ranks int
	total int
	cols  []meshColumn
	colOf map[meshColumnKey]int
	// checked are the figures of the limits that some link had.
	checked map[Figure]bool
	fails   []LinkFailure // the links' limit failures, in arrival order
}

type meshColumnKey struct {
	Key
	fig Figure
}

// meshColumn is one future matrix: every link's value of one figure.
type meshColumn struct {
	meshColumnKey
	cells []linkCell
	// duplex is Matrix.Duplex, once a duplex link gave the column a cell.
	duplex string
}

type linkCell struct {
	from, to, round int32
	v               float64
}

// LinkValue is one link's value of one figure.
type LinkValue struct {
	From, To, Round int
	Value           float64
}

// Figures calls f with each figure of the links added (the future
// matrices, in the order first seen) and every link's value of it.
func (b *MeshBuilder) Figures(f func(k Key, fig Figure, values []LinkValue)) {
	for _, c := range b.cols {
		vs := make([]LinkValue, len(c.cells))
		for i, cl := range c.cells {
			vs[i] = LinkValue{From: int(cl.from), To: int(cl.to), Round: int(cl.round), Value: cl.v}
		}
		f(c.Key, c.fig, vs)
	}
}

// NewMeshBuilder starts a summary of the links of a mesh whose links run
// tests (the matrices' order), with the gates of l and outlier (0: none).
func NewMeshBuilder(tests []string, l Limits, outlier float64) *MeshBuilder {
	return &MeshBuilder{tests: tests, limits: l, outlier: outlier, colOf: map[meshColumnKey]int{},
		checked: map[Figure]bool{}}
}

// Add takes a link with its full results: its figures, its limit checks
// and the link itself without the results (a result that failed leaves its
// error in ResultErrors).
//
// A duplex link fills the cells of both its directions (Directions); its
// limits are checked on each direction's bandwidth and once on its
// ping-pongs.
func (b *MeshBuilder) Add(l *MeshLink) {
	dirs := l.Directions()
	for d := range dirs {
		dl := &dirs[d]
		for i := range dl.Results {
			r := &dl.Results[i]
			for _, f := range matrixFigures(r) {
				k := meshColumnKey{r.Key(), f}
				c, ok := b.colOf[k]
				if !ok {
					c = len(b.cols)
					b.colOf[k] = c
					b.cols = append(b.cols, meshColumn{meshColumnKey: k})
				}
				if l.Duplex && b.cols[c].duplex == "" {
					b.cols[c].duplex = DuplexBidirectional
					if r.Latency != nil {
						b.cols[c].duplex = DuplexPingPong
					}
				}
				if v, ok := linkFigure(dl, k.Key, f); ok && !b.has(c, dl) {
					b.cols[c].cells = append(b.cols[c].cells, linkCell{int32(dl.From), int32(dl.To), int32(dl.Round), v})
				}
			}
		}
	}
	b.checkLink(dirs)
	compact := *l
	compact.Results = nil
	compact.ResultErrors = nil
	for i := range l.Results {
		if r := &l.Results[i]; r.Error != "" {
			compact.ResultErrors = append(compact.ResultErrors, ResultError{Test: r.Test, Connection: r.Connection,
				Size: r.Size, Error: r.Error})
		}
	}
	compact.ResultErrors = append(compact.ResultErrors, l.ResultErrors...)
	b.total++
	if b.ranks <= MeshRankMatrixRanks || listed(&compact) {
		b.links = append(b.links, compact)
	}
}

// SetRanks tells the builder the mesh's number of ranks: past
// MeshRankMatrixRanks it keeps, of the links, only those that failed or
// warned (the summary lists those; the link stream has every link), so
// that its memory is that of the links' figures.
func (b *MeshBuilder) SetRanks(n int) { b.ranks = n }

// listed says whether the summary of a mesh too large to list every link
// lists the link l (without its results): it failed, a test of it
// failed, or it warned.
func listed(l *MeshLink) bool {
	return l.Error != "" || len(l.ResultErrors) > 0 || len(l.Warnings) > 0
}

// has says whether column c already holds the figure of link l (a link's
// repeated runs give it once).
func (b *MeshBuilder) has(c int, l *MeshLink) bool {
	cells := b.cols[c].cells
	return len(cells) > 0 && cells[len(cells)-1].from == int32(l.From) && cells[len(cells)-1].to == int32(l.To)
}

// Links is the number of links added.
func (b *MeshBuilder) Links() int { return b.total }

// Fill sets m's links (without their results), matrices, gates and
// failures from the links added so far; it costs what the summary
// holds, whatever the links' results held. The links are handed over, not
// copied: links added later start a list of their own.
//
// A mesh of more than MeshAggregateRanks ranks gets its aggregate too; one
// of more than MeshRankMatrixRanks ranks gets the aggregate only, no rank ×
// rank matrices, and lists only the links that failed or warned, with
// LinkCount counting them all.
func (b *MeshBuilder) Fill(m *Mesh) {
	n := max(m.Size, len(m.Ranks))
	m.Links = b.links
	b.links = nil
	m.LinkCount, m.Matrices, m.Aggregate = 0, nil, nil
	if n > MeshRankMatrixRanks {
		m.Links = slices.DeleteFunc(m.Links, func(l MeshLink) bool { return !listed(&l) })
		m.LinkCount = b.total
		m.Matrices = []Matrix{}
	} else {
		m.Matrices = b.matrices(n)
	}
	if m.Links == nil {
		m.Links = []MeshLink{}
	}
	if n > MeshAggregateRanks {
		m.Aggregate = aggregate(b.sortedCols(), placeRanks(m, n))
	}
	m.Gates, m.Failures = b.gates(m.Matrices)
}

// sortedCols are the columns in the order of the tests, then test name,
// connection and size.
func (b *MeshBuilder) sortedCols() []meshColumn {
	order := func(test string) int {
		if i := slices.Index(b.tests, test); i >= 0 {
			return i
		}
		return len(b.tests)
	}
	cols := slices.Clone(b.cols)
	slices.SortStableFunc(cols, func(a, b meshColumn) int {
		return cmp.Or(cmp.Compare(order(a.Test), order(b.Test)), strings.Compare(a.Test, b.Test),
			strings.Compare(a.Connection, b.Connection), cmp.Compare(a.Size, b.Size))
	})
	return cols
}

// matrices makes the n×n matrices, in the order of the tests, then test
// name, connection and size.
func (b *MeshBuilder) matrices(n int) []Matrix {
	cols := b.sortedCols()
	out := make([]Matrix, 0, len(cols))
	for _, c := range cols {
		mx := Matrix{Test: c.Test, Connection: c.Connection, Size: c.Size, Figure: c.fig, Unit: c.fig.Unit(),
			Values: make([][]*float64, n), Duplex: c.duplex}
		// One backing array for all cells, one for the rows.
		vals := make([]float64, len(c.cells))
		cells := make([]*float64, n*n)
		for i := range mx.Values {
			mx.Values[i] = cells[i*n : (i+1)*n : (i+1)*n]
		}
		for i, cl := range c.cells {
			if cl.from < 0 || int(cl.from) >= n || cl.to < 0 || int(cl.to) >= n {
				continue
			}
			vals[i] = cl.v
			mx.Values[cl.from][cl.to] = &vals[i]
		}
		if len(vals) > 0 {
			med := Median(vals)
			mx.Median = &med
		}
		out = append(out, mx)
	}
	return out
}

// Median is the median of v, which must not be empty: its middle value,
// or the mean of its two middle values. v is left as it is.
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// checkLink applies the limits to a link's directions (Directions): the
// first with all its results, the second (a duplex link's reverse) with
// its bandwidth only, its ping-pongs being the first's.
func (b *MeshBuilder) checkLink(dirs []MeshLink) {
	for d := range dirs {
		dl := &dirs[d]
		if d > 0 {
			dl.Results = slices.DeleteFunc(slices.Clone(dl.Results), func(r Result) bool { return r.Latency != nil })
		}
		b.checkLimits(dl)
	}
}

// checkLimits applies each limit to a link's results (a link of repeated
// runs by the median of its runs) and keeps the failures.
func (b *MeshBuilder) checkLimits(link *MeshLink) {
	if b.limits.IsZero() {
		return
	}
	for _, f := range linkDoc(link).CheckLimits(b.limits) {
		if f.Key == (Key{}) {
			continue // this link has no such figure: judged over all links in gates
		}
		b.checked[f.Figure] = true
		b.fails = append(b.fails, LinkFailure{From: link.From, To: link.To, Test: f.Test, Connection: f.Connection, Size: f.Size, Kind: FailLimit,
			Figure: f.Figure, Value: f.Value, Threshold: f.Limit,
			Message: fmt.Sprintf("%d -> %d %s", link.From, link.To, f.Message)})
	}
	for _, lim := range b.limits.list() {
		for j := range link.Results {
			if _, ok := lim.fig.Of(&link.Results[j]); ok && link.Results[j].Error == "" {
				b.checked[lim.fig] = true
			}
		}
	}
}

// gates are the mesh's gates and every failure: the links' limit
// failures, a limit no link had a figure for, and with an outlier
// fraction the outliers of the matrices: a bandwidth below outlier × the
// median of all links, or a p50 above the median / outlier.
func (b *MeshBuilder) gates(matrices []Matrix) (*MeshGates, []LinkFailure) {
	l, outlier := b.limits, b.outlier
	if l.IsZero() && outlier <= 0 {
		return nil, nil
	}
	g := &MeshGates{OutlierFraction: outlier}
	for _, lim := range l.list() {
		into, v := &g.Limits, lim.value
		if lim.link > 0 {
			into, v = &g.LinkShares, lim.link
		}
		if *into == nil {
			*into = map[string]float64{}
		}
		(*into)[string(lim.fig)] = v
	}
	fails := slices.Clone(b.fails)
	for _, lim := range l.list() {
		if !b.checked[lim.fig] {
			fails = append(fails, LinkFailure{From: -1, To: -1, Kind: FailLimit, Figure: lim.fig, Threshold: lim.value,
				Message: fmt.Sprintf("limit %s %s: no link has a figure to check it against", lim.name, formatLimit(lim, 0))})
		}
	}
	if outlier > 0 && len(matrices) > 0 {
		for i := range matrices {
			fails = append(fails, outliers(&matrices[i], outlier)...)
		}
	} else if outlier > 0 {
		// No matrices (a mesh too large for them): the same from the cells.
		for _, c := range b.sortedCols() {
			fails = append(fails, columnOutliers(&c, outlier)...)
		}
	}
	return g, fails
}

// columnOutliers are outliers' failures of a column's cells, in the order
// of a matrix's rows and columns.
func columnOutliers(c *meshColumn, outlier float64) []LinkFailure {
	if len(c.cells) == 0 || c.fig == FigP99 {
		return nil
	}
	cells := slices.Clone(c.cells)
	slices.SortStableFunc(cells, func(a, b linkCell) int { return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to)) })
	vals := make([]float64, len(cells))
	for i, cl := range cells {
		vals[i] = cl.v
	}
	slices.Sort(vals)
	med := sortedMedian(vals)
	if med <= 0 {
		return nil
	}
	var fails []LinkFailure
	for _, cl := range cells {
		if f, bad := outlierOf(c.Key, c.fig, int(cl.from), int(cl.to), cl.v, med, outlier); bad {
			fails = append(fails, f)
		}
	}
	return fails
}

// outliers are the links of mx whose figure is an outlier: a bandwidth
// below outlier × the median of all links, or a p50 above the median /
// outlier. The p99 is too noisy to judge a link by its neighbours' (use
// --limit-p99).
func outliers(mx *Matrix, outlier float64) []LinkFailure {
	if mx.Median == nil || *mx.Median <= 0 || mx.Figure == FigP99 {
		return nil
	}
	var fails []LinkFailure
	for from, row := range mx.Values {
		for to, v := range row {
			if v == nil {
				continue
			}
			if f, bad := outlierOf(mx.Key(), mx.Figure, from, to, *v, *mx.Median, outlier); bad {
				fails = append(fails, f)
			}
		}
	}
	return fails
}

// outlierOf is the failure of the link from -> to whose figure fig of key
// k is v, when it is an outlier against the median med of all links.
func outlierOf(k Key, fig Figure, from, to int, v, med, outlier float64) (LinkFailure, bool) {
	bound := med * outlier
	if fig.IsLatency() {
		bound = med / outlier
	}
	bad := v < bound
	op := "<"
	if fig.IsLatency() {
		bad, op = v > bound, ">"
	}
	if !bad {
		return LinkFailure{}, false
	}
	fs := fig.FormatAll(v, bound, med)
	why := fmt.Sprintf("%s × the median %s of all links", textfmt.Num(outlier), fs[2])
	if fig.IsLatency() {
		why = fmt.Sprintf("the median %s of all links ÷ %s", fs[2], textfmt.Num(outlier))
	}
	return LinkFailure{From: from, To: to, Test: k.Test, Connection: k.Connection, Size: k.Size, Kind: FailOutlier, Figure: fig,
		Value: v, Threshold: bound,
		Message: fmt.Sprintf("%d -> %d %s: %s %s %s %s (%s)", from, to, k,
			fig.Name(), fs[0], op, fs[1], why)}, true
}

// checkMesh refuses what no mesh produces (see checkValues).
func (c checker) mesh(m *Mesh) {
	if m == nil {
		return
	}
	k := c.at("mesh")
	k.int("size", int64(m.Size))
	k.int("rounds", int64(m.Rounds))
	for i := range m.Links {
		l := &m.Links[i]
		kl := c.at(fmt.Sprintf("mesh link %d (%d -> %d)", i+1, l.From, l.To))
		kl.int("from", int64(l.From))
		kl.int("to", int64(l.To))
		for j := range l.Results {
			r := &l.Results[j]
			kr := kl.at(fmt.Sprintf("%s: result %d (%s, %d B)", kl.where, j+1, textfmt.Clean(r.Test), r.Size))
			kr.int("size", int64(r.Size))
			kr.int("iterations", int64(r.Iterations))
			kr.latency("latency", r.Latency)
			kr.bandwidth("bandwidth", r.Bandwidth)
		}
	}
	c.aggregate(m.Aggregate)
	for i := range m.Matrices {
		mx := &m.Matrices[i]
		km := c.at(fmt.Sprintf("mesh matrix %d (%s, %d B, %s)", i+1, textfmt.Clean(mx.Test), mx.Size, textfmt.Clean(string(mx.Figure))))
		for _, row := range mx.Values {
			for _, v := range row {
				if v != nil {
					km.float("value", *v)
				}
			}
		}
	}
}
