package compare

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// MeshSchema is the value of the "schema" field of a comparison of
// two mesh documents written as JSON.
const MeshSchema = "rdmabench/compare-mesh/v1"

// Ways of matching the ranks of two meshes.
const (
	MatchByRank = "rank" // rank i of base is rank i of new
	MatchByHost = "host" // a rank is its host name (and device, when every rank has one)
)

// DefaultMeshTop is how many of each matrix's most changed links a mesh
// comparison lists unless told otherwise.
const DefaultMeshTop = 10

// MeshOptions tune [CompareMesh].
type MeshOptions struct {
	// BaseName and NewName name the two documents (their file names);
	// empty: "base" and "new".
	BaseName, NewName string
	// Top is how many of each matrix's most changed links to list; 0
	// means [DefaultMeshTop], a negative number none.
	Top int
}

// MeshComparison is the change from a base mesh document to a new one:
// per matrix (test, connection, size and figure) found in both, the
// change of every link measured in both, matched by rank or by host
// ([MeshComparison.MatchedBy]). Each link has one value per side (the
// matrix cell: its figure, or the median of its repeated runs), so there
// is no significance test: a gate compares the change of each link's
// value directly ([MeshComparison.CheckGates]).
type MeshComparison struct {
	Base MeshSide `json:"base"`
	New  MeshSide `json:"new"`
	// MatchedBy is how links are matched: "rank" (rank numbers) or
	// "host" (host name, and device when every rank has one: a re-run
	// that put ranks on other hosts). Links are named by their ranks in
	// new; base_from and base_to give base's where they differ.
	MatchedBy string `json:"matched_by"`
	// Ranks are the ranks that do not match plainly: on one side only, on
	// another host (matched by rank), or under another number (matched by
	// host).
	Ranks []RankMatch `json:"ranks,omitempty"`
	// Top is how many of each matrix's most changed links Matrices list.
	Top      int            `json:"top"`
	Matrices []MatrixChange `json:"matrices"`
	// OnlyBase and OnlyNew are the matrices found on one side only.
	OnlyBase []MatrixID `json:"only_base,omitempty"`
	OnlyNew  []MatrixID `json:"only_new,omitempty"`
	// FailedBase and FailedNew are the links that failed to measure on
	// each side, in that side's rank numbers.
	FailedBase []FailedLink `json:"failed_base,omitempty"`
	FailedNew  []FailedLink `json:"failed_new,omitempty"`
	// Steps are, for two meshes that ran a load pattern (--pattern), each
	// step's receivers on both sides.
	Steps []StepChange `json:"steps,omitempty"`
	// Warnings are the differences of the two runs (tool version,
	// parameters, tests, schedule) that may explain a change.
	Warnings []string `json:"warnings,omitempty"`

	base, new  *report.Mesh
	newToBase  []int // rank of new -> rank of base, -1: none
	baseToNew  []int
	pairs      [][2]int // Matrices[i]: index of its matrix in base and in new
	newHosts   []string // host of each rank of new, for messages
	baseHostOf []string
}

// MeshSide describes one of the two mesh documents of a comparison.
type MeshSide struct {
	Side
	// Ranks, Links and Failed count the mesh's ranks, scheduled links and
	// links that failed to measure.
	Ranks  int `json:"ranks"`
	Links  int `json:"links"`
	Failed int `json:"failed"`
}

// RankMatch is a rank of a mesh comparison that does not match plainly.
// Rank or BaseRank is -1 for a rank on one side only.
type RankMatch struct {
	Rank     int    `json:"rank"`
	BaseRank int    `json:"base_rank"`
	NewHost  string `json:"new_host,omitempty"`
	BaseHost string `json:"base_host,omitempty"`
}

func (r RankMatch) String() string {
	switch {
	case r.Rank < 0:
		return fmt.Sprintf("base rank %d (%s) is not in new", r.BaseRank, cmp.Or(r.BaseHost, "?"))
	case r.BaseRank < 0:
		return fmt.Sprintf("rank %d (%s) is not in base", r.Rank, cmp.Or(r.NewHost, "?"))
	case r.Rank != r.BaseRank:
		return fmt.Sprintf("rank %d (%s) was rank %d in base", r.Rank, cmp.Or(r.NewHost, "?"), r.BaseRank)
	}
	return fmt.Sprintf("rank %d is on %s, was on %s in base", r.Rank, cmp.Or(r.NewHost, "?"), cmp.Or(r.BaseHost, "?"))
}

