package compare

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
	"github.com/rdmabench/rdmabench/pkg/settings"
	"golang.org/x/perf/benchmath"
)

// Schema is the value of the "schema" field of a comparison written
// as JSON.
const Schema = "rdmabench/compare/v1"

// Options tune [Compare].
type Options struct {
	// BaseName and NewName name the two documents in the output (their
	// file names); empty: "base" and "new".
	BaseName, NewName string
	// Alpha is the significance level of the Mann-Whitney U test; 0 means
	// [report.Alpha] (0.05).
	Alpha float64
}

// Comparison is the change from a base document to a new one, per test,
// connection and size present in both (matched by [report.Key]), in the manner of
// benchstat: for each figure, the median of each side's runs with its 95%
// confidence interval, the relative change of the medians, and whether the
// Mann-Whitney U test finds the two sets of runs different at level Alpha.
// A document of one run gives one value per figure: too few for a test,
// so no change is significant (a gate then judges the change alone, see
// [Gate]).
type Comparison struct {
	Base  Side    `json:"base"`
	New   Side    `json:"new"`
	Alpha float64 `json:"alpha"`
	// Confidence is the level of every confidence interval ([report.Confidence]).
	Confidence float64 `json:"confidence"`
	Rows       []Row   `json:"rows"`
	// OnlyBase and OnlyNew are the tests and sizes found on one side only.
	OnlyBase []report.Key `json:"only_base,omitempty"`
	OnlyNew  []report.Key `json:"only_new,omitempty"`
	// Warnings are the differences between the two runs' environments
	// and parameters (tool version, host name, kernel, CPU, device,
	// firmware, MTU, link layer, GID type, test parameters) that may
	// explain a change, then each side's failed tests, a run that stopped
	// early, a partial document.
	Warnings []string `json:"warnings,omitempty"`

	// newState is what went wrong in new's run, for the gates.
	newState runState
}

// Side describes one of the two documents of a comparison.
type Side struct {
	Name    string       `json:"name"`
	Tool    report.Tool  `json:"tool"`
	Command []string     `json:"command,omitempty"`
	Start   time.Time    `json:"start"`
	Runs    int          `json:"runs"`
	Hosts   report.Hosts `json:"hosts"`
}

// Row is the comparison of one test at one size.
type Row struct {
	report.Key
	// Kind is "latency" or "bandwidth".
	Kind  string `json:"kind"`
	Basis string `json:"basis,omitempty"`
	// Figures are p50 and p99 for latency, bandwidth (Gbit/s) and
	// message rate for bandwidth.
	Figures []FigureChange `json:"figures"`
	// Notes say what else differs for this row: failed runs, the number
	// of QPs.
	Notes []string `json:"notes,omitempty"`
}

// FigureChange is the comparison of one figure of one row.
type FigureChange struct {
	Figure report.Figure `json:"figure"`
	Unit   string        `json:"unit"`
	// Base and New are each side's median with its confidence interval;
	// BaseValues and NewValues the runs' values they come from.
	Base       report.Spread `json:"base"`
	New        report.Spread `json:"new"`
	BaseValues []float64     `json:"base_values"`
	NewValues  []float64     `json:"new_values"`
	// Change is New.Median / Base.Median - 1; absent when a side has no
	// value or the base median is 0.
	Change *float64 `json:"change,omitempty"`
	// P is the p-value of the Mann-Whitney U test; absent when a side has
	// no value.
	P *float64 `json:"p,omitempty"`
	// Significant is P <= Alpha: the difference is not noise.
	Significant bool `json:"significant"`
	// TooFewRuns is true when the sides have so few runs that no outcome
	// could be significant ([Testable]; [report.MinRunsForTest] on each
	// side are enough).
	TooFewRuns bool `json:"too_few_runs,omitempty"`
	// Warnings are other remarks of the statistics.
	Warnings []string `json:"warnings,omitempty"`
}

// Worse returns how much worse the figure got, as a fraction: the change
// for a latency, its opposite for a bandwidth; ok is false without a
// change.
func (fc *FigureChange) Worse() (worse float64, ok bool) {
	if fc.Change == nil {
		return 0, false
	}
	if fc.Figure.HigherIsBetter() {
		return -*fc.Change, true
	}
	return *fc.Change, true
}

