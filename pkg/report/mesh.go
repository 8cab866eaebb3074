package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
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
	Links    []MeshLink `json:"links"`
	// Matrices are, per test, connection, size and headline figure (p50
	// and p99 of latency tests, Gbit/s of bandwidth tests), the figure of
	// every link.
	Matrices []Matrix `json:"matrices"`
	// Gates are the per-link checks asked for; Failures the links that
	// failed them.
	Gates    *MeshGates    `json:"gates,omitempty"`
	Failures []LinkFailure `json:"failures,omitempty"`

	// Sample is a sampled schedule's K and seed.
	Sample *MeshSample `json:"sample,omitempty"`
}

// MeshSample is a sampled schedule's K and seed: the same ranks, K and
// seed give the same rounds.
type MeshSample struct {
	Rounds int    `json:"rounds"`
	Seed   uint64 `json:"seed"`
}

// Rank states.
const (
	RankOK           = "ok"           // registered and there to the end
	RankLost         = "lost"         // registered, then died or went silent
	RankUnregistered = "unregistered" // never registered within the deadline
)

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
	// Clocks are the clocks its results were timed with (as a client).
	Clocks map[string]Clock `json:"clocks,omitempty"`
}

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
	// Results are the link's, as `rdmabench TEST HOST` records them.
	Results  []Result `json:"results"`
	Warnings []string `json:"warnings,omitempty"`
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

// Kinds of LinkFailure.
const (
	FailLimit   = "limit"
	FailOutlier = "outlier"
)

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