// MatrixID names one matrix of a mesh: test, connection, size and figure.
type MatrixID struct {
	report.Key
	Figure report.Figure `json:"figure"`
	Unit   string        `json:"unit"`
}

func (m MatrixID) String() string { return m.Key.String() + " " + string(m.Figure) }

// MatrixChange is the comparison of one matrix found in both meshes.
type MatrixChange struct {
	MatrixID
	// Links is the number of links measured on both sides; OnlyBase and
	// OnlyNew those measured on one side only.
	Links    int `json:"links"`
	OnlyBase int `json:"only_base"`
	OnlyNew  int `json:"only_new"`
	// BaseMedian and NewMedian are the medians over the links measured on
	// both sides; Change is NewMedian / BaseMedian - 1 (absent when a
	// median is missing or the base's is 0).
	BaseMedian *float64 `json:"base_median,omitempty"`
	NewMedian  *float64 `json:"new_median,omitempty"`
	Change     *float64 `json:"change,omitempty"`
	// Top are the most changed links, either way: ranked by how far
	// new/base is from 1 (twice as slow and twice as fast rank alike);
	// a link whose value did not change is not listed.
	Top []LinkChange `json:"top"`
}

// LinkChange is the change of one link's value.
type LinkChange struct {
	From int `json:"from"`
	To   int `json:"to"`
	// BaseFrom and BaseTo are the link's ranks in base, where they differ
	// from new's.
	BaseFrom *int    `json:"base_from,omitempty"`
	BaseTo   *int    `json:"base_to,omitempty"`
	FromHost string  `json:"from_host,omitempty"`
	ToHost   string  `json:"to_host,omitempty"`
	Base     float64 `json:"base"`
	New      float64 `json:"new"`
	// Change is New / Base - 1; absent when Base is 0.
	Change *float64 `json:"change,omitempty"`
}

// FailedLink is a link that failed to measure.
type FailedLink struct {
	From  int    `json:"from"`
	To    int    `json:"to"`
	Error string `json:"error"`
}

// CompareMesh compares two mesh documents (see [MeshComparison]). It keeps
// the two documents' matrices and walks them again for the gates and for
// CSV: its own memory is linear in the links compared, with nothing per
// link kept beyond each matrix's top ones.
func CompareMesh(base, new *report.Document, opt MeshOptions) (*MeshComparison, error) {
	if !base.IsMesh() || !new.IsMesh() {
		return nil, fmt.Errorf("report: compare meshes: %s", MixedKinds(base, new, cmp.Or(opt.BaseName, "base"), cmp.Or(opt.NewName, "new")))
	}
	if bm, nm := base.Mesh, new.Mesh; len(bm.Matrices) == 0 && len(nm.Matrices) == 0 && bm.Aggregate != nil && nm.Aggregate != nil {
		return compareMeshHosts(base, new, opt)
	}
	top := opt.Top
	if top == 0 {
		top = DefaultMeshTop
	}
	top = max(top, 0)
	bm, nm := base.Mesh, new.Mesh
	c := &MeshComparison{
		Base:     meshSide(cmp.Or(opt.BaseName, "base"), base),
		New:      meshSide(cmp.Or(opt.NewName, "new"), new),
		Top:      top,
		Matrices: []MatrixChange{},
		base:     bm, new: nm,
	}
	c.matchRanks()
	type matrixKey struct {
		report.Key
		fig report.Figure
	}
	inNew := map[matrixKey]int{}
	for i := range nm.Matrices {
		mx := &nm.Matrices[i]
		if _, dup := inNew[matrixKey{mx.Key(), mx.Figure}]; !dup {
			inNew[matrixKey{mx.Key(), mx.Figure}] = i
		}
	}
	seen := map[matrixKey]bool{}
	for i := range bm.Matrices {
		mx := &bm.Matrices[i]
		k := matrixKey{mx.Key(), mx.Figure}
		if seen[k] {
			continue
		}
		seen[k] = true
		j, ok := inNew[k]
		if !ok {
			c.OnlyBase = append(c.OnlyBase, matrixID(mx))
			continue
		}
		c.pairs = append(c.pairs, [2]int{i, j})
		c.Matrices = append(c.Matrices, c.compareMatrix(mx, &nm.Matrices[j]))
	}
	for i := range nm.Matrices {
		if mx := &nm.Matrices[i]; !seen[matrixKey{mx.Key(), mx.Figure}] {
			seen[matrixKey{mx.Key(), mx.Figure}] = true
			c.OnlyNew = append(c.OnlyNew, matrixID(mx))
		}
	}
	for _, l := range bm.FailedLinks() {
		c.FailedBase = append(c.FailedBase, FailedLink{From: l.From, To: l.To, Error: l.Error})
	}
	for _, l := range nm.FailedLinks() {
		c.FailedNew = append(c.FailedNew, FailedLink{From: l.From, To: l.To, Error: l.Error})
	}
	c.Warnings = meshDiff(base, new)
	steps, warns := compareSteps(bm, nm)
	c.Steps, c.Warnings = steps, append(c.Warnings, warns...)
	return c, nil
}