// Delta is the change of the medians, always, with benchstat's "~" beside
// it when it is not significant (noise, or too few runs to test it):
// "+12.30%", "+2.10% ~"; "?" when it cannot be computed (base median 0),
// "-" when a side has no value.
func (fc *FigureChange) Delta() string {
	switch {
	case fc.P == nil:
		return "-"
	case fc.Change == nil:
		return "?"
	case !fc.Significant:
		return pct(*fc.Change) + " ~"
	}
	return pct(*fc.Change)
}

// Test says how the U test went, as benchstat does: "p=0.008 n=5",
// "p=0.421 n=5+4"; with too few runs for a test "n=1 untested" (no
// p-value).
func (fc *FigureChange) Test() string {
	n1, n2 := len(fc.BaseValues), len(fc.NewValues)
	s := ""
	if fc.P != nil && !fc.TooFewRuns {
		s = fmt.Sprintf("p=%.3f ", *fc.P)
	}
	if n1 == n2 {
		s += fmt.Sprintf("n=%d", n1)
	} else {
		s += fmt.Sprintf("n=%d+%d", n1, n2)
	}
	if fc.TooFewRuns {
		s += " untested"
	}
	return s
}

// compareFigures are the figures compared for each kind of test.
var (
	compareLatency   = []report.Figure{report.FigP50, report.FigP99}
	compareBandwidth = []report.Figure{report.FigGbps, report.FigMsgRate}
)

// Compare compares base and new (see [Comparison]). Rows follow the order
// of base; tests and sizes only in new are listed in OnlyNew.
func Compare(base, new *report.Document, opt Options) *Comparison {
	alpha := opt.Alpha
	if alpha <= 0 {
		alpha = report.Alpha
	}
	c := &Comparison{
		Base:       side(cmp.Or(opt.BaseName, "base"), base),
		New:        side(cmp.Or(opt.NewName, "new"), new),
		Alpha:      alpha,
		Confidence: report.Confidence,
		Rows:       []Row{},
	}
	bg, ng := base.Groups(), new.Groups()
	inNew := map[report.Key]*report.Group{}
	for i := range ng {
		inNew[ng[i].Key] = &ng[i]
	}
	seen := map[report.Key]bool{}
	for i := range bg {
		b := &bg[i]
		n, ok := inNew[b.Key]
		if !ok {
			c.OnlyBase = append(c.OnlyBase, b.Key)
			continue
		}
		seen[b.Key] = true
		c.Rows = append(c.Rows, compareRow(b, n, alpha))
	}
	for i := range ng {
		if !seen[ng[i].Key] {
			c.OnlyNew = append(c.OnlyNew, ng[i].Key)
		}
	}
	c.Warnings = envDiff(base, new)
	c.newState = stateOf(new)
	for _, d := range []struct {
		name string
		st   runState
	}{{"base", stateOf(base)}, {"new", c.newState}} {
		if len(d.st.failed) > 0 {
			c.Warnings = append(c.Warnings, failedWarning(d.name, d.st))
		}
		if d.st.stopped != "" {
			c.Warnings = append(c.Warnings, fmt.Sprintf("the %s run stopped early: %s", d.name, textfmt.Clean(d.st.stopped)))
		}
		if d.st.partial {
			c.Warnings = append(c.Warnings, fmt.Sprintf("the %s document is partial: its run was still going when it was written", d.name))
		}
	}
	return c
}

// runState is what went wrong in one side's run: its tests (at one size)
// that failed, why it stopped before its end ([report.Document.Stopped]),
// whether its document is partial.
type runState struct {
	tests   int // tests and sizes in the document
	failed  []testFailure
	stopped string
	partial bool
}

// testFailure is a test at one size with failed runs.
type testFailure struct {
	key          report.Key
	failed, runs int
	err          string // the first run's that failed
}

func (f testFailure) String() string {
	if f.runs > 1 {
		return fmt.Sprintf("%s (%d of %d runs)", f.key, f.failed, f.runs)
	}
	return f.key.String()
}

