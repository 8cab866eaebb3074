package compare

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
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
// so no change is significant.
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
	// and parameters (device, firmware, MTU, link layer, GID type, kernel,
	// CPU, tool version, test parameters) that may explain a change.
	Warnings []string `json:"warnings,omitempty"`
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
	// could be significant (fewer than [report.MinRunsForTest] on each side).
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

// Delta is the change as benchstat prints it: "+12.30%" when significant,
// "~" when not, "?" when it cannot be computed (base median 0), "-" when a
// side has no value.
func (fc *FigureChange) Delta() string {
	switch {
	case fc.P == nil:
		return "-"
	case !fc.Significant:
		return "~"
	case fc.Change == nil:
		return "?"
	}
	return pct(*fc.Change)
}

// Test says how the U test went, as benchstat does: "p=0.008 n=5+5",
// "n=1" (no p-value without a test).
func (fc *FigureChange) Test() string {
	n1, n2 := len(fc.BaseValues), len(fc.NewValues)
	s := ""
	if fc.P != nil && !fc.TooFewRuns {
		s = fmt.Sprintf("p=%.3f ", *fc.P)
	}
	if n1 == n2 {
		return s + fmt.Sprintf("n=%d", n1)
	}
	return s + fmt.Sprintf("n=%d+%d", n1, n2)
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
	bg, ng := report.GroupResults(base), report.GroupResults(new)
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
	for _, d := range []struct {
		name string
		doc  *report.Document
	}{{"base", base}, {"new", new}} {
		if d.doc.Error != "" {
			c.Warnings = append(c.Warnings, fmt.Sprintf("the %s run stopped early: %s", d.name, report.Clean(d.doc.Error)))
		}
	}
	return c
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
			row.Notes = append(row.Notes, fmt.Sprintf("%s: the test failed: %s", s.name, report.Clean(firstError(s.g.Results))))
		default:
			row.Notes = append(row.Notes, fmt.Sprintf("%s: %d of %d runs failed and are left out (%s)", s.name, failed, len(s.g.Results), report.Clean(firstError(s.g.Results))))
		}
	}
	if bq, nq := qpsOf(b), qpsOf(n); bq != nq {
		row.Notes = append(row.Notes, fmt.Sprintf("QPs differ: base %s, new %s", bq, nq))
	}
	if be, ne := firstEffective(b.Results), firstEffective(n.Results); be != nil && ne != nil {
		if d := report.SettingsDiff(be, ne); len(d) > 0 {
			row.Notes = append(row.Notes, "ran with different settings: "+strings.Join(d, "; "))
		}
	}
	return row
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

