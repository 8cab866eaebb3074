package main

import (
	"slices"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/mesh"
	"github.com/rdmabench/rdmabench/pkg/report/render"
	"github.com/rdmabench/rdmabench/pkg/verbs"
	"github.com/rdmabench/rdmabench/pkg/workloads"
	"github.com/spf13/cobra"
)

// localDevices lists the RDMA devices of this host for completion: none
// on a host without verbs or without a device. A variable, so that tests
// can give a list.
var localDevices = func() []string {
	names, err := verbs.DeviceNames()
	if err != nil {
		return nil
	}
	return names
}

// registerCompletions gives the flags of every command under root that
// take one of a known set of values those values for shell completion
// (`rdmabench completion bash`), and mesh's TEST arguments the test names;
// each offers the values that start with what was typed.
func registerCompletions(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		completeFlags(c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// fixed completes one of values that starts with what was typed, with no
// file names.
func fixed(values ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return withPrefix(values, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// withPrefix returns the values that start with prefix.
func withPrefix(values []string, prefix string) []string {
	var out []string
	for _, v := range values {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	return out
}

// testsOf are the names of the tests of metric m, only the RDMA ones
// when rdmaOnly: --load takes the RDMA bandwidth tests, the agent's
// --probe any latency test and --bw-probe any bandwidth test.
func testsOf(m workloads.Metric, rdmaOnly bool) []string {
	var n []string
	for _, t := range workloads.Tests {
		if t.Metric == m && (t.IsRDMA() || !rdmaOnly) {
			n = append(n, t.Name)
		}
	}
	return n
}

// rdmaConnections are the connection types of the RDMA tests, in the
// order the tests name them: what -c takes on a command of several tests.
func rdmaConnections() []string {
	var out []string
	for _, t := range workloads.Tests {
		if !t.IsRDMA() {
			continue
		}
		for _, c := range t.Connections {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// completeDevices completes a local device name; for a flag that takes a
// list (mlx5_0,mlx5_1), the next one of the list, without a space after,
// and "all" first where the flag takes it.
func completeDevices(list, withAll bool) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		directive := cobra.ShellCompDirectiveNoFileComp
		done := ""
		if list {
			directive |= cobra.ShellCompDirectiveNoSpace
			done = toComplete[:strings.LastIndexByte(toComplete, ',')+1]
		}
		names := localDevices()
		if withAll && done == "" {
			names = append([]string{"all"}, names...)
		}
		have := strings.Split(done, ",")
		var out []string
		for _, n := range names {
			if !slices.Contains(have, n) {
				out = append(out, done+n)
			}
		}
		return withPrefix(out, toComplete), directive
	}
}

// completeFlags registers the value completions of c's own flags.
func completeFlags(c *cobra.Command) {
	fs := c.Flags()
	add := func(name string, f cobra.CompletionFunc) {
		if fs.Lookup(name) != nil {
			_ = c.RegisterFlagCompletionFunc(name, f)
		}
	}
	test, isTest := workloads.LookupTest(c.Name())
	switch c.Name() {
	case "compare":
		add("output", fixed(render.CompareFormats...))
	case "mesh":
		add("output", fixed(render.MeshFormats...))
		add("pattern", fixed(mesh.PatternIncast+":", mesh.PatternAllToAll, mesh.PatternBisection))
		c.ValidArgsFunction = func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			var out []string
			for _, n := range testNames() {
				if !slices.Contains(args, n) {
					out = append(out, n)
				}
			}
			return withPrefix(out, toComplete), cobra.ShellCompDirectiveNoFileComp
		}
	case "devices", "version":
		add("output", fixed(plainFormats...))
	case "plot": // -o is a file name
	default:
		add("output", fixed(render.Formats...))
	}
	connections := rdmaConnections()
	if isTest {
		connections = test.Connections
	}
	add("connection", fixed(connections...))
	add("atomic_type", fixed(workloads.FetchAdd, workloads.CmpSwap))
	add("load", fixed(testsOf(workloads.Bandwidth, true)...))
	add("baseline", fixed(baselineTCP))
	add("rate-limiter", fixed(workloads.LimiterSW, workloads.LimiterHW))
	mtus := make([]string, len(workloads.MTUs))
	for i, m := range workloads.MTUs {
		mtus[i] = strconv.Itoa(m)
	}
	add("mtu", fixed(mtus...))
	add("mem", fixed(workloads.MemKinds...))
	if c.Name() == "agent" {
		add("probe", fixed(testsOf(workloads.Latency, false)...))
		add("bw-probe", fixed(testsOf(workloads.Bandwidth, false)...))
	}
	// Test commands, suite and mesh take a list (or all); devices and
	// serve one device.
	list := isTest || c.Name() == "suite" || c.Name() == "mesh"
	// mesh's list gives each rank of a host one device: no "all".
	add("ib-dev", completeDevices(list, list && c.Name() != "mesh"))
	add("server-dev", completeDevices(true, false))
}
