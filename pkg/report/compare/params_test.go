package compare

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// TestParamFields: the compare tags of Params give the parameters compared,
// in their order, each once; only the fields of one flag share an order.
func TestParamFields(t *testing.T) {
	want := []string{"connection", "mtu", "gid-index", "tx-depth", "rx-depth", "qps", "inline", "cq-mod",
		"post-list", "events", "qp-timeout", "bidirectional", "atomic", "iterations", "duration", "warm-up",
		"precision", "precision-cap", "repeat", "tclass", "sl", "flow-label", "hop-limit", "reverse", "rdma-cm",
		"threads", "cpu", "server-cpu", "rate-limit", "rate-limiter", "load", "mem", "odp", "validate"}
	if !slices.Equal(paramKeys, want) {
		t.Errorf("paramKeys = %q, want %q", paramKeys, want)
	}
	for i := 1; i < len(paramFields); i++ {
		if a, b := paramFields[i-1], paramFields[i]; a.order == b.order && a.key != b.key {
			t.Errorf("%s and %s: the same order", a.key, b.key)
		}
	}
}

// TestParamFieldsDecided: every field of Params is compared (it has a
// compare tag) or left out on purpose, here: a new field must be decided.
func TestParamFieldsDecided(t *testing.T) {
	// What the rows (sizes), the devices each end used (Hosts: device,
	// port) and the setup (loopback or two hosts) show; Extra is compared
	// key by key.
	leftOut := []string{"Server", "Device", "Port", "Sizes", "Loopback", "ServerDevice", "Extra"}
	typ := reflect.TypeFor[report.Params]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		_, tagged := f.Tag.Lookup("compare")
		if tagged == slices.Contains(leftOut, f.Name) {
			t.Errorf("Params.%s: compare tag %v, left out %v: decide one", f.Name, tagged, !tagged)
		}
	}
}

// TestParamMap: each kind of field as compare prints it, set or not.
func TestParamMap(t *testing.T) {
	zero, two := 0, 2
	unset := paramMap(&report.Params{GIDIndex: -1, Repeat: 1, Extra: map[string]string{"mem": "cuda", "mtu": "9000", "tcp-port": "1"}})
	if want := map[string]string{"connection": "", "mtu": "", "tx-depth": "", "rx-depth": "", "qps": "", "cq-mod": "",
		"post-list": "", "qp-timeout": "", "atomic": "", "iterations": "", "repeat": "", "threads": "", "mem": "cuda",
		"tcp-port": "1"}; !maps.Equal(unset, want) {
		t.Errorf("unset: %v, want %v", unset, want)
	}
	set := paramMap(&report.Params{Connection: "UD", MTU: 1024, GIDIndex: 0, TxDepth: 4, RxDepth: 5, QPs: 6, Inline: &zero, CQMod: 8,
		PostList: 9, Events: true, QPTimeout: 14, Bidirectional: true, AtomicType: "CMP_AND_SWAP", Iterations: 13, DurationS: 1.5,
		Warmup: &two, PrecisionPct: 2.5, PrecisionCapS: 30, Repeat: 5, TClass: &two, SL: &two, FlowLabel: &two, HopLimit: &two,
		Reverse: true, RDMACM: true, Threads: 2, CPUs: []int{3, 0, 1, 2}, ServerCPUs: []int{7}, RateLimitGbps: 12.5,
		RateLimiter: "hw", Load: &report.LoadParams{Test: "write-bw", QPs: 4, Size: 65536}, Mem: "hugepages", ODP: true,
		Validate: true})
	want := map[string]string{"connection": "UD", "mtu": "1024", "gid-index": "0", "tx-depth": "4", "rx-depth": "5", "qps": "6",
		"inline": "0", "cq-mod": "8", "post-list": "9", "events": "on", "qp-timeout": "14", "bidirectional": "on",
		"atomic": "CMP_AND_SWAP", "iterations": "13", "duration": "1.5 s", "warm-up": "2", "precision": "2.5%",
		"precision-cap": "30 s", "repeat": "5", "tclass": "2", "sl": "2", "flow-label": "2", "hop-limit": "2", "reverse": "on",
		"rdma-cm": "on", "threads": "2", "cpu": "0-3", "server-cpu": "7", "rate-limit": "12.5 Gbit/s", "rate-limiter": "hw",
		"load": "write-bw, 4 QPs, 65536 B", "mem": "hugepages", "odp": "on", "validate": "on"}
	if !maps.Equal(set, want) {
		t.Errorf("set: %v, want %v", set, want)
	}
	if got := paramMap(&report.Params{RateLimitMsgs: 1e6})["rate-limit"]; got != "1000000 msg/s" {
		t.Errorf("rate-limit in messages: %q", got)
	}
}
