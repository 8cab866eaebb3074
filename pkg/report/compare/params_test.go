package compare

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/settings"
)

// TestParamFields: the parameters compared are the table's compared
// settings, in its order, each once, and each reads in Params.
func TestParamFields(t *testing.T) {
	want := []string{"connection", "mtu", "gid-index", "tx-depth", "rx-depth", "qps", "inline", "cq-mod",
		"post-list", "events", "qp-timeout", "bidirectional", "atomic", "iterations", "duration", "warm-up",
		"precision", "precision-cap", "repeat", "tclass", "sl", "flow-label", "hop-limit", "reverse", "rdma-cm",
		"threads", "cpu", "server-cpu", "rate-limit", "rate-limiter", "load", "mem", "odp", "validate"}
	if !slices.Equal(paramKeys, want) {
		t.Errorf("paramKeys = %q, want %q", paramKeys, want)
	}
	for _, p := range params {
		if p.text == nil {
			t.Errorf("%s: compared, but how it reads in Params is not said", p.Key)
		}
	}
	for s := range paramsBySetting {
		if !s.Compared {
			t.Errorf("%s: read in Params for a comparison, but the table does not compare it", s.Key)
		}
	}
}

// TestParamFieldsDecided: every field of Params (those of its embedded
// structs too) is compared (setting it changes what compare reads) or left
// out on purpose, here: a new field must be decided.
func TestParamFieldsDecided(t *testing.T) {
	// What the rows (sizes), the devices each end used (Hosts: device,
	// port) and the setup (loopback or two hosts) show. (Extra is compared
	// key by key.)
	leftOut := []string{"Server", "Device", "Port", "Sizes", "Loopback", "ServerDevice"}
	zero := paramMap(&report.Params{})
	var walk func(typ reflect.Type, index []int)
	walk = func(typ reflect.Type, index []int) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			at := append(slices.Clone(index), i)
			if f.Anonymous {
				walk(f.Type, at)
				continue
			}
			var p report.Params
			fv := reflect.ValueOf(&p).Elem().FieldByIndex(at)
			setSome(t, f.Name, fv)
			compared := !maps.Equal(paramMap(&p), zero)
			if compared == slices.Contains(leftOut, f.Name) {
				t.Errorf("Params.%s: compared %v, left out %v: decide one", f.Name, compared, !compared)
			}
		}
	}
	walk(reflect.TypeFor[report.Params](), nil)
}

// setSome sets v to a value that is not its zero.
func setSome(t *testing.T, name string, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Int:
		v.SetInt(2)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float64:
		v.SetFloat(2)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		setSome(t, name, v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(reflect.ValueOf("x"), reflect.ValueOf("y"))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		if v.Elem().Kind() == reflect.Struct {
			return // a struct of its own (the load): set, if empty
		}
		setSome(t, name, v.Elem())
	default:
		t.Fatalf("Params.%s: a %s, which this test cannot set", name, v.Type())
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
	set := paramMap(&report.Params{Connection: "UD", MTU: 1024, GIDIndex: 0,
		Queues: settings.Queues{TxDepth: 4, RxDepth: 5, QPs: 6, Inline: &zero, CQMod: 8,
			PostList: 9, Events: true}, QPTimeout: 14,
		Operation: settings.Operation{Bidirectional: true, AtomicType: "CMP_AND_SWAP"}, Iterations: 13,
		DurationS: 1.5,
		Warmup:    &two, PrecisionPct: 2.5, PrecisionCapS: 30, Repeat: 5, Path: settings.Path{TClass: &two, SL: &two, FlowLabel: &two, HopLimit: &two},
		Setup: settings.Setup{Reverse: true, RDMACM: true},
		Loops: settings.Loops{Threads: 2, CPUs: []int{3, 0, 1, 2}, ServerCPUs: []int{7}},
		Rate:  settings.Rate{RateLimitGbps: 12.5, RateLimiter: "hw"},
		Load:  &report.LoadParams{Test: "write-bw", QPs: 4, Size: 65536}, Buffers: settings.Buffers{Mem: "hugepages", ODP: true},
		CheckData: true})
	want := map[string]string{"connection": "UD", "mtu": "1024", "gid-index": "0", "tx-depth": "4", "rx-depth": "5", "qps": "6",
		"inline": "0", "cq-mod": "8", "post-list": "9", "events": "on", "qp-timeout": "14", "bidirectional": "on",
		"atomic": "CMP_AND_SWAP", "iterations": "13", "duration": "1.5 s", "warm-up": "2", "precision": "2.5%",
		"precision-cap": "30 s", "repeat": "5", "tclass": "2", "sl": "2", "flow-label": "2", "hop-limit": "2", "reverse": "on",
		"rdma-cm": "on", "threads": "2", "cpu": "0-3", "server-cpu": "7", "rate-limit": "12.5 Gbit/s", "rate-limiter": "hw",
		"load": "write-bw, 4 QPs, 65536 B", "mem": "hugepages", "odp": "on", "validate": "on"}
	if !maps.Equal(set, want) {
		t.Errorf("set: %v, want %v", set, want)
	}
	if got := paramMap(&report.Params{Rate: settings.Rate{RateLimitMsgs: 1e6}})["rate-limit"]; got != "1000000 msg/s" {
		t.Errorf("rate-limit in messages: %q", got)
	}
}
