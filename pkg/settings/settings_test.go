package settings

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestTable: each setting once, by key and by letter, each with a name,
// and those with a range name their value.
func TestTable(t *testing.T) {
	keys, letters, labels := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, s := range Table {
		if s.Key == "" || s.Help == "" || keys[s.Key] {
			t.Errorf("%q: no key or help text, or a key taken", s.Key)
		}
		keys[s.Key] = true
		if s.Short != "" && letters[s.Short] {
			t.Errorf("%s: letter -%s taken", s.Key, s.Short)
		}
		letters[s.Short] = true
		if labels[s.Label()] {
			t.Errorf("%s: name %s taken", s.Key, s.Label())
		}
		labels[s.Label()] = true
		if s.Range != nil && (s.What == "" || s.Range.Min > s.Range.Max) {
			t.Errorf("%s: range %v without a name for its value, or backwards", s.Key, s.Range)
		}
		if got, ok := Lookup(s.Key); !ok || got != s {
			t.Errorf("Lookup(%s) = %v, %v", s.Key, got, ok)
		}
	}
	if _, ok := Lookup(DSCP.Key); ok || DSCP.Of == nil || !slices.Contains(Table, DSCP.Of) {
		t.Errorf("--%s: another way to say a setting of the table, not a row of its own", DSCP.Key)
	}
	for _, ps := range PathSettings {
		if Order(ps.Setting) < 0 || ps.Show == nil || ps.Range == nil {
			t.Errorf("%s: a path setting not in the table, or without a way to show it or a range", ps.Key)
		}
	}
}

