package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// The sizes and thresholds of a mesh's summary and of how it is shown.
const (
	// MeshAggregateRanks is the most ranks whose mesh is shown by rank:
	// the summary of a larger mesh holds its aggregate (per host pair, per
	// host, per NIC and per rail), and its table and plot show that
	// instead of the rank × rank matrices.
	MeshAggregateRanks = 64
	// MeshRankMatrixRanks is the most ranks whose summary holds the rank
	// × rank matrices and lists every link. The summary of a larger mesh
	// holds only its aggregate, and lists the links that failed or warned
	// (its link stream has every link's full results): 1024 hosts × 8
	// NICs are 67 M cells per matrix, which no reader holds.
	MeshRankMatrixRanks = 512
	// MeshWorstNICs is how many of an aggregate figure's worst NICs a
	// table lists, and a plot under its NIC grid (or its hosts under a
	// host matrix).
	MeshWorstNICs = 10
	// SlowFactor marks a link of an aggregate as slow: a latency at least
	// twice the median of all links, or a bandwidth at most half of it.
	SlowFactor = 2
)

// MeshAggregate is the mesh seen per host and per rail (a NIC's local
// rank), for meshes too large to read rank by rank: in the summary of a
// mesh of more than MeshAggregateRanks ranks.
type MeshAggregate struct {
	// Hosts are the hosts of the ranks, in the order of their lowest rank:
	// the rows and columns of the host matrices, and what the rows' host
	// indexes name. A rank with no host (it never registered) is a host
	// of its own, "rank N".
	Hosts []string `json:"hosts"`
	// Rails is the number of rails: the most NICs (local ranks) of a host.
	Rails int `json:"rails"`
	// Figures are, per test, connection, size and figure (those of the
	// matrices), the aggregates of every link's value.
	Figures []AggregateFigure `json:"figures"`
}

// AggregateFigure is one figure of a mesh, aggregated per host pair, per
// host, per NIC and per rail.
type AggregateFigure struct {
	Test       string `json:"test"`
	Connection string `json:"connection,omitempty"`
	Size       int    `json:"size"`
	Figure     Figure `json:"figure"`
	Unit       string `json:"unit"`
	// Links is the number of links with the figure; Median the median of
	// their values.
	Links  int      `json:"links"`
	Median *float64 `json:"median,omitempty"`
	// HostMedian[a][b] is the median over the links from a NIC of host a
	// to a NIC of host b (on a rail-aligned mesh: one per rail), null where
	// none has the figure; HostMedian[a][a] those between NICs of one host.
	HostMedian [][]*float64 `json:"host_median"`
	// Hosts are per host (Host set) its links both ways; NICs per rank
	// (Rank, Host and Rail set); Rails per rail (Rail set) the links
	// whose two ends are on that rail.
	Hosts []AggregateRow `json:"hosts"`
	NICs  []AggregateRow `json:"nics"`
	Rails []AggregateRow `json:"rails"`
}

// Key is the test, connection and size of the figure.
func (a *AggregateFigure) Key() Key { return Key{Test: a.Test, Connection: a.Connection, Size: a.Size} }

// WorstNICs are the k NICs of f with the worst median, worst first.
func (f *AggregateFigure) WorstNICs(k int) []AggregateRow {
	nics := slices.Clone(f.NICs)
	slices.SortStableFunc(nics, func(a, b AggregateRow) int {
		switch {
		case a.Median == nil || b.Median == nil:
			return 0
		case worse(f.Figure, *a.Median, *b.Median):
			return -1
		case worse(f.Figure, *b.Median, *a.Median):
			return 1
		}
		return 0
	})
	return nics[:min(k, len(nics))]
}

// AggregateRow is the links of a host, a NIC or a rail.
type AggregateRow struct {
	Host *int `json:"host,omitempty"` // index into MeshAggregate.Hosts
	Rank *int `json:"rank,omitempty"`
	Rail *int `json:"rail,omitempty"`
	// Links is the number of links with the figure; Median their median;
	// Tail the value 1% of them are worse than (the 99th percentile of a
	// latency, the 1st of a bandwidth; nearest rank).
	Links  int      `json:"links"`
	Median *float64 `json:"median,omitempty"`
	Tail   *float64 `json:"tail,omitempty"`
	// Worst is the worst link (the highest latency, the lowest bandwidth).
	Worst *WorstLink `json:"worst,omitempty"`
	// Slow is the number of links at least twice as bad as the median of
	// all links (a latency ≥ 2 × it, a bandwidth ≤ half of it).
	Slow int `json:"slow"`
}

