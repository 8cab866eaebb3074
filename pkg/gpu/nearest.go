package gpu

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// sysfsPCI is where sysfs lists PCI devices (a variable for tests).
var sysfsPCI = "/sys/bus/pci/devices"

// NICPCI is the PCI address of RDMA device dev ("0000:3b:00.0"), from
// /sys/class/infiniband/DEV/device; empty when it has none (Soft-RoCE).
func NICPCI(dev string) string {
	p, err := filepath.EvalSymlinks(filepath.Join("/sys/class/infiniband", dev, "device"))
	if err != nil || !strings.Contains(p, "/pci") {
		return ""
	}
	return filepath.Base(p)
}

// Nearest picks, of the GPUs at PCI addresses gpus (by index), the one
// nearest the NIC at PCI address nic: the longest shared PCI path (the
// same switch before the same root port before the same root complex),
// then the same NUMA node, then the lowest index. It says why.
func Nearest(nic string, gpus []string) (int, string) {
	if len(gpus) == 0 {
		return 0, "the first GPU"
	}
	if nic == "" {
		return 0, "the first GPU (the NIC has no PCI device to be near)"
	}
	nicPath := pciPath(nic)
	nicNode := numaNode(nic)
	best, bestScore := 0, -1
	for i, g := range gpus {
		if g == "" {
			continue
		}
		score := 2 * sharedPrefix(nicPath, pciPath(g))
		if n := numaNode(g); n >= 0 && n == nicNode {
			score++
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return best, fmt.Sprintf("nearest the NIC (%s) on the PCI tree: GPU %d at %s", nic, best, gpus[best])
}

// pciPath is the device's path from its root complex: the PCI addresses
// of the bridges above it, then its own.
func pciPath(addr string) []string {
	p, err := filepath.EvalSymlinks(filepath.Join(sysfsPCI, normalBusID(addr)))
	if err != nil {
		return []string{addr}
	}
	var out []string
	for _, part := range strings.Split(p, "/") {
		if strings.HasPrefix(part, "pci") || strings.Count(part, ":") == 2 {
			out = append(out, part)
		}
	}
	return out
}

func numaNode(addr string) int {
	b, err := os.ReadFile(filepath.Join(sysfsPCI, normalBusID(addr), "numa_node"))
	if err != nil {
		return -1
	}
	var n int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &n); err != nil {
		return -1
	}
	return n
}

// normalBusID writes a PCI address as sysfs names it: 0000:3b:00.0, lower
// case (CUDA writes 00000000:3B:00.0).
func normalBusID(a string) string {
	a = strings.ToLower(a)
	if parts := strings.Split(a, ":"); len(parts) == 3 && len(parts[0]) > 4 {
		parts[0] = parts[0][len(parts[0])-4:]
		a = strings.Join(parts, ":")
	}
	return a
}

func sharedPrefix(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
