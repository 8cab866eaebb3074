package workloads

// What this host can give a test, checked before anything is allocated or
// registered: its memory (and --max-mem), huge pages, GPUs, RDMA devices
// and the cores the loops may run on.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/gpu"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// checkMemory refuses a test whose ends need more memory than allowed
// (limit, 0 for none) or than this host has: MemAvailable, and for RDMA
// the locked-memory limit, which registration counts against. ends is the
// number of ends in this process (two in loopback).
func (s *Spec) checkMemory(limit uint64, ends int, server bool) error {
	if err := s.checkHugePages(ends); err != nil {
		return err
	}
	need := uint64(ends) * s.EndMemory(server)
	if limit > 0 && need > limit {
		return fmt.Errorf("%w: %s at %d B needs %s of memory; the limit is %s (--max-mem)",
			ErrOverLimit, s.Test, s.largest(), bytesText(need), bytesText(limit))
	}
	// Huge pages come from their own pool (checked above), not from
	// MemAvailable.
	hostNeed := need
	if s.mem().Kind == report.MemHugePages {
		hostNeed -= min(hostNeed, uint64(ends)*uint64(max(1, len(splitDevices(s.Device))))*s.RegisteredBytes())
	}
	if avail, ok := memAvailable(); ok && hostNeed > avail {
		return fmt.Errorf("%w: %s at %d B needs %s of memory; this host has %s available (MemAvailable)",
			ErrOverLimit, s.Test, s.largest(), bytesText(hostNeed), bytesText(avail))
	}
	// GPU memory is not locked; its host mirror is not registered.
	if s.Info().IsRDMA() && s.mem().Kind != report.MemCUDA {
		reg := uint64(ends) * s.RegisteredBytes()
		if lock, ok := lockedMemoryLimit(); ok && reg > lock {
			return fmt.Errorf("%w: %s at %d B registers %s; the locked-memory limit is %s (raise it: ulimit -l)",
				ErrOverLimit, s.Test, s.largest(), bytesText(reg), bytesText(lock))
		}
	}
	return nil
}

// checkHugePages refuses a test whose ends (ends of them in this process)
// need more huge pages than this host has free, with the figures.
func (s *Spec) checkHugePages(ends int) error {
	per := s.HugePages()
	if per == 0 {
		return nil
	}
	m := s.mem()
	need := ends * per
	free, path, err := freeHugePages(m.PageSize)
	if err != nil {
		return fmt.Errorf("%w: --mem %s: this host has no %s huge pages (%v)", ErrOverLimit, s.Mem, bytesText(m.PageSize), err)
	}
	if uint64(need) > free {
		return fmt.Errorf("%w: %s at %d B needs %d huge pages of %s (%d per end, %d end(s) here); this host has %d free (%s; reserve them: echo N > /proc/sys/vm/nr_hugepages, or hugeadm)",
			ErrOverLimit, s.Test, s.largest(), need, pageName(m.PageSize), per, ends, free, path)
	}
	return nil
}

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

// resolveDevices names the client's devices of "-d all" (before anything
// runs).
func (s *Spec) resolveDevices() error {
	if s.Device != "all" {
		return nil
	}
	names, err := verbs.DeviceNames()
	if err != nil {
		return fmt.Errorf("-d all: %w", err)
	}
	if len(names) == 0 {
		return errors.New("-d all: this host has no RDMA device")
	}
	s.Device = strings.Join(names, ",")
	return nil
}

// checkCores refuses, before anything runs, cores this host's ends may not
// use: the client's (--cpu), and in loopback the server's too.
func (s *Spec) checkCores(loopback bool) error {
	allowed := allowedCPUs()
	if _, err := placeLoops("--cpu", s.CPUs, "", allowed); err != nil {
		return err
	}
	if loopback {
		if _, err := placeLoops("--server-cpu", s.ServerCPUs, "", allowed); err != nil {
			return err
		}
	}
	return nil
}