// mixedKinds says which of two documents is a mesh and which is not.
func MixedKinds(base, new *report.Document, baseName, newName string) string {
	kind := func(d *report.Document) string {
		if d.IsMesh() {
			return "a mesh document (rdmabench mesh)"
		}
		return "a single run's document"
	}
	return fmt.Sprintf("BASE %s is %s but NEW %s is %s: compare two mesh documents, or two single runs",
		baseName, kind(base), newName, kind(new))
}

func meshSide(name string, doc *report.Document) MeshSide {
	m := doc.Mesh
	return MeshSide{Side: side(name, doc), Ranks: meshRanks(m), Links: m.LinkTotal(), Failed: len(m.FailedLinks())}
}

// meshRanks is the number of ranks of m.
func meshRanks(m *report.Mesh) int {
	n := max(m.Size, len(m.Ranks))
	for i := range m.Ranks {
		n = max(n, m.Ranks[i].Rank+1)
	}
	for i := range m.Matrices {
		n = max(n, len(m.Matrices[i].Values))
	}
	return n
}

func matrixID(mx *report.Matrix) MatrixID {
	return MatrixID{Key: mx.Key(), Figure: mx.Figure, Unit: cmp.Or(mx.Unit, mx.Figure.Unit())}
}

// rankIdentity is what identifies a rank of a mesh across runs: its host
// name and device.
type rankIdentity struct{ host, device string }

func (r rankIdentity) String() string {
	return strings.TrimSpace(r.host + " " + r.device)
}

// identities returns the host and device of each rank of m (n ranks).
func identities(m *report.Mesh, n int) []rankIdentity {
	ids := make([]rankIdentity, n)
	for i := range m.Ranks {
		r := &m.Ranks[i]
		if r.Rank < 0 || r.Rank >= n || r.Host == nil {
			continue
		}
		id := rankIdentity{host: r.Host.Hostname}
		switch {
		case r.Host.Device != nil:
			id.device = r.Host.Device.Name
		case len(r.Devices) == 1:
			id.device = r.Devices[0].Name
		}
		ids[r.Rank] = id
	}
	return ids
}

