// Package textfmt writes figures and text for a person: numbers with up
// to three decimals, rates and latencies in the unit a table column or a
// message takes, sets of integers as ranges, text made safe for one line.
// The report model writes its messages with it (a limit's, a gate's),
// and the renderings and plots their cells.
package textfmt

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Clean makes s safe for one line of text, a table's or a plot's: control
// characters become spaces.
func Clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// Num writes v as tables and plots write figures: with at most three
// decimals and no trailing zeros ("0.5", "98.412", "200").
func Num(v float64) string {
	s := strconv.FormatFloat(v, 'f', 3, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// IntRanges writes a set of integers (cores, runs, indexes) as sorted
// runs of consecutive values: [8 0 1 2 5] is "0-2", "5", "8".
func IntRanges(v []int) []string {
	c := slices.Compact(slices.Sorted(slices.Values(v)))
	var parts []string
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", c[i], c[j]))
		} else {
			parts = append(parts, strconv.Itoa(c[i]))
		}
		i = j + 1
	}
	return parts
}
