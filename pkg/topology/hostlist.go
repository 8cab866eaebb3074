package topology

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ExpandHostlist expands a Slurm host list, "node[1-3,07],gpu-a": the
// names in order.
func ExpandHostlist(s string) ([]string, error) {
	var out []string
	for len(s) > 0 {
		// One item: up to a comma outside brackets.
		depth, end := 0, len(s)
		for i, c := range s {
			if c == '[' {
				depth++
			} else if c == ']' {
				depth--
			} else if c == ',' && depth == 0 {
				end = i
				break
			}
		}
		item := s[:end]
		s = strings.TrimPrefix(s[end:], ",")
		if item == "" {
			continue
		}
		names, err := expandItem(item)
		if err != nil {
			return nil, fmt.Errorf("host list %q: %w", item, err)
		}
		out = append(out, names...)
		if len(out) > 1<<20 {
			return nil, errors.New("host list too long")
		}
	}
	return out, nil
}

// expandItem expands one item: a prefix, one [ranges] and a suffix (which
// may hold more brackets).
func expandItem(item string) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsRune(item, ']') {
			return nil, errors.New("unbalanced ]")
		}
		return []string{item}, nil
	}
	closeAt := strings.IndexByte(item[open:], ']')
	if closeAt < 0 {
		return nil, errors.New("unbalanced [")
	}
	prefix, ranges, rest := item[:open], item[open+1:open+closeAt], item[open+closeAt+1:]
	tails, err := expandItem(rest)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(ranges, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 0 || b < a || b-a > 1<<16 {
			return nil, fmt.Errorf("bad range %q", r)
		}
		width := len(lo) // zero padding, as node[01-10]
		for n := a; n <= b; n++ {
			for _, t := range tails {
				out = append(out, fmt.Sprintf("%s%0*d%s", prefix, width, n, t))
			}
		}
	}
	return out, nil
}
