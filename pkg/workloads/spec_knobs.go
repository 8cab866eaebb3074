package workloads

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/settings"
)

// A Knob is a setting of pkg/settings' table bound to its field of a
// Spec: one a user chooses and that means something for some tests only
// (the queue depth of an RDMA test, not of a TCP one). Its key is the
// command line's long flag; the commands define the flags from Knobs
// (see [Knob.DefineFlag]). A knob asked for a test it does not apply to is
// refused before anything runs, naming the tests it applies to; in a suite
// it is left out for those tests.
type Knob struct {
	*settings.Setting
	field binding
}

// A binding is where a knob lives in a Spec (and in a --load test's
// LoadSpec), and where the document records it as asked.
type binding interface {
	// isSet reports whether the spec as asked sets the knob, and unset
	// leaves it to the test's default.
	isSet(*Spec) bool
	unset(*Spec)
	// copyTo sets the knob of dst as src has it.
	copyTo(dst, src *Spec)
	// record sets the knob in the document's record of the spec as asked.
	record(*report.Params, *Spec)
	// outOfRange is the error of a value outside the setting's range.
	outOfRange(*settings.Setting, *Spec) error
	defineFlag(FlagSet, Knob, *Spec, *LoadSpec)
}

// A FlagSet defines the knobs' flags, one method for each kind of value,
// given where the value goes: the commands implement it with their flag
// types (cmd/rdmabench).
type FlagSet interface {
	String(k Knob, p *string)
	Bool(k Knob, p *bool)
	Count(k Knob, p *int)     // a positive number; 0 unset
	Optional(k Knob, p **int) // a number within k.Range, 0 included; nil unset
	Mem(k Knob, p *string)    // a memory kind (ParseMem)
	Rate(k Knob, gbps, msgs *float64)
	Limiter(k Knob, p *string)       // LimiterSW or LimiterHW
	BandwidthTest(k Knob, p *string) // an RDMA bandwidth test's name
	Size(k Knob, p *int)             // one message size
}

// field is a knob held in one field of a Spec, of type T, whose zero is
// "unset".
type field[T comparable] struct {
	spec func(*Spec) *T
	// param records it in the document; nil: recorded otherwise.
	param func(*report.Params, T)
	// number is the value a range bounds (ok false: unset or none).
	number func(T) (v int, ok bool)
	flag   func(FlagSet, Knob, *T)
}

func (f field[T]) isSet(s *Spec) bool {
	var zero T
	return *f.spec(s) != zero
}

func (f field[T]) unset(s *Spec) {
	var zero T
	*f.spec(s) = zero
}

func (f field[T]) copyTo(dst, src *Spec) { *f.spec(dst) = *f.spec(src) }

func (f field[T]) record(p *report.Params, s *Spec) {
	if f.param != nil {
		f.param(p, *f.spec(s))
	}
}

func (f field[T]) outOfRange(set *settings.Setting, s *Spec) error {
	if f.number == nil {
		return nil
	}
	if v, ok := f.number(*f.spec(s)); ok {
		return set.OutOfRange(v)
	}
	return nil
}

func (f field[T]) defineFlag(fs FlagSet, k Knob, s *Spec, _ *LoadSpec) { f.flag(fs, k, f.spec(s)) }

// inParams records a knob in the field of Params that param points at.
func inParams[T any](param func(*report.Params) *T) func(*report.Params, T) {
	return func(p *report.Params, v T) { *param(p) = v }
}

// optional is the number of an optional int (nil: unset).
func optional(p *int) (int, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}

// count is the number of an int whose 0 is unset.
func count(v int) (int, bool) { return v, v != 0 }

// rateLimit is --rate-limit: a payload rate or a message rate, one of two
// fields.
type rateLimit struct{}

func (rateLimit) isSet(s *Spec) bool { return s.RateLimitGbps != 0 || s.RateLimitMsgs != 0 }
func (rateLimit) unset(s *Spec)      { s.RateLimitGbps, s.RateLimitMsgs = 0, 0 }
func (rateLimit) copyTo(dst, src *Spec) {
	dst.RateLimitGbps, dst.RateLimitMsgs = src.RateLimitGbps, src.RateLimitMsgs
}
func (rateLimit) record(p *report.Params, s *Spec) {
	p.RateLimitGbps, p.RateLimitMsgs = s.RateLimitGbps, s.RateLimitMsgs
}
func (rateLimit) outOfRange(*settings.Setting, *Spec) error { return nil }
func (rateLimit) defineFlag(fs FlagSet, k Knob, s *Spec, _ *LoadSpec) {
	fs.Rate(k, &s.RateLimitGbps, &s.RateLimitMsgs)
}

// loadField is a knob of the --load test, a field of its LoadSpec: set
// when the spec has a load that sets it (whole: when it has a load), and
// unset with the load. The document records the load as a whole, with
// the knob of the whole.
type loadField[T comparable] struct {
	get   func(*LoadSpec) *T
	whole bool
	flag  func(FlagSet, Knob, *T)
}

