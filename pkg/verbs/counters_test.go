package verbs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestPortCounters reads a fake sysfs laid out as rxe's and an IB NIC's.
func TestPortCounters(t *testing.T) {
	root := t.TempDir()
	write := func(rel, v string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("rxe0/ports/1/hw_counters/completer_retry_err", "12\n")
	write("rxe0/ports/1/hw_counters/rcvd_seq_err", "3\n")
	write("rxe0/ports/1/hw_counters/sent_pkts", "999\n")  // traffic, not an error
	write("rxe0/ports/1/hw_counters/lifespan", "12\n")    // a setting
	write("rxe0/ports/1/hw_counters/ack_deferred", "7\n") // not an error
	write("rxe0/ports/1/hw_counters/duplicate_request", "junk\n")
	write("mlx5_0/ports/1/counters/port_rcv_errors", "1\n")
	write("mlx5_0/ports/1/counters/link_downed", "2\n")
	write("mlx5_0/ports/1/hw_counters/local_ack_timeout_err", "5\n")
	write("mlx5_0/ports/1/hw_counters/link_downed", "4\n") // the driver's wins
	write("none/ports/1/state", "4: ACTIVE\n")
	old := sysfsInfiniband
	sysfsInfiniband = root
	t.Cleanup(func() { sysfsInfiniband = old })

	got, err := PortCounters("rxe0", 1)
	if err != nil || len(got) != 2 || got["completer_retry_err"] != 12 || got["rcvd_seq_err"] != 3 {
		t.Fatalf("rxe0: %v, %v", got, err)
	}
	got, err = PortCounters("mlx5_0", 1)
	if err != nil || len(got) != 3 || got["port_rcv_errors"] != 1 || got["link_downed"] != 4 || got["local_ack_timeout_err"] != 5 {
		t.Fatalf("mlx5_0: %v, %v", got, err)
	}
	if got, err := PortCounters("none", 1); err != nil || len(got) != 0 {
		t.Fatalf("a port without counters: %v, %v", got, err)
	}
	if _, err := PortCounters("rxe9", 1); err == nil {
		t.Fatal("a missing device: no error")
	}
}

func TestIsErrorCounter(t *testing.T) {
	for name, want := range map[string]bool{
		"completer_retry_err": true, "rcvd_seq_err": true, "out_of_seq_request": true, "duplicate_request": true,
		"retry_exceeded_err": true, "retry_rnr_exceeded_err": true, "send_err": true, "link_downed": true,
		"local_ack_timeout_err": true, "out_of_sequence": true, "rnr_nak_retry_err": true, "symbol_error": true,
		"port_xmit_discards": true, "VL15_dropped": true, "port_rcv_errors": true,
		"ack_deferred": false, "sent_pkts": false, "rcvd_pkts": false, "rdma_sends": false, "lifespan": false,
		"port_xmit_data": false, "rx_write_requests": false,
	} {
		if got := IsErrorCounter(name); got != want {
			t.Errorf("IsErrorCounter(%q) = %v", name, got)
		}
	}
}

// TestAllPortCounters reads every counter of a fake sysfs: the port's,
// the driver's and the network device's, named apart.
func TestAllPortCounters(t *testing.T) {
	ib, net := t.TempDir(), t.TempDir()
	write := func(root, rel, v string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(ib, "mlx5_0/ports/1/counters/port_xmit_data", "1000\n")
	write(ib, "mlx5_0/ports/1/counters/link_downed", "2\n")
	write(ib, "mlx5_0/ports/1/hw_counters/np_cnp_sent", "7\n")
	write(ib, "mlx5_0/ports/1/hw_counters/link_downed", "4\n") // the driver's wins
	write(ib, "mlx5_0/ports/1/hw_counters/broken", "junk\n")
	write(net, "eth0/statistics/rx_bytes", "55\n")
	write(net, "eth0/statistics/tx_pause_frames", "3\n")
	got, err := AllPortCountersIn(ib, net, "mlx5_0", 1, "eth0")
	want := map[string]uint64{"port_xmit_data": 1000, "link_downed": 4, "np_cnp_sent": 7, "netdev:rx_bytes": 55, "netdev:tx_pause_frames": 3}
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%v, %v; want %v", got, err, want)
	}
	if got, err := AllPortCountersIn(ib, net, "mlx5_0", 1, "eth9"); err != nil || len(got) != 3 {
		t.Errorf("a netdev without statistics: %v, %v", got, err)
	}
	write(ib, "rxe0/ports/1/gid_attrs/ndevs/0", "dummy0\n")
	if got := PortNetdevIn(ib, "rxe0", 1); got != "dummy0" {
		t.Errorf("PortNetdevIn: %q", got)
	}
	if got := PortNetdevIn(ib, "mlx5_0", 1); got != "" {
		t.Errorf("PortNetdevIn of a port without GID attributes: %q", got)
	}
	if _, err := AllPortCountersIn(ib, net, "mlx5_9", 1, ""); err == nil {
		t.Error("a missing device: no error")
	}
	for name, want := range map[string]bool{"np_ecn_marked_roce_packets": true, "rp_cnp_handled": true, "netdev:rx_pause_ctrl_phy": true,
		"tx_pause_frames": true, "sent_pkts": false, "rcvd_seq_err": false} {
		if IsCongestionCounter(name) != want {
			t.Errorf("IsCongestionCounter(%s) != %v", name, want)
		}
	}
}
