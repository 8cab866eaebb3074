#!/usr/bin/env bash
# What a probe of `rdmabench agent` costs on this host: two agents (or
# --agents N) on loopback probe each other with tcp-lat (or --probe TEST
# on the first RDMA device) at RATE probes/s each for SECONDS, then the script reads
# each agent's CPU time (utime + stime, /proc/PID/stat), resident memory
# (VmRSS) and its good probes (from its /metrics) and prints, per agent,
# CPU ms per probe. An agent both probes its peer and serves the peer's
# probes, so the figure is a probe's cost at both ends. One-host figures:
# loopback, no NIC, the two agents sharing the host's cores.
#
# The line "both:" (or "all N:") adds the agents up: CPU ms per good
# probe (both ends of a probe together: the agents' CPU over the good
# probes any did) and the probes done over those asked (RATE per agent);
# then "busy:", the probes that ended refused busy (a peer's server
# running other tests through every retry) over all that ended; and
# "cpu:", that CPU split into user and system time; "latency:", the mean
# of the probes' latency samples in the window (from each agent's
# histogram, on the test's basis).
#
# Usage: scripts/agent-cost.sh [--agents N] [--rate R] [--seconds S] [--probe TEST] [--iters N] [--bin PATH] [-- AGENT_FLAGS...]
#   defaults: --agents 2 --rate 10 --seconds 30 --probe tcp-lat --iters 10, the
#   rdmabench built from this tree; --bin runs another build (an older
#   one, for a before-and-after: scripts/agent-cost-ab.sh); flags after
#   -- go to both agents (e.g. --keep=false).
set -euo pipefail
rb_prog=agent-cost.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
cd "$here/.."

agents=2 rate=10 seconds=30 probe=tcp-lat iters=10 bin=
extra=()
while (($#)); do
	case $1 in
	--bin) bin=$2; shift 2 ;;
	--) shift; extra=("$@"); break ;;
	--agents) agents=$2; shift 2 ;;
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

# Free ports, 2 an agent (rb_free_ports).
read -ra ports <<<"$(rb_free_ports "$((2 * agents))")"
((${#ports[@]} == 2 * agents)) || rb_die "found ${#ports[@]} free ports of the $((2 * agents)) needed"
listen=() metrics=()
: >"$dir/peers"
for ((i = 1; i <= agents; i++)); do
	listen[i]=${ports[2 * i - 2]} metrics[i]=${ports[2 * i - 1]}
	echo "127.0.0.1:${listen[i]}" >>"$dir/peers"
done
pids=()
for ((i = 1; i <= agents; i++)); do
	"$dir/rdmabench" agent --peers "$dir/peers" --probe "$probe" -n "$iters" --rate "$rate" --host "agent$i" \
		--listen "127.0.0.1:${listen[i]}" --metrics-listen "127.0.0.1:${metrics[i]}" "${extra[@]}" 2>"$dir/agent$i.log" &
	pids[i]=$!
done
sleep 2 # started, peers read, first probes done
for ((i = 1; i <= agents; i++)); do
	kill -0 "${pids[i]}" 2>/dev/null || rb_die "agent$i exited: $(tail -n 3 "$dir/agent$i.log")"
done
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
user_cpu() { awk '{print $14}' "/proc/$1/stat"; }
# counts PORT: "OK BUSY ALL SUM N", the agent's probes ended so far, and
# the sum (seconds) and count of their latency samples.
counts() {
	curl -s "http://127.0.0.1:$1/metrics" | awk '/^rdmabench_agent_probes_total\{/ {
		all += $NF
		if (/result="ok"/) ok += $NF
		if (/result="busy"/) busy += $NF
	}
	/^rdmabench_agent_probe_latency_seconds_sum\{/ { sum += $NF }
	/^rdmabench_agent_probe_latency_seconds_count\{/ { n += $NF }
	END {printf "%d %d %d %.9f %d\n", ok, busy, all, sum, n}'
}
declare -A c0 u0 o0 b0 a0 s0 n0
for ((i = 1; i <= agents; i++)); do
	c0[$i]=$(cpu "${pids[i]}") u0[$i]=$(user_cpu "${pids[i]}")
	read -r "o0[$i]" "b0[$i]" "a0[$i]" "s0[$i]" "n0[$i]" <<<"$(counts "${metrics[i]}")"
done
sleep "$seconds"
printf 'probe %s -n %s at %s/s per agent, %s agents, %s s, this host (%s cores, loopback):\n' "$probe" "$iters" "$rate" "$agents" "$seconds" "$(nproc)"
ct=0 ut=0 ot=0 bt=0 at=0 st=0 nt=0
for ((i = 1; i <= agents; i++)); do
	pid=${pids[i]}
	c=$(cpu "$pid") u=$(user_cpu "$pid")
	read -r o b a sm nm <<<"$(counts "${metrics[i]}")"
	rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
	awk -v c="$((c - c0[$i]))" -v t="$ticks" -v o="$((o - o0[$i]))" -v b="$((b - b0[$i]))" -v s="$seconds" -v rss="$rss" -v i="$i" 'BEGIN {
		cpu = c / t
		per = 0
		if (o > 0) per = 1000 * cpu / o
		printf "agent%d: %d good probes (%.1f/s), %d busy, CPU %.2f s (%.1f%% of a core), %.2f ms per probe; RSS %.1f MiB\n",
			i, o, o / s, b, cpu, 100 * cpu / s, per, rss / 1024
	}'
	ct=$((ct + c - c0[$i])) ut=$((ut + u - u0[$i])) ot=$((ot + o - o0[$i])) bt=$((bt + b - b0[$i])) at=$((at + a - a0[$i]))
	st=$(awk -v t="$st" -v a="$sm" -v b="${s0[$i]}" 'BEGIN {printf "%.9f", t + a - b}') nt=$((nt + nm - n0[$i]))
done
awk -v c="$ct" -v u="$ut" -v t="$ticks" -v o="$ot" -v s="$seconds" -v r="$rate" -v n="$agents" -v b="$bt" -v a="$at" 'BEGIN {
	per = 0
	if (o > 0) per = 1000 * c / t / o
	printf "%s: %.3f ms CPU per good probe, %.1f%% of the probes asked done\n", (n == 2 ? "both" : "all " n), per, 100 * o / (n * r * s)
	printf "busy: %d of %d probes (%.2f%%)\n", b, a, (a > 0 ? 100 * b / a : 0)
	if (o > 0) printf "cpu: user %.3f ms, system %.3f ms per good probe\n", 1000 * u / t / o, 1000 * (c - u) / t / o
}'
awk -v s="$st" -v n="$nt" 'BEGIN { if (n > 0) printf "latency: mean %.1f us over %d samples (the probes\x27 figures, on the test\x27s basis)\n", 1e6 * s / n, n }'
