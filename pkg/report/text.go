package report

import (
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
