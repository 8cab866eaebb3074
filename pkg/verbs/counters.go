package verbs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// sysfsInfiniband is where the kernel shows RDMA devices.
var sysfsInfiniband = "/sys/class/infiniband"

// counterWords begin the words (between underscores) that make a port
// counter an error or retransmission counter: rxe's completer_retry_err,
// rcvd_seq_err, out_of_seq_request, duplicate_request,
// retry_exceeded_err, ...; mlx5's local_ack_timeout_err, packet_seq_err,
// out_of_sequence, rnr_nak_retry_err, ...; the IB port counters'
// symbol_error, port_xmit_discards, VL15_dropped, link_downed, ... (not
// rxe's ack_deferred, nor packet or byte counts).
var counterWords = []string{"retr", "timeout", "seq", "dup", "rnr", "nak", "err", "discard", "drop", "downed"}

// IsErrorCounter reports whether a port counter named name counts errors,
// retransmissions or timeouts.
func IsErrorCounter(name string) bool {
	for _, word := range strings.Split(strings.ToLower(name), "_") {
		for _, w := range counterWords {
			if strings.HasPrefix(word, w) {
				return true
			}
		}
	}
	return false
}

// PortCounters reads the error and retransmission counters of a port (see
// IsErrorCounter) from sysfs: the files of hw_counters (the driver's) and
// counters (the IB port counters), by name. A device that exposes none
// gives an empty map. Equivalent to
// `grep . /sys/class/infiniband/DEV/ports/PORT/{hw_counters,counters}/*`.
func PortCounters(dev string, port int) (map[string]uint64, error) {
	return PortCountersIn(sysfsInfiniband, dev, port)
}

// PortCountersIn is PortCounters reading the device classes under root
// instead of /sys/class/infiniband: a host's sysfs mounted elsewhere, or a
// test's tree.
func PortCountersIn(root, dev string, port int) (map[string]uint64, error) {
	out := map[string]uint64{}
	base := filepath.Join(root, dev, "ports", strconv.Itoa(port))
	if _, err := os.Stat(base); err != nil {
		return nil, err
	}
	// The IB port counters first: a driver's counter of the same name wins.
	for _, dir := range []string{"counters", "hw_counters"} {
		entries, err := os.ReadDir(filepath.Join(base, dir))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() || !IsErrorCounter(e.Name()) {
				continue
			}
			b, err := os.ReadFile(filepath.Join(base, dir, e.Name()))
			if err != nil {
				continue // some counters cannot be read (permissions, unsupported)
			}
			v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			if err != nil {
				continue
			}
			out[e.Name()] = v
		}
	}
	return out, nil
}

// sysfsNet is where the kernel shows network devices.
var sysfsNet = "/sys/class/net"

// CongestionCounters name the port counters that tell of congestion and
// its control (mlx5's ECN marks, CNPs sent and handled, the sequence
// errors that drops leave); a counter whose name holds "pause" (the PFC
// pause frames of the Ethernet device) is one too (see IsCongestionCounter).
var CongestionCounters = []string{"np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored",
	"out_of_sequence", "packet_seq_err"}

// IsCongestionCounter reports whether a counter named name (a port's, or
// its network device's) counts congestion marks, notifications or pauses.
func IsCongestionCounter(name string) bool {
	return slices.Contains(CongestionCounters, name) || strings.Contains(strings.ToLower(name), "pause")
}

// AllPortCounters reads every counter of a port: the files of counters
// (the IB port counters) and hw_counters (the driver's), by name, a
// driver's counter winning over a port counter of the same name, and,
// when netdev is set, the network device's statistics, named
// "netdev:NAME". Equivalent to `grep .
// /sys/class/infiniband/DEV/ports/PORT/{counters,hw_counters}/*
// /sys/class/net/NETDEV/statistics/*`.
func AllPortCounters(dev string, port int, netdev string) (map[string]uint64, error) {
	return AllPortCountersIn(sysfsInfiniband, sysfsNet, dev, port, netdev)
}

// AllPortCountersIn is AllPortCounters reading the device classes under
// ibRoot and netRoot instead of /sys/class/infiniband and /sys/class/net.
func AllPortCountersIn(ibRoot, netRoot, dev string, port int, netdev string) (map[string]uint64, error) {
	out := map[string]uint64{}
	base := filepath.Join(ibRoot, dev, "ports", strconv.Itoa(port))
	if _, err := os.Stat(base); err != nil {
		return nil, err
	}
	dirs := []struct{ dir, prefix string }{{filepath.Join(base, "counters"), ""}, {filepath.Join(base, "hw_counters"), ""}}
	if netdev != "" {
		dirs = append(dirs, struct{ dir, prefix string }{filepath.Join(netRoot, netdev, "statistics"), "netdev:"})
	}
	for _, d := range dirs {
		if err := readCounterDir(d.dir, d.prefix, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readCounterDir adds the counters of dir to out, each name prefixed; a
// dir that does not exist adds none, a counter that cannot be read
// (permissions, unsupported) is left out.
func readCounterDir(dir, prefix string, out map[string]uint64) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			continue
		}
		out[prefix+e.Name()] = v
	}
	return nil
}

// PortNetdev is the network device of a port's first GID (RoCE's), ""
// where there is none (InfiniBand) or sysfs does not say. Equivalent to
// `cat /sys/class/infiniband/DEV/ports/PORT/gid_attrs/ndevs/0`.
func PortNetdev(dev string, port int) string { return PortNetdevIn(sysfsInfiniband, dev, port) }

// PortNetdevIn is PortNetdev reading the device classes under root.
func PortNetdevIn(root, dev string, port int) string {
	b, err := os.ReadFile(filepath.Join(root, dev, "ports", strconv.Itoa(port), "gid_attrs", "ndevs", "0"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