func (f loadField[T]) isSet(s *Spec) bool {
	var zero T
	return s.Load != nil && (f.whole || *f.get(s.Load) != zero)
}
func (f loadField[T]) unset(s *Spec)         { s.Load = nil }
func (f loadField[T]) copyTo(dst, src *Spec) { dst.Load = src.Load }
func (f loadField[T]) record(p *report.Params, s *Spec) {
	if l := s.Load; f.whole && l != nil {
		p.Load = &report.LoadParams{Test: l.Test, QPs: l.QPs, Size: l.Size}
	}
}
func (f loadField[T]) outOfRange(*settings.Setting, *Spec) error           { return nil }
func (f loadField[T]) defineFlag(fs FlagSet, k Knob, _ *Spec, l *LoadSpec) { f.flag(fs, k, f.get(l)) }

func (k Knob) isSet(s *Spec) bool    { return k.field.isSet(s) }
func (k Knob) unset(s *Spec)         { k.field.unset(s) }
func (k Knob) copyTo(dst, src *Spec) { k.field.copyTo(dst, src) }

// DefineFlag defines k's flag in fs: its value goes into s, or for a
// knob of the --load test into l.
func (k Knob) DefineFlag(fs FlagSet, s *Spec, l *LoadSpec) { k.field.defineFlag(fs, k, s, l) }

// AppliesTo reports whether the knob means something for t.
func (k Knob) AppliesTo(t TestInfo) bool { return k.Setting.AppliesTo(t.settingsTest()) }

// Tests lists the tests the knob applies to.
func (k Knob) Tests() []string {
	var names []string
	for _, t := range Tests {
		if k.AppliesTo(t) {
			names = append(names, t.Name)
		}
	}
	return names
}

// NotFor is the error of a knob asked for test, which it does not apply to.
func (k Knob) NotFor(test string) error {
	why := ""
	if t, _ := LookupTest(test); k.Why != "" && t.IsRDMA() {
		why = " (" + k.Why + ")"
	}
	return fmt.Errorf("--%s does not apply to %s%s: it is for %s", k.Key, test, why, settings.List(k.Tests()))
}

// fields binds each knob's setting to its field of a Spec; the path's
// settings are bound below, through settings.Path.
var fields = map[*settings.Setting]binding{
	settings.ServerDevice: field[string]{spec: func(s *Spec) *string { return &s.ServerDevice },
		param: inParams(func(p *report.Params) *string { return &p.ServerDevice }), flag: FlagSet.String},
	settings.CheckData: field[bool]{spec: func(s *Spec) *bool { return &s.CheckData },
		param: inParams(func(p *report.Params) *bool { return &p.CheckData }), flag: FlagSet.Bool},
	settings.GIDIndex: field[*int]{spec: func(s *Spec) **int { return &s.GIDIndex },
		param: func(p *report.Params, v *int) { p.GIDIndex = orAuto(v) }, number: optional, flag: FlagSet.Optional},
	settings.Connection: field[string]{spec: func(s *Spec) *string { return &s.Connection },
		param: inParams(func(p *report.Params) *string { return &p.Connection }), flag: FlagSet.String},
	settings.MTU: field[int]{spec: func(s *Spec) *int { return &s.MTU },
		param: inParams(func(p *report.Params) *int { return &p.MTU }), flag: FlagSet.Count},
	settings.QPTimeout: field[int]{spec: func(s *Spec) *int { return &s.QPTimeout },
		param: inParams(func(p *report.Params) *int { return &p.QPTimeout }), number: count, flag: FlagSet.Count},
	settings.RateLimit: rateLimit{},
	settings.Load:      loadField[string]{get: func(l *LoadSpec) *string { return &l.Test }, whole: true, flag: FlagSet.BandwidthTest},
	settings.LoadQPs:   loadField[int]{get: func(l *LoadSpec) *int { return &l.QPs }, flag: FlagSet.Count},
	settings.LoadSize:  loadField[int]{get: func(l *LoadSpec) *int { return &l.Size }, flag: FlagSet.Size},
}

// Knobs lists every knob, in the table's order. The table's other
// settings (how long a size runs, the cores, how often the run repeats)
// are flags of every test.
var Knobs = bindKnobs()

// bindKnobs binds the groups' settings and the path's to their fields,
// through the structs of pkg/settings a Spec and Params both embed, and
// lists the table's settings that have a field.
func bindKnobs() []Knob {
	bindGroup(settings.DevicePortFields,
		func(s *Spec) *settings.DevicePort { return &s.DevicePort },
		func(p *report.Params) *settings.DevicePort { return &p.DevicePort })
	bindGroup(settings.LoopFields,
		func(s *Spec) *settings.Loops { return &s.Loops },
		func(p *report.Params) *settings.Loops { return &p.Loops })
	bindGroup(settings.RateFields,
		func(s *Spec) *settings.Rate { return &s.Rate },
		func(p *report.Params) *settings.Rate { return &p.Rate })
	bindGroup(settings.SetupFields,
		func(s *Spec) *settings.Setup { return &s.Setup },
		func(p *report.Params) *settings.Setup { return &p.Setup })
	bindGroup(settings.BufferFields,
		func(s *Spec) *settings.Buffers { return &s.Buffers },
		func(p *report.Params) *settings.Buffers { return &p.Buffers })
	bindGroup(settings.OperationFields,
		func(s *Spec) *settings.Operation { return &s.Operation },
		func(p *report.Params) *settings.Operation { return &p.Operation })
	bindGroup(settings.QueueFields,
		func(s *Spec) *settings.Queues { return &s.Queues },
		func(p *report.Params) *settings.Queues { return &p.Queues })
	for _, ps := range settings.PathSettings {
		fields[ps.Setting] = field[*int]{spec: func(s *Spec) **int { return ps.Asked(&s.Path) },
			param: func(p *report.Params, v *int) { *ps.Asked(&p.Path) = v }, number: optional, flag: FlagSet.Optional}
	}
	var knobs []Knob
	for _, set := range settings.Table {
		if f, ok := fields[set]; ok {
			knobs = append(knobs, Knob{set, f})
		}
	}
	return knobs
}

