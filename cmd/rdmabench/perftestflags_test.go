package main

import (
	"strings"
	"testing"
)

// perftest's flags that rdmabench does not need or have are refused at
// parse time (exit 2, before anything runs) with what rdmabench does
// instead; its flags spelt perftest's way are answered with their
// spelling.
func TestPerftestFlagsAnswered(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"write-bw", "-F"}, "rdmabench: -F (perftest's --CPU-freq): not needed: rdmabench reads no CPU frequency"},
		{[]string{"write-bw", "-aF", "-d", "rxe0"}, "rdmabench: -F (perftest's --CPU-freq): not needed"},
		{[]string{"write-bw", "--report_gbits"}, "rdmabench: --report_gbits: not needed: rdmabench always reports bits per second"},
		{[]string{"write-bw", "--report_gbits=1"}, "rdmabench: --report_gbits: not needed"},
		{[]string{"write-bw", "-N"}, "rdmabench: -N (perftest's --noPeak): not needed: the BW peak costs the timed loop next to nothing"},
		{[]string{"write-bw", "-b", "--report-both"}, "rdmabench: --report-both: not needed: a bidirectional test (-b) shows each direction"},
		{[]string{"write-bw", "--run_infinitely"}, "rdmabench: --run_infinitely: not supported: run for a duration with -D"},
		{[]string{"send-lat", "-z"}, "rdmabench: -z (perftest's --comm_rdma_cm): not needed"},
		{[]string{"write-bw", "--cpu_util"}, "rdmabench: --cpu_util: rdmabench spells it --cpu-util"},
		{[]string{"send-bw", "--post_list", "4"}, "rdmabench: --post_list: rdmabench spells it --post-list"},
		{[]string{"atomic-bw", "--atomic-type", "CMP_AND_SWAP"}, "rdmabench: --atomic-type: rdmabench spells it --atomic_type"},
		{[]string{"suite", "-W", "x"}, "rdmabench: -W (perftest's --report-counters): not needed"},
		{[]string{"serve", "-F"}, "rdmabench: -F (perftest's --CPU-freq)"},
		{[]string{"write-bw", "--dest_mac", "x"}, "rdmabench: --dest_mac: not supported: rdmabench has no raw Ethernet tests"},
		// Others keep cobra's word, and rdmabench's own flags their own.
		{[]string{"write-bw", "--frobnicate"}, "rdmabench: unknown flag: --frobnicate"},
		{[]string{"report", "-F"}, "rdmabench: unknown shorthand flag: 'F' in -F"},
		{[]string{"write-lat", "-r", "8"}, "rdmabench: --rx-depth does not apply to write-lat"},
	} {
		stdout, stderr, code := cli(t, c.args...)
		if code != exitUsage || stdout != "" {
			t.Errorf("%q: exit %d with stdout %q, want exit %d and nothing run", c.args, code, stdout, exitUsage)
		}
		if !strings.HasPrefix(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: stderr %q, want one line starting %q", c.args, stderr, c.want)
		}
	}
}

// Every letter the table answers is one rdmabench leaves free: none
// shadows a flag of its own.
func TestPerftestFlagsFree(t *testing.T) {
	root := newRoot(nil, nil, nil)
	for _, name := range []string{"write-bw", "send-bw", "write-lat", "suite", "serve", "mesh"} {
		cmd, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range perftestFlags {
			if fl := cmd.Flags().Lookup(p.long); fl != nil {
				t.Errorf("%s has --%s, which the table answers as perftest's", name, p.long)
			}
			if p.short != "" && cmd.Flags().ShorthandLookup(p.short) != nil {
				t.Errorf("%s has -%s, which the table answers as perftest's --%s", name, p.short, p.long)
			}
		}
	}
}
