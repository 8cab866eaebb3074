package workloads

// The two ends of a test, as the spec knows them: the part each plays, and
// the runner that runs them (a test's row names it; each runner's file
// adds its constructor to the engine's table).

// role is the part an end plays. The client drives the test and measures;
// the server answers (ping-pong responder, receiver, passive target) and
// measures its own sending in bidirectional tests.
type role int

// Roles.
const (
	clientEnd role = iota
	serverEnd
)

func (r role) String() string {
	if r == serverEnd {
		return "server"
	}
	return "client"
}

// The runners a test's row may name (TestInfo.Runner).
const (
	runnerRDMA = "rdma" // rdma_*.go, over pkg/verbs
	runnerTCP  = "tcp"  // tcp*.go
)
