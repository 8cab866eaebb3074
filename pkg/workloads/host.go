package workloads

import (
	"bufio"
	"os"
	"runtime"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// LocalHost describes this host: name, kernel, OS, CPU model and count.
func LocalHost() report.Host {
	h := report.Host{OS: runtime.GOOS + "/" + runtime.GOARCH, CPUs: runtime.NumCPU()}
	h.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return h
}

// PortCounters are the error and traffic counters of a device's port, as
// a test records them before and after it runs (verbs.PortCounters): for a
// part that watches a port between tests.
func PortCounters(dev string, port int) (map[string]uint64, error) {
	return verbs.PortCounters(dev, port)
}

// LocalDevices lists this host's RDMA devices and ports with their GIDs,
// as a mesh rank registers them; none on a host (or build) without verbs.
func LocalDevices() []report.MeshDevice {
	devs, err := verbs.Devices()
	if err != nil {
		return nil
	}
	var out []report.MeshDevice
	for _, d := range devs {
		for _, p := range d.Ports {
			md := report.MeshDevice{Name: d.Name, Port: p.Port, State: p.State.String(), LinkLayer: string(p.LinkLayer)}
			for _, g := range p.GIDs {
				md.GIDs = append(md.GIDs, report.MeshGID{Index: g.Index, GID: g.GID.String(), Type: g.Type.String(), Netdev: g.Netdev})
			}
			out = append(out, md)
		}
	}
	return out
}

// AllPortCounters are every counter of a device's port and of its network
// device netdev (if any), named "netdev:NAME" (verbs.AllPortCounters): a
// mesh step's counters before and after its load.
// An empty netdev is the port's own, as sysfs says it.
func AllPortCounters(dev string, port int, netdev string) (map[string]uint64, error) {
	if netdev == "" {
		netdev = verbs.PortNetdev(dev, port)
	}
	return verbs.AllPortCounters(dev, port, netdev)
}
