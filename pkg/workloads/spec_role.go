package workloads

// The two ends of a test, as the spec knows them: which one initiates, what
// each needs in memory.

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
