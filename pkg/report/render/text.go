package render

import (
	"fmt"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// pct formats a fraction as a signed percentage with two decimals.
func pct(frac float64) string { return fmt.Sprintf("%+.2f%%", 100*frac) }

// listText writes indexes as ranges: "0-3", "0,2".
func listText(v []int) string {
	if len(v) == 0 {
		return "-"
	}
	return strings.Join(textfmt.IntRanges(v), ",")
}

func ptrTo[T any](v T) *T { return &v }