// WorstLink is a link and its value.
type WorstLink struct {
	From  int     `json:"from"`
	To    int     `json:"to"`
	Value float64 `json:"value"`
}

// LinkTotal is the number of scheduled links: all of Links, or in a
// summary that lists only the links that failed or warned, LinkCount.
func (m *Mesh) LinkTotal() int {
	return max(m.LinkCount, len(m.Links))
}

// ShowsAggregate says whether tables and plots show m by its aggregate
// rather than by its rank × rank matrices: a mesh of more than
// [MeshAggregateRanks] ranks, or one whose summary has no matrices.
func (m *Mesh) ShowsAggregate() bool {
	return m.Aggregate != nil && (max(m.Size, len(m.Ranks)) > MeshAggregateRanks || len(m.Matrices) == 0)
}

// worse says whether a is worse than b for figure f.
func worse(f Figure, a, b float64) bool {
	if f.IsLatency() {
		return a > b
	}
	return a < b
}

// slowLink says whether v is slow against the median med of figure f.
func slowLink(f Figure, v, med float64) bool {
	if med <= 0 {
		return false
	}
	if f.IsLatency() {
		return v >= SlowFactor*med
	}
	return v <= med/SlowFactor
}

// rankPlaces are the host index and rail of every rank of a mesh, and the
// hosts' names.
type rankPlaces struct {
	host  []int32 // rank -> host index
	rail  []int32 // rank -> local rank
	hosts []string
	rails int
}

// RankPlaces returns each rank's host, an index of the aggregate's
// [MeshAggregate.Hosts], and rail (its local rank), as the aggregate
// places them: by host name, a rank without one a host of its own.
func (m *Mesh) RankPlaces() (host, rail []int) {
	n := max(m.Size, len(m.Ranks))
	p := placeRanks(m, n)
	host, rail = make([]int, n), make([]int, n)
	for i := range n {
		host[i], rail[i] = int(p.host[i]), int(p.rail[i])
	}
	return host, rail
}

// Shape says what a mesh is, for headers: "4 ranks on 4 hosts", "2
// ranks on 1 host", "16 ranks on 2 hosts (1 rank's host unknown)": its
// ranks, and the hosts they ran on by host name (the aggregate's, past
// its rank list), a rank that never registered a host counted apart. A
// mesh is never loopback, whatever its hosts.
func (m *Mesh) Shape() string {
	n := max(m.Size, len(m.Ranks))
	var hosts []string
	if m.Aggregate != nil && len(m.Aggregate.Hosts) > 0 {
		hosts = m.Aggregate.Hosts
	} else {
		hosts = placeRanks(m, n).hosts
	}
	known, unknown := 0, 0
	for _, h := range hosts {
		if strings.HasPrefix(h, "rank ") { // placeRanks' name for a rank without a host
			unknown++
		} else {
			known++
		}
	}
	plural := func(k int, one, many string) string {
		if k == 1 {
			return "1 " + one
		}
		return strconv.Itoa(k) + " " + many
	}
	s := plural(n, "rank", "ranks")
	switch {
	case known == 0:
		return s
	case unknown > 0:
		return s + " on " + plural(known, "host", "hosts") + " (" + plural(unknown, "rank's host", "ranks' hosts") + " unknown)"
	}
	return s + " on " + plural(known, "host", "hosts")
}

