package workloads

import (
	"fmt"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// What a test needs in memory, known from its spec alone, so that a test
// too large for this host (or for --max-mem) is refused before anything is
// allocated or registered.

// largest is the largest message size of the spec.
func (s *Spec) largest() int {
	n := 0
	for _, z := range s.Sizes {
		n = max(n, z)
	}
	return n
}

// tcpBuffers is the memory one end of a TCP test allocates: bounded
// buffers (tcpChunk at most), whatever the message size.
func (s *Spec) tcpBuffers(r role) uint64 {
	chunk := uint64(min(s.largest(), tcpChunk))
	latency := s.Info().Metric == Latency
	switch {
	case latency && r == clientEnd:
		return 2 * chunk
	case latency:
		return chunk
	case s.initiates(r) || s.Bidirectional:
		return chunk + tcpRecvChunk
	}
	return tcpRecvChunk
}

// wqeBytes is a generous size of one queue entry (a work request with its
// scatter element, or a completion), for the estimate of queue memory.
const wqeBytes = 256

// EndMemory is the memory one end of the test takes: for RDMA its
// registered buffer and its queues, for TCP its buffers.
func (s *Spec) EndMemory(server bool) uint64 {
	r := clientEnd
	if server {
		r = serverEnd
	}
	if !s.Info().IsRDMA() {
		return s.tcpBuffers(r)
	}
	queues := uint64(s.QPs) * uint64(2*s.TxDepth+2*max(s.RxDepth, 1)) * wqeBytes
	return s.onEveryLane(s.RegisteredBytes()+queues, server)
}

// checkMemory refuses a test whose ends need more memory than allowed
// (limit, 0 for none) or than this host has: MemAvailable, and for RDMA
// the locked-memory limit, which registration counts against. ends is the
// number of ends in this process (two in loopback).
func (s *Spec) checkMemory(limit uint64, ends int, server bool) error {
	if err := s.checkHugePages(ends); err != nil {
		return err
	}
	need := uint64(ends) * s.EndMemory(server)
	if limit > 0 && need > limit {
		return fmt.Errorf("%w: %s at %d B needs %s of memory; the limit is %s (--max-mem)",
			ErrOverLimit, s.Test, s.largest(), bytesText(need), bytesText(limit))
	}
	// Huge pages come from their own pool (checked above), not from
	// MemAvailable.
	hostNeed := need
	if s.mem().Kind == report.MemHugePages {
		hostNeed -= min(hostNeed, uint64(ends)*uint64(max(1, len(splitDevices(s.Device))))*s.RegisteredBytes())
	}
	if avail, ok := memAvailable(); ok && hostNeed > avail {
		return fmt.Errorf("%w: %s at %d B needs %s of memory; this host has %s available (MemAvailable)",
			ErrOverLimit, s.Test, s.largest(), bytesText(hostNeed), bytesText(avail))
	}
	// GPU memory is not locked; its host mirror is not registered.
	if s.Info().IsRDMA() && s.mem().Kind != report.MemCUDA {
		reg := uint64(ends) * s.RegisteredBytes()
		if lock, ok := lockedMemoryLimit(); ok && reg > lock {
			return fmt.Errorf("%w: %s at %d B registers %s; the locked-memory limit is %s (raise it: ulimit -l)",
				ErrOverLimit, s.Test, s.largest(), bytesText(reg), bytesText(lock))
		}
	}
	return nil
}

// bytesText writes n bytes for a person: "1.0 GiB (1073741824 B)".
func bytesText(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s (%d B)", v, units[u], n)
}

// fitsDevice checks the test's queues and buffer against the device's
// limits (ibv_devinfo -v): an error wrapping ErrOverLimit names each one
// exceeded.
func fitsDevice(s *Spec, d verbs.DeviceInfo) error {
	var over []string
	check := func(what string, v, limit int, flag string) {
		if limit > 0 && v > limit {
			over = append(over, fmt.Sprintf("%s %d exceeds %s's %d (%s)", what, v, d.Name, limit, flag))
		}
	}
	check("QP count", s.QPs, d.MaxQP, "max_qp; lower -q")
	check("send queue depth", s.TxDepth, d.MaxQPWR, "max_qp_wr; lower -t")
	check("receive queue depth", s.RxDepth, d.MaxQPWR, "max_qp_wr; lower -r")
	check("send completion queue", s.TxDepth*s.QPs, d.MaxCQE, "max_cqe; lower -t or -q")
	check("receive completion queue", max(s.RxDepth, 1)*s.QPs, d.MaxCQE, "max_cqe; lower -r or -q")
	if d.MaxMRSize > 0 && s.RegisteredBytes() > d.MaxMRSize {
		over = append(over, fmt.Sprintf("a registration of %d bytes exceeds %s's max_mr_size %d (lower -s)", s.RegisteredBytes(), d.Name, d.MaxMRSize))
	}
	if len(over) > 0 {
		return fmt.Errorf("%w: %s", ErrOverLimit, strings.Join(over, "; "))
	}
	return nil
}
