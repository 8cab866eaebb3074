//go:build !linux || !cgo

package workloads

import (
	"context"
	"fmt"

	"github.com/rdmabench/rdmabench/pkg/verbs"
)

func runRDMA(ctx context.Context, spec Spec, role Role, link Link, opt Options) (*EndResult, error) {
	err := fmt.Errorf("%w: built without libibverbs (RDMA tests need Linux and cgo; TCP tests, report and compare still work)",
		verbs.ErrNotSupported)
	_ = link.Exchange(ctx, "setup", Fail(err), nil)
	return nil, err
}
