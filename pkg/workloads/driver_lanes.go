package workloads

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// A test may run several ends at once on each side, one per lane: one per
// device (-d A,B), and beside each latency end the end of its background
// load (--load). Every lane is a whole end (runEnd) with a Link of its
// own, multiplexed over the test's one transport; both sides derive the
// same lanes from the spec. On the client, the lanes of the devices start
// each size together, the latency waits for its load to be sending, and
// the results of a size on every device become one result (their sum).

// laneKind is what a lane runs.
type laneKind int

const (
	mainLane laneKind = iota // the test itself, on one device
	loadLane                 // the load of the main lane of its device
)

// lane is one end of a test on one side.
type lane struct {
	kind   laneKind
	dev    int // index of its device in the client's list
	spec   Spec
	device string // this side's device ("": the first)
	peer   string // the other side's device, for the record
}

// laneCount is the number of lanes of a spec, on either side.
func laneCount(s *Spec) int {
	n := max(1, len(splitDevices(s.Device)))
	if s.Load != nil {
		n *= 2
	}
	return n
}

// planLanes derives this side's lanes from the normalized spec. The
// client's devices are its list (-d); the server pairs them one by one
// with the client's --server-dev, else its own -d (o.device), else, for
// several, every device it has.
func planLanes(s *Spec, r role, o endOptions) ([]lane, error) {
	devs := splitDevices(s.Device)
	if len(devs) == 0 {
		devs = []string{""}
	}
	// The server's devices: as the client asks (--server-dev), else its
	// own -d (the first of them for one device), else, for several, every
	// one it has. The client records what it asked for.
	sdevs := splitDevices(s.ServerDevice)
	if r == serverEnd {
		own := len(sdevs) == 0
		if own {
			sdevs = splitDevices(o.device)
		}
		if slices.Equal(sdevs, []string{"all"}) || (len(sdevs) == 0 && len(devs) > 1) {
			names, err := verbs.DeviceNames()
			if err != nil {
				return nil, err
			}
			sdevs = names
		}
		if own && len(devs) == 1 && len(sdevs) > 1 {
			sdevs = sdevs[:1]
		}
	} else if slices.Equal(sdevs, []string{"all"}) || len(sdevs) != len(devs) {
		sdevs = nil
	}
	if len(sdevs) == 0 {
		sdevs = make([]string, len(devs))
	}
	if len(sdevs) != len(devs) {
		return nil, fmt.Errorf("the client runs on %d devices (%s), the server has %d to pair them with (%s): give --server-dev with %d",
			len(devs), strings.Join(devs, ","), len(sdevs), strings.Join(sdevs, ","), len(devs))
	}
	if len(devs) == 1 && s.Load == nil {
		l := lane{spec: *s, device: devs[0], peer: sdevs[0]}
		if r == serverEnd {
			l.device, l.peer = sdevs[0], devs[0]
		}
		return []lane{l}, nil
	}
	var lanes []lane
	for i := range devs {
		main := *s
		main.Device, main.ServerDevice, main.Load = devs[i], sdevs[i], nil
		l := lane{kind: mainLane, dev: i, spec: main, device: devs[i], peer: sdevs[i]}
		if r == serverEnd {
			l.device, l.peer = sdevs[i], devs[i]
		}
		lanes = append(lanes, l)
	}
	if s.Load != nil {
		for i := range devs {
			ld := loadSpec(s, lanes[i].spec)
			lanes = append(lanes, lane{kind: loadLane, dev: i, spec: ld, device: lanes[i].device, peer: lanes[i].peer})
		}
	}
	return lanes, nil
}
