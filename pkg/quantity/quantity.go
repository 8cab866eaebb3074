// Package quantity parses the quantities a user types in flags: byte
// sizes, bandwidths, message rates and latency limits. Every error names
// the input and says what would be accepted.
package quantity

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// ParseBytes parses a byte size: "4096", "4K", "4KiB", "64M", "1G", "4G",
// "1.5M". The prefixes K, M, G and T are binary (2^10 .. 2^40) whether or
// not an "i" follows, as perftest reads its sizes; a trailing "B" is
// allowed. The size must be a positive whole number of bytes.
func ParseBytes(s string) (uint64, error) {
	q, err := parseQuantity(s, "size")
	if err != nil {
		return 0, err
	}
	if q.unit != "" && q.unit != "B" {
		return 0, fmt.Errorf("size %q: unknown unit %q (want bytes with an optional K, M, G or T: 4096, 64K, 4MiB, 1G)", s, q.unit)
	}
	b := q.v * math.Pow(1024, float64(q.exp)) // K is 1024 here, "i" or not
	if b != math.Trunc(b) {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	if b >= 1<<63 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return uint64(b), nil
}

// ParseLimitDuration parses a latency limit: a positive duration with a
// unit, as Go writes them ("20us", "20µs", "1.5ms", "800ns"). A bare number
// is refused: its unit would be a guess.
func ParseLimitDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("latency limit %q has no unit: write e.g. %sus or %sns", s, s, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("latency limit %q: want a duration such as 20us, 1.5ms or 800ns", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("latency limit %q must be positive", s)
	}
	return d, nil
}

var (
	bitUnits  = []string{"bps", "bit/s", "bits/s", "b/s", "bit", "bits", "b"}
	byteUnits = []string{"Bps", "B/s", "byte/s", "bytes/s", "B"}
	rateUnits = []string{"/s", "msg/s", "msgs/s", "pps", "mps"}
)

// ParseBandwidth parses a bandwidth limit and returns it in Gbit/s (10^9
// bit/s). Bits: "90Gbps", "90Gbit/s", "90Gb/s", "100G" (a prefix alone
// means bits, as link speeds are written), "800Mbps". Bytes: "12.5GB/s",
// "11GBps", "10GiB/s" (binary prefixes Ki, Mi, Gi, Ti). A bare number is
// refused: bits or bytes, and which prefix, would be a guess.
func ParseBandwidth(s string) (float64, error) {
	q, err := parseQuantity(s, "bandwidth")
	if err != nil {
		return 0, err
	}
	v, mult, unit := q.v, q.scale(), q.unit
	switch {
	case unit == "" && q.exp == 0:
		return 0, fmt.Errorf("bandwidth %q has no unit: write e.g. %sGbps (bits) or %sGB/s (bytes)", s, strings.TrimSpace(s), strings.TrimSpace(s))
	case unit == "" || slices.Contains(bitUnits, unit):
		return finite(s, "bandwidth", v*mult/1e9)
	case slices.Contains(byteUnits, unit):
		return finite(s, "bandwidth", v*mult*8/1e9)
	}
	return 0, fmt.Errorf("bandwidth %q: unknown unit %q (want bps, bit/s or B/s, with a prefix: 90Gbps, 100G, 12.5GB/s)", s, unit)
}

// ParseBandwidthLimit parses a bandwidth limit: an absolute one ("90Gbps",
// "12.5GB/s", see [ParseBandwidth]), which sets gbps, or a share of the
// link ("90%link"), which sets linkFraction (0.9).
func ParseBandwidthLimit(s string) (gbps, linkFraction float64, err error) {
	t := strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(strings.ToLower(t), "link"); ok {
		p = strings.TrimSpace(p)
		v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(p, "%")), 64)
		if !strings.HasSuffix(p, "%") || err != nil || math.IsNaN(v) || v <= 0 || v > 100 {
			return 0, 0, fmt.Errorf("bandwidth limit %q: want a share of the link above 0 and at most 100%%, such as 90%%link", s)
		}
		return 0, v / 100, nil
	}
	gbps, err = ParseBandwidth(t)
	return gbps, 0, err
}

// ParseRate parses a message-rate limit and returns it in messages per
// second: "10M", "10Mmsg/s", "10Mpps", "500k", "2.5e6", "2500000/s".
func ParseRate(s string) (float64, error) {
	q, err := parseQuantity(s, "message rate")
	if err != nil {
		return 0, err
	}
	if q.unit != "" && !slices.Contains(rateUnits, q.unit) {
		return 0, fmt.Errorf("message rate %q: unknown unit %q (want a count per second: 10M, 10Mmsg/s, 10Mpps)", s, q.unit)
	}
	return finite(s, "message rate", q.v*q.scale())
}

// finite refuses a value its prefix took beyond float64 ("1e307K").
func finite(s, what string, v float64) (float64, error) {
	if math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s %q is too large", what, s)
	}
	return v, nil
}

// quantity is a number with a prefix and a unit: "12.5 GiB/s" is v 12.5,
// exp 3, binary, unit "B/s".
type quantity struct {
	v      float64
	exp    int  // the prefix: 0 none, 1 k, 2 M, 3 G, 4 T
	binary bool // the prefix had an "i" (Ki, Mi, ...)
	unit   string
}

// scale is the prefix's multiplier: decimal, or binary with an "i".
func (q quantity) scale() float64 {
	if q.binary {
		return math.Pow(1024, float64(q.exp))
	}
	return math.Pow(1000, float64(q.exp))
}

// parseQuantity splits "12.5 GiB/s" into its number, prefix and unit. The
// unit is matched before the prefix, so "10msg/s" is 10 msg/s, not 10
// milli-"sg/s". Prefixes are k, M, G, T, either case (there is no
// milli-anything in a size or a bandwidth), with an optional "i" (Ki, Mi,
// Gi, Ti). The value must be positive.
func parseQuantity(s, what string) (quantity, error) {
	t := strings.TrimSpace(s)
	end := 0
	for end < len(t) {
		c := t[end]
		if c >= '0' && c <= '9' || c == '.' || ((c == 'e' || c == 'E') && end > 0 && end+1 < len(t) && (unicode.IsDigit(rune(t[end+1])) || t[end+1] == '-' || t[end+1] == '+')) {
			end++
			continue
		}
		if (c == '-' || c == '+') && end > 0 && (t[end-1] == 'e' || t[end-1] == 'E') {
			end++
			continue
		}
		break
	}
	if end == 0 {
		return quantity{}, fmt.Errorf("%s %q: want a number with a unit", what, s)
	}
	v, perr := strconv.ParseFloat(t[:end], 64)
	if perr != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return quantity{}, fmt.Errorf("%s %q: %q is not a number", what, s, t[:end])
	}
	if v <= 0 {
		return quantity{}, fmt.Errorf("%s %q must be positive", what, s)
	}
	rest := strings.TrimSpace(t[end:])
	all := append(append(append([]string{}, bitUnits...), byteUnits...), rateUnits...)
	q := quantity{v: v}
	if rest == "" || slices.Contains(all, rest) {
		q.unit = rest
		return q, nil
	}
	q.exp = strings.IndexByte("kmgt", byte(unicode.ToLower(rune(rest[0])))) + 1
	if q.exp == 0 {
		return quantity{}, fmt.Errorf("%s %q: unknown unit %q", what, s, rest)
	}
	rest = rest[1:]
	if strings.HasPrefix(rest, "i") {
		q.binary = true
		rest = rest[1:]
	}
	q.unit = strings.TrimSpace(rest)
	return q, nil
}
