// Package workloads defines the tests rdmabench runs (a plain, validated
// Spec), and runs them: RDMA tests over pkg/verbs' timed loops, TCP tests
// with the same framing, both ends driven through a Link so that the same
// code runs in one process (loopback) or across two hosts.
//
// The package stands in four layers; each file's name says which it is
// of, and a file uses only its own layer and those below it.
//
// The spec (spec*.go, at the bottom): the table of tests (TestInfo), the
// Spec of one test with its defaults and validation, and the knobs that
// apply to some tests only. Pure: it reads no host and runs nothing.
//   - spec.go: the tests, Spec (and the LoadSpec of --load), its sizes
//   - spec_knobs.go: the knobs (pkg/settings' rows bound to their Spec
//     fields), a spec per test of a request
//   - spec_path.go: the path (pkg/settings' PathSettings) as a port takes
//     it and as the device kept it
//   - spec_fabric.go: threads, several devices, CPU placement, pacing and
//     the background load
//   - spec_mem.go: where the buffers live (--mem)
//   - spec_memory.go: how much memory a test needs, and the load's spec
//   - spec_end.go: the part an end plays, and the runner a test's row names
//   - spec_normalize.go, above the other spec files: a spec's defaults
//     and its validation, spec.go's own and each part's
//
// The engine (driver*.go, host*.go, peak.go, stats.go): one end of one
// test, whatever its transport, and the host it runs on. It names no
// runner: a test's row does (TestInfo.Runner), and each runner's file adds
// its constructor to the runners' table.
//   - driver_link.go: the Link between the two ends and its messages
//   - driver_check.go: the data check's patterns and mismatches
//     (--validate), and what a runner's part in it does
//   - driver_runner.go: what the driver asks of a runner: its resources,
//     its part in each size, its timed loops
//   - driver_placement.go, driver_loopthread_*.go, driver_threads.go: the
//     cores of the loops, the OS threads they run on (--cpu), and the loop
//     threads of a bandwidth test (--threads)
//   - driver_loadprobe.go: what joins a latency end to its load (--load)
//   - driver_end.go: an end's options and result, Progress, the runners'
//     table, the driver's state
//   - driver_measure.go: the timed measurement of one size: warm-up,
//     iterations or duration, intervals, precision rounds
//   - driver_validate.go: the validation pass of a size, as the driver
//     runs it
//   - driver.go: the phases the two ends exchange, and each size's steps:
//     ready, measure, finish, result
//   - driver_lanes.go, driver_barrier.go, driver_merge.go, driver_side.go:
//     several ends side by side on each side (-d A,B, --load), their
//     barrier, the merge of their results, and a side's lanes run at once
//     over one transport (package mux) or both sides in one process
//   - host.go, host_memory_*.go, host_check.go: this host, its devices and
//     memory, and what it can give a test, checked before anything runs;
//     peak.go, stats.go: a stream's peak, the process's figures
//
// The runners (rdma*.go, tcp*.go), on the engine. The RDMA runner: one
// end's verbs objects (rdma_end_linux.go), its loops for each size
// (rdma_linux.go), its parts of rdma_cm (-R), the rate limiter and its
// pacing, the buffers (host, huge pages, GPU), the data check and the
// clock's drift; rdma_other.go refuses RDMA tests where pkg/verbs is not
// built. The TCP runner (tcp*.go): the TCP tests' ends, connections and
// socket options.
//
// On top, the plan (plan.go): a Request is checked and planned into a Plan,
// one normalized spec per test (and per TCP baseline), which Execute runs
// as many times as asked, with the other end in this process or on a
// Remote server, into one results document; and server.go, which runs the
// server end of tests a client sends (`rdmabench serve`).
package workloads
