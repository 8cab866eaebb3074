package workloads

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/quantity"
)

// The settings that spread a test over a host's fabric: loop threads
// (--threads), several devices at once (-d A,B), CPU placement (--cpu),
// pacing (--rate-limit) and a background load (--load).

// Rate limiters.
const (
	LimiterSW = "sw" // the timed loop paces its posts
	LimiterHW = "hw" // the device's per-QP rate limiter
)

// maxCPU bounds the cores --cpu may name (a CPU set of 1024, as glibc's).
const maxCPU = 1024

// threads is the number of loop threads each end runs a bandwidth test's
// QPs on.
func (s *Spec) threads() int { return max(1, s.Threads) }

// threadQPs returns the QPs thread t of n drives, [lo, hi): contiguous
// shares, the first threads taking one more when qps does not divide.
func threadQPs(qps, n, t int) (lo, hi int) {
	base, extra := qps/n, qps%n
	lo = t*base + min(t, extra)
	hi = lo + base
	if t < extra {
		hi++
	}
	return lo, hi
}

// applyFabricDefaults fills the defaults of the fabric settings.
func (s *Spec) applyFabricDefaults(t TestInfo) {
	if (s.RateLimitGbps > 0 || s.RateLimitMsgs > 0) && s.RateLimiter == "" {
		s.RateLimiter = LimiterSW
	}
	s.RateLimiter = strings.ToLower(s.RateLimiter)
	if l := s.Load; l != nil {
		if l.QPs == 0 {
			l.QPs = 1
		}
		if lt, ok := LookupTest(l.Test); ok && l.Size == 0 {
			l.Size = lt.DefaultSize
		}
	}
	_ = t
}

// validateFabric checks the fabric settings of a normalized spec.
func (s *Spec) validateFabric(t TestInfo, bad func(string, ...any)) {
	if s.Threads < 0 || (s.Threads > 1 && s.Threads > s.QPs) {
		bad("--threads %d must be within 1..the QP count %d (-q): each thread drives QPs of its own", s.Threads, s.QPs)
	}
	if s.Threads > 1 && s.CheckData {
		bad("--validate checks the QPs of one loop thread: run it without --threads %d", s.Threads)
	}
	if s.Threads > 1 && t.Metric != Bandwidth {
		bad("--threads %d: latency tests time one QP on one thread", s.Threads)
	}
	for _, c := range []struct {
		flag string
		list []int
	}{{"--cpu", s.CPUs}, {"--server-cpu", s.ServerCPUs}} {
		for _, core := range c.list {
			if core < 0 || core >= maxCPU {
				bad("%s: core %d is outside 0..%d", c.flag, core, maxCPU-1)
			}
		}
	}
	switch {
	case s.RateLimitGbps < 0 || s.RateLimitMsgs < 0 || math.IsNaN(s.RateLimitGbps) || math.IsNaN(s.RateLimitMsgs) || math.IsInf(s.RateLimitGbps, 0) || math.IsInf(s.RateLimitMsgs, 0):
		bad("--rate-limit must be positive")
	case s.RateLimitGbps > 0 && s.RateLimitMsgs > 0:
		bad("--rate-limit is a bandwidth or a message rate, not both")
	case s.RateLimiter != "" && s.RateLimiter != LimiterSW && s.RateLimiter != LimiterHW:
		bad("--rate-limiter %q must be %s (the timed loop paces its posts) or %s (the device's)", s.RateLimiter, LimiterSW, LimiterHW)
	case s.RateLimiter != "" && s.RateLimitGbps == 0 && s.RateLimitMsgs == 0:
		bad("--rate-limiter %s needs --rate-limit", s.RateLimiter)
	case (s.RateLimitGbps > 0 || s.RateLimitMsgs > 0) && t.Metric != Bandwidth:
		bad("--rate-limit is for bandwidth tests")
	}
	if l := s.Load; l != nil {
		s.validateLoad(t, l, bad)
	}
	devs, sdevs := splitDevices(s.Device), splitDevices(s.ServerDevice)
	for _, list := range [][]string{devs, sdevs} {
		seen := map[string]bool{}
		for _, d := range list {
			if d == "" {
				bad("the device list %q has an empty entry", strings.Join(list, ","))
			} else if seen[d] {
				bad("the device list %q names %s twice", strings.Join(list, ","), d)
			}
			seen[d] = true
		}
	}
	if len(sdevs) > 0 && !slices.Equal(sdevs, []string{"all"}) && len(sdevs) != max(len(devs), 1) {
		bad("--server-dev %s must pair one by one with the client's devices (-d %s)", s.ServerDevice, orFirst(s.Device))
	}
}

func (s *Spec) validateLoad(t TestInfo, l *LoadSpec, bad func(string, ...any)) {
	lt, ok := LookupTest(l.Test)
	switch {
	case l.Test == "":
		bad("--load-qps and --load-size need --load, the bandwidth test to run in the background")
		return
	case !ok || !lt.IsRDMA() || lt.Metric != Bandwidth:
		bad("--load %s must be an RDMA bandwidth test: write-bw, read-bw, send-bw or atomic-bw", l.Test)
		return
	case t.Metric != Latency:
		bad("--load runs under latency tests")
	}
	if l.QPs < 1 || l.QPs > 1024 {
		bad("--load-qps %d must be within 1..1024", l.QPs)
	}
	if l.Size < 1 || l.Size > MaxSize {
		bad("--load-size %d is outside 1 B..1 GiB", l.Size)
	}
	if lt.Op == OpAtomic && l.Size != 8 {
		bad("--load %s uses 8-byte messages, not --load-size %d", l.Test, l.Size)
	}
}

func orFirst(s string) string {
	if s == "" {
		return "the first"
	}
	return s
}

// splitDevices is a device flag's list: "mlx5_0,mlx5_1" is two; "" none.
func splitDevices(s string) []string {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// ParseRateLimit parses --rate-limit: a payload bandwidth ("5Gbps",
// "800Mbps", "1.25GB/s"; a bare number or prefix is Gbit/s, perftest's
// default unit) or a message rate ("2Mpps", "100k msg/s", perftest's
// packets per second). It returns one of gbps and msgs.
func ParseRateLimit(v string) (gbps, msgs float64, err error) {
	t := strings.TrimSpace(v)
	for _, u := range []string{"pps", "msg/s", "msgs/s", "mps"} {
		if strings.HasSuffix(t, u) {
			msgs, err = quantity.ParseRate(t)
			return 0, msgs, err
		}
	}
	if _, perr := fmt.Sscanf(t, "%g", new(float64)); perr == nil && strings.TrimLeft(t, "0123456789.eE+-") == "" {
		t += "Gbps" // perftest's --rate_units default: Gbit/s
	}
	gbps, err = quantity.ParseBandwidth(t)
	return gbps, 0, err
}

// paceFor is the rate limit at a message size: the payload rate each end
// may send, all its QPs together (Gbit/s; 0: no limit), and the interval
// between messages on each QP that holds it to that, ns (each QP an equal
// share).
func (s *Spec) paceFor(size int) (gbps, perQPNs float64) {
	msgs := s.RateLimitMsgs
	switch {
	case s.RateLimitGbps > 0:
		msgs = s.RateLimitGbps * 1e9 / 8 / float64(size)
	case s.RateLimitMsgs <= 0:
		return 0, 0
	}
	return msgs * float64(size) * 8 / 1e9, float64(max(s.QPs, 1)) * 1e9 / msgs
}
