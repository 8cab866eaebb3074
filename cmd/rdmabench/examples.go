package main

import (
	"strings"

	"github.com/rdmabench/rdmabench/pkg/workloads"
	"github.com/spf13/cobra"
)

// testExample is the Example of a test command: this host first, then
// against a server, then a run that a CI job gates on; each line under
// 80 columns, a comment above each command.
func testExample(t workloads.TestInfo) string {
	n := t.Name
	local := []string{"on this host's first device, over its loopback", ""}
	var l []string
	switch {
	case t.Op == workloads.OpTCP && t.Metric == workloads.Latency:
		l = []string{
			"against rdmabench serve on node-b", "node-b",
			"sizes 64 B and 4 KiB, 100000 round trips each, into a JSON file", "node-b -s 64,4K -n 100000 --out tcp-lat.json",
			"over this host's loopback; exit status 3 when the p99 is over 100 µs", "--loopback --limit-p99 100us",
		}
	case t.Op == workloads.OpTCP:
		l = []string{
			"against rdmabench serve on node-b", "node-b",
			"10 s, a figure every second; exit status 3 under 9 Gbit/s", "node-b -D 10 --limit-bw 9Gbps",
		}
	case t.Op == workloads.OpAtomic && t.Metric == workloads.Latency:
		l = append(local,
			"compare-and-swap against rdmabench serve on node-b", "node-b -d mlx5_0 -A CMP_AND_SWAP",
			"exit status 3 when the p99 is over 10 µs", "-n 100000 --limit-p99 10us --out "+n+".json",
		)
	case t.Op == workloads.OpAtomic:
		l = append(local,
			"compare-and-swap over 4 QPs against rdmabench serve on node-b", "node-b -d mlx5_0 -q 4 -A CMP_AND_SWAP",
			"10 s; exit status 3 under 5 million operations per second", "node-b -D 10 --limit-msg-rate 5M",
		)
	case t.Metric == workloads.Latency:
		l = append(local,
			"against rdmabench serve on node-b, sizes 2 B to 4 KiB", "node-b -d mlx5_0 -s 2..4K",
			"with write-bw on 4 QPs of its own running beside it", "node-b --load write-bw --load-qps 4",
			"exit status 3 when the p99 is over 5 µs", "-n 100000 --limit-p99 5us --out "+n+".json",
		)
		if t.Op == workloads.OpSend {
			l = append(l, "unreliable datagrams (UD), sizes 2 B to 1 KiB", "node-b -c UD -s 2..1K")
		}
	default:
		l = append(local,
			"every size from 2 B to 8 MiB over 4 QPs, against rdmabench serve on node-b", "node-b -d mlx5_0 -q 4 -a",
			"both directions for 10 s; exit status 3 under 90% of the link's rate", "node-b -D 10 -b --limit-bw 90%link",
		)
	}
	var b strings.Builder
	for i := 0; i+1 < len(l); i += 2 {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("  # " + l[i] + "\n  " + strings.TrimSpace("rdmabench "+n+" "+l[i+1]))
	}
	return b.String()
}

// cobraExamples gives the commands cobra adds (help, completion and its
// shells) an Example, as every other command has.
func cobraExamples(root *cobra.Command) {
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Example = "  rdmabench help write-lat\n  rdmabench help completion bash"
		case "completion":
			c.Example = "  source <(rdmabench completion bash)\n  rdmabench completion zsh > \"${fpath[1]}/_rdmabench\""
			for _, sh := range c.Commands() {
				switch sh.Name() {
				case "bash":
					sh.Example = "  source <(rdmabench completion bash)\n  rdmabench completion bash > /etc/bash_completion.d/rdmabench"
				case "zsh":
					sh.Example = "  rdmabench completion zsh > \"${fpath[1]}/_rdmabench\""
				case "fish":
					sh.Example = "  rdmabench completion fish > ~/.config/fish/completions/rdmabench.fish"
				case "powershell":
					sh.Example = "  rdmabench completion powershell | Out-String | Invoke-Expression"
				}
			}
		}
	}
}