func qpsOf(g *report.Group) string {
	var qs []string
	for _, r := range g.Results {
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
	need := report.MinRunsForTest(alpha)
	if !fc.Significant && len(bv) < need && len(nv) < need {
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
			w = append(w, fmt.Sprintf("%s differs: base %s, new %s", what, cmp.Or(report.Clean(b), "(none)"), cmp.Or(report.Clean(n), "(none)")))
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
		diff(prefix+"kernel", b.Kernel, n.Kernel)
		diff(prefix+"CPU", b.CPU, n.CPU)
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

func itoaOr(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// A paramField is a parameter compared, from its Params field's compare
// tag (see [report.Params]).
type paramField struct {
	key    string
	order  int
	index  int    // the field's
	format string // "", "auto", "seconds" or "omitempty"
}

// paramFields are the parameters compared, in order; Extra keys follow.
// Sizes, the server address and the device requested are left out: the
// rows, and the devices actually used, show those.
var paramFields = func() []paramField {
	var fields []paramField
	t := reflect.TypeFor[report.Params]()
	for i := range t.NumField() {
		tag, ok := t.Field(i).Tag.Lookup("compare")
		if !ok {
			continue
		}
		parts := strings.Split(tag, ",")
		order, err := strconv.Atoi(parts[1])
		if err != nil {
			panic("report: Params." + t.Field(i).Name + ": compare tag " + tag + " has no order")
		}
		f := paramField{key: parts[0], order: order, index: i}
		if len(parts) > 2 {
			f.format = parts[2]
		}
		fields = append(fields, f)
	}
	slices.SortFunc(fields, func(a, b paramField) int { return a.order - b.order })
	return fields
}()

// paramKeys are the keys of paramFields, in order.
var paramKeys = func() []string {
	keys := make([]string, len(paramFields))
	for i, f := range paramFields {
		keys[i] = f.key
	}
	return keys
}()

// paramMap is p's parameters compared, as compare prints them. A string
// (but omitempty) or int is there even when unset (""), the others only
// when set; an Extra key only where no field has it.
func paramMap(p *report.Params) map[string]string {
	m := map[string]string{}
	v := reflect.ValueOf(p).Elem()
	for _, f := range paramFields {
		switch fv := v.Field(f.index); fv.Kind() {
		case reflect.String:
			if f.format != "omitempty" || fv.String() != "" {
				m[f.key] = fv.String()
			}
		case reflect.Int:
			if f.format == "auto" {
				if fv.Int() >= 0 {
					m[f.key] = strconv.FormatInt(fv.Int(), 10)
				}
			} else {
				m[f.key] = itoaOr(int(fv.Int()))
			}
		case reflect.Bool:
			if fv.Bool() {
				m[f.key] = "on"
			}
		case reflect.Pointer:
			if !fv.IsNil() {
				m[f.key] = strconv.FormatInt(fv.Elem().Int(), 10)
			}
		case reflect.Float64:
			if f.format == "seconds" && fv.Float() > 0 {
				m[f.key] = report.Num(fv.Float()) + " s"
			}
		default:
			panic("report: compare tag on a " + fv.Kind().String())
		}
	}
	for k, v := range p.Extra {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return m
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

// --- gates ---

// Gate is a threshold on a comparison. A regression gate (MinRatio 0)
// fails when a figure got worse by more than MaxRegression (a fraction:
// latency up, bandwidth down); a ratio gate (MinRatio > 0) fails when a
// higher-is-better figure's NEW/BASE ratio of medians is below MinRatio.
// Either fails only on a significant change: a figure beyond the threshold
// whose change is noise, or that has too few runs for a test, does not
// fail the gate (CheckGates reports it as not significant).
type Gate struct {
	// Name is how messages show the gate: "--max-p99-regression 5%".
	Name string
	// Figures are the figures the gate checks; none: every compared one.
	Figures       []report.Figure
	MaxRegression float64
	MinRatio      float64
}

// Gates are the gates of one comparison.
type Gates []Gate

// MaxRegressionGate returns a regression gate: figs (every compared
// figure if none) may get worse by at most frac (0.05 for 5%).
func MaxRegressionGate(name string, frac float64, figs ...report.Figure) Gate {
	return Gate{Name: name, Figures: figs, MaxRegression: frac}
}

// MinRatioGate returns a ratio gate: NEW/BASE of figs (higher-is-better
// figures) must be at least ratio.
func MinRatioGate(name string, ratio float64, figs ...report.Figure) Gate {
	return Gate{Name: name, Figures: figs, MinRatio: ratio}
}

// GateFailure is one figure of one row beyond a gate's threshold.
type GateFailure struct {
	Gate string `json:"gate"`
	report.Key
	Figure report.Figure `json:"figure"`
	// Change is the relative change of the medians (New/Base - 1).
	Change float64 `json:"change"`
	// Significant is false for a change beyond the threshold that is
	// noise or has too few runs for a test: it does not fail the gate.
	Significant bool `json:"significant"`
	// Message says what crossed which threshold: "write-lat RC 2 B: p99
	// +12.30% > 5% (--max-p99-regression 5%)"; for a change that is not
	// significant it also says why.
	Message string `json:"message"`
}

func (f GateFailure) String() string {
	if f.Significant {
		return "gate failed: " + f.Message
	}
	return "gate not failed: " + f.Message
}

// GateResult is the verdict of a comparison's gates.
type GateResult struct {
	// Gates names the gates checked.
	Gates []string `json:"gates"`
	// Failures are the significant changes beyond a threshold: the gates
	// failed.
	Failures []GateFailure `json:"failures"`
	// NotSignificant are changes beyond a threshold that are noise or
	// come from too few runs: they do not fail a gate.
	NotSignificant []GateFailure `json:"not_significant,omitempty"`
	// Limits are the figures of NEW that miss an absolute limit
	// (compare --limit-bw 90%link): each fails the gates.
	Limits []report.LimitFailure `json:"limits,omitempty"`
}

// Failed reports whether a gate failed.
func (g *GateResult) Failed() bool { return g != nil && (len(g.Failures) > 0 || len(g.Limits) > 0) }

// AddLimits checks the limits l, named name ("--limit-bw 90%link"), on
// the NEW document of the comparison, as a run checks its own
// ([report.CheckLimits]): every figure that misses one fails the gates.
func (g *GateResult) AddLimits(name string, new *report.Document, l report.Limits) {
	if l.IsZero() {
		return
	}
	g.Gates = append(g.Gates, name)
	g.Limits = append(g.Limits, report.CheckLimits(new, l)...)
}

// CheckGates checks every gate on every row and figure of c.
func (c *Comparison) CheckGates(gates Gates) *GateResult {
	res := &GateResult{Gates: []string{}, Failures: []GateFailure{}}
	for _, g := range gates {
		res.Gates = append(res.Gates, g.Name)
	}
	for _, row := range c.Rows {
		for i := range row.Figures {
			fc := &row.Figures[i]
			for _, g := range gates {
				if len(g.Figures) > 0 && !slices.Contains(g.Figures, fc.Figure) {
					continue
				}
				msg, over := g.check(fc)
				if !over {
					continue
				}
				f := GateFailure{Gate: g.Name, Key: row.Key, Figure: fc.Figure, Change: *fc.Change, Significant: fc.Significant,
					Message: fmt.Sprintf("%s: %s (%s)", row.Key, msg, g.Name)}
				if f.Significant {
					res.Failures = append(res.Failures, f)
					continue
				}
				if fc.TooFewRuns {
					f.Message += fmt.Sprintf(": not significant, too few runs (%s; need at least %d on each side)", fc.Test(), report.MinRunsForTest(c.Alpha))
				} else {
					f.Message += fmt.Sprintf(": not significant (%s > alpha %g)", fc.Test(), c.Alpha)
				}
				res.NotSignificant = append(res.NotSignificant, f)
			}
		}
	}
	return res
}

// Gate returns the failures of gates on c: significant changes beyond a
// threshold (see [Comparison.CheckGates]).
func (c *Comparison) Gate(gates Gates) []GateFailure { return c.CheckGates(gates).Failures }

// check reports whether fc is beyond g's threshold, and says how.
func (g *Gate) check(fc *FigureChange) (string, bool) {
	if fc.Change == nil || math.IsNaN(*fc.Change) {
		return "", false
	}
	label := string(fc.Figure)
	if g.MinRatio > 0 {
		if !fc.Figure.HigherIsBetter() {
			return "", false
		}
		ratio := 1 + *fc.Change
		if ratio >= g.MinRatio {
			return "", false
		}
		return fmt.Sprintf("%s ratio %s < %s", label, strconv.FormatFloat(ratio, 'f', 3, 64), report.Num(g.MinRatio)), true
	}
	worse, _ := fc.Worse()
	if worse <= g.MaxRegression {
		return "", false
	}
	limit := report.Num(100*g.MaxRegression) + "%"
	if fc.Figure.HigherIsBetter() {
		return fmt.Sprintf("%s %s < -%s", label, pct(*fc.Change), limit), true
	}
	return fmt.Sprintf("%s %s > %s", label, pct(*fc.Change), limit), true
}