func stateOf(doc *report.Document) runState {
	st := runState{partial: doc.Partial, stopped: doc.Stopped()}
	for _, g := range doc.Groups() {
		st.tests++
		f := testFailure{key: g.Key, runs: len(g.Results)}
		for _, r := range g.Results {
			if r.Error == "" {
				continue
			}
			if f.failed++; f.err == "" {
				f.err = r.Error
			}
		}
		if f.failed > 0 {
			st.failed = append(st.failed, f)
		}
	}
	return st
}

// maxNamed is how many failed tests a warning names.
const maxNamed = 10

func failedWarning(side string, st runState) string {
	var names []string
	for i, f := range st.failed {
		if i == maxNamed {
			names = append(names, fmt.Sprintf("and %d more", len(st.failed)-maxNamed))
			break
		}
		names = append(names, f.String())
	}
	what := fmt.Sprintf("%d of %d tests", len(st.failed), st.tests)
	if st.tests == 1 {
		what = "its test"
	}
	return fmt.Sprintf("%s: %s failed: %s", side, what, strings.Join(names, ", "))
}

func side(name string, doc *report.Document) Side {
	return Side{Name: name, Tool: doc.Tool, Command: doc.Command, Start: doc.Start, Runs: doc.Runs(), Hosts: doc.Hosts}
}

func compareRow(b, n *report.Group, alpha float64) Row {
	row := Row{Key: b.Key, Kind: "latency"}
	figs := compareLatency
	isBW := len(b.Values(report.FigGbps)) > 0 || len(n.Values(report.FigGbps)) > 0
	if !isBW && len(b.Values(report.FigP50)) == 0 && len(n.Values(report.FigP50)) == 0 {
		isBW = strings.HasSuffix(b.Key.Test, "-bw")
	}
	if isBW {
		row.Kind, figs = "bandwidth", compareBandwidth
	}
	for _, r := range slices.Concat(b.Results, n.Results) {
		if r.Latency != nil && r.Error == "" {
			row.Basis = r.Latency.Basis
			break
		}
	}
	for _, f := range figs {
		row.Figures = append(row.Figures, compareFigure(f, b.Values(f), n.Values(f), alpha))
	}
	for _, s := range []struct {
		name string
		g    *report.Group
	}{{"base", b}, {"new", n}} {
		failed := 0
		for _, r := range s.g.Results {
			if r.Error != "" {
				failed++
			}
		}
		switch {
		case failed == 0:
		case len(s.g.Results) == 1:
			row.Notes = append(row.Notes, fmt.Sprintf("%s: the test failed: %s", s.name, textfmt.Clean(firstError(s.g.Results))))
		default:
			row.Notes = append(row.Notes, fmt.Sprintf("%s: %d of %d runs failed and are left out (%s)", s.name, failed, len(s.g.Results), textfmt.Clean(firstError(s.g.Results))))
		}
	}
	if bq, nq := qpsOf(b), qpsOf(n); bq != nq && bq != "" && nq != "" {
		row.Notes = append(row.Notes, fmt.Sprintf("QPs differ: base %s, new %s", bq, nq))
	}
	var d []string
	if be, ne := firstEffective(b.Results), firstEffective(n.Results); be != nil && ne != nil {
		d = report.SettingsDiff(be, ne)
	}
	if br, nr := firstMeasured(b.Results), firstMeasured(n.Results); br != nil && nr != nil {
		if br.Clock != nr.Clock && br.Clock != "" && nr.Clock != "" {
			d = append(d, fmt.Sprintf("clock base %s, new %s", textfmt.Clean(br.Clock), textfmt.Clean(nr.Clock)))
		}
		d = append(d, pinningDiff(br.Placement, nr.Placement)...)
	}
	if len(d) > 0 {
		row.Notes = append(row.Notes, "ran with different settings: "+strings.Join(d, "; "))
	}
	return row
}

// firstMeasured is the first of rs that did not fail.
func firstMeasured(rs []*report.Result) *report.Result {
	for _, r := range rs {
		if r.Error == "" {
			return r
		}
	}
	return nil
}