// matchRanks decides how ranks match: by rank, unless a rank's host
// differs between the runs and host name (with the device, when every rank
// has one) identifies every rank of both; then by host.
func (c *MeshComparison) matchRanks() {
	nb, nn := c.Base.Ranks, c.New.Ranks
	bi, ni := identities(c.base, nb), identities(c.new, nn)
	c.baseHostOf, c.newHosts = make([]string, nb), make([]string, nn)
	for i, id := range bi {
		c.baseHostOf[i] = id.String()
	}
	for i, id := range ni {
		c.newHosts[i] = id.String()
	}
	byRank := func() {
		c.MatchedBy = MatchByRank
		c.newToBase, c.baseToNew = make([]int, nn), make([]int, nb)
		for i := range c.newToBase {
			c.newToBase[i] = -1
			if i < nb {
				c.newToBase[i] = i
			}
		}
		for i := range c.baseToNew {
			c.baseToNew[i] = -1
			if i < nn {
				c.baseToNew[i] = i
			}
		}
	}
	moved := false
	for i := range min(nb, nn) {
		if bi[i].host != "" && ni[i].host != "" && bi[i] != ni[i] {
			moved = true
		}
	}
	everyHost, everyDevice := true, true
	for _, ids := range [][]rankIdentity{bi, ni} {
		for _, id := range ids {
			everyHost = everyHost && id.host != ""
			everyDevice = everyDevice && id.device != ""
		}
	}
	key := func(id rankIdentity) rankIdentity {
		if !everyDevice {
			id.device = ""
		}
		return id
	}
	unique := func(ids []rankIdentity) map[rankIdentity]int {
		m := make(map[rankIdentity]int, len(ids))
		for i, id := range ids {
			if _, dup := m[key(id)]; dup {
				return nil
			}
			m[key(id)] = i
		}
		return m
	}
	var baseOf, newOf map[rankIdentity]int
	if moved && everyHost {
		baseOf, newOf = unique(bi), unique(ni)
	}
	if baseOf == nil || newOf == nil {
		byRank()
		for i := range max(nb, nn) {
			rm := RankMatch{Rank: i, BaseRank: i}
			if i < nb {
				rm.BaseHost = c.baseHostOf[i]
			} else {
				rm.BaseRank = -1
			}
			if i < nn {
				rm.NewHost = c.newHosts[i]
			} else {
				rm.Rank = -1
			}
			if rm.Rank < 0 || rm.BaseRank < 0 || (rm.BaseHost != "" && rm.NewHost != "" && bi[i] != ni[i]) {
				c.Ranks = append(c.Ranks, rm)
			}
		}
		return
	}
	c.MatchedBy = MatchByHost
	c.newToBase, c.baseToNew = make([]int, nn), make([]int, nb)
	for i, id := range ni {
		c.newToBase[i] = -1
		if b, ok := baseOf[key(id)]; ok {
			c.newToBase[i] = b
		}
		if c.newToBase[i] != i {
			c.Ranks = append(c.Ranks, RankMatch{Rank: i, BaseRank: c.newToBase[i], NewHost: c.newHosts[i],
				BaseHost: c.hostOfBase(c.newToBase[i])})
		}
	}
	for i, id := range bi {
		c.baseToNew[i] = -1
		if n, ok := newOf[key(id)]; ok {
			c.baseToNew[i] = n
		} else {
			c.Ranks = append(c.Ranks, RankMatch{Rank: -1, BaseRank: i, BaseHost: c.baseHostOf[i]})
		}
	}
}

func (c *MeshComparison) hostOfBase(r int) string {
	if r < 0 || r >= len(c.baseHostOf) {
		return ""
	}
	return c.baseHostOf[r]
}

func (c *MeshComparison) hostOfNew(r int) string {
	if r < 0 || r >= len(c.newHosts) {
		return ""
	}
	return c.newHosts[r]
}

// cellOf is mx's value of the link from -> to; nil when it has none.
func cellOf(mx *report.Matrix, from, to int) *float64 {
	if from < 0 || to < 0 || from >= len(mx.Values) || to >= len(mx.Values[from]) || from == to {
		return nil
	}
	return mx.Values[from][to]
}

// meshCellPair is one link of a matrix on the two sides: from and to are
// new's ranks (-1 for a link on base only), bfrom and bto base's (-1 for
// one on new only); base or new is nil where that side has no value.
type meshCellPair struct {
	from, to, bfrom, bto int
	base, new            *float64
}

