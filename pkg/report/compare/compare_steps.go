package compare

import (
	"fmt"
	"slices"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// StepChange is one receiver of one step of a load pattern in both
// meshes: its aggregate and Jain index on each side and the step's p99
// under the load. Steps are matched by number, receivers by name ("rank
// 3", a host): two runs of one pattern, seed and ranks have the same
// steps.
type StepChange struct {
	Step     int    `json:"step"`
	Receiver string `json:"receiver"`
	// BaseGbps and NewGbps are the receiver's aggregate, Gbit/s; Change
	// new over base less 1.
	BaseGbps float64  `json:"base_gbps"`
	NewGbps  float64  `json:"new_gbps"`
	Change   *float64 `json:"change,omitempty"`
	BaseJain float64  `json:"base_jain"`
	NewJain  float64  `json:"new_jain"`
	// BaseP99Ns and NewP99Ns are the step's probe's p99 under the load,
	// absent where the probe failed; P99Change new over base less 1.
	BaseP99Ns *float64 `json:"base_p99_ns,omitempty"`
	NewP99Ns  *float64 `json:"new_p99_ns,omitempty"`
	P99Change *float64 `json:"p99_change,omitempty"`
}

// compareSteps matches the steps' receivers of two pattern meshes; a
// warning says when the patterns differ.
func compareSteps(bm, nm *report.Mesh) ([]StepChange, []string) {
	if bm.Pattern == nil && nm.Pattern == nil {
		return nil, nil
	}
	var warns []string
	switch {
	case bm.Pattern == nil || nm.Pattern == nil:
		return nil, []string{"one mesh ran a load pattern (--pattern), the other the pairs: their steps are not compared"}
	case bm.Pattern.Name != nm.Pattern.Name || bm.Pattern.Test != nm.Pattern.Test:
		warns = append(warns, fmt.Sprintf("patterns differ: base %s of %s, new %s of %s", bm.Pattern.Name, bm.Pattern.Test, nm.Pattern.Name, nm.Pattern.Test))
	case bm.Pattern.Seed != nm.Pattern.Seed && bm.Pattern.Name != "bisection" && bm.Pattern.Name != "all-to-all":
		warns = append(warns, fmt.Sprintf("the patterns' seeds differ (%d, %d): their steps may pair other senders", bm.Pattern.Seed, nm.Pattern.Seed))
	}
	newSteps := map[int]*report.MeshStep{}
	for i := range nm.Steps {
		newSteps[nm.Steps[i].Step] = &nm.Steps[i]
	}
	out := []StepChange{}
	for i := range bm.Steps {
		bs := &bm.Steps[i]
		ns := newSteps[bs.Step]
		if ns == nil {
			continue
		}
		newRc := map[string]report.StepReceiver{}
		for _, rc := range append(slices.Clone(ns.Receivers), ns.Hosts...) {
			newRc[rc.Name()] = rc
		}
		bp, np := probeP99(bs), probeP99(ns)
		for _, rc := range append(slices.Clone(bs.Receivers), bs.Hosts...) {
			n, ok := newRc[rc.Name()]
			if !ok {
				continue
			}
			sc := StepChange{Step: bs.Step, Receiver: rc.Name(), BaseGbps: rc.AggregateGbps, NewGbps: n.AggregateGbps,
				Change: change(rc.AggregateGbps, n.AggregateGbps), BaseJain: rc.Jain, NewJain: n.Jain, BaseP99Ns: bp, NewP99Ns: np}
			if bp != nil && np != nil {
				sc.P99Change = change(*bp, *np)
			}
			out = append(out, sc)
		}
	}
	return out, warns
}

func probeP99(st *report.MeshStep) *float64 {
	if st.Probe == nil || st.Probe.Latency == nil {
		return nil
	}
	v := st.Probe.Latency.P99Ns
	return &v
}