// TestRanges: one wording for a value out of range, everywhere.
func TestRanges(t *testing.T) {
	if err := QPTimeout.OutOfRange(32); err == nil || err.Error() != "qp-timeout 32 is outside 1..31" {
		t.Errorf("qp-timeout 32: %v", err)
	}
	if !strings.Contains(QPTimeout.Help, "N within 1..31;") {
		t.Errorf("qp-timeout's help does not say its range: %s", QPTimeout.Help)
	}
	if err := QPTimeout.OutOfRange(31); err != nil {
		t.Error(err)
	}
	if Connection.OutOfRange(-5) != nil {
		t.Error("a setting without a range has nothing out of it")
	}
	p := Path{TClass: ptr(256), SL: ptr(15), FlowLabel: ptr(1 << 20), HopLimit: ptr(0)}
	var msgs []string
	for _, err := range p.Check() {
		msgs = append(msgs, err.Error())
	}
	want := []string{"traffic class 256 is outside 0..255", "flow label 1048576 is outside 0..1048575", "hop limit 0 is outside 1..255"}
	if !slices.Equal(msgs, want) {
		t.Errorf("path checked: %q, want %q", msgs, want)
	}
	// As values, 0 leaves the default.
	if err := (PathValues{}).Check(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if err := (PathValues{TClass: 300, HopLimit: 256}).Check(); err == nil ||
		err.Error() != "traffic class 300 is outside 0..255\nhop limit 256 is outside 1..255" {
		t.Errorf("values checked: %v", err)
	}
}

// TestPath: the values asked for, what differs in what the device kept,
// and how a settings line shows them.
func TestPath(t *testing.T) {
	p := Path{TClass: ptr(0x6a), FlowLabel: ptr(0), HopLimit: ptr(9)}
	if v := p.Values(); v != (PathValues{TClass: 0x6a, HopLimit: 9}) {
		t.Errorf("values %+v", v)
	}
	kept := p.Kept(PathValues{TClass: 0x68, SL: 3, FlowLabel: 7})
	var got []string
	for _, k := range kept {
		got = append(got, k.Key+" "+strconv.Itoa(k.Asked)+"->"+strconv.Itoa(k.Got))
	}
	// The service level was not asked; a hop limit of 0 read back says
	// nothing.
	if want := []string{"tclass 106->104", "flow-label 0->7"}; !slices.Equal(got, want) {
		t.Errorf("kept %q, want %q", got, want)
	}
	v := PathValues{TClass: 0x6a, SL: 3, FlowLabel: 0x12345, HopLimit: DefaultHopLimit}
	if got := v.Shown(); !slices.Equal(got, [][2]string{{"tclass", "0x6a (DSCP 26, ECT(0))"}, {"sl", "3"}, {"flow-label", "0x12345"}}) {
		t.Errorf("shown %q", got)
	}
	v.FromRoute()
	if v.HopLimit != 0 || v.TClass != 0x6a {
		t.Errorf("from the route: %+v", v)
	}
	if err := p.OnRoCE("rxe0", 1); err == nil || !strings.HasPrefix(err.Error(), "--hop-limit does not apply on RoCE (rxe0 port 1 is Ethernet): ") {
		t.Errorf("on RoCE: %v", err)
	}
	if err := (Path{TClass: ptr(1)}).OnRoCE("rxe0", 1); err != nil {
		t.Error(err)
	}
}

func TestMergeDSCP(t *testing.T) {
	var p Path
	if err := MergeDSCP(&p, ptr(26)); err != nil || *p.TClass != 0x68 {
		t.Fatalf("--dscp 26: %v, %v", err, p.TClass)
	}
	if err := MergeDSCP(&p, ptr(26)); err != nil {
		t.Errorf("agreeing: %v", err)
	}
	err := MergeDSCP(&Path{TClass: ptr(0x6a)}, ptr(46))
	if err == nil || err.Error() != "--dscp 46 and --tclass 0x6a disagree: traffic class 0x6a has DSCP 26 (DSCP is its upper 6 bits)" {
		t.Errorf("disagreeing: %v", err)
	}
}

// TestBelow: the package sits below workloads, report and verbs.
func TestBelow(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, "github.com/rdmabench/") {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}

func ptr(v int) *int { return &v }

// TestGroupFields: each field of a group's struct has one entry in the
// group's Fields, pointing at it, whose setting is a row of the table and
// of no other group (the rate limit, one setting in two fields, is bound
// by name).
func TestGroupFields(t *testing.T) {
	seen := map[*Setting]string{}
	checkGroup(t, seen, QueueFields)
	checkGroup(t, seen, OperationFields)
	checkGroup(t, seen, DevicePortFields)
	checkGroup(t, seen, LoopFields)
	checkGroup(t, seen, RateFields, "RateLimitGbps", "RateLimitMsgs")
	checkGroup(t, seen, SetupFields)
	checkGroup(t, seen, BufferFields)
}

func checkGroup[S any](t *testing.T, seen map[*Setting]string, fs Fields[S], byName ...string) {
	t.Helper()
	var s S
	v := reflect.ValueOf(&s).Elem()
	group := v.Type().Name()
	at := map[uintptr]*Setting{}
	add := func(set *Setting, p any) {
		if Order(set) < 0 {
			t.Errorf("%s: %s is not a row of the table", group, set.Key)
		}
		if g, ok := seen[set]; ok {
			t.Errorf("%s: %s is a setting of %s too", group, set.Key, g)
		}
		seen[set] = group
		at[reflect.ValueOf(p).Pointer()] = set
	}
	for _, f := range fs.Ints {
		add(f.Setting, f.In(&s))
	}
	for _, f := range fs.Optionals {
		add(f.Setting, f.In(&s))
	}
	for _, f := range fs.Bools {
		add(f.Setting, f.In(&s))
	}
	for _, f := range fs.Strings {
		add(f.Setting, f.In(&s))
	}
	for _, f := range fs.Lists {
		add(f.Setting, f.In(&s))
	}
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		set, ok := at[v.Field(i).Addr().Pointer()]
		switch {
		case slices.Contains(byName, name):
			if ok {
				t.Errorf("%s.%s: bound by name, but %s has an entry", group, name, set.Key)
			}
		case !ok:
			t.Errorf("%s.%s has no entry in the group's fields", group, name)
		}
		delete(at, v.Field(i).Addr().Pointer())
	}
	for _, set := range at {
		t.Errorf("%s: %s points at no field of its own", group, set.Key)
	}
}