// walk calls fn for every link of the matrices bm and nm that has a value
// on either side: first new's links in its order, then base's links that
// have no counterpart in new.
func (c *MeshComparison) walk(bm, nm *report.Matrix, fn func(p meshCellPair)) {
	for i, row := range nm.Values {
		bi := -1
		if i < len(c.newToBase) {
			bi = c.newToBase[i]
		}
		for j, nv := range row {
			if i == j {
				continue
			}
			bj := -1
			if j < len(c.newToBase) {
				bj = c.newToBase[j]
			}
			bv := cellOf(bm, bi, bj)
			if nv != nil || bv != nil {
				fn(meshCellPair{from: i, to: j, bfrom: bi, bto: bj, base: bv, new: nv})
			}
		}
	}
	for bi, row := range bm.Values {
		ni := -1
		if bi < len(c.baseToNew) {
			ni = c.baseToNew[bi]
		}
		for bj, bv := range row {
			if bv == nil || bi == bj {
				continue
			}
			nj := -1
			if bj < len(c.baseToNew) {
				nj = c.baseToNew[bj]
			}
			if ni >= 0 && nj >= 0 && ni < len(nm.Values) && nj < len(nm.Values[ni]) {
				continue // walked above
			}
			fn(meshCellPair{from: -1, to: -1, bfrom: bi, bto: bj, base: bv})
		}
	}
}

// change is new / base - 1, nil when it is not a finite number.
func change(base, new float64) *float64 {
	ch := new/base - 1
	if base == 0 || math.IsNaN(ch) || math.IsInf(ch, 0) {
		return nil
	}
	return &ch
}

// distance ranks a change: how far new/base is from 1, either way.
func distance(base, new float64) float64 {
	switch {
	case base == new:
		return 0
	case base <= 0 || new <= 0:
		return math.Inf(1)
	}
	return math.Abs(math.Log(new / base))
}

func (c *MeshComparison) linkChange(p meshCellPair) LinkChange {
	lc := LinkChange{From: p.from, To: p.to, FromHost: c.hostOfNew(p.from), ToHost: c.hostOfNew(p.to),
		Base: *p.base, New: *p.new, Change: change(*p.base, *p.new)}
	if p.bfrom != p.from || p.bto != p.to {
		bf, bt := p.bfrom, p.bto
		lc.BaseFrom, lc.BaseTo = &bf, &bt
	}
	return lc
}

func (c *MeshComparison) compareMatrix(bm, nm *report.Matrix) MatrixChange {
	mc := MatrixChange{MatrixID: matrixID(nm), Top: []LinkChange{}}
	var bv, nv []float64
	type ranked struct {
		d float64
		p meshCellPair
	}
	var top []ranked // the most changed so far, most first
	c.walk(bm, nm, func(p meshCellPair) {
		switch {
		case p.base == nil:
			mc.OnlyNew++
			return
		case p.new == nil:
			mc.OnlyBase++
			return
		}
		mc.Links++
		bv, nv = append(bv, *p.base), append(nv, *p.new)
		if c.Top == 0 {
			return
		}
		d := distance(*p.base, *p.new)
		if d == 0 || (len(top) == c.Top && d <= top[len(top)-1].d) {
			return
		}
		at, _ := slices.BinarySearchFunc(top, d, func(r ranked, d float64) int { return -cmp.Compare(r.d, d) })
		for at < len(top) && top[at].d == d {
			at++ // ties keep the walk's order
		}
		top = slices.Insert(top, at, ranked{d, p})
		if len(top) > c.Top {
			top = top[:c.Top]
		}
	})
	if len(bv) > 0 {
		b, n := report.Median(bv), report.Median(nv)
		mc.BaseMedian, mc.NewMedian = &b, &n
		mc.Change = change(b, n)
	}
	for _, r := range top {
		mc.Top = append(mc.Top, c.linkChange(r.p))
	}
	return mc
}