// LinkError returns the first error of a link: its own, else the first of
// its results'.
func (l *MeshLink) failure() string {
	if l.Error != "" {
		return l.Error
	}
	for _, r := range l.Results {
		if r.Error != "" {
			return r.Error
		}
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
		for _, s := range Summarize(d) {
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
		if KeyOf(r) == k && r.Error == "" {
			return f.Of(r)
		}
	}
	return 0, false
}

// BuildMatrices fills m.Matrices from the links: one matrix per test,
// connection, size and figure found in any link's results, in the order of
// m.Tests, then size.
func (m *Mesh) BuildMatrices() {
	type mk struct {
		Key
		fig Figure
	}
	var keys []mk
	seen := map[mk]bool{}
	for _, l := range m.Links {
		for i := range l.Results {
			r := &l.Results[i]
			for _, f := range matrixFigures(r) {
				k := mk{KeyOf(r), f}
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
		}
	}
	order := func(test string) int {
		if i := slices.Index(m.Tests, test); i >= 0 {
			return i
		}
		return len(m.Tests)
	}
	slices.SortStableFunc(keys, func(a, b mk) int {
		return cmp.Or(cmp.Compare(order(a.Test), order(b.Test)), strings.Compare(a.Test, b.Test),
			strings.Compare(a.Connection, b.Connection), cmp.Compare(a.Size, b.Size))
	})
	n := max(m.Size, len(m.Ranks))
	m.Matrices = nil
	for _, k := range keys {
		mx := Matrix{Test: k.Test, Connection: k.Connection, Size: k.Size, Figure: k.fig, Unit: k.fig.Unit(),
			Values: make([][]*float64, n)}
		for i := range mx.Values {
			mx.Values[i] = make([]*float64, n)
		}
		var all []float64
		for i := range m.Links {
			l := &m.Links[i]
			if l.From < 0 || l.From >= n || l.To < 0 || l.To >= n {
				continue
			}
			if v, ok := linkFigure(l, k.Key, k.fig); ok {
				mx.Values[l.From][l.To] = &v
				all = append(all, v)
			}
		}
		if len(all) > 0 {
			med := median(all)
			mx.Median = &med
		}
		m.Matrices = append(m.Matrices, mx)
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// CheckMesh applies the per-link gates to the links of m (with its
// matrices built): each limit of l to every link's results (a link of
// repeated runs by the median of its runs), and, with outlier > 0, the
// outlier check to the p50 and bandwidth matrices: a bandwidth below
// outlier × the median of all links, or a p50 above the median / outlier. It records the
// gates and the failures in m and returns the failures.
func CheckMesh(m *Mesh, l Limits, outlier float64) []LinkFailure {
	m.Gates, m.Failures = nil, nil
	if l.IsZero() && outlier <= 0 {
		return nil
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
	m.Gates = g
	var fails []LinkFailure
	if !l.IsZero() {
		checked := map[Figure]bool{}
		for i := range m.Links {
			link := &m.Links[i]
			for _, f := range CheckLimits(linkDoc(link), l) {
				if f.Key == (Key{}) {
					continue // this link has no such figure: judged over all links below
				}
				checked[f.Figure] = true
				fails = append(fails, LinkFailure{From: link.From, To: link.To, Test: f.Test, Connection: f.Connection, Size: f.Size, Kind: FailLimit,
					Figure: f.Figure, Value: f.Value, Threshold: f.Limit,
					Message: fmt.Sprintf("%d -> %d %s", link.From, link.To, f.Message)})
			}
			for _, lim := range l.list() {
				for j := range link.Results {
					if _, ok := lim.fig.Of(&link.Results[j]); ok && link.Results[j].Error == "" {
						checked[lim.fig] = true
					}
				}
			}
		}
		for _, lim := range l.list() {
			if !checked[lim.fig] {
				fails = append(fails, LinkFailure{From: -1, To: -1, Kind: FailLimit, Figure: lim.fig, Threshold: lim.value,
					Message: fmt.Sprintf("limit %s %s: no link has a figure to check it against", lim.name, formatLimit(lim, 0))})
			}
		}
	}
	if outlier > 0 {
		for i := range m.Matrices {
			mx := &m.Matrices[i]
			if mx.Median == nil || *mx.Median <= 0 || mx.Figure == FigP99 {
				continue // the tail is too noisy to judge a link by its neighbours': use --limit-p99
			}
			med := *mx.Median
			bound := med * outlier
			if mx.Figure.IsLatency() {
				bound = med / outlier
			}
			for from, row := range mx.Values {
				for to, v := range row {
					if v == nil {
						continue
					}
					bad := *v < bound
					op := "<"
					if mx.Figure.IsLatency() {
						bad, op = *v > bound, ">"
					}
					if !bad {
						continue
					}
					why := fmt.Sprintf("%s × the median %s of all links", num(outlier), mx.Figure.Format(med))
					if mx.Figure.IsLatency() {
						why = fmt.Sprintf("the median %s of all links ÷ %s", mx.Figure.Format(med), num(outlier))
					}
					fails = append(fails, LinkFailure{From: from, To: to, Test: mx.Test, Connection: mx.Connection, Size: mx.Size, Kind: FailOutlier, Figure: mx.Figure,
						Value: *v, Threshold: bound,
						Message: fmt.Sprintf("%d -> %d %s: %s %s %s %s (%s)", from, to, mx.Key(),
							figureName(mx.Figure), mx.Figure.Format(*v), op, mx.Figure.Format(bound), why)})
				}
			}
		}
	}
	m.Failures = fails
	return fails
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
			kr := kl.at(fmt.Sprintf("%s: result %d (%s, %d B)", kl.where, j+1, clean(r.Test), r.Size))
			kr.int("size", int64(r.Size))
			kr.int("iterations", int64(r.Iterations))
			kr.latency("latency", r.Latency)
			kr.bandwidth("bandwidth", r.Bandwidth)
		}
	}
	for i := range m.Matrices {
		mx := &m.Matrices[i]
		km := c.at(fmt.Sprintf("mesh matrix %d (%s, %d B, %s)", i+1, clean(mx.Test), mx.Size, clean(string(mx.Figure))))
		for _, row := range mx.Values {
			for _, v := range row {
				if v != nil {
					km.float("value", *v)
				}
			}
		}
	}
}

// meshFigure writes v of f for a matrix cell: µs with two decimals, Gbit/s
// with two or three significant decimals.
func meshCell(f Figure, v *float64) string {
	if v == nil {
		return "-"
	}
	x := *v
	if f.IsLatency() {
		x /= 1e3
	}
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return fmt.Sprint(x)
	case x != 0 && math.Abs(x) < 0.1:
		return fmt.Sprintf("%.4f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// figureName names a matrix's figure in prose: "p50", "bandwidth".
func figureName(f Figure) string {
	switch f {
	case FigGbps, FigMiBps:
		return "bandwidth"
	case FigMsgRate:
		return "message rate"
	}
	return string(f)
}

// meshUnit is the unit of a matrix's cells as tables show them.
func meshUnit(f Figure) string {
	if f.IsLatency() {
		return "µs"
	}
	return f.Unit()
}
