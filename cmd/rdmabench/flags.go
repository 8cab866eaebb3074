package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/pkg/quantity"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/render"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// Flag values that refuse what has no meaning while the command line is
// parsed, so that a mistake is a usage error naming the flag.

// valueFlag is a flag whose text parse turns into *p. While *p holds unset
// ("the test's default"), help shows no default.
type valueFlag[T comparable] struct {
	p     *T
	unset T
	typ   string
	parse func(string) (T, error)
}

func (v valueFlag[T]) String() string {
	if v.p == nil || *v.p == v.unset {
		return ""
	}
	return fmt.Sprint(*v.p)
}

func (v valueFlag[T]) Set(s string) error {
	x, err := v.parse(strings.TrimSpace(s))
	if err != nil {
		return err
	}
	*v.p = x
	return nil
}

func (v valueFlag[T]) Type() string { return v.typ }

// positiveInt must be at least 1; unset (0) leaves the default.
func positiveInt(p *int) valueFlag[int] { return valueFlag[int]{p, 0, "int", atLeast(1)} }

// optCount is a count that 0 is a value of (--warmup 0: no warm-up), held
// as a pointer that stays nil (the default) unless the flag is given.
type optCount struct{ p **int }

func (o optCount) String() string {
	if o.p == nil || *o.p == nil {
		return ""
	}
	return strconv.Itoa(**o.p)
}

func (o optCount) Set(s string) error {
	n, err := atLeast(0)(strings.TrimSpace(s))
	if err != nil {
		return err
	}
	*o.p = &n
	return nil
}

func (optCount) Type() string { return "int" }

func atLeast(lo int) func(string) (int, error) {
	return func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		switch {
		case err != nil:
			return 0, errors.New("want a whole number")
		case n < lo && lo == 1:
			return 0, errors.New("must be at least 1")
		case n < lo:
			return 0, errors.New("must not be negative")
		}
		return n, nil
	}
}

// seconds is -D: a positive duration, a bare number in seconds as perftest
// takes it (5, 0.5), or with its unit (500ms, 2s).
func seconds(p *time.Duration) valueFlag[time.Duration] {
	return valueFlag[time.Duration]{p, 0, "seconds", func(s string) (time.Duration, error) {
		var d time.Duration
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			if math.IsNaN(f) || math.IsInf(f, 0) || f > float64(math.MaxInt64)/float64(time.Second) {
				return 0, errors.New("want a number of seconds, such as 5 or 0.5, or a duration such as 500ms")
			}
			d = time.Duration(f * float64(time.Second))
		} else if d, err = time.ParseDuration(s); err != nil {
			return 0, errors.New("want a number of seconds, such as 5 or 0.5, or a duration such as 500ms")
		}
		if d <= 0 {
			return 0, errors.New("must be positive")
		}
		return d, nil
	}}
}

// positiveDuration must be positive; unset (0) leaves the default.
func positiveDuration(p *time.Duration) valueFlag[time.Duration] {
	return valueFlag[time.Duration]{p, 0, "duration", func(s string) (time.Duration, error) {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, errors.New("want a duration such as 500ms or 2s")
		}
		if d <= 0 {
			return 0, errors.New("must be positive")
		}
		return d, nil
	}}
}

// Numbers with units follow one rule on every flag: a figure is written
// with its unit (20us, 90Gbps, 5%, 500ms), and a bare number is taken only
// where one unit is the habit of perftest's users and the help says it:
// bytes for sizes (-s 65536), seconds for -D, Gbit/s for --rate-limit
// (perftest's --rate_units), counts (-n), messages per second for rates,
// and ratios (--min-bw-ratio 0.95). Anywhere else (latency and bandwidth
// limits, percentages, timeouts) a bare number is refused, saying how to
// write it.

// percentOf parses a percentage: a number with its "%" sign (5%, 2.5%),
// returned as the percentage (5, 2.5). A bare number is refused: 5 could be
// 5% or 0.05 written as a ratio.
func percentOf(s string) (float64, error) {
	s = strings.TrimSpace(s)
	t, ok := strings.CutSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	switch {
	case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
		return 0, errors.New("want a percentage such as 5% or 2.5%")
	case !ok:
		return 0, fmt.Errorf("%s has no unit: a percentage is written with its %%, e.g. %s%%", s, s)
	}
	return v, nil
}

// fraction is a share written as a percentage, such as --precision 2%:
// 0.02, within 0..100% exclusive.
func fraction(p *float64) valueFlag[float64] {
	return valueFlag[float64]{p, 0, "percent", func(s string) (float64, error) {
		v, err := percentOf(s)
		if err != nil {
			return 0, err
		}
		if v <= 0 || v >= 100 {
			return 0, errors.New("want a percentage above 0 and below 100, such as 2% or 0.5%")
		}
		return v / 100, nil
	}}
}

// outputFormat is -o: one of render.Formats.
func outputFormat(p *string) valueFlag[string] {
	return valueFlag[string]{p, "", "format", func(s string) (string, error) { return s, render.CheckFormat(s) }}
}

// latencyLimit is --limit-p99 20us and its kind.
func latencyLimit(p *time.Duration) valueFlag[time.Duration] {
	return valueFlag[time.Duration]{p, 0, "latency", quantity.ParseLimitDuration}
}

// rateLimit is --limit-bw 90Gbps or --limit-msg-rate 10M, parsed by parse.
func rateLimit(p *float64, parse func(string) (float64, error)) valueFlag[float64] {
	return valueFlag[float64]{p, 0, "rate", parse}
}

