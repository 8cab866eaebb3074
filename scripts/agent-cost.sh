#!/usr/bin/env bash
# What a probe of `rdmabench agent` costs on this host: two agents on
# loopback probe each other with tcp-lat (or --probe TEST on the first
# RDMA device) at RATE probes/s each for SECONDS, then the script reads
# each agent's CPU time (utime + stime, /proc/PID/stat), resident memory
# (VmRSS) and its good probes (from its /metrics) and prints, per agent,
# CPU ms per probe. An agent both probes its peer and serves the peer's
# probes, so the figure is a probe's cost at both ends. One-host figures:
# loopback, no NIC, the two agents sharing the host's cores.
#
# The last line, "both:", adds the two agents up: CPU ms per good probe
# (both ends of a probe together: the two agents' CPU over the good probes
# either did) and the probes done over those asked (RATE per agent).
#
# Usage: scripts/agent-cost.sh [--rate R] [--seconds S] [--probe TEST] [--iters N] [--bin PATH] [-- AGENT_FLAGS...]
#   defaults: --rate 10 --seconds 30 --probe tcp-lat --iters 10, the
#   rdmabench built from this tree; --bin runs another build (an older
#   one, for a before-and-after: scripts/agent-cost-ab.sh); flags after
#   -- go to both agents (e.g. --keep=false).
set -euo pipefail
rb_prog=agent-cost.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
cd "$here/.."

rate=10 seconds=30 probe=tcp-lat iters=10 bin=
extra=()
while (($#)); do
	case $1 in
	--bin) bin=$2; shift 2 ;;
	--) shift; extra=("$@"); break ;;
	--rate) rate=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--probe) probe=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	*) rb_die "unknown argument $1 (see the header of $0)" ;;
	esac
done
rb_need curl

dir=$(mktemp -d "${TMPDIR:-/tmp}/rdmabench-agent-cost.XXXXXX")
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
if [[ -n $bin ]]; then
	cp "$bin" "$dir/rdmabench"
else
	go build -o "$dir/rdmabench" ./cmd/rdmabench
fi

# Free ports: the kernel's, from a listener opened and closed at once.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
p1=$(port) p2=$(port) m1=$(port) m2=$(port)
printf '127.0.0.1:%s\n127.0.0.1:%s\n' "$p1" "$p2" >"$dir/peers"
pids=()
for i in 1 2; do
	p=p$i m=m$i
	"$dir/rdmabench" agent --peers "$dir/peers" --probe "$probe" -n "$iters" --rate "$rate" --host "agent$i" \
		--listen "127.0.0.1:${!p}" --metrics-listen "127.0.0.1:${!m}" "${extra[@]}" 2>"$dir/agent$i.log" &
	pids+=($!)
done
sleep 2 # started, peers read, first probes done
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
oks() {
	curl -s "http://127.0.0.1:$1/metrics" |
		awk '/^rdmabench_agent_probes_total\{/ && /result="ok"/ {n += $NF} END {print n + 0}'
}
declare -A c0 o0
for i in 1 2; do
	m=m$i
	c0[$i]=$(cpu "${pids[$((i - 1))]}") o0[$i]=$(oks "${!m}")
done
sleep "$seconds"
printf 'probe %s -n %s at %s/s per agent, %s s, this host (%s cores, loopback):\n' "$probe" "$iters" "$rate" "$seconds" "$(nproc)"
for i in 1 2; do
	m=m$i pid=${pids[$((i - 1))]}
	c=$(cpu "$pid") o=$(oks "${!m}")
	rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
	awk -v c="$((c - c0[$i]))" -v t="$ticks" -v o="$((o - o0[$i]))" -v s="$seconds" -v rss="$rss" -v i="$i" 'BEGIN {
		cpu = c / t
		per = 0
		if (o > 0) per = 1000 * cpu / o
		printf "agent%d: %d good probes (%.1f/s), CPU %.2f s (%.1f%% of a core), %.2f ms per probe; RSS %.1f MiB\n",
			i, o, o / s, cpu, 100 * cpu / s, per, rss / 1024
	}'
	ct=$((${ct:-0} + c - c0[$i])) ot=$((${ot:-0} + o - o0[$i]))
done
awk -v c="$ct" -v t="$ticks" -v o="$ot" -v s="$seconds" -v r="$rate" 'BEGIN {
	per = 0
	if (o > 0) per = 1000 * c / t / o
	printf "both: %.3f ms CPU per good probe, %.1f%% of the probes asked done\n", per, 100 * o / (2 * r * s)
}'