// pinningDiff says how the cores each end's loops were pinned to differ
// (--cpu, --server-cpu, or the device's NUMA node): "server pinning base
// cores 1, new cores 0". An end that a side does not record is left out
// (the parameters --cpu and --server-cpu say what was asked), and so is
// where the loops were seen running: it changes from run to run when they
// are not pinned.
func pinningDiff(b, n *report.Placement) []string {
	var d []string
	ends := func(p *report.Placement) (client, server *report.EndPlacement) {
		if p == nil {
			return nil, nil
		}
		return p.Client, p.Server
	}
	bc, bs := ends(b)
	nc, ns := ends(n)
	for _, e := range []struct {
		name string
		b, n *report.EndPlacement
	}{{"client", bc, nc}, {"server", bs, ns}} {
		if e.b == nil || e.n == nil {
			continue
		}
		if bt, nt := pinningText(e.b), pinningText(e.n); bt != nt {
			d = append(d, fmt.Sprintf("%s pinning base %s, new %s", e.name, bt, nt))
		}
	}
	return d
}

// pinningText is where one end's loops were pinned: "cores 0-3", "NUMA
// node 1 (cores 8-15)", "not pinned".
func pinningText(e *report.EndPlacement) string {
	cores := strings.Join(textfmt.IntRanges(e.CPUs), ",")
	switch e.Policy {
	case report.PlaceCPUList:
		return "cores " + cores
	case report.PlaceNUMA:
		node := "?"
		if e.NUMANode != nil {
			node = strconv.Itoa(*e.NUMANode)
		}
		return fmt.Sprintf("NUMA node %s (cores %s)", node, cores)
	}
	return "not pinned"
}

func firstEffective(rs []*report.Result) *report.Effective {
	for _, r := range rs {
		if r.Effective != nil {
			return r.Effective
		}
	}
	return nil
}

func firstError(rs []*report.Result) string {
	for _, r := range rs {
		if r.Error != "" {
			return r.Error
		}
	}
	return ""
}

// qpsOf is the QPs g's results ran with, each once: "1", "1/4"; a
// result that failed before it made its QPs (0) is left out.
func qpsOf(g *report.Group) string {
	var qs []string
	for _, r := range g.Results {
		if r.Error != "" && r.QPs == 0 {
			continue
		}
		q := strconv.Itoa(r.QPs)
		if !slices.Contains(qs, q) {
			qs = append(qs, q)
		}
	}
	return strings.Join(qs, "/")
}

func compareFigure(f report.Figure, bv, nv []float64, alpha float64) FigureChange {
	fc := FigureChange{Figure: f, Unit: f.Unit(), BaseValues: nonNil(bv), NewValues: nonNil(nv),
		Base: report.SpreadOf(bv), New: report.SpreadOf(nv)}
	if len(bv) == 0 || len(nv) == 0 {
		return fc
	}
	if ch := fc.New.Median/fc.Base.Median - 1; fc.Base.Median != 0 && !math.IsInf(ch, 0) && !math.IsNaN(ch) {
		fc.Change = &ch
	}
	th := benchmath.Thresholds{CompareAlpha: alpha}
	s1 := benchmath.NewSample(slices.Clone(bv), &th)
	s2 := benchmath.NewSample(slices.Clone(nv), &th)
	cmp := benchmath.AssumeNothing.Compare(s1, s2)
	p := cmp.P
	fc.P = &p
	fc.Significant = p <= alpha
	if !Testable(len(bv), len(nv), alpha) {
		// benchmath's own warning says the same, in its words.
		fc.TooFewRuns = true
	}
	for _, w := range cmp.Warnings {
		switch {
		case strings.HasPrefix(w.Error(), "need "):
			// TooFewRuns says it.
		case w.Error() == "all samples are equal":
			fc.Warnings = append(fc.Warnings, "every run of both sides has the same value")
		default:
			fc.Warnings = append(fc.Warnings, w.Error())
		}
	}
	return fc
}

// Testable reports whether a Mann-Whitney U test of n1 runs against n2
// can find a difference at level alpha: whether its smallest p-value, of
// the most extreme outcome (every run of one side beyond every run of the
// other), 2/C(n1+n2, n1), is at most alpha. At 0.05: 4 runs against 4,
// 3 against 5, never 1 against any number below 39.
func Testable(n1, n2 int, alpha float64) bool {
	if n1 <= 0 || n2 <= 0 {
		return false
	}
	c := 1.0 // C(n1+k, k), k = 0..n2
	for k := 1; k <= n2; k++ {
		c = c * float64(n1+k) / float64(k)
	}
	return 2/c <= alpha
}

