#!/usr/bin/env bash
# The floor under a tcp-lat probe's cost (scripts/agent-cost.sh): what the
# same ping-pongs cost the kernel alone, from a C client and server with
# no runtime around them (scripts/tcp-floor.c, built here with cc). Two
# client-and-server pairs on loopback stand for two agents probing each
# other: each client sends RATE bursts a second of ITERS ping-pongs of 2
# bytes for SECONDS, as an agent's kept session does, and each end sleeps
# in the kernel between messages and between bursts. It prints the line
# "both:" as agent-cost.sh does (CPU ms per probe, both ends together:
# the four processes' CPU, getrusage, over the bursts sent; the bursts
# sent over those asked), "cpu:" (that CPU split into user and system
# time) and "latency:" (the mean of half the round trip, tcp-lat's
# basis). One-host figures: loopback, the processes
# sharing the host's cores. scripts/agent-cost-ab.sh --floor runs it
# interleaved with the agents.
#
# Usage: scripts/tcp-floor.sh [--rate R] [--seconds S] [--iters N]
#   defaults: --rate 10 --seconds 30 --iters 10 (agent-cost.sh's)
set -euo pipefail
rb_prog=tcp-floor.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

rate=10 seconds=30 iters=10
while (($#)); do
	case $1 in
	--rate) rate=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	*) rb_die "unknown argument $1 (see the header of $0)" ;;
	esac
done
rb_need cc gcc
rb_need python3

dir=$(mktemp -d "${TMPDIR:-/tmp}/rdmabench-tcp-floor.XXXXXX")
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
cc -O2 -Wall -o "$dir/tcp-floor" "$here/tcp-floor.c"

read -ra ports <<<"$(rb_free_ports 2)"
((${#ports[@]} == 2)) || rb_die "found ${#ports[@]} free ports of the 2 needed"
for i in 0 1; do
	"$dir/tcp-floor" serve "${ports[i]}" >"$dir/serve$i" &
	pids+=($!)
done
for i in 0 1; do
	"$dir/tcp-floor" probe "${ports[i]}" "$rate" "$seconds" "$iters" 2 >"$dir/probe$i" &
	pids+=($!)
done
for pid in "${pids[@]}"; do
	wait "$pid" || rb_die "a ping-pong process failed (exit $?)"
done
pids=()
printf 'tcp-floor -n %s at %s/s per client, 2 pairs, %s s, this host (%s cores, loopback):\n' "$iters" "$rate" "$seconds" "$(nproc)"
cat "$dir"/probe? "$dir"/serve? | awk -v r="$rate" -v s="$seconds" '
	{ b += $2; user += $4; sys += $6; if ($2 > 0) { ns += $8 * $2; nb += $2 } }
	END {
		printf "both: %.3f ms CPU per good probe, %.1f%% of the probes asked done\n", (user + sys) / 1000 / b, 100 * b / (2 * r * s)
		printf "cpu: user %.3f ms, system %.3f ms per good probe\n", user / 1000 / b, sys / 1000 / b
		printf "latency: mean %.1f us (half the round trip)\n", ns / nb / 2 / 1000
	}'
