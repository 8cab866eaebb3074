package verbs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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
