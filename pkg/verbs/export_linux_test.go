//go:build linux && cgo

package verbs

// HostStamps makes the UD probe QPs of c stamp with the host's clock (a
// receive at its poll, a send at its post): the exchange of stamps and
// delays, tested on a device that stamps none (Soft-RoCE).
func HostStamps(c *UDProbeConfig) { c.hostStamps = true }

// StampsHost is what UDProbe.Stamps says of such a QP.
const StampsHost = stampsHost

// StampsNs is the ns from stamp a to stamp b of a QP stamping as s, its
// clock's mask and rate (kHz) given.
var StampsNs = stampsNs
