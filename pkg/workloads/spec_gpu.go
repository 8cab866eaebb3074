package workloads

import (
	"fmt"

	"github.com/rdmabench/rdmabench/pkg/gpu"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// checkGPU refuses at once, before anything is allocated, a test asking
// for GPU memory on a host that cannot give it: no driver library, no GPU,
// a GPU index it does not have (the error names what is missing).
func (s *Spec) checkGPU() error {
	m := s.mem()
	if m.Kind != report.MemCUDA || !s.Info().IsRDMA() {
		return nil
	}
	d, err := gpu.Open(m.GPU, "")
	if err != nil {
		return fmt.Errorf("%s --mem %s: %w", s.Test, s.Mem, err)
	}
	return d.Close()
}
