//go:build linux && cgo

package workloads

import (
	"errors"
	"fmt"

	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// sendsHere tells whether this end sends in a bandwidth test.
func (e *rdmaRunner) sendsHere() bool { return e.spec.initiates(e.role) || e.spec.Bidirectional }

// checkRateLimiter refuses, before anything is allocated, the device's
// rate limiter (--rate-limiter hw) on a device that has none.
func (e *rdmaRunner) checkRateLimiter() error {
	s := e.spec
	if s.RateLimiter != LimiterHW || !e.sendsHere() {
		return nil
	}
	lo, hi, err := e.dev.RateLimitRange()
	if err != nil {
		return fmt.Errorf("--rate-limiter hw: %w", err)
	}
	if hi == 0 {
		return fmt.Errorf("%w: --rate-limiter hw: %s has no rate limiter for QPs (its packet pacing caps are 0, so ibv_modify_qp_rate_limit cannot work); use --rate-limiter sw, which paces the posts in the timed loop",
			verbs.ErrNotSupported, e.dev.Name())
	}
	for _, size := range s.Sizes {
		if kbps := e.perQPKbps(size); kbps < float64(lo) || kbps > float64(hi) {
			return fmt.Errorf("--rate-limiter hw: %s limits each QP to %d..%d kbit/s; %d QPs sharing --rate-limit need %.0f kbit/s each at %d B",
				e.dev.Name(), lo, hi, s.QPs, kbps, size)
		}
	}
	return nil
}

// perQPKbps is each QP's share of the rate limit at size, kbit/s.
func (e *rdmaRunner) perQPKbps(size int) float64 {
	gbps, _ := e.spec.paceFor(size)
	return gbps * 1e6 / float64(max(e.spec.QPs, 1))
}

// setRateLimit sets the device's rate limiter of every QP to its share of
// the limit at size.
func (e *rdmaRunner) setRateLimit(size int) error {
	kbps := uint32(e.perQPKbps(size) + 0.5)
	packet := min(size, int(e.qps[0].PathMTU()))
	for i, q := range e.qps {
		if err := q.SetRateLimit(kbps, packet); err != nil {
			if errors.Is(err, verbs.ErrNotSupported) {
				return fmt.Errorf("--rate-limiter hw: %s does not limit the rate of QPs (%w); use --rate-limiter sw", e.dev.Name(), err)
			}
			return fmt.Errorf("--rate-limiter hw: qp %d: %w", i, err)
		}
	}
	return nil
}
