package main

import (
	"strings"
	"testing"
	"time"
)

// One rule for numbers with units: a percentage needs its %, -D takes bare
// seconds or a duration, a latency limit needs its unit.
func TestFlagUnits(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in stderr; "" accepted
	}{
		{[]string{"compare", "a.json", "b.json", "--max-regression", "5"}, "5 has no unit: a percentage is written with its %, e.g. 5%"},
		{[]string{"compare", "a.json", "b.json", "--max-p99-regression", "10"}, "10 has no unit"},
		{[]string{"tcp-lat", "--precision", "2"}, "2 has no unit: a percentage is written with its %, e.g. 2%"},
		{[]string{"tcp-lat", "--limit-p99", "20"}, `latency limit "20" has no unit`},
		{[]string{"write-bw", "--limit-bw", "90"}, `bandwidth "90" has no unit`},
		{[]string{"tcp-lat", "-D", "soon"}, "want a number of seconds, such as 5 or 0.5, or a duration such as 500ms"},
		{[]string{"tcp-lat", "-D", "-1s"}, "must be positive"},
	} {
		_, stderr, code := cli(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	// -D with a unit is the same duration as in seconds.
	var a, b time.Duration
	if err := seconds(&a).Set("0.5"); err != nil {
		t.Fatal(err)
	}
	if err := seconds(&b).Set("500ms"); err != nil {
		t.Fatal(err)
	}
	if a != b || a != 500*time.Millisecond {
		t.Errorf("-D 0.5 is %v, -D 500ms %v", a, b)
	}
}
