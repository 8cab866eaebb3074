package workloads

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/pkg/settings"
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

// The buffers of a TCP end (tcp.go), which its memory is known from.
const (
	// tcpRecvChunk is the read buffer of a tcp-bw receiver.
	tcpRecvChunk = 256 << 10
	// tcpChunk bounds the buffers of the other loops: a larger message is
	// written from, and read into, the same chunk in turn, so memory does
	// not grow with the message size.
	tcpChunk = 4 << 20
)

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

// ErrOverLimit marks a test refused, before anything was allocated,
// because it asks for more than a limit (--max-mem), the host's memory or
// the device allows.
var ErrOverLimit = errors.New("too large")

// loadStep is how often a load's stream checks whether the latency it
// runs under is over.
const loadStep = 10 * time.Millisecond

// loadSpec is the spec of the load of main: its bandwidth test, open
// ended (the client stops it when the latency test is over), between the
// same devices, GIDs, cores and path: every knob the table marks Shared
// (the path, rdma_cm, ACK timeout, ...).
func loadSpec(s *Spec, main Spec) Spec {
	l := Spec{Test: s.Load.Test, Sizes: []int{s.Load.Size}, Queues: settings.Queues{QPs: s.Load.QPs},
		IdleTimeout: main.IdleTimeout, Loops: settings.Loops{CPUs: main.CPUs, ServerCPUs: main.ServerCPUs},
		Duration: 24 * time.Hour, Interval: loadStep}
	for _, k := range Knobs {
		if k.Shared {
			k.copyTo(&l, &main)
		}
	}
	_ = l.Normalize() // checked with the latency test's spec
	return l
}

// onEveryLane is the memory of an end whose one lane takes one: as many
// times as it has devices, and its load's on each.
func (s *Spec) onEveryLane(one uint64, server bool) uint64 {
	n := uint64(max(1, len(splitDevices(s.Device))))
	total := n * one
	if s.Load != nil {
		ld := loadSpec(s, *s)
		ld.Device, ld.ServerDevice = "", ""
		total += n * ld.EndMemory(server)
	}
	return total
}