// placeRanks groups the n ranks of m by host name (a rank without one: a
// host of its own) and rail (local rank).
func placeRanks(m *Mesh, n int) rankPlaces {
	p := rankPlaces{host: make([]int32, n), rail: make([]int32, n)}
	name := make([]string, n)
	for i := range name {
		name[i] = fmt.Sprintf("rank %d", i)
	}
	for i := range m.Ranks {
		r := &m.Ranks[i]
		if r.Rank < 0 || r.Rank >= n {
			continue
		}
		if r.Host != nil && r.Host.Hostname != "" {
			name[r.Rank] = r.Host.Hostname
		}
		p.rail[r.Rank] = int32(max(0, r.LocalRank))
	}
	index := map[string]int32{}
	for r := range n {
		h, ok := index[name[r]]
		if !ok {
			h = int32(len(p.hosts))
			index[name[r]] = h
			p.hosts = append(p.hosts, name[r])
		}
		p.host[r] = h
		p.rails = max(p.rails, int(p.rail[r])+1)
	}
	return p
}

// aggregate makes the mesh's aggregate of each column, in the order of
// cols, for n ranks placed by p.
func aggregate(cols []meshColumn, p rankPlaces) *MeshAggregate {
	a := &MeshAggregate{Hosts: p.hosts, Rails: p.rails, Figures: make([]AggregateFigure, 0, len(cols))}
	var buf []float64
	for i := range cols {
		var f AggregateFigure
		f, buf = aggregateColumn(&cols[i], p, buf)
		a.Figures = append(a.Figures, f)
	}
	return a
}

// aggregateColumn aggregates one column's cells; buf is scratch space,
// returned for the next column. Each grouping is a counting sort of the
// values into one array, so that the memory is two values a link.
func aggregateColumn(c *meshColumn, p rankPlaces, buf []float64) (AggregateFigure, []float64) {
	fig := c.fig
	n, nh := len(p.host), len(p.hosts)
	cells := make([]linkCell, 0, len(c.cells))
	for _, cl := range c.cells {
		if cl.from >= 0 && int(cl.from) < n && cl.to >= 0 && int(cl.to) < n {
			cells = append(cells, cl)
		}
	}
	out := AggregateFigure{Test: c.Test, Connection: c.Connection, Size: c.Size, Figure: fig, Unit: fig.Unit(),
		Links: len(cells), HostMedian: make([][]*float64, nh), Hosts: []AggregateRow{}, NICs: []AggregateRow{},
		Rails: []AggregateRow{}}
	if cap(buf) < 2*len(cells) {
		buf = make([]float64, 2*len(cells))
	}
	buf = buf[:2*len(cells)]
	med := 0.0
	if len(cells) > 0 {
		vals := buf[:len(cells)]
		for i, cl := range cells {
			vals[i] = cl.v
		}
		slices.Sort(vals)
		med = sortedMedian(vals)
		out.Median = &med
	}

	ag := aggregator{fig: fig, p: p, cells: cells, med: med, buf: buf, out: &out}
	ag.hostPairs()
	ag.nicsAndHosts()
	ag.rails()
	return out, ag.buf
}

// aggregator is one figure's aggregation: its cells (of ranks in p), their
// median med, and a buffer of twice as many values, into out.
type aggregator struct {
	fig   Figure
	p     rankPlaces
	cells []linkCell
	med   float64
	buf   []float64
	out   *AggregateFigure
}

// worstOf is the worst link of cell i, or nil for -1.
func (ag *aggregator) worstOf(i int) *WorstLink {
	if i < 0 {
		return nil
	}
	c := ag.cells[i]
	return &WorstLink{From: int(c.from), To: int(c.to), Value: c.v}
}

