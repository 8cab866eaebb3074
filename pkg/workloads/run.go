package workloads

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// Role is the part an end plays. The client drives the test and measures;
// the server answers (ping-pong responder, receiver, passive target) and
// measures its own sending in bidirectional tests.
type Role int

// Roles.
const (
	Client Role = iota
	Server
)

func (r Role) String() string {
	if r == Server {
		return "server"
	}
	return "client"
}

// Options are an end's local settings, not part of the Spec.
type Options struct {
	// Device overrides the spec's device on this end (the server's own -d).
	Device string
	// MaxMem caps the memory this end registers for a test (the server's
	// --max-mem); 0 means no cap.
	MaxMem uint64
	// PeerHost is the host the client dials for TCP tests (the server's
	// address); empty means 127.0.0.1.
	PeerHost string
	// ListenHost is the address the server's TCP test listener binds;
	// empty means all addresses (127.0.0.1 in loopback).
	ListenHost string
	// Progress, when set, is called after each size and each interval.
	Progress func(Progress)
}

// Progress reports how far an end is.
type Progress struct {
	Test     string
	Size     int
	SizeIdx  int // 0-based index of Size in the spec's sizes
	Sizes    int // number of sizes
	Interval *report.Interval
	Done     bool // this size finished
}

// EndResult is what one end measured.
type EndResult struct {
	Host report.Host
	// Peer describes the other end, as it reported itself.
	Peer *report.Host
	// Results holds one entry per size run (the client's view; for the
	// server, only what it measured itself).
	Results  []report.Result
	Warnings []string
}

// setupInfo is what each end tells the other before a test.
type setupInfo struct {
	Host report.Host `json:"host"`
}

// Run runs spec on this end, talking to the other end through link. On a
// failure, the results of the sizes before it are returned with the error,
// and the failing size's result records it.
func Run(ctx context.Context, spec Spec, role Role, link Link, opt Options) (*EndResult, error) {
	spec.ApplyDefaults()
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	run := runTCP
	if spec.Info().IsRDMA() {
		run = runRDMA
	}
	res, err := run(ctx, spec, role, link, opt)
	// A run stopped from outside (the peer lost, an interrupt) says why,
	// rather than "aborted".
	if err != nil && ctx.Err() != nil {
		if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
			err = cause
			if res != nil && len(res.Results) > 0 && res.Results[len(res.Results)-1].Error != "" {
				res.Results[len(res.Results)-1].Error = cause.Error()
			}
		}
	}
	return res, err
}

// RunLoopback runs both ends of spec in this process, on the local device
// (or over loopback TCP), and returns the client's result.
func RunLoopback(ctx context.Context, spec Spec, opt Options) (*EndResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a, b := Pipe()
	sopt := opt
	sopt.Progress = nil
	if spec.ServerDevice != "" {
		sopt.Device = spec.ServerDevice
	} else if sopt.Device == "" {
		sopt.Device = spec.Device
	}
	if sopt.ListenHost == "" {
		sopt.ListenHost = "127.0.0.1"
	}
	if opt.PeerHost == "" {
		opt.PeerHost = "127.0.0.1"
	}
	var wg sync.WaitGroup
	var serr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, serr = Run(ctx, spec, Server, b, sopt)
	}()
	res, err := Run(ctx, spec, Client, a, opt)
	if err != nil {
		cancel()
	}
	wg.Wait()
	if err == nil && serr != nil {
		err = fmt.Errorf("server side: %w", serr)
	}
	// The client's error is the more telling one; a server that failed
	// first made the client fail with a PeerError that carries it.
	var pe *PeerError
	if errors.As(err, &pe) && serr != nil && !errors.As(serr, &pe) {
		err = fmt.Errorf("server side: %w", serr)
	}
	return res, err
}

// failResult records err in the result of the size that failed.
func failResult(spec *Spec, size int, err error) report.Result {
	r := baseResult(spec, size)
	r.Error = err.Error()
	return r
}

// baseResult fills the fields every result of spec at size has.
func baseResult(spec *Spec, size int) report.Result {
	r := report.Result{
		Test:       spec.Test,
		Connection: spec.Connection,
		Size:       size,
		Iterations: spec.ItersFor(size),
		Warmup:     spec.WarmupFor(size),
	}
	if spec.Info().IsRDMA() {
		r.QPs = spec.QPs
	}
	if spec.Duration > 0 {
		r.DurationS = spec.Duration.Seconds()
		r.Iterations = 0
	}
	return r
}

// sizeOutcome is what each end reports at the end of a size.
type sizeOutcome struct {
	Bandwidth *report.Bandwidth `json:"bandwidth,omitempty"`
	// Received counts the messages a receiver got (send-bw), to tell loss
	// on UC and UD.
	Received uint64 `json:"received,omitempty"`
	Err      string `json:"error,omitempty"`
}

func phase(name string, i int) string { return fmt.Sprintf("%s/%d", name, i) }
