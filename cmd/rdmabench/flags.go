package main

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// Flag values that refuse what has no meaning while the command line is
// parsed, so that a mistake is a usage error naming the flag. Where the
// zero value means "the test's default", help shows no default.

// positiveInt is an int flag that must be at least 1; unset (0) leaves the
// default.
type positiveInt struct{ p *int }

func (v positiveInt) String() string {
	if v.p == nil || *v.p == 0 {
		return ""
	}
	return strconv.Itoa(*v.p)
}

func (v positiveInt) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return errors.New("want a whole number")
	}
	if n < 1 {
		return errors.New("must be at least 1")
	}
	*v.p = n
	return nil
}

func (positiveInt) Type() string { return "int" }

// autoInt is an int flag that must not be negative; unset (-1) leaves the
// default, and 0 is a real value (no warm-up, no inline data, GID 0).
type autoInt struct{ p *int }

func (v autoInt) String() string {
	if v.p == nil || *v.p < 0 {
		return ""
	}
	return strconv.Itoa(*v.p)
}

func (v autoInt) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return errors.New("want a whole number")
	}
	if n < 0 {
		return errors.New("must not be negative")
	}
	*v.p = n
	return nil
}

func (autoInt) Type() string { return "int" }

// sizesFlag is -s: message sizes as perftest writes them.
type sizesFlag []int

func (v *sizesFlag) String() string {
	parts := make([]string, len(*v))
	for i, n := range *v {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

func (v *sizesFlag) Set(s string) error {
	sizes, err := workloads.ParseSizes(s)
	if err != nil {
		return err
	}
	*v = sizes
	return nil
}

func (*sizesFlag) Type() string { return "sizes" }

// secondsFlag is -D: a duration in seconds, as perftest takes it.
type secondsFlag struct{ p *time.Duration }

func (v secondsFlag) String() string {
	if v.p == nil || *v.p == 0 {
		return ""
	}
	return strconv.FormatFloat(v.p.Seconds(), 'f', -1, 64)
}

func (v secondsFlag) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return errors.New("want a number of seconds, such as 5 or 0.5")
	}
	if f <= 0 {
		return errors.New("must be positive")
	}
	*v.p = time.Duration(f * float64(time.Second))
	return nil
}

func (secondsFlag) Type() string { return "seconds" }

// positiveDuration is a duration flag that must be positive; unset (0)
// leaves the default.
type positiveDuration struct{ p *time.Duration }

func (v positiveDuration) String() string {
	if v.p == nil || *v.p == 0 {
		return ""
	}
	return v.p.String()
}

func (v positiveDuration) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return errors.New("want a duration such as 500ms or 2s")
	}
	if d <= 0 {
		return errors.New("must be positive")
	}
	*v.p = d
	return nil
}

func (positiveDuration) Type() string { return "duration" }

// formatFlag is -o: one of report.Formats.
type formatFlag struct{ p *string }

func (v formatFlag) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v formatFlag) Set(s string) error {
	if err := report.CheckFormat(s); err != nil {
		return err
	}
	*v.p = s
	return nil
}

func (formatFlag) Type() string { return "format" }

// limitDuration is a latency limit: --limit-p99 20us.
type limitDuration struct{ p *time.Duration }

func (v limitDuration) String() string {
	if v.p == nil || *v.p == 0 {
		return ""
	}
	return v.p.String()
}

func (v limitDuration) Set(s string) error {
	d, err := report.ParseLimitDuration(s)
	if err != nil {
		return err
	}
	*v.p = d
	return nil
}

func (limitDuration) Type() string { return "latency" }

// limitFloat is a bandwidth or message-rate limit, parsed by parse.
type limitFloat struct {
	p     *float64
	parse func(string) (float64, error)
}

func (v limitFloat) String() string {
	if v.p == nil || *v.p == 0 {
		return ""
	}
	return strconv.FormatFloat(*v.p, 'f', -1, 64)
}

func (v limitFloat) Set(s string) error {
	f, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = f
	return nil
}

func (limitFloat) Type() string { return "rate" }

// baselineFlag is --baseline tcp.
type baselineFlag struct{ p *bool }

func (v baselineFlag) String() string {
	if v.p != nil && *v.p {
		return "tcp"
	}
	return ""
}

func (v baselineFlag) Set(s string) error {
	if s != "tcp" {
		return errors.New(`the only baseline is "tcp"`)
	}
	*v.p = true
	return nil
}

func (baselineFlag) Type() string { return "string" }

// byteSize is a size in bytes with a unit: --max-mem 4G.
type byteSize struct{ p *uint64 }

func (v byteSize) String() string {
	if v.p == nil || *v.p == 0 {
		return ""
	}
	return strconv.FormatUint(*v.p, 10)
}

func (v byteSize) Set(s string) error {
	n, err := report.ParseBytes(s)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}

func (byteSize) Type() string { return "bytes" }

// percentFlag is a flag holding a fraction, written as a percentage: "5%"
// or "5" is 0.05.
type percentFlag struct {
	v   float64
	set bool
}

func (p *percentFlag) String() string {
	if !p.set {
		return ""
	}
	return strconv.FormatFloat(100*p.v, 'f', -1, 64) + "%"
}

func (p *percentFlag) Type() string { return "percent" }

func (p *percentFlag) Set(s string) error {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || math.IsNaN(v) || v > 1e6 {
		return errors.New("want a percentage such as 5% or 2.5%")
	}
	p.v, p.set = v/100, true
	return nil
}

// ratioFlag is a flag holding a ratio: "0.95" or "95%".
type ratioFlag struct {
	v   float64
	set bool
}

func (r *ratioFlag) String() string {
	if !r.set {
		return ""
	}
	return strconv.FormatFloat(r.v, 'f', -1, 64)
}

func (r *ratioFlag) Type() string { return "ratio" }

func (r *ratioFlag) Set(s string) error {
	s = strings.TrimSpace(s)
	scale := 1.0
	if t, ok := strings.CutSuffix(s, "%"); ok {
		s, scale = strings.TrimSpace(t), 0.01
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || v*scale <= 0 || v*scale > 100 {
		return errors.New("want a positive ratio such as 0.95 (or 95%)")
	}
	r.v, r.set = v*scale, true
	return nil
}