// bwLimit is --limit-bw: an absolute bandwidth (90Gbps) or a share of the
// link (90%link).
type bwLimit struct{ l *report.Limits }

func (b *bwLimit) String() string {
	switch {
	case b.l == nil:
		return ""
	case b.l.MinLinkFraction > 0:
		return strconv.FormatFloat(100*b.l.MinLinkFraction, 'f', -1, 64) + "%link"
	case b.l.MinGbps > 0:
		return strconv.FormatFloat(b.l.MinGbps, 'f', -1, 64) + "Gbps"
	}
	return ""
}

func (b *bwLimit) Set(s string) error {
	gbps, frac, err := quantity.ParseBandwidthLimit(s)
	if err != nil {
		return err
	}
	b.l.MinGbps, b.l.MinLinkFraction = gbps, frac
	return nil
}

func (*bwLimit) Type() string { return "rate" }

// byteSize is a size in bytes with a unit: --max-mem 4G.
func byteSize(p *uint64) valueFlag[uint64] {
	return valueFlag[uint64]{p, 0, "bytes", quantity.ParseBytes}
}

// baseline is --baseline tcp, the only baseline.
// baselineTCP is the one baseline --baseline takes.
const baselineTCP = "tcp"

func baseline(p *bool) valueFlag[bool] {
	return valueFlag[bool]{p, false, "string", func(s string) (bool, error) {
		if s != baselineTCP {
			return false, fmt.Errorf("the only baseline is %q", baselineTCP)
		}
		return true, nil
	}}
}

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

// percentFlag is a flag holding a fraction, written as a percentage: "5%"
// is 0.05.
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
	v, err := percentOf(s)
	if err != nil {
		return err
	}
	if v < 0 || v > 1e6 {
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

// optInt is a flag whose every value means something, 0 included, held as
// a pointer that stays nil (the default) unless the flag is given: decimal
// or 0x hex, within lo..hi.
type optInt struct {
	p      **int
	lo, hi int
}

func (o optInt) String() string {
	if o.p == nil || *o.p == nil {
		return ""
	}
	return strconv.Itoa(**o.p)
}

func (o optInt) Set(s string) error {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
	if err != nil {
		return errors.New("want a whole number (decimal, or hex as 0x..)")
	}
	if v < int64(o.lo) || v > int64(o.hi) {
		return fmt.Errorf("must be within %d..%d", o.lo, o.hi)
	}
	x := int(v)
	*o.p = &x
	return nil
}

func (optInt) Type() string { return "int" }

// cpuListFlag is --cpu: cores as the kernel lists them ("0-3,8").
type cpuListFlag []int

func (v *cpuListFlag) String() string {
	if len(*v) == 0 {
		return ""
	}
	return workloads.FormatCPUList(*v)
}

func (v *cpuListFlag) Set(s string) error {
	c, err := workloads.ParseCPUList(s)
	if err != nil {
		return err
	}
	*v = c
	return nil
}

func (*cpuListFlag) Type() string { return "cores" }

// rateLimitFlag is --rate-limit: a payload bandwidth or a message rate.
type rateLimitFlag struct{ gbps, msgs *float64 }

func (v rateLimitFlag) String() string {
	switch {
	case v.gbps != nil && *v.gbps > 0:
		return strconv.FormatFloat(*v.gbps, 'g', -1, 64) + "Gbps"
	case v.msgs != nil && *v.msgs > 0:
		return strconv.FormatFloat(*v.msgs, 'g', -1, 64) + "pps"
	}
	return ""
}

func (v rateLimitFlag) Set(s string) error {
	g, m, err := workloads.ParseRateLimit(s)
	if err != nil {
		return err
	}
	*v.gbps, *v.msgs = g, m
	return nil
}

func (rateLimitFlag) Type() string { return "rate" }

// limiter is --rate-limiter: sw or hw.
func limiter(p *string) valueFlag[string] {
	return valueFlag[string]{p, "", "sw|hw", func(s string) (string, error) {
		if s = strings.ToLower(s); s != workloads.LimiterSW && s != workloads.LimiterHW {
			return "", errors.New(`want "sw" (the timed loop paces its posts) or "hw" (the device's rate limiter)`)
		}
		return s, nil
	}}
}

// loadTest is --load: an RDMA bandwidth test.
func loadTest(p *string) valueFlag[string] {
	return valueFlag[string]{p, "", "test", func(s string) (string, error) {
		if t, ok := workloads.LookupTest(s); !ok || !t.IsRDMA() || t.Metric != workloads.Bandwidth {
			return "", errors.New("want an RDMA bandwidth test: write-bw, read-bw, send-bw or atomic-bw")
		}
		return s, nil
	}}
}

// oneSize is a flag of one message size (--load-size, --bw-size).
func oneSize(p *int) valueFlag[int] {
	return valueFlag[int]{p, 0, "size", func(s string) (int, error) {
		sizes, err := workloads.ParseSizes(s)
		if err != nil {
			return 0, err
		}
		if len(sizes) != 1 {
			return 0, errors.New("want one message size, such as 64K")
		}
		return sizes[0], nil
	}}
}

// memKind is --mem: host, hugepages[:2M|:1G] or cuda[:GPU].
func memKind(p *string) valueFlag[string] {
	return valueFlag[string]{p, "", "kind", func(s string) (string, error) {
		if _, err := workloads.ParseMem(s); err != nil {
			return "", errors.New(strings.TrimPrefix(err.Error(), "--mem "))
		}
		return s, nil
	}}
}
