package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/verbs"
	"github.com/rdmabench/rdmabench/pkg/workloads"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// complete runs cobra's hidden __complete command through run, as the
// shell scripts of `rdmabench completion` do, and returns the values
// offered and the directive line.
func complete(t *testing.T, args ...string) (values []string, directive string) {
	t.Helper()
	out, stderr, code := cli(t, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %q: exit %d: %s", args, code, stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, ":") {
			directive = line
		} else if line != "" {
			values = append(values, strings.SplitN(line, "\t", 2)[0])
		}
	}
	return values, directive
}

// TestCompleteFlagValues: the flags that take one of a known set offer
// it, as the command they are on takes it, and no file names.
func TestCompleteFlagValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"write-lat", "-o", ""}, []string{"table", "json", "csv", "markdown", "gobench", "github-action-benchmark-latency", "github-action-benchmark-bandwidth", "openmetrics"}},
		{[]string{"report", "x.json", "-o", "o"}, []string{"openmetrics"}},
		{[]string{"suite", "--output", "mark"}, []string{"markdown"}},
		{[]string{"compare", "-o", ""}, []string{"table", "markdown", "json"}},
		{[]string{"mesh", "-o", ""}, []string{"table", "markdown", "csv", "json"}},
		{[]string{"devices", "-o", ""}, []string{"table", "json"}},
		{[]string{"version", "-o", ""}, []string{"table", "json"}},
		{[]string{"write-lat", "-c", ""}, []string{"RC", "UC"}},
		{[]string{"read-bw", "-c", ""}, []string{"RC"}},
		{[]string{"send-lat", "--connection", ""}, []string{"RC", "UC", "UD"}},
		{[]string{"suite", "-c", ""}, []string{"RC", "UC", "UD"}},
		{[]string{"atomic-lat", "-A", ""}, []string{"FETCH_AND_ADD", "CMP_AND_SWAP"}},
		{[]string{"atomic-bw", "--atomic_type", "C"}, []string{"CMP_AND_SWAP"}},
		{[]string{"write-lat", "--load", ""}, []string{"write-bw", "read-bw", "send-bw", "atomic-bw"}},
		{[]string{"read-lat", "--baseline", ""}, []string{"tcp"}},
		{[]string{"write-bw", "--rate-limiter", ""}, []string{"sw", "hw"}},
		{[]string{"mesh", "write-lat", "tcp"}, []string{"tcp-lat", "tcp-bw"}},
		{[]string{"write-lat", "--mem", ""}, []string{"host", "hugepages", "hugepages:1G", "cuda"}},
		{[]string{"suite", "--mem", "h"}, []string{"host", "hugepages", "hugepages:1G"}},
		{[]string{"mesh", "--mem", "hugepages"}, []string{"hugepages", "hugepages:1G"}},
		{[]string{"write-bw", "-m", ""}, []string{"256", "512", "1024", "2048", "4096"}},
		{[]string{"mesh", "-c", ""}, []string{"RC", "UC", "UD"}},
		{[]string{"agent", "--probe", ""}, []string{"write-lat", "read-lat", "send-lat", "atomic-lat", "tcp-lat"}},
		{[]string{"agent", "--bw-probe", ""}, []string{"write-bw", "read-bw", "send-bw", "atomic-bw", "tcp-bw"}},
	} {
		got, dir := complete(t, tc.args...)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.args, got, tc.want)
		}
		if !strings.Contains(dir, ":4") { // ShellCompDirectiveNoFileComp
			t.Errorf("%q: directive %s, want :4 (no file names)", tc.args, dir)
		}
	}
	// plot's -o is a file name: no values, file completion left on.
	if got, dir := complete(t, "plot", "x.json", "-o", ""); len(got) != 0 || dir != ":0" {
		t.Errorf("plot -o: %q %s", got, dir)
	}
}

