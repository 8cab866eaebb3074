//go:build linux && cgo

package verbs

/*
#include <string.h>
#include "rb.h"
*/
import "C"

import (
	"fmt"
	"syscall"
	"unsafe"
)

// RateLimitRange returns the per-QP rate limits the device's packet pacing
// supports, in kbit/s (both 0 when it has none). Equivalent to the
// packet_pacing_caps of `ibv_devinfo -v`.
func (c *Context) RateLimitRange() (minKbps, maxKbps uint32, err error) {
	if c.ctx == nil {
		return 0, 0, ErrClosed
	}
	var a C.struct_ibv_device_attr_ex
	C.memset(unsafe.Pointer(&a), 0, C.sizeof_struct_ibv_device_attr_ex)
	if rc := C.ibv_query_device_ex(c.ctx, nil, &a); rc != 0 {
		return 0, 0, newError("query device (extended)", syscall.Errno(rc))
	}
	return uint32(a.packet_pacing_caps.qp_rate_limit_min), uint32(a.packet_pacing_caps.qp_rate_limit_max), nil
}

// SetRateLimit makes the device pace the QP's sending to kbps kbit/s
// (the hardware rate limiter); typicalPacket is the size of most of its
// packets (0: the device's default). The QP must be connected (RTS).
// Equivalent to ibv_modify_qp_rate_limit; a device without packet pacing
// returns an error wrapping ErrNotSupported.
func (q *QP) SetRateLimit(kbps uint32, typicalPacket int) error {
	if q.qp == nil {
		return ErrClosed
	}
	if !q.connected {
		return fmt.Errorf("set rate limit: qp 0x%x: %w", q.local.QPN, ErrNotConnected)
	}
	var a C.struct_ibv_qp_rate_limit_attr
	a.rate_limit = C.uint32_t(kbps)
	a.typical_pkt_sz = C.uint16_t(min(typicalPacket, 0xffff))
	if rc := C.ibv_modify_qp_rate_limit(q.qp, &a); rc != 0 {
		return newError(fmt.Sprintf("set the rate limit of qp 0x%x to %d kbit/s", q.local.QPN, kbps), syscall.Errno(rc))
	}
	return nil
}