func nonNil(v []float64) []float64 {
	if v == nil {
		return []float64{}
	}
	return v
}

// pct formats a fraction as a signed percentage with two decimals.
func pct(frac float64) string { return fmt.Sprintf("%+.2f%%", 100*frac) }

// --- differences of environment and parameters ---

// envDiff lists what differs between the runs of two documents beyond the
// results themselves.
func envDiff(base, new *report.Document) []string {
	var w []string
	diff := func(what, b, n string) {
		if b != n {
			w = append(w, fmt.Sprintf("%s differs: base %s, new %s", what, cmp.Or(textfmt.Clean(b), "(none)"), cmp.Or(textfmt.Clean(n), "(none)")))
		}
	}
	tool := func(t report.Tool) string {
		s := cmp.Or(t.Version, "devel")
		if t.Commit != "" {
			s += " (" + t.Commit + ")"
		}
		return s
	}
	diff("tool version", tool(base.Tool), tool(new.Tool))
	diff("Go version", base.Tool.GoVersion, new.Tool.GoVersion)
	if base.Tool.Verbs != new.Tool.Verbs {
		verbs := func(t report.Tool) string {
			if t.Verbs {
				return "built with libibverbs"
			}
			return "built without libibverbs"
		}
		diff("tool build", verbs(base.Tool), verbs(new.Tool))
	}
	if (base.Hosts.Remote == nil) != (new.Hosts.Remote == nil) {
		where := func(d *report.Document) string {
			if d.Hosts.Remote == nil {
				return "loopback on one host"
			}
			return "between two hosts"
		}
		diff("setup", where(base), where(new))
	}
	hostDiff := func(prefix string, b, n *report.Host) {
		diff(prefix+"host name", b.Hostname, n.Hostname)
		diff(prefix+"OS", b.OS, n.OS)
		diff(prefix+"kernel", b.Kernel, n.Kernel)
		diff(prefix+"CPU", b.CPU, n.CPU)
		diff(prefix+"CPU count", itoaOr(b.CPUs), itoaOr(n.CPUs))
		if len(b.Devices) > 1 || len(n.Devices) > 1 {
			diff(prefix+"devices", deviceNames(b.Devices), deviceNames(n.Devices))
		}
		bd, nd := b.Device, n.Device
		if bd == nil || nd == nil {
			if (bd == nil) != (nd == nil) {
				name := func(d *report.Device) string {
					if d == nil {
						return ""
					}
					return d.Name
				}
				diff(prefix+"device", name(bd), name(nd))
			}
			return
		}
		diff(prefix+"device", bd.Name, nd.Name)
		diff(prefix+"port", itoaOr(bd.Port), itoaOr(nd.Port))
		diff(prefix+"firmware", bd.Firmware, nd.Firmware)
		diff(prefix+"transport", bd.Transport, nd.Transport)
		diff(prefix+"link layer", bd.LinkLayer, nd.LinkLayer)
		diff(prefix+"active MTU", itoaOr(bd.ActiveMTU), itoaOr(nd.ActiveMTU))
		diff(prefix+"link rate", linkRate(bd), linkRate(nd))
		diff(prefix+"GID index", strconv.Itoa(bd.GIDIndex), strconv.Itoa(nd.GIDIndex))
		diff(prefix+"GID type", bd.GIDType, nd.GIDType)
	}
	hostDiff("", &base.Hosts.Local, &new.Hosts.Local)
	if base.Hosts.Remote != nil && new.Hosts.Remote != nil {
		hostDiff("remote ", base.Hosts.Remote, new.Hosts.Remote)
	}
	bp, np := paramMap(&base.Params), paramMap(&new.Params)
	for _, k := range paramOrder(bp, np) {
		b, n := bp[k], np[k]
		if b != n {
			w = append(w, fmt.Sprintf("parameter %s differs: base %s, new %s", k, cmp.Or(b, "default"), cmp.Or(n, "default")))
		}
	}
	return w
}