// TestCompleteDevices: -d offers the devices of the local device list;
// where a command takes a list, "all" and the next device of a list.
func TestCompleteDevices(t *testing.T) {
	real := localDevices
	t.Cleanup(func() { localDevices = real })
	localDevices = func() []string { return []string{"mlx5_0", "mlx5_1", "rxe0"} }
	for _, tc := range []struct {
		args []string
		want []string
		dir  string
	}{
		{[]string{"devices", "-d", ""}, []string{"mlx5_0", "mlx5_1", "rxe0"}, ":4"},
		{[]string{"serve", "--ib-dev", ""}, []string{"mlx5_0", "mlx5_1", "rxe0"}, ":4"},
		{[]string{"write-bw", "-d", ""}, []string{"all", "mlx5_0", "mlx5_1", "rxe0"}, ":6"},
		{[]string{"write-bw", "-d", "mlx5_0,"}, []string{"mlx5_0,mlx5_1", "mlx5_0,rxe0"}, ":6"},
		{[]string{"write-lat", "-d", "mlx5_1,r"}, []string{"mlx5_1,rxe0"}, ":6"},
		{[]string{"suite", "--server-dev", ""}, []string{"mlx5_0", "mlx5_1", "rxe0"}, ":6"},
	} {
		got, dir := complete(t, tc.args...)
		if !slices.Equal(got, tc.want) || dir != tc.dir {
			t.Errorf("%q: %q %s, want %q %s", tc.args, got, dir, tc.want, tc.dir)
		}
	}
	// The real list: this host's devices, none without verbs or a device.
	localDevices = real
	t.Run("this host's devices", func(t *testing.T) {
		names, err := verbs.DeviceNames()
		got, _ := complete(t, "devices", "-d", "")
		if err != nil && len(got) != 0 {
			t.Errorf("devices cannot be listed (%v), yet completion offers %q", err, got)
		}
		if err == nil && !slices.Equal(got, names) {
			t.Errorf("completion offers %q, the host has %q", got, names)
		}
		if len(names) == 0 {
			t.Skip("no RDMA device to list (run under scripts/vm.sh)")
		}
	})
}

// freeFlags are the flags whose values are no fixed set, by the type their
// help names (a number, a duration, a size ...) or, for strings, by name:
// every other flag that takes a value must complete its values. A new
// flag of a fixed set therefore fails TestEveryFixedFlagCompletes until it
// completes them, or is named here as free.
var (
	freeTypes = []string{"int", "uint", "float", "duration", "seconds", "size", "sizes", "bytes",
		"percent", "ratio", "rate", "latency", "cores"}
	freeStrings = []string{
		"listen", "metrics-listen", "advertise", "coordinator", "host", "token", // addresses, names, secrets
		"peers",                    // a file, dns:NAME, srv:NAME or mesh:HOST
		"out", "pairs", "topology", // files
		"plot/output",          // plot's -o is the HTML file
		"ib-dev", "server-dev", // devices: TestCompleteDevices
	}
)

// TestEveryFixedFlagCompletes: every flag of every command that takes a
// value either completes it (a fixed set, or the devices) or is a free
// value by its type or name (freeFlags); and each completion's values are
// ones the command takes (--mem's, checked here by ParseMem; the others
// come from the very lists the flags' checks read).
func TestEveryFixedFlagCompletes(t *testing.T) {
	root := newRoot(&bytes.Buffer{}, &bytes.Buffer{}, nil)
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() == "bool" || f.Name == "help" {
				return
			}
			_, completes := c.GetFlagCompletionFunc(f.Name)
			typ, _ := pflag.UnquoteUsage(f)
			free := slices.Contains(freeTypes, typ) ||
				slices.Contains(freeStrings, f.Name) || slices.Contains(freeStrings, c.Name()+"/"+f.Name)
			if !completes && !free {
				t.Errorf("%s --%s (%s): no completion of its values, and not a free value (freeFlags)", c.CommandPath(), f.Name, typ)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)

	for _, m := range workloads.MemKinds {
		if _, err := workloads.ParseMem(m); err != nil {
			t.Errorf("--mem %s offered, refused: %v", m, err)
		}
	}
}
