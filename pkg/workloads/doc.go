// Package workloads defines the tests rdmabench runs (a plain, validated
// Spec), and runs them: RDMA tests over pkg/verbs' timed loops, TCP tests
// with the same framing, both ends driven through a Link so that the same
// code runs in one process (loopback) or across two hosts.
//
// The package has five parts; each file's name says which part it is of.
//
// The spec (spec*.go): the table of tests (TestInfo), the Spec of one test
// with its defaults and validation, and the knobs that apply to some tests
// only.
//   - spec.go: the tests, Spec, its defaults, validation and sizes
//   - spec_knobs.go: the knobs, a spec per test of a request
//   - spec_path.go: the path (traffic class, service level, flow label,
//     hop limit)
//   - spec_fabric.go: threads, several devices, CPU placement, pacing and
//     the background load (LoadSpec)
//   - spec_mem.go, spec_memory*.go, spec_gpu.go: where the buffers live
//     (--mem), how much memory a test needs, and the host's limits
//
// The plan (plan.go): a Request is checked and planned into a Run, one
// normalized spec per test (and per TCP baseline), which Execute runs as
// many times as asked, with the other end in this process or on a Remote
// server, into one results document.
//
// The driver (driver*.go): one end of one test, whatever its transport.
//   - driver.go: the runner interface, the phases the two ends exchange,
//     and each size's steps: ready, measure, finish, result
//   - driver_measure.go: the timed measurement of one size: warm-up,
//     iterations or duration, intervals, precision rounds
//   - driver_link.go: the Link between the two ends and its messages
//   - driver_lanes.go: several ends side by side on each side (-d A,B,
//     --load), multiplexed over one transport (package mux), and their
//     merged results
//   - driver_threads.go, driver_loopthread_*.go, driver_placement.go: the
//     loop threads (--threads), the OS threads they run on, and their cores
//   - driver_check.go: the untimed data check after each size (--validate)
//
// The RDMA runner (rdma_*.go): the verbs objects of one end, its loops for
// each size, and its parts of rdma_cm (-R), the rate limiter, the buffers
// (host, huge pages, GPU) and the data check. rdma_other.go refuses RDMA
// tests where pkg/verbs is not built.
//
// The TCP runner (tcp*.go): the TCP tests' ends, connections and socket
// options.
//
// Beside them: server.go runs the server end of tests a client sends
// (`rdmabench serve`); host.go and stats.go describe this host, its
// devices and the process.
package workloads
