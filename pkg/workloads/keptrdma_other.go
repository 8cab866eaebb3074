//go:build !linux || !cgo

package workloads

import (
	"context"

	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// keptRDMAClient is the client end of a kept RDMA session; this
// build has none.
type keptRDMAClient struct{}

func openKeptRDMAClient(context.Context, RemoteTest, *Spec, int) (*keptRDMAClient, error) {
	_, err := verbs.Devices()
	return nil, err
}

func (c *keptRDMAClient) burst(context.Context, []uint64) error { return nil }

func (c *keptRDMAClient) end(context.Context) {}

func (t *ServerTest) runKeptRDMA(context.Context, Transport) error {
	_, err := verbs.Devices()
	return err
}
