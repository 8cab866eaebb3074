package compare

import (
	"maps"
	"slices"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// TestParamFields: the compare tags of Params give the parameters compared,
// in their order, each once.
func TestParamFields(t *testing.T) {
	want := []string{"connection", "mtu", "gid-index", "tx-depth", "rx-depth", "qps", "inline", "cq-mod",
		"post-list", "events", "bidirectional", "atomic", "iterations", "duration", "warm-up",
		"tclass", "sl", "flow-label", "hop-limit", "reverse", "rdma-cm", "mem", "odp"}
	if !slices.Equal(paramKeys, want) {
		t.Errorf("paramKeys = %q, want %q", paramKeys, want)
	}
	for i := 1; i < len(paramFields); i++ {
		if paramFields[i].order == paramFields[i-1].order {
			t.Errorf("%s and %s: the same order", paramFields[i-1].key, paramFields[i].key)
		}
	}
}

// TestParamMap: each kind of field as compare prints it, set or not.
func TestParamMap(t *testing.T) {
	zero, two := 0, 2
	unset := paramMap(&report.Params{GIDIndex: -1, Extra: map[string]string{"mem": "cuda", "mtu": "9000", "tcp-port": "1"}})
	if want := map[string]string{"connection": "", "mtu": "", "tx-depth": "", "rx-depth": "", "qps": "", "cq-mod": "",
		"post-list": "", "atomic": "", "iterations": "", "mem": "cuda", "tcp-port": "1"}; !maps.Equal(unset, want) {
		t.Errorf("unset: %v, want %v", unset, want)
	}
	set := paramMap(&report.Params{Connection: "UD", MTU: 1024, GIDIndex: 0, TxDepth: 4, RxDepth: 5, QPs: 6, Inline: &zero, CQMod: 8,
		PostList: 9, Events: true, Bidirectional: true, AtomicType: "CMP_AND_SWAP", Iterations: 13, DurationS: 1.5,
		Warmup: &two, TClass: &two, SL: &two, FlowLabel: &two, HopLimit: &two, Reverse: true, RDMACM: true, Mem: "hugepages", ODP: true})
	want := map[string]string{"connection": "UD", "mtu": "1024", "gid-index": "0", "tx-depth": "4", "rx-depth": "5", "qps": "6",
		"inline": "0", "cq-mod": "8", "post-list": "9", "events": "on", "bidirectional": "on", "atomic": "CMP_AND_SWAP",
		"iterations": "13", "duration": report.Num(1.5) + " s", "warm-up": "2", "tclass": "2", "sl": "2", "flow-label": "2",
		"hop-limit": "2", "reverse": "on", "rdma-cm": "on", "mem": "hugepages", "odp": "on"}
	if !maps.Equal(set, want) {
		t.Errorf("set: %v, want %v", set, want)
	}
}