// meshDiff lists what differs between two mesh runs beyond their figures.
func meshDiff(base, new *report.Document) []string {
	var w []string
	bm, nm := base.Mesh, new.Mesh
	if b, n := strings.Join(bm.Tests, " "), strings.Join(nm.Tests, " "); b != n {
		w = append(w, fmt.Sprintf("tests differ: base %s, new %s", cmp.Or(textfmt.Clean(b), "(none)"), cmp.Or(textfmt.Clean(n), "(none)")))
	}
	if bm.Schedule != nm.Schedule {
		w = append(w, fmt.Sprintf("schedule differs: base %s, new %s", cmp.Or(textfmt.Clean(bm.Schedule), "(none)"), cmp.Or(textfmt.Clean(nm.Schedule), "(none)")))
	}
	if bm.Duplex != nm.Duplex {
		w = append(w, fmt.Sprintf("duplex differs: base %s, new %s (a duplex mesh runs each pair once, its bandwidth tests bidirectional: each direction's figure is measured with the other direction sending too)",
			duplexWord(bm.Duplex), duplexWord(nm.Duplex)))
	}
	if b, n := meshRanks(bm), meshRanks(nm); b != n {
		w = append(w, fmt.Sprintf("ranks differ: base %d, new %d", b, n))
	}
	for _, d := range envDiff(base, new) {
		// The documents' hosts are rank 0's; the ranks' own are matched
		// above (a rank on another host is listed).
		if !strings.HasPrefix(d, "setup ") && !strings.HasPrefix(d, "remote ") && !strings.HasPrefix(d, "host name ") {
			w = append(w, d)
		}
	}
	for _, d := range []struct {
		name string
		doc  *report.Document
	}{{"base", base}, {"new", new}} {
		if d.doc.Partial {
			w = append(w, fmt.Sprintf("the %s mesh was still running when its document was written", d.name))
		}
	}
	return w
}

func duplexWord(d bool) string {
	if d {
		return "duplex"
	}
	return "one direction at a time"
}

// --- gates ---

// MeshGateFailure is one link of one matrix beyond a gate's threshold.
type MeshGateFailure struct {
	Gate string `json:"gate"`
	report.Key
	Figure report.Figure `json:"figure"`
	From   int           `json:"from"`
	To     int           `json:"to"`
	// Base and New are the link's values, Change New/Base - 1.
	Base   float64 `json:"base"`
	New    float64 `json:"new"`
	Change float64 `json:"change"`
	// Message says which link crossed which threshold: "0 -> 2 (node1 ->
	// node3) write-lat RC 2 B: p50 +100.00% > 10% (--max-p50-regression
	// 10%)".
	Message string `json:"message"`
}

func (f MeshGateFailure) String() string { return "gate failed: " + f.Message }

// MeshGateResult is the verdict of a mesh comparison's gates.
type MeshGateResult struct {
	Gates []string `json:"gates"`
	// Failures are the links whose change is beyond a gate's threshold,
	// matrix by matrix, most changed first.
	Failures []MeshGateFailure `json:"failures"`
	// Incomplete are the reasons new cannot be judged in full: a matrix
	// base has and new lacks, a gate with nothing to check. Each fails the
	// gates. (A link that failed in new is an error of its own.)
	Incomplete []Incomplete `json:"incomplete,omitempty"`
	// Limits are the links of new that miss an absolute limit
	// (--limit-bw).
	Limits []report.LinkFailure `json:"limits,omitempty"`
}

// Failed reports whether a gate failed.
func (g *MeshGateResult) Failed() bool { return g.Count() > 0 }

// Count is the number of checks that failed: incomplete, failures,
// limits.
func (g *MeshGateResult) Count() int {
	if g == nil {
		return 0
	}
	return len(g.Incomplete) + len(g.Failures) + len(g.Limits)
}

// FailedLines are the checks that failed, one line each, as compare
// prints them: "gate failed: ...", then "limit failed (new): ...".
func (g *MeshGateResult) FailedLines() []string {
	if g == nil {
		return nil
	}
	lines := incompleteLines(g.Incomplete)
	for _, f := range g.Failures {
		lines = append(lines, f.String())
	}
	for _, f := range g.Limits {
		lines = append(lines, "limit failed (new): "+f.Message)
	}
	return lines
}

// linkName names a link of new for messages: "0 -> 2 (node1 -> node3)".
func (c *MeshComparison) linkName(from, to int) string {
	s := fmt.Sprintf("%d -> %d", from, to)
	if fh, th := c.hostOfNew(from), c.hostOfNew(to); fh != "" || th != "" {
		s += fmt.Sprintf(" (%s -> %s)", cmp.Or(fh, "?"), cmp.Or(th, "?"))
	}
	return s
}

