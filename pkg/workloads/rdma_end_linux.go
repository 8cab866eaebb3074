//go:build linux && cgo

package workloads

// One end of an RDMA test as its parts see it (rdma_linux.go opens,
// connects and prepares it; rdma_cm_linux.go, rdma_ratelimit_linux.go and
// rdma_check_linux.go add their parts): what the two ends tell each other,
// and the verbs objects of one end.

import (
	"net/netip"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// rdmaSetup is what each end of an RDMA test tells the other: per QP, its
// endpoint and the buffer the peer may target.
type rdmaSetup struct {
	QPs []qpSetup `json:"qps"`
	// LinkGbps is the nominal rate of this end's port (0: unknown).
	LinkGbps float64 `json:"link_gbps,omitempty"`
	// CM is the server's rdma_cm listening address (IP:port), with -R.
	CM string `json:"cm,omitempty"`
	// Memory is where this end's buffer lives (--mem).
	Memory *report.Memory `json:"memory,omitempty"`
}

type qpSetup struct {
	Endpoint verbs.Endpoint     `json:"endpoint"`
	Buffer   verbs.RemoteBuffer `json:"buffer"`
}

// rdmaRunner holds one end's verbs objects for one test (every size).
type rdmaRunner struct {
	spec *Spec
	role role
	o    endOptions

	dev *verbs.Context
	pd  *verbs.PD
	// scqs and rcqs are each loop thread's send and receive CQs
	// (--threads; one pair without), shared by its QPs.
	scqs    []*verbs.CQ
	rcqs    []*verbs.CQ
	buf     *testBuffer // where the MR's memory lives (--mem)
	mr      *verbs.MR
	qps     []*verbs.QP
	peerMem *report.Memory // the peer's buffer, as it told
	peer    []qpSetup
	half    uint64 // the MR's second half is the receive/target area
	maxSize int
	inline  int // the inline size each QP was granted
	// recvsPosted, per thread: receives are posted once per test; every
	// loop reposts what it consumes, so the count stays at rx-depth.
	recvsPosted []bool
	// warning is a note for the first result (inline refused).
	warning string
	// avWarnings are notes for the first result: the address vector the
	// device took differs from the one asked.
	avWarnings []string
	// linkGbps is the nominal rate of the slower port of the two ends (0:
	// one does not say).
	linkGbps float64
	// With -R (rdma_cm_linux.go): the address rdma_cm uses on this end, the
	// server's listener, the client's connections, and what rdma_cm chose.
	cmIP       netip.Addr
	cmListener *verbs.CMListener
	cmConns    []*verbs.CMConn
	cmInfo     *verbs.CMInfo
}
