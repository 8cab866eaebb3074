package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rdmabench/rdmabench/pkg/settings"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// perftest's flags that rdmabench does not have, typed by habit: each is
// refused (exit status 2) with what rdmabench does instead, at parse time,
// before anything runs. A perftest flag rdmabench has under another
// spelling (--cpu_util, --post_list, ...) is answered with its spelling.

// perftestFlag is a flag of perftest's (ib_write_bw and the others) that
// rdmabench does not take.
type perftestFlag struct {
	long  string // perftest's long name
	short string // its letter, "" for none
	say   string // what rdmabench does instead
}

// perftestFlags are those of perftest's flags that rdmabench lacks, by
// perftest's long name, with their letters; rdmabench's own letters that
// perftest uses otherwise never reach them (-o is the output format, -r
// the receive depth).
var perftestFlags = []perftestFlag{
	{"CPU-freq", "F", "not needed: rdmabench reads no CPU frequency, so it has no such warning to ignore: its loops time " +
		"with the TSC calibrated against CLOCK_MONOTONIC, or with CLOCK_MONOTONIC itself (the header's clock line says which)"},
	{"report_gbits", "", "not needed: rdmabench always reports bits per second, with MiB/s beside them: Gbit/s in JSON " +
		"(bw_gbps), and in the table the unit its BW column's largest figure takes (Gbit/s on a NIC)"},
	{"noPeak", "N", "not needed: the BW peak costs the timed loop next to nothing (it notes where it stands after a poll " +
		"now and then, keeping 256 such checkpoints), so there is nothing to switch off"},
	{"report-both", "", "not needed: a bidirectional test (-b) shows each direction under their sum, and the JSON has " +
		"both (bandwidth, reverse, total)"},
	{"run_infinitely", "", "not supported: run for a duration with -D SECONDS (a row every --interval), or watch links " +
		"for good with rdmabench agent"},
	{"comm_rdma_cm", "z", "not needed: the two ends talk over rdmabench's own control connection (TCP, -p); -R " +
		"connects the QPs with rdma_cm"},
	{"report-cycles", "C", "not supported: latencies are in ns and µs, from the loops' clock calibrated to ns (the " +
		"header's clock line); -o json has every figure in ns"},
	{"report-histogrm", "H", "not needed: each latency result carries its whole HdrHistogram (-o json: " +
		"latency.histogram) and rdmabench plot draws it"},
	{"report-unsorted", "U", "not supported: samples go into an HdrHistogram, not a list; -D shows the figures of " +
		"each interval"},
	{"version", "V", "use rdmabench --version (or rdmabench version)"},
	{"dualport", "O", "not supported: rdmabench runs one port per device; -d A,B runs on several devices at once"},
	{"limit_bw", "w", "use --limit-bw RATE, with its unit (90Gbps, 12GB/s) or a share of the link (90%link): exit " +
		"status 3 below it"},
	{"limit_msgrate", "y", "use --limit-msg-rate RATE (10M): exit status 3 below it"},
	{"report-counters", "W", "not needed: rdmabench reads each end's port error and retransmission counters itself " +
		"(port_counters in JSON; the table lists those that moved)"},
	{"mcg", "g", "not supported: rdmabench has no multicast test"},
	{"MGID", "M", "not supported: rdmabench has no multicast test"},
	{"vector", "X", "not supported: rdmabench does not choose the completion vector"},
	{"outs", "", "not supported: READs and atomics keep as many outstanding as both devices allow (effective.max_rd_atomic " +
		"in JSON)"},
	{"margin", "f", "not needed: a warm-up (--warmup) runs before the measured period instead of a margin cut from it"},
	{"server", "Z", "not needed: rdmabench serve is the server, a test command given HOST the client"},
	{"client", "P", "not needed: a test command given HOST is the client of rdmabench serve on HOST"},
	{"tos", "", "use -" + settings.DSCP.Of.Short + "/--" + settings.DSCP.Of.Key + " (the IP header's DS field on RoCE v2, IP_TOS on TCP) or --" + settings.DSCP.Key},
	{"reversed", "", "rdmabench spells it --reverse"},
	{"use_hugepages", "", "use --mem hugepages (or hugepages:1G)"},
	{"use_cuda", "", "use --mem cuda[:GPU] (GPU an index or a PCI bus id)"},
	{"use_cuda_bus_id", "", "use --mem cuda:BUS_ID"},
	{"use_cuda_dmabuf", "", "not needed: --mem cuda registers GPU memory through dma-buf where the driver has it"},
	{"out_json", "", "use -o json (or --out FILE, written as the run goes)"},
	{"out_json_file", "", "use --out FILE.json"},
	{"use-srq", "", "not supported: each QP has its own receive queue"},
	{"rate_limit_type", "", "use --rate-limiter sw|hw"},
	{"rate_units", "", "not needed: --rate-limit takes its unit: 5Gbps, 800Mbps, 1GB/s or 2Mpps"},
	{"dont_xchg_versions", "", "not needed: both ends say their versions when they meet, and a mismatch is an error naming both"},
	{"force-link", "", "not needed: the link layer is the port's (rdmabench devices shows it)"},
}

// perftestRawEthernet are the letters and names of perftest's raw
// Ethernet tests' flags.
var perftestRawEthernet = []string{"source_mac", "B", "dest_mac", "E", "dest_ip", "J", "source_ip", "j", "dest_port", "K",
	"source_port", "k", "ethertype", "Y", "mac_fwd", "v", "use_rss", "G", "remote_mac", "local_mac", "remote_ip", "local_ip",
	"remote_port", "local_port"}

// perftestCommand tells whether a command's flags mirror perftest's: a
// test's, the suite's, the server's and the mesh's.
func perftestCommand(name string) bool {
	if slices.Contains([]string{"suite", "serve", "mesh"}, name) {
		return true
	}
	_, ok := workloads.LookupTest(name)
	return ok
}

// perftestHint answers a flag cmd does not have, its long name or its
// letter (short), where the flag is perftest's: with what rdmabench does
// instead, or its spelling of the same flag. nil for any other flag.
func perftestHint(cmd *cobra.Command, long, short string) error {
	if long != "" {
		if fl := respelt(cmd.Flags(), long); fl != nil {
			return fmt.Errorf("--%s: rdmabench spells it --%s", long, fl.Name)
		}
	}
	if !perftestCommand(cmd.Name()) {
		return nil
	}
	for _, p := range perftestFlags {
		switch {
		case long != "" && strings.EqualFold(long, p.long):
			return fmt.Errorf("--%s: %s", long, p.say)
		case short != "" && short == p.short:
			return fmt.Errorf("-%s (perftest's --%s): %s", short, p.long, p.say)
		}
	}
	if name := long + short; slices.Contains(perftestRawEthernet, name) {
		return fmt.Errorf("%s: not supported: rdmabench has no raw Ethernet tests", dashed(long, short))
	}
	return nil
}

// respelt is the flag of fs that name means, spelt with hyphens for
// underscores or the other way round (perftest mixes both: --cpu_util,
// --post_list, --atomic_type); nil when there is none.
func respelt(fs *pflag.FlagSet, name string) *pflag.Flag {
	for _, alt := range []string{strings.ReplaceAll(name, "_", "-"), strings.ReplaceAll(name, "-", "_")} {
		if alt == name {
			continue
		}
		if fl := fs.Lookup(alt); fl != nil {
			return fl
		}
	}
	return nil
}

func dashed(long, short string) string {
	if long != "" {
		return "--" + long
	}
	return "-" + short
}