// hostPairs sets the median of each host pair: the cells bucketed by (host
// of from, host of to).
func (ag *aggregator) hostPairs() {
	p, cells, buf, out := ag.p, ag.cells, ag.buf, ag.out
	nh := len(p.hosts)
	start := make([]int32, nh*nh+1)
	for _, cl := range cells {
		start[p.host[cl.from]*int32(nh)+p.host[cl.to]+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	next := slices.Clone(start[:nh*nh])
	vals := buf[:len(cells)]
	for _, cl := range cells {
		k := p.host[cl.from]*int32(nh) + p.host[cl.to]
		vals[next[k]] = cl.v
		next[k]++
	}
	next = nil
	meds := make([]float64, nh*nh)
	ptrs := make([]*float64, nh*nh)
	for a := range nh {
		out.HostMedian[a] = ptrs[a*nh : (a+1)*nh : (a+1)*nh]
		for b := range nh {
			k := a*nh + b
			s := vals[start[k]:start[k+1]]
			if len(s) == 0 {
				continue
			}
			slices.Sort(s)
			meds[k] = sortedMedian(s)
			ptrs[k] = &meds[k]
		}
	}
}

// nicsAndHosts adds a row per NIC and per host: every cell at both of its
// ends, the ranks of a host next to each other, so that a host's values
// follow on.
func (ag *aggregator) nicsAndHosts() {
	fig, p, cells, buf, med, out := ag.fig, ag.p, ag.cells, ag.buf, ag.med, ag.out
	n, nh := len(p.host), len(p.hosts)
	order := make([]int32, n) // rank -> its place, ranks ordered by host then rank
	byHost := make([][]int32, nh)
	for r := range n {
		byHost[p.host[r]] = append(byHost[p.host[r]], int32(r))
	}
	ranks := make([]int32, 0, n)
	for _, rs := range byHost {
		ranks = append(ranks, rs...)
	}
	byHost = nil
	for i, r := range ranks {
		order[r] = int32(i)
	}
	rstart := make([]int, n+1)
	worst := make([]int, n) // rank -> index of its worst cell, -1: none
	for i := range worst {
		worst[i] = -1
	}
	for i, cl := range cells {
		rstart[order[cl.from]+1]++
		rstart[order[cl.to]+1]++
		for _, r := range []int32{cl.from, cl.to} {
			if w := worst[r]; w < 0 || worse(fig, cl.v, cells[w].v) {
				worst[r] = i
			}
		}
	}
	for i := 1; i < len(rstart); i++ {
		rstart[i] += rstart[i-1]
	}
	rnext := slices.Clone(rstart[:n])
	for _, cl := range cells {
		for _, r := range []int32{cl.from, cl.to} {
			buf[rnext[order[r]]] = cl.v
			rnext[order[r]]++
		}
	}
	rnext = nil
	hostWorst := make([]int, nh)
	for i := range hostWorst {
		hostWorst[i] = -1
	}
	for _, r := range ranks {
		s := buf[rstart[order[r]]:rstart[order[r]+1]]
		if len(s) == 0 {
			continue
		}
		h := p.host[r]
		if w := worst[r]; hostWorst[h] < 0 || worse(fig, cells[w].v, cells[hostWorst[h]].v) {
			hostWorst[h] = w
		}
		row := summaryRow(fig, s, med)
		// A link of two NICs of one host counts twice in the host's values,
		// and once in each NIC's.
		row.Rank, row.Host, row.Rail = ptrTo(int(r)), ptrTo(int(h)), ptrTo(int(p.rail[r]))
		row.Worst = ag.worstOf(worst[r])
		out.NICs = append(out.NICs, row)
	}
	slices.SortFunc(out.NICs, func(a, b AggregateRow) int { return *a.Rank - *b.Rank })
	within := make([]int, nh)
	for _, cl := range cells {
		if h := p.host[cl.from]; h == p.host[cl.to] {
			within[h]++
		}
	}
	at := 0
	for h := range nh {
		lo := at
		for at < n && p.host[ranks[at]] == int32(h) {
			at++
		}
		if lo == at {
			continue
		}
		s := buf[rstart[lo]:rstart[at]]
		if len(s) == 0 {
			continue
		}
		row := summaryRow(fig, s, med)
		row.Links -= within[h] // a link within the host is in s twice
		row.Host = ptrTo(h)
		row.Worst = ag.worstOf(hostWorst[h])
		out.Hosts = append(out.Hosts, row)
	}
}

// rails adds a row per rail: the cells whose two ends are on one rail.
func (ag *aggregator) rails() {
	fig, p, cells, buf, med, out := ag.fig, ag.p, ag.cells, ag.buf, ag.med, ag.out
	nr := p.rails
	qstart := make([]int, nr+1)
	railWorst := make([]int, nr)
	for i := range railWorst {
		railWorst[i] = -1
	}
	for i, cl := range cells {
		if k := p.rail[cl.from]; k == p.rail[cl.to] {
			qstart[k+1]++
			if w := railWorst[k]; w < 0 || worse(fig, cl.v, cells[w].v) {
				railWorst[k] = i
			}
		}
	}
	for i := 1; i < len(qstart); i++ {
		qstart[i] += qstart[i-1]
	}
	qnext := slices.Clone(qstart[:nr])
	for _, cl := range cells {
		if k := p.rail[cl.from]; k == p.rail[cl.to] {
			buf[qnext[k]] = cl.v
			qnext[k]++
		}
	}
	for k := range nr {
		s := buf[qstart[k]:qstart[k+1]]
		if len(s) == 0 {
			continue
		}
		row := summaryRow(fig, s, med)
		row.Rail = ptrTo(k)
		row.Worst = ag.worstOf(railWorst[k])
		out.Rails = append(out.Rails, row)
	}
}

// summaryRow sorts s and makes a row of its links: count, median, tail
// and slow links against the median med of all links.
func summaryRow(f Figure, s []float64, med float64) AggregateRow {
	slices.Sort(s)
	m := sortedMedian(s)
	// Nearest rank: the value 1% of the links are worse than.
	k := int(math.Ceil(0.99*float64(len(s)))) - 1
	tail := s[k]
	if !f.IsLatency() {
		tail = s[len(s)-1-k]
	}
	slow := 0
	for _, v := range s {
		if slowLink(f, v, med) {
			slow++
		}
	}
	return AggregateRow{Links: len(s), Median: &m, Tail: &tail, Slow: slow}
}

// sortedMedian is the median of the sorted, non-empty s.
func sortedMedian(s []float64) float64 {
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// aggregate refuses an aggregate that no mesh produces: a host matrix not
// hosts × hosts, a row without its host, rank or rail or naming one that
// is not there, a negative or non-finite value.
func (c checker) aggregate(a *MeshAggregate) {
	if a == nil {
		return
	}
	k := c.at("mesh aggregate")
	k.int("rails", int64(a.Rails))
	nh := len(a.Hosts)
	for i := range a.Figures {
		f := &a.Figures[i]
		kf := c.at(fmt.Sprintf("mesh aggregate figure %d (%s, %d B, %s)", i+1, textfmt.Clean(f.Test), f.Size, textfmt.Clean(string(f.Figure))))
		kf.int("links", int64(f.Links))
		if f.Median != nil {
			kf.float("median", *f.Median)
		}
		if len(f.HostMedian) != nh {
			kf.add("host_median has %d rows for %d hosts", len(f.HostMedian), nh)
		}
		for _, row := range f.HostMedian {
			if len(row) != nh {
				kf.add("a row of host_median has %d values for %d hosts", len(row), nh)
				break
			}
			for _, v := range row {
				if v != nil {
					kf.float("host_median value", *v)
				}
			}
		}
		rows := func(table string, rs []AggregateRow) {
			index := func(what string, v *int, n int) {
				switch {
				case v == nil:
					kf.add("a row of %s without its %s", table, what)
				case *v < 0 || *v >= n:
					kf.add("a row of %s names %s %d, of %d", table, what, *v, n)
				}
			}
			for j := range rs {
				r := &rs[j]
				switch table {
				case "hosts":
					index("host", r.Host, nh)
				case "nics":
					index("rank", r.Rank, math.MaxInt32)
					index("host", r.Host, nh)
					index("rail", r.Rail, max(a.Rails, 1))
				case "rails":
					index("rail", r.Rail, max(a.Rails, 1))
				}
				kf.int("links", int64(r.Links))
				kf.int("slow", int64(r.Slow))
				for _, v := range []*float64{r.Median, r.Tail} {
					if v != nil {
						kf.float("value", *v)
					}
				}
				if r.Worst != nil {
					kf.int("from", int64(r.Worst.From))
					kf.int("to", int64(r.Worst.To))
					kf.float("value", r.Worst.Value)
				}
			}
		}
		rows("hosts", f.Hosts)
		rows("nics", f.NICs)
		rows("rails", f.Rails)
	}
}

func ptrTo[T any](v T) *T { return &v }
