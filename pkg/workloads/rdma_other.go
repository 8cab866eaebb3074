//go:build !linux || !cgo

package workloads

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

func init() { runners[runnerRDMA] = newRDMA }

// newRDMA returns a runner that cannot open: this build has no verbs.
func newRDMA(*Spec, role, endOptions) runner { return noRDMA{} }

type noRDMA struct{}

func (noRDMA) open(context.Context) (any, *report.Device, error) {
	return nil, nil, fmt.Errorf("%w: built without libibverbs (RDMA tests need Linux and cgo; TCP tests, report and compare still work)",
		verbs.ErrNotSupported)
}

func (noRDMA) connect(context.Context, json.RawMessage) (func() error, error) { return nil, nil }
func (noRDMA) prepare(int) (*stage, error)                                    { return nil, nil }
func (noRDMA) now() uint64                                                    { return 0 }
func (noRDMA) clock() clockInfo                                               { return clockInfo{} }
func (noRDMA) close()                                                         {}