// CheckGates checks every gate on the change of every link measured on
// both sides of every matrix compared. Each link has one value per side,
// so no change is tested for significance: a link fails a gate when its
// own change is beyond the gate's threshold (a regression gate: latency
// up, bandwidth down by more than MaxRegression; a ratio gate: new/base
// below MinRatio). Failures come matrix by matrix, the worst first.
//
// Gates fail closed: a matrix base has and new lacks fails them, and so
// does a gate with nothing to check (no matrix in common, or no link of
// its figures measured on both sides) ([MeshGateResult.Incomplete]).
func (c *MeshComparison) CheckGates(gates Gates) *MeshGateResult {
	res := &MeshGateResult{Gates: []string{}, Failures: []MeshGateFailure{}}
	for _, g := range gates {
		res.Gates = append(res.Gates, g.Name)
	}
	for _, m := range c.OnlyBase {
		k := m.Key
		res.Incomplete = append(res.Incomplete, Incomplete{Reason: IncompleteMissing, Key: &k,
			Message: fmt.Sprintf("%s: in base, missing in new", m)})
	}
	if len(gates) == 0 {
		return res
	}
	if len(c.Matrices) == 0 {
		res.Incomplete = append(res.Incomplete, Incomplete{Reason: IncompleteNothing,
			Message: "nothing compared: no matrix (test, size and figure) in common"})
	}
	checked := make([]bool, len(gates))
	for i, pr := range c.pairs {
		bm, nm := &c.base.Matrices[pr[0]], &c.new.Matrices[pr[1]]
		mc := &c.Matrices[i]
		var gs []*Gate
		for k := range gates {
			if gates[k].applies(mc.Figure) {
				gs = append(gs, &gates[k])
				checked[k] = checked[k] || mc.Links > 0
			}
		}
		if len(gs) == 0 {
			continue
		}
		from := len(res.Failures)
		c.walk(bm, nm, func(p meshCellPair) {
			if p.base == nil || p.new == nil {
				return
			}
			ch := change(*p.base, *p.new)
			if ch == nil {
				return
			}
			fc := FigureChange{Figure: mc.Figure, Change: ch}
			for _, g := range gs {
				msg, over := g.check(&fc)
				if !over {
					continue
				}
				res.Failures = append(res.Failures, MeshGateFailure{Gate: g.Name, Key: mc.Key, Figure: mc.Figure,
					From: p.from, To: p.to, Base: *p.base, New: *p.new, Change: *ch,
					Message: fmt.Sprintf("%s %s: %s (%s)", c.linkName(p.from, p.to), mc.Key, msg, g.Name)})
			}
		})
		worse := func(f *MeshGateFailure) float64 {
			if f.Figure.HigherIsBetter() {
				return -f.Change
			}
			return f.Change
		}
		slices.SortStableFunc(res.Failures[from:], func(a, b MeshGateFailure) int { return cmp.Compare(worse(&b), worse(&a)) })
	}
	for k, g := range gates {
		if !checked[k] && len(c.Matrices) > 0 {
			res.Incomplete = append(res.Incomplete, Incomplete{Reason: IncompleteNothing, Gate: g.Name,
				Message: fmt.Sprintf("%s: nothing compared: no link of %s measured on both sides", g.Name, g.what())})
		}
	}
	return res
}

// AddLimits checks the limits l, named name ("--limit-bw 90Gbps"), on
// every link of new, from its matrices (as `rdmabench mesh` checks them):
// each link that misses one fails the gates. A limit relative to the link
// (90%link) takes the slower of the two ranks' ports' nominal rates; a
// limit no link has a figure for fails too ([report.Mesh.CheckMatrixLimits]).
func (c *MeshComparison) AddLimits(g *MeshGateResult, name string, l report.Limits) {
	if l.IsZero() {
		return
	}
	g.Gates = append(g.Gates, name)
	g.Limits = append(g.Limits, c.new.CheckMatrixLimits(l, "new", c.linkName)...)
}

// --- CSV ---

