package workloads

import (
	"encoding/json"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/settings"
)

// TestKnobFlags: every knob's flag is whole (a help text, a letter of its
// own, a range for a flag of an optional number), every knob of the table
// is one, and "unset" reads back as unset after reset.
func TestKnobFlags(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Knobs {
		if k.Help == "" {
			t.Errorf("knob %s: no help text", k.Key)
		}
		if k.Short != "" && seen[k.Short] {
			t.Errorf("knob %s: letter -%s taken", k.Key, k.Short)
		}
		seen[k.Short] = true
		var fs flagKinds
		k.DefineFlag(&fs, &Spec{}, &LoadSpec{})
		if len(fs) != 1 {
			t.Errorf("knob %s: defines %d flags, want 1", k.Key, len(fs))
		}
		if fs["optional"] > 0 && k.Range == nil {
			t.Errorf("knob %s: a flag of an optional number needs a range", k.Key)
		}
		s := Spec{}
		if k.isSet(&s) {
			t.Errorf("knob %s: set in the spec as the commands start it", k.Key)
		}
		k.unset(&s)
		if k.isSet(&s) {
			t.Errorf("knob %s: set after reset", k.Key)
		}
	}
	for _, set := range settings.Table {
		if _, ok := LookupKnob(set.Key); !ok && set.Applies != nil {
			t.Errorf("setting %s: applies to some tests, but is no knob (which refuses it for the others)", set.Key)
		}
	}
}

// flagKinds counts the flags a knob defines, by kind.
type flagKinds map[string]int

func (f *flagKinds) add(kind string) {
	if *f == nil {
		*f = flagKinds{}
	}
	(*f)[kind]++
}
func (f *flagKinds) String(Knob, *string)          { f.add("string") }
func (f *flagKinds) Bool(Knob, *bool)              { f.add("bool") }
func (f *flagKinds) Count(Knob, *int)              { f.add("count") }
func (f *flagKinds) Optional(Knob, **int)          { f.add("optional") }
func (f *flagKinds) Mem(Knob, *string)             { f.add("mem") }
func (f *flagKinds) Rate(Knob, *float64, *float64) { f.add("rate") }
func (f *flagKinds) Limiter(Knob, *string)         { f.add("limiter") }
func (f *flagKinds) BandwidthTest(Knob, *string)   { f.add("test") }
func (f *flagKinds) Size(Knob, *int)               { f.add("size") }

// TestLoadSpecShared: the load takes every Shared knob from the latency
// test's spec.
func TestLoadSpecShared(t *testing.T) {
	one, two := 1, 2
	main := Spec{Test: "write-lat", DevicePort: settings.DevicePort{Device: "d0", Port: 2}, ServerDevice: "d1",
		GIDIndex: ptr(3), MTU: 1024, QPTimeout: 18,
		Setup: settings.Setup{RDMACM: true},
		Path:  settings.Path{TClass: &one, SL: &two, FlowLabel: &one, HopLimit: &two}, IdleTimeout: 5,
		Loops: settings.Loops{CPUs: []int{1}, ServerCPUs: []int{2}}}
	l := loadSpec(&Spec{Load: &LoadSpec{Test: "write-bw", Size: 4096}}, main)
	for _, k := range Knobs {
		if k.Shared && k.isSet(&main) != k.isSet(&l) {
			t.Errorf("--%s: the load's is not the latency test's", k.Key)
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
	s := Spec{DevicePort: settings.DevicePort{Device: "d0", Port: 2}, ServerDevice: "d1", CheckData: true,
		GIDIndex: ptr(0), Connection: "UC", MTU: 1024,
		Queues:    settings.Queues{Events: true, TxDepth: 4, RxDepth: 5, Inline: ptr(0), QPs: 6, CQMod: 7, PostList: 8},
		QPTimeout: 18, Operation: settings.Operation{Bidirectional: true, AtomicType: "CMP_AND_SWAP"},
		Path: settings.Path{TClass: &one, SL: &two, FlowLabel: &one, HopLimit: &two}, Setup: settings.Setup{Reverse: true, RDMACM: true},
		Loops:   settings.Loops{Threads: 3, CPUs: []int{1}, ServerCPUs: []int{2}},
		Rate:    settings.Rate{RateLimitGbps: 5, RateLimiter: "hw"},
		Buffers: settings.Buffers{Mem: "hugepages", ODP: true}, Load: &LoadSpec{Test: "write-bw", QPs: 2, Size: 64},
		Sizes: []int{2}, Iterations: 9, Warmup: ptr(0), Precision: 0.01, PrecisionCap: 2e9}
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
