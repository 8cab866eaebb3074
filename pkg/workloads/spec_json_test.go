package workloads

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/settings"
)

// TestSettingsJSON pins, for a spec with every setting set, the spec as it
// travels to the server, the document's record of it as asked and a
// result's effective values: field by field as they were before the
// settings had a package of their own (the shared structs embedded in Spec
// and Params flatten on the wire).
func TestSettingsJSON(t *testing.T) {
	one, two, three, four, five := 1, 2, 3, 4, 5
	s := Spec{Test: "write-bw", Connection: "UC", Sizes: []int{2, 4}, Iterations: 9, Duration: 2 * time.Second, Interval: time.Second,
		Warmup:    &one,
		Queues:    settings.Queues{TxDepth: 4, RxDepth: 5, QPs: 6, Inline: &two, CQMod: 7, PostList: 8, Events: true},
		Operation: settings.Operation{Bidirectional: true, AtomicType: "CMP_AND_SWAP"},
		MTU:       1024, QPTimeout: 18, GIDIndex: &three, DevicePort: settings.DevicePort{Device: "d0", Port: 2}, ServerDevice: "d1",
		IdleTimeout: 5 * time.Second, CPUUtil: true, CheckData: true,
		Loops: settings.Loops{Threads: 3, CPUs: []int{1, 2}, ServerCPUs: []int{3}},
		Rate:  settings.Rate{RateLimitGbps: 5, RateLimitMsgs: 6, RateLimiter: "hw"},
		Load:  &LoadSpec{Test: "write-bw", QPs: 2, Size: 64}, Precision: 0.01,
		PrecisionCap: 3 * time.Second, Path: settings.Path{TClass: &four, SL: &five, FlowLabel: &one, HopLimit: &two},
		Setup:   settings.Setup{Reverse: true, RDMACM: true},
		Buffers: settings.Buffers{Mem: "hugepages", ODP: true}}
	e := report.Effective{TxDepth: 1, CheckData: true, IPTOS: &two,
		AV: &report.AddressVector{GRH: true, PathValues: settings.PathValues{TClass: 0x6a, SL: 3, FlowLabel: 5, HopLimit: 64}}}
	for _, c := range []struct {
		what string
		v    any
		want string
	}{
		{"spec", s, `{"test":"write-bw","connection":"UC","sizes":[2,4],"iterations":9,"duration_ns":2000000000,"interval_ns":10000` +
			`00000,"warmup":1,"tx_depth":4,"rx_depth":5,"qps":6,"inline":2,"cq_mod":7,"post_list":8,"events":true,"bidirect` +
			`ional":true,"atomic_type":"CMP_AND_SWAP","mtu":1024,"qp_timeout":18,"gid_index":3,"device":"d0","port":2,"serv` +
			`er_device":"d1","idle_timeout_ns":5000000000,"cpu_util":true,"validate":true,"threads":3,"cpus":[1,2],"server_` +
			`cpus":[3],"rate_limit_gbps":5,"rate_limit_msgs":6,"rate_limiter":"hw","load":{"test":"write-bw","qps":2,"size"` +
			`:64},"precision":0.01,"precision_cap_ns":3000000000,"tclass":4,"sl":5,"flow_label":1,"hop_limit":2,"reverse":t` +
			`rue,"rdma_cm":true,"mem":"hugepages","odp":true}`},
		{"params", s.requested(), `{"device":"d0","port":2,"gid_index":3,"connection":"UC","mtu":1024,"sizes":[2,4],"tx_depth":4,"rx_depth":5,"qp` +
			`s":6,"inline":2,"cq_mod":7,"post_list":8,"events":true,"qp_timeout":18,"bidirectional":true,"atomic_type":"CMP` +
			`_AND_SWAP","iterations":9,"duration_s":2,"warmup":1,"precision_pct":1,"precision_cap_s":3,"validate":true,"rev` +
			`erse":true,"rdma_cm":true,"tclass":4,"sl":5,"flow_label":1,"hop_limit":2,"threads":3,"cpus":[1,2],"server_cpus` +
			`":[3],"server_device":"d1","rate_limit_gbps":5,"rate_limit_msgs":6,"rate_limiter":"hw","load":{"test":"write-b` +
			`w","qps":2,"size":64},"mem":"hugepages","odp":true}`},
		{"effective", e, `{"tx_depth":1,"validate":true,"av":{"grh":true,"traffic_class":106,"sl":3,"flow_label":5,"hop_limit":64},"ip_t` +
			`os":2}`},
	} {
		got, err := json.Marshal(c.v)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: %s (%v)\nwant %s", c.what, got, err, c.want)
		}
		var back Spec
		if c.what == "spec" && (json.Unmarshal(got, &back) != nil || *back.TClass != 4 || *back.HopLimit != 2) {
			t.Errorf("spec read back: %+v", back.Path)
		}
	}
}