// MeshCSVHeader are the columns of a mesh comparison as CSV.
var MeshCSVHeader = []string{"test", "connection", "size_bytes", "figure", "unit", "from_rank", "from_host",
	"to_rank", "to_host", "base", "new", "change", "status"}

// EachCSVRow calls fn with the cells of every link of every matrix
// compared, one row per link and figure (the CSV form of a mesh comparison that pkg/report/render writes).
func (c *MeshComparison) EachCSVRow(fn func(cells []string) error) error {
	cells := make([]string, len(MeshCSVHeader))
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	var err error
	for i, pr := range c.pairs {
		mc := &c.Matrices[i]
		bm, nm := &c.base.Matrices[pr[0]], &c.new.Matrices[pr[1]]
		cells[0], cells[1], cells[2], cells[3], cells[4] = mc.Test, mc.Connection, strconv.Itoa(mc.Size), string(mc.Figure), mc.Unit
		c.walk(bm, nm, func(p meshCellPair) {
			if err != nil {
				return
			}
			from, to, fh, th := p.from, p.to, c.hostOfNew(p.from), c.hostOfNew(p.to)
			if from < 0 {
				from, to, fh, th = p.bfrom, p.bto, c.hostOfBase(p.bfrom), c.hostOfBase(p.bto)
			}
			cells[5], cells[6], cells[7], cells[8] = strconv.Itoa(from), fh, strconv.Itoa(to), th
			cells[9], cells[10], cells[11] = "", "", ""
			switch {
			case p.new == nil:
				cells[9], cells[12] = f(*p.base), "only_base"
			case p.base == nil:
				cells[10], cells[12] = f(*p.new), "only_new"
			default:
				cells[9], cells[10], cells[12] = f(*p.base), f(*p.new), "compared"
				if ch := change(*p.base, *p.new); ch != nil {
					cells[11] = f(*ch)
				}
			}
			err = fn(cells)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// compareMeshHosts compares two summaries that hold no rank matrices (of
// more than MeshRankMatrixRanks ranks) by their host matrices: each host
// is a rank of a mesh of hosts, each host pair's median a link, matched
// by host name when the hosts moved, and gated as links are.
func compareMeshHosts(base, new *report.Document, opt MeshOptions) (*MeshComparison, error) {
	hb, hn := hostDocument(base), hostDocument(new)
	c, err := CompareMesh(hb, hn, opt)
	if err != nil {
		return nil, err
	}
	c.Base.Ranks, c.New.Ranks = meshRanks(base.Mesh), meshRanks(new.Mesh)
	c.Warnings = append([]string{fmt.Sprintf("compared per host pair (%d and %d hosts): each value is the median of the links from one host's NICs to the other's, and links are named by host (from -> to); summaries of more than %d ranks hold no rank matrices (every link's figures are in the link streams)",
		len(base.Mesh.Aggregate.Hosts), len(new.Mesh.Aggregate.Hosts), report.MeshRankMatrixRanks)}, c.Warnings...)
	return c, nil
}

// hostDocument is doc with its mesh seen as a mesh of its hosts: a rank per
// host, a matrix per aggregate figure (its host_median), and its failed
// links as they are (in rank numbers).
func hostDocument(doc *report.Document) *report.Document {
	m, a := doc.Mesh, doc.Mesh.Aggregate
	hm := &report.Mesh{Size: len(a.Hosts), Launcher: m.Launcher, Coordinator: m.Coordinator, Tests: m.Tests, Rounds: m.Rounds,
		Schedule: m.Schedule, Sample: m.Sample, Links: m.Links, LinkCount: m.LinkTotal(), Matrices: []report.Matrix{}}
	for i, name := range a.Hosts {
		hm.Ranks = append(hm.Ranks, report.MeshRank{Rank: i, State: report.RankOK, Host: &report.Host{Hostname: name}})
	}
	for i := range a.Figures {
		f := &a.Figures[i]
		hm.Matrices = append(hm.Matrices, report.Matrix{Test: f.Test, Connection: f.Connection, Size: f.Size, Figure: f.Figure,
			Unit: f.Unit, Values: f.HostMedian, Median: f.Median})
	}
	d := *doc
	d.Mesh = hm
	return &d
}
