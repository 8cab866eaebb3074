// Package watch is the long-running mode of rdmabench (`rdmabench
// agent`): one process per host (or per NIC) that serves tests as
// `rdmabench serve` does (pkg/remote) and, all the while, probes its
// peers with a small latency test at a bounded rate, exporting what it
// measures as OpenMetrics text for Prometheus to scrape.
//
// Peers come from a file (ParsePeers), re-read while the agent runs, or
// from the addresses of a DNS name (Config.PeersDNS: a Kubernetes headless
// Service's) or the targets and ports of a name's SRV records
// (Config.PeersSRV), looked up while it runs, or from the registrations of
// a registry (Config.PeersMesh: an agent with Config.Registry, which keeps
// the registrations of the agents that register on its test server,
// control.Registry), registered with and read while it runs, so that
// peers that appear or vanish are picked up without a restart (--peers
// says which, ParsePeerSource, and Config.SetPeers sets it); a file
// that cannot be read or parsed, a name that does not resolve, or a
// registry that cannot be reached or refuses the registration, is a named
// error in the log and in the metrics, and the last good set is kept. Probes go round-robin over the
// peers at Config.Rate probes per second in all (each slot at a random
// time within its period: slots.go), so every peer is probed once every
// len(peers)/Rate seconds. Each probe is one workloads run of
// the probe test (write-lat by default, any latency test allowed) at one
// size and a few iterations, against the peer's test server, over a
// control connection kept open between probes while the peers are few.
//
// Every Config.BlameEvery the agent judges its peers' recent p50 with the
// mesh's rules (blame.Judge) over its own links only: a local view, in
// which a peer is slow when its p50 is bad against this agent's other
// peers. Every link of that view has this agent at one end, so it cannot
// tell that this agent itself is slow: that takes the fleet's view (the
// peers' own agents, compared across hosts in Prometheus, or a mesh).
//
// Memory is bounded: per peer one histogram of fixed buckets, a few
// counters and a ring of recent p50s, and at most Config.MaxPeers peers.
package watch
