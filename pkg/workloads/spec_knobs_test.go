package workloads

import (
	"encoding/json"
	"testing"
)

// TestKnobFlags: every knob's flag is whole, its Field of the type its
// kind says, and "unset" read back as unset after reset.
func TestKnobFlags(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Knobs {
		f := k.Flag
		if f.Help == "" || (f.Field == nil) == (f.LoadField == nil) {
			t.Errorf("knob %s: want a help text and one of Field and LoadField", k.Name)
			continue
		}
		if f.Short != "" && seen[f.Short] {
			t.Errorf("knob %s: letter -%s taken", k.Name, f.Short)
		}
		seen[f.Short] = true
		var p any
		if f.LoadField != nil {
			p = f.LoadField(&LoadSpec{})
			if k.set == nil {
				t.Errorf("knob %s: a --load knob needs its own set and reset", k.Name)
			}
		} else {
			p = f.Field(&Spec{})
			if k.Param == nil {
				t.Errorf("knob %s: not recorded (no Param)", k.Name)
			}
		}
		ok := false
		switch f.Kind {
		case FlagString, FlagMem, FlagLimiter, FlagBandwidthTest:
			_, ok = p.(*string)
		case FlagBool:
			_, ok = p.(*bool)
		case FlagCount, FlagSize:
			_, ok = p.(*int)
		case FlagRange:
			_, ok = p.(**int)
			ok = ok && f.Min <= f.Max && f.What != ""
		case FlagRate:
			_, ok = p.(RateFields)
		}
		if !ok {
			t.Errorf("knob %s: Field %T does not hold a flag of kind %d", k.Name, p, f.Kind)
			continue
		}
		if f.Field != nil {
			s := Spec{}
			if k.isSet(&s) {
				t.Errorf("knob %s: set in the spec as the commands start it", k.Name)
			}
			k.unset(&s)
			if k.isSet(&s) {
				t.Errorf("knob %s: set after reset", k.Name)
			}
		}
	}
}

// TestLoadSpecShared: the load takes every Shared knob from the latency
// test's spec.
func TestLoadSpecShared(t *testing.T) {
	one, two := 1, 2
	main := Spec{Test: "write-lat", Device: "d0", ServerDevice: "d1", Port: 2, GIDIndex: ptr(3), MTU: 1024, QPTimeout: 18,
		RDMACM: true, TClass: &one, SL: &two, FlowLabel: &one, HopLimit: &two, IdleTimeout: 5, CPUs: []int{1}, ServerCPUs: []int{2}}
	l := loadSpec(&Spec{Load: &LoadSpec{Test: "write-bw", Size: 4096}}, main)
	for _, k := range Knobs {
		if k.Shared && k.isSet(&main) != k.isSet(&l) {
			t.Errorf("--%s: the load's is not the latency test's", k.Name)
		}
	}
	if l.Device != "d0" || l.ServerDevice != "d1" || l.Port != 2 || l.GIDIndex == nil || *l.GIDIndex != 3 || l.MTU != 1024 || l.QPTimeout != 18 ||
		!l.RDMACM || l.TClass != &one || l.SL != &two || l.FlowLabel != &one || l.HopLimit != &two ||
		l.IdleTimeout != 5 || len(l.CPUs) != 1 || len(l.ServerCPUs) != 1 {
		t.Errorf("load spec %+v: not the latency test's path", l)
	}
}

// TestRequested: the document records each setting as asked, unset ones
// as unset.
func TestRequested(t *testing.T) {
	one, two := 1, 2
	s := Spec{Device: "d0", ServerDevice: "d1", CheckData: true, Port: 2, GIDIndex: ptr(0), Connection: "UC", MTU: 1024,
		Events: true, QPTimeout: 18, TxDepth: 4, RxDepth: 5, Inline: ptr(0), QPs: 6, CQMod: 7, PostList: 8, Bidirectional: true,
		AtomicType: "CMP_AND_SWAP", TClass: &one, SL: &two, FlowLabel: &one, HopLimit: &two, Reverse: true, RDMACM: true,
		Threads: 3, RateGbps: 5, RateLimiter: "hw", Mem: "hugepages", ODP: true, Load: &LoadSpec{Test: "write-bw", QPs: 2, Size: 64},
		Sizes: []int{2}, Iterations: 9, Warmup: ptr(0), CPUs: []int{1}, ServerCPUs: []int{2}, Precision: 0.01, PrecisionCap: 2e9}
	got, _ := json.Marshal(s.requested())
	want := `{"device":"d0","port":2,"gid_index":0,"connection":"UC","mtu":1024,"sizes":[2],"tx_depth":4,"rx_depth":5,"qps":6,` +
		`"inline":0,"cq_mod":7,"post_list":8,"events":true,"qp_timeout":18,"bidirectional":true,"atomic_type":"CMP_AND_SWAP",` +
		`"iterations":9,"warmup":0,"precision_pct":1,"precision_cap_s":2,"validate":true,"reverse":true,"rdma_cm":true,` +
		`"tclass":1,"sl":2,"flow_label":1,"hop_limit":2,"threads":3,"cpus":[1],"server_cpus":[2],"server_device":"d1",` +
		`"rate_limit_gbps":5,"rate_limiter":"hw","load":{"test":"write-bw","qps":2,"size":64},"mem":"hugepages","odp":true}`
	if string(got) != want {
		t.Errorf("requested:\n%s\nwant\n%s", got, want)
	}
	unset := Spec{}
	if got, _ := json.Marshal(unset.requested()); string(got) != `{"gid_index":-1}` {
		t.Errorf("requested of nothing asked: %s", got)
	}
}
