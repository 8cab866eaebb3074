package compare

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// Gate is a threshold on a comparison. A regression gate (MinRatio 0)
// fails when a figure got worse by more than MaxRegression (a fraction:
// latency up, bandwidth down); a ratio gate (MinRatio > 0) fails when a
// higher-is-better figure's NEW/BASE ratio of medians is below MinRatio.
//
// A change beyond the threshold fails the gate when the U test finds it
// significant, and when the sides have too few runs for a test: then the
// gate judges the change alone, and says so (unless
// [GateOptions.RequireSignificance]). A change the U test finds to be
// noise does not fail it. Gates fail closed: see [Comparison.CheckGates].
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

// GateOptions tune [Comparison.CheckGatesWith].
type GateOptions struct {
	// RequireSignificance makes a change beyond a threshold fail a gate
	// only when the U test finds it significant: with too few runs for a
	// test it does not fail (it is listed as not significant), the
	// "significance or nothing" of compare --require-significance.
	RequireSignificance bool
}

// GateFailure is one figure of one row beyond a gate's threshold.
type GateFailure struct {
	Gate string `json:"gate"`
	report.Key
	Figure report.Figure `json:"figure"`
	// Change is the relative change of the medians (New/Base - 1).
	Change float64 `json:"change"`
	// Significant says the U test found the change significant. A change
	// that is not fails the gate only with too few runs for a test
	// (TooFewRuns), judged alone; the noise does not.
	Significant bool `json:"significant"`
	// TooFewRuns: the sides have too few runs for the U test to find any
	// change significant ([Testable]).
	TooFewRuns bool `json:"too_few_runs,omitempty"`
	// Message says what crossed which threshold: "write-lat RC 2 B: p99
	// +12.30% > 5% (--max-p99-regression 5%)"; for a change that is not
	// significant it also says why, and how it was judged.
	Message string `json:"message"`

	failed bool // it fails the gate: in GateResult.Failures
}

// String is the failure as compare prints it: "gate failed: MESSAGE", or
// "gate not failed: MESSAGE" for a change that does not fail the gate.
func (f GateFailure) String() string {
	if f.failed {
		return "gate failed: " + f.Message
	}
	return "gate not failed: " + f.Message
}

// Reasons a comparison cannot judge NEW in full ([Incomplete.Reason]).
const (
	// IncompleteFailed: a test failed in new (some or all of its runs).
	IncompleteFailed = "failed_in_new"
	// IncompleteMissing: a test base has, new lacks.
	IncompleteMissing = "missing_in_new"
	// IncompleteNothing: a gate had nothing to check: no test and size in
	// common, or none with its figures measured on both sides.
	IncompleteNothing = "nothing_compared"
	// IncompleteStopped: new's run stopped early (interrupted), or its
	// document is partial (written while the run was going).
	IncompleteStopped = "new_stopped"
)

// Incomplete is a reason the gates cannot judge NEW in full. Each fails
// the gates: they fail closed.
type Incomplete struct {
	// Reason is one of IncompleteFailed, IncompleteMissing,
	// IncompleteNothing, IncompleteStopped.
	Reason string `json:"reason"`
	// Key is the test and size failed or missing in new.
	Key *report.Key `json:"key,omitempty"`
	// Gate is the gate that had nothing to check; empty: every gate.
	Gate string `json:"gate,omitempty"`
	// Message says it for a person: "write-lat RC 2 B: the test failed in
	// new: ...".
	Message string `json:"message"`
	// said is what a failed test's Message says after its key, the
	// cause without the test's name: the tests that failed for one cause
	// are printed on one line ([GateResult.FailedLines]).
	said string
}

func (i Incomplete) String() string { return i.Message }

// GateResult is the verdict of a comparison's gates.
type GateResult struct {
	// Gates names the gates checked.
	Gates []string `json:"gates"`
	// Failures are the changes beyond a threshold that fail the gates:
	// significant ones, and those with too few runs for a test (unless
	// significance was required).
	Failures []GateFailure `json:"failures"`
	// NotSignificant are changes beyond a threshold that are noise (or,
	// with significance required, come from too few runs): they do not
	// fail a gate.
	NotSignificant []GateFailure `json:"not_significant,omitempty"`
	// Incomplete are the reasons NEW cannot be judged in full: each fails
	// the gates.
	Incomplete []Incomplete `json:"incomplete,omitempty"`
	// Limits are the figures of NEW that miss an absolute limit
	// (compare --limit-bw 90%link): each fails the gates.
	Limits []report.LimitFailure `json:"limits,omitempty"`
}