// bindGroup binds the settings of a group of pkg/settings, which a Spec
// and the document's Params both embed (spec and param point at it), each
// to its field: an int is a count, a *int a number within the setting's
// range, a string read as its Form says. A list is no knob (its flag is
// one of every test): it is only recorded.
func bindGroup[S any](fs settings.Fields[S], spec func(*Spec) *S, param func(*report.Params) *S) {
	for _, f := range fs.Lists {
		records = append(records, func(p *report.Params, s *Spec) { *f.In(param(p)) = *f.In(spec(s)) })
	}
	for _, f := range fs.Ints {
		fields[f.Setting] = field[int]{spec: func(s *Spec) *int { return f.In(spec(s)) },
			param: func(p *report.Params, v int) { *f.In(param(p)) = v }, number: count, flag: FlagSet.Count}
	}
	for _, f := range fs.Optionals {
		fields[f.Setting] = field[*int]{spec: func(s *Spec) **int { return f.In(spec(s)) },
			param: func(p *report.Params, v *int) { *f.In(param(p)) = v }, number: optional, flag: FlagSet.Optional}
	}
	for _, f := range fs.Bools {
		fields[f.Setting] = field[bool]{spec: func(s *Spec) *bool { return f.In(spec(s)) },
			param: func(p *report.Params, v bool) { *f.In(param(p)) = v }, flag: FlagSet.Bool}
	}
	for _, f := range fs.Strings {
		fields[f.Setting] = field[string]{spec: func(s *Spec) *string { return f.In(spec(s)) },
			param: func(p *report.Params, v string) { *f.In(param(p)) = v }, flag: stringFlag(f.Form)}
	}
}

// records record the settings of groups that are no knobs.
var records []func(*report.Params, *Spec)

// stringFlag defines a string knob's flag, as its form says.
func stringFlag(f settings.Form) func(FlagSet, Knob, *string) {
	switch f {
	case settings.MemoryKind:
		return FlagSet.Mem
	case settings.LimiterKind:
		return FlagSet.Limiter
	}
	return FlagSet.String
}

// LookupKnob returns the knob named name.
func LookupKnob(name string) (Knob, bool) {
	for _, k := range Knobs {
		if k.Key == name {
			return k, true
		}
	}
	return Knob{}, false
}

// specFor derives the spec of test from the spec as asked. A knob that does
// not apply to test is an error, or in a suite (lenient) is left out.
func specFor(asked Spec, test string, lenient bool) (Spec, error) {
	t, ok := LookupTest(test)
	if !ok {
		s := asked
		s.Test = test
		return s, s.Validate() // names the tests there are
	}
	s := asked
	s.Test = test
	s.Sizes = append([]int(nil), asked.Sizes...)
	for _, k := range Knobs {
		if !k.isSet(&s) || k.AppliesTo(t) {
			continue
		}
		if !lenient {
			return s, k.NotFor(test)
		}
		k.unset(&s)
	}
	if lenient && s.Connection != "" && !slices.ContainsFunc(t.Connections, func(c string) bool { return strings.EqualFold(c, s.Connection) }) {
		s.Connection = "" // in a suite, -c UD runs the tests that can over UD, the others over RC
	}
	return s, nil
}

// validateRanges checks every set knob that has a range against it: a
// spec from the wire or a file is held to what the command line takes.
func (s *Spec) validateRanges(bad func(string, ...any)) {
	for _, k := range Knobs {
		if err := k.field.outOfRange(k.Setting, s); err != nil {
			bad("%v", err)
		}
	}
}

// requested is the document's record of a run's spec as asked: what the
// user chose, nothing filled in. Each knob lands where its binding says.
func (s *Spec) requested() report.Params {
	p := report.Params{Sizes: s.Sizes, Iterations: s.Iterations,
		DurationS: s.Duration.Seconds(), PrecisionPct: 100 * s.Precision}
	for _, k := range Knobs {
		k.field.record(&p, s)
	}
	for _, r := range records {
		r(&p, s)
	}
	if s.Precision > 0 {
		p.PrecisionCapS = s.PrecisionCap.Seconds()
	}
	if s.Warmup != nil {
		p.Warmup = ptr(*s.Warmup)
	}
	return p
}

func ptr(v int) *int { return &v }
