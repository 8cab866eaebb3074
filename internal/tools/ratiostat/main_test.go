package main

import (
	"strconv"
	"strings"
	"testing"
)

func TestRatios(t *testing.T) {
	var in strings.Builder
	for i, x := range []float64{90, 95, 100, 105, 110, 100, 100} {
		round := strconv.Itoa(i + 1)
		in.WriteString("write-lat " + round + " new " + strconv.FormatFloat(x, 'f', -1, 64) + " 2\n")
		in.WriteString("write-lat " + round + " old 100 1\n")
	}
	in.WriteString("a comment line\n")
	var out strings.Builder
	if err := write(&out, parse(in.String()), []string{"new/old"}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "| write-lat | 7 | 1.000 [0.900, 1.100] | 2.000 [2.000, 2.000] |") {
		t.Fatalf("table:\n%s", got)
	}
	if err := write(&out, parse(""), []string{"nope"}); err == nil {
		t.Fatal("a pair without a slash was accepted")
	}
}
