package workloads

import (
	"context"
	"encoding/json"

	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// A kept write-lat session (Spec.Keep with write-lat over RC) is the RDMA
// kept probe session: each end sets up an RC QP, its CQs and a registered
// buffer once, the two exchange their endpoints over the control
// connection, and each probe is then a burst of the write ping-pong on
// them (keptrdma_linux.go), announced by the client over the control
// connection (keptBurst). A server that keeps them names
// KeptRDMAFeature in its hello.

// KeptRDMAFeature is the feature a server's hello names when it keeps
// write-lat probe sessions (Spec.Keep with write-lat over RC).
const KeptRDMAFeature = "kept-write-lat"

// KeptFeatureOf is the feature a server names when it keeps probe
// sessions of test ("" when no session of it is kept).
func KeptFeatureOf(test string) string {
	switch test {
	case "tcp-lat":
		return KeptFeature
	case "write-lat":
		return KeptRDMAFeature
	}
	return ""
}

// keptRDMAEndpoint is what each end of a kept write-lat session tells the
// other: its QP, and the half of its buffer the other writes into.
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