// deviceNames are the names of the devices a test ran on at once (-d A,B).
func deviceNames(ds []report.Device) string {
	names := make([]string, len(ds))
	for i := range ds {
		names[i] = ds[i].Name
	}
	return strings.Join(names, ",")
}

// linkRate is a port's nominal rate as compare prints it: "100 Gbit/s
// (25.0 Gbps (EDR) 4X)"; empty when the document does not say.
func linkRate(d *report.Device) string {
	s := ""
	if d.LinkGbps > 0 {
		s = textfmt.Num(d.LinkGbps) + " Gbit/s"
	}
	if sw := strings.TrimSpace(d.ActiveSpeed + " " + d.ActiveWidth); sw != "" {
		s = strings.TrimSpace(s + " (" + sw + ")")
	}
	return s
}

func itoaOr(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// A param is a parameter compared: a setting of pkg/settings' table and
// how it reads in a document's Params, as compare prints it (ok false: it
// is not there, as an unset bool or pointer is not).
type param struct {
	*settings.Setting
	text func(p *report.Params) (v string, ok bool)
}

// paramsBySetting says how each compared setting reads in Params. A
// string or int is there even when unset (""), the others only when set.
var paramsBySetting = func() map[*settings.Setting]func(*report.Params) (string, bool) {
	m := map[*settings.Setting]func(*report.Params) (string, bool){
		settings.Connection: func(p *report.Params) (string, bool) { return p.Connection, true },
		settings.MTU:        count(func(p *report.Params) int { return p.MTU }),
		settings.GIDIndex: func(p *report.Params) (string, bool) { // -1: chosen automatically
			return strconv.Itoa(p.GIDIndex), p.GIDIndex >= 0
		},
		settings.QPTimeout:    count(func(p *report.Params) int { return p.QPTimeout }),
		settings.Iterations:   count(func(p *report.Params) int { return p.Iterations }),
		settings.Duration:     amount(func(p *report.Params) float64 { return p.DurationS }, " s"),
		settings.Warmup:       optional(func(p *report.Params) *int { return p.Warmup }),
		settings.Precision:    amount(func(p *report.Params) float64 { return p.PrecisionPct }, "%"),
		settings.PrecisionCap: amount(func(p *report.Params) float64 { return p.PrecisionCapS }, " s"),
		settings.Repeat: func(p *report.Params) (string, bool) { // 0 or 1: one run
			if p.Repeat <= 1 {
				return "", true
			}
			return strconv.Itoa(p.Repeat), true
		},
		settings.RateLimit: func(p *report.Params) (string, bool) { // a bandwidth or a message rate
			if v, ok := amount(func(p *report.Params) float64 { return p.RateLimitGbps }, " Gbit/s")(p); ok {
				return v, true
			}
			return amount(func(p *report.Params) float64 { return p.RateLimitMsgs }, " msg/s")(p)
		},
		settings.Load: func(p *report.Params) (string, bool) {
			if p.Load == nil {
				return "", false
			}
			return loadText(p.Load), true
		},
		settings.CheckData: on(func(p *report.Params) bool { return p.CheckData }),
	}
	readGroup(m, settings.DevicePortFields, func(p *report.Params) *settings.DevicePort { return &p.DevicePort })
	readGroup(m, settings.LoopFields, func(p *report.Params) *settings.Loops { return &p.Loops })
	readGroup(m, settings.RateFields, func(p *report.Params) *settings.Rate { return &p.Rate })
	readGroup(m, settings.SetupFields, func(p *report.Params) *settings.Setup { return &p.Setup })
	readGroup(m, settings.BufferFields, func(p *report.Params) *settings.Buffers { return &p.Buffers })
	readGroup(m, settings.OperationFields, func(p *report.Params) *settings.Operation { return &p.Operation })
	readGroup(m, settings.QueueFields, func(p *report.Params) *settings.Queues { return &p.Queues })
	for _, ps := range settings.PathSettings {
		m[ps.Setting] = optional(func(p *report.Params) *int { return *ps.Asked(&p.Path) })
	}
	return m
}()

// readGroup says how the compared settings of a group of pkg/settings,
// which Params embeds (in points at it), read: an int as a count, a *int as
// optional, a bool as on, a string not there when empty (unless its row
// says Blank), a list not there when empty.
func readGroup[S any](m map[*settings.Setting]func(*report.Params) (string, bool), fs settings.Fields[S], in func(*report.Params) *S) {
	put := func(s *settings.Setting, text func(*report.Params) (string, bool)) {
		if s.Compared {
			m[s] = text
		}
	}
	for _, f := range fs.Ints {
		put(f.Setting, count(func(p *report.Params) int { return *f.In(in(p)) }))
	}
	for _, f := range fs.Optionals {
		put(f.Setting, optional(func(p *report.Params) *int { return *f.In(in(p)) }))
	}
	for _, f := range fs.Bools {
		put(f.Setting, on(func(p *report.Params) bool { return *f.In(in(p)) }))
	}
	for _, f := range fs.Strings {
		put(f.Setting, func(p *report.Params) (string, bool) { v := *f.In(in(p)); return v, v != "" || f.Blank })
	}
	for _, f := range fs.Lists {
		put(f.Setting, cores(func(p *report.Params) []int { return *f.In(in(p)) }))
	}
}

// params are the parameters compared, in the table's order; Extra keys
// follow. The device, server and port asked for, and the sizes, are left
// out: the rows, and the devices actually used, show those.
var params = func() []param {
	var out []param
	for _, s := range settings.Compared() {
		out = append(out, param{s, paramsBySetting[s]})
	}
	return out
}()

// paramKeys are the names of params, in order.
var paramKeys = func() []string {
	keys := make([]string, len(params))
	for i, p := range params {
		keys[i] = p.Label()
	}
	return keys
}()

// count reads an int whose 0 is unset.
func count(get func(*report.Params) int) func(*report.Params) (string, bool) {
	return func(p *report.Params) (string, bool) { return itoaOr(get(p)), true }
}

// optional reads an int whose nil is unset (0 is a value).
func optional(get func(*report.Params) *int) func(*report.Params) (string, bool) {
	return func(p *report.Params) (string, bool) {
		if v := get(p); v != nil {
			return strconv.Itoa(*v), true
		}
		return "", false
	}
}

// on reads a bool: "on", or not there.
func on(get func(*report.Params) bool) func(*report.Params) (string, bool) {
	return func(p *report.Params) (string, bool) { return "on", get(p) }
}

// amount reads a float64 shown in unit when above 0.
func amount(get func(*report.Params) float64, unit string) func(*report.Params) (string, bool) {
	return func(p *report.Params) (string, bool) {
		if v := get(p); v > 0 {
			return textfmt.Num(v) + unit, true
		}
		return "", false
	}
}

// cores reads a list of cores, not there when empty.
func cores(get func(*report.Params) []int) func(*report.Params) (string, bool) {
	return func(p *report.Params) (string, bool) {
		c := get(p)
		return strings.Join(textfmt.IntRanges(c), ","), len(c) > 0
	}
}

// paramMap is p's parameters compared, as compare prints them; an Extra
// key only where no parameter is there under its name.
func paramMap(p *report.Params) map[string]string {
	m := map[string]string{}
	for _, f := range params {
		if v, ok := f.text(p); ok {
			m[f.Label()] = v
		}
	}
	for k, v := range p.Extra {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return m
}

// loadText writes a load (--load) as compare prints it: "write-bw, 4 QPs,
// 65536 B".
func loadText(l *report.LoadParams) string {
	parts := []string{cmp.Or(textfmt.Clean(l.Test), "?")}
	if l.QPs > 0 {
		parts = append(parts, fmt.Sprintf("%d QPs", l.QPs))
	}
	if l.Size > 0 {
		parts = append(parts, fmt.Sprintf("%d B", l.Size))
	}
	return strings.Join(parts, ", ")
}

func paramOrder(a, b map[string]string) []string {
	keys := slices.Clone(paramKeys)
	var extra []string
	for _, m := range []map[string]string{a, b} {
		for k := range maps.Keys(m) {
			if !slices.Contains(keys, k) && !slices.Contains(extra, k) {
				extra = append(extra, k)
			}
		}
	}
	slices.Sort(extra)
	return append(keys, extra...)
}
