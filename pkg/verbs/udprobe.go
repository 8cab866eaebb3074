package verbs

import "time"

// UDProbeConfig configures a UD probe QP (PD.OpenUDProbe): one UD QP that
// either answers every peer's probes (UDProbe.Serve) or probes peers
// through address handles (UDProbe.Ping), as R-Pingmesh does.
type UDProbeConfig struct {
	// Port is the device port (1 when 0).
	Port int
	// GIDIndex is the source GID's index; -1 picks it as CreateQP does.
	GIDIndex int
	// Size is the message size in bytes: at least UDProbeMinSize, at most
	// the port's active MTU. A responder's is the MTU (it answers any
	// probe up to it): 0 asks for that.
	Size int
	// Recv and Send are the receives kept posted and the sends in flight
	// at most (16 and 16 when 0).
	Recv, Send int
	// QKey is the QP's Q_Key (DefaultQKey when 0).
	QKey uint32
	// hostStamps stamps with the host's clock (a receive at its poll, a
	// send at its post), for tests of the stamps' exchange on a device
	// that has none.
	hostStamps bool
}

// Stamps says which clock stamps a UD probe QP's work completions
// (UDProbe.Stamps).
type Stamps string

const (
	// StampsNone: none; the probe measures the host's round trips alone
	// (a device without completion timestamps, such as Soft-RoCE).
	StampsNone Stamps = ""
	// StampsNICNs: the NIC's clock, in ns as the driver converts it
	// (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK).
	StampsNICNs Stamps = "nic-ns"
	// StampsNICCycles: the NIC's clock in its cycles
	// (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP), converted by its rate
	// (hca_core_clock).
	StampsNICCycles Stamps = "nic-cycles"
	// stampsHost: the host's clock (tests only: UDProbeConfig.hostStamps).
	stampsHost Stamps = "host"
)

// UDProbeMinSize is the least message of a UD probe: its header (magic,
// kind, the sender's Q_Key, a sequence number) and the prober's cookie.
const UDProbeMinSize = 32

// UDProbeCounters are what a UD probe QP counted since it was opened.
type UDProbeCounters struct {
	// Served is the probes a responder answered.
	Served uint64
	// Bad is the messages that were no probe (or no answer) of ours.
	Bad uint64
	// Late is the answers that came after their probe was given up.
	Late uint64
	// AddressHandles is the address handles a responder made (one per
	// source GID and traffic class, kept).
	AddressHandles uint64
	// Delays is the delays a stamped responder sent, one after each
	// answer to a stamped prober.
	Delays uint64
	// Stamped is the ping-pongs whose network time a stamped prober has
	// (both ends' stamps).
	Stamped uint64
}

// DefaultUDProbeSpin is how long UDProbe.Ping spins on its completion
// queue for an answer before it sleeps on the completion channel.
const DefaultUDProbeSpin = 2 * time.Millisecond