// Failed reports whether a gate failed.
func (g *GateResult) Failed() bool { return g != nil && g.Count() > 0 }

// Count is the number of checks that failed: incomplete, failures,
// limits.
func (g *GateResult) Count() int {
	if g == nil {
		return 0
	}
	return len(g.Incomplete) + len(g.Failures) + len(g.Limits)
}

// FailedLines are the checks that failed, one line each, as compare
// prints them: "gate failed: ...", then "limit failed (new): ...".
func (g *GateResult) FailedLines() []string {
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

// incompleteLines are the lines of inc, "gate failed: ...": the tests
// that failed for one cause are one line, the cause said once.
func incompleteLines(inc []Incomplete) []string {
	var lines []string
	keys := map[string][]string{} // the keys of the tests that failed, by what is said of them
	for _, f := range inc {
		if f.said != "" {
			keys[f.said] = append(keys[f.said], f.Key.String())
		}
	}
	for _, f := range inc {
		switch ks := keys[f.said]; {
		case f.said == "" || len(ks) == 1:
			lines = append(lines, "gate failed: "+f.Message)
		case ks != nil:
			lines = append(lines, fmt.Sprintf("gate failed: %d tests (%s): %s", len(ks), strings.Join(ks, ", "), f.said))
			delete(keys, f.said) // said once
		}
	}
	return lines
}

// NotFailedLines are the changes beyond a threshold that do not fail a
// gate, one line each: "gate not failed: ...".
func (g *GateResult) NotFailedLines() []string {
	if g == nil {
		return nil
	}
	var lines []string
	for _, f := range g.NotSignificant {
		lines = append(lines, f.String())
	}
	return lines
}

// AddLimits checks the limits l, named name ("--limit-bw 90%link"), on
// the NEW document of the comparison, as a run checks its own
// ([report.Document.CheckLimits]): every figure that misses one fails the gates.
func (g *GateResult) AddLimits(name string, new *report.Document, l report.Limits) {
	if l.IsZero() {
		return
	}
	g.Gates = append(g.Gates, name)
	g.Limits = append(g.Limits, new.CheckLimits(l)...)
}

// CheckGates checks every gate on every row and figure of c, failing
// closed ([Comparison.CheckGatesWith] with no options).
func (c *Comparison) CheckGates(gates Gates) *GateResult {
	return c.CheckGatesWith(gates, GateOptions{})
}

// CheckGatesWith checks every gate on every row and figure of c. Gates
// fail closed: besides the changes beyond a threshold (see [Gate]), each
// of these fails them ([GateResult.Incomplete]), whatever the gates (an
// absolute limit added later with AddLimits too):
//   - a test that failed in new, in any of its runs;
//   - a test base has and new lacks;
//   - new's run stopped early, or its document is partial;
//   - a gate with nothing to check: no test and size in common, or none
//     with the gate's figures measured on both sides.
//
// A test base failed, or new has and base lacks, does not fail them: the
// comparison's warnings name it.
func (c *Comparison) CheckGatesWith(gates Gates, opt GateOptions) *GateResult {
	res := &GateResult{Gates: []string{}, Failures: []GateFailure{}}
	for _, g := range gates {
		res.Gates = append(res.Gates, g.Name)
	}
	st := c.newState
	if st.stopped != "" {
		res.Incomplete = append(res.Incomplete, Incomplete{Reason: IncompleteStopped,
			Message: "the new run stopped early: " + textfmt.Clean(st.stopped)})
	}
	if st.partial {
		res.Incomplete = append(res.Incomplete, Incomplete{Reason: IncompleteStopped,
			Message: "the new document is partial: its run was still going when it was written"})
	}
	for _, f := range st.failed {
		k := f.key
		what := "the test failed in new"
		if f.runs > 1 {
			what = fmt.Sprintf("%d of %d runs failed in new", f.failed, f.runs)
		}
		res.Incomplete = append(res.Incomplete, Incomplete{Reason: IncompleteFailed, Key: &k,
			Message: fmt.Sprintf("%s: %s: %s", k, what, textfmt.Clean(f.err)),
			said:    fmt.Sprintf("%s: %s", what, textfmt.Clean(strings.TrimPrefix(f.err, k.Test+": ")))})
	}
	for _, k := range c.OnlyBase {
		k := k
		res.Incomplete = append(res.Incomplete, Incomplete{Reason: IncompleteMissing, Key: &k,
			Message: fmt.Sprintf("%s: in base, missing in new", k)})
	}
	if len(c.Rows) == 0 && len(gates) > 0 {
		res.Incomplete = append(res.Incomplete, Incomplete{Reason: IncompleteNothing,
			Message: "nothing compared: no test and size in common"})
	}
	need := report.MinRunsForTest(c.Alpha)
	for _, g := range gates {
		checked := false
		for _, row := range c.Rows {
			for i := range row.Figures {
				fc := &row.Figures[i]
				if !g.applies(fc.Figure) || fc.Change == nil || math.IsNaN(*fc.Change) {
					continue
				}
				checked = true
				msg, over := g.check(fc)
				if !over {
					continue
				}
				f := GateFailure{Gate: g.Name, Key: row.Key, Figure: fc.Figure, Change: *fc.Change, Significant: fc.Significant,
					TooFewRuns: fc.TooFewRuns, Message: fmt.Sprintf("%s: %s (%s)", row.Key, msg, g.Name)}
				switch {
				case f.Significant:
					f.failed = true
					res.Failures = append(res.Failures, f)
				case fc.TooFewRuns && !opt.RequireSignificance:
					f.Message += fmt.Sprintf(": too few runs to test its significance (%s; need at least %d on each side): judged on the change alone",
						sampleSizes(fc), need)
					f.failed = true
					res.Failures = append(res.Failures, f)
				case fc.TooFewRuns:
					f.Message += fmt.Sprintf(": not significant, too few runs (%s; need at least %d on each side)", sampleSizes(fc), need)
					res.NotSignificant = append(res.NotSignificant, f)
				default:
					f.Message += fmt.Sprintf(": not significant (%s > alpha %g)", fc.Test(), c.Alpha)
					res.NotSignificant = append(res.NotSignificant, f)
				}
			}
		}
		if !checked && len(c.Rows) > 0 {
			res.Incomplete = append(res.Incomplete, Incomplete{Reason: IncompleteNothing, Gate: g.Name,
				Message: fmt.Sprintf("%s: nothing compared: no %s measured on both sides", g.Name, g.what())})
		}
	}
	return res
}

// Gate returns the changes of c that fail gates (see [Comparison.CheckGates]):
// the failures alone, without what makes the comparison incomplete.
func (c *Comparison) Gate(gates Gates) []GateFailure { return c.CheckGates(gates).Failures }

// sampleSizes is "n=1" or "n=5+1".
func sampleSizes(fc *FigureChange) string {
	n1, n2 := len(fc.BaseValues), len(fc.NewValues)
	if n1 == n2 {
		return fmt.Sprintf("n=%d", n1)
	}
	return fmt.Sprintf("n=%d+%d", n1, n2)
}

// applies reports whether g checks figure f.
func (g *Gate) applies(f report.Figure) bool {
	if g.MinRatio > 0 && !f.HigherIsBetter() {
		return false
	}
	return len(g.Figures) == 0 || slices.Contains(g.Figures, f)
}

// what names the figures g checks, for a message: "figure", "p99",
// "bw or msg-rate".
func (g *Gate) what() string {
	if len(g.Figures) == 0 {
		if g.MinRatio > 0 {
			return "bandwidth or message rate"
		}
		return "figure"
	}
	names := make([]string, len(g.Figures))
	for i, f := range g.Figures {
		names[i] = string(f)
	}
	return strings.Join(names, " or ")
}

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
		return fmt.Sprintf("%s ratio %s < %s", label, strconv.FormatFloat(ratio, 'f', 3, 64), textfmt.Num(g.MinRatio)), true
	}
	worse, _ := fc.Worse()
	if worse <= g.MaxRegression {
		return "", false
	}
	limit := textfmt.Num(100*g.MaxRegression) + "%"
	if fc.Figure.HigherIsBetter() {
		return fmt.Sprintf("%s %s < -%s", label, pct(*fc.Change), limit), true
	}
	return fmt.Sprintf("%s %s > %s", label, pct(*fc.Change), limit), true
}
