package workloads

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// A kept RDMA session (Spec.Keep with write-lat, read-lat, send-lat or
// atomic-lat over RC) is the RDMA kept probe session: each end sets up an
// RC QP, its CQs and a registered buffer once, the two exchange their
// endpoints over the control connection, and each probe is then a burst
// of the test's own timed loop on them (keptrdma_linux.go). A burst of a
// ping-pong (write-lat, send-lat) is announced by the client over the
// control connection (keptBurst), for the server's end to run its half;
// one of read-lat or atomic-lat is not: the server's CPU takes no part in
// it, and its end only waits for the session's end. A server that keeps
// them names each test's feature (KeptFeatureOf) in its hello.

// KeptRDMAFeatures are the features a server's hello names when it keeps
// RDMA probe sessions, one a test: kept-write-lat, kept-read-lat,
// kept-send-lat and kept-atomic-lat.
var KeptRDMAFeatures = []string{"kept-write-lat", "kept-read-lat", "kept-send-lat", "kept-atomic-lat"}

// KeptFeatureOf is the feature a server names when it keeps probe
// sessions of test ("" when no session of it is kept).
func KeptFeatureOf(test string) string {
	if test == "tcp-lat" {
		return KeptFeature
	}
	for _, f := range KeptRDMAFeatures {
		if strings.TrimPrefix(f, "kept-") == test {
			return f
		}
	}
	return ""
}

// keptRDMAEndpoint is what each end of a kept RDMA session tells the
// other: its QP, and the half of its buffer the other writes into (or
// reads from, or operates on).
type keptRDMAEndpoint struct {
	QP  verbs.Endpoint     `json:"qp"`
	Buf verbs.RemoteBuffer `json:"buf"`
}

// keptBurst is what the client sends before each burst: its ping-pongs (0:
// the session ends).
type keptBurst struct {
	N int `json:"n"`
}

// sendJSON sends v over tr.
func sendJSON(ctx context.Context, tr Transport, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tr.Send(ctx, body)
}

// recvJSON receives the next message of tr into v.
func recvJSON(ctx context.Context, tr Transport, v any) error {
	body, err := tr.Recv(ctx)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}
