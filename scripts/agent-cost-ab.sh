#!/usr/bin/env bash
# Before and after of an agent's probe cost (scripts/agent-cost.sh), in
# interleaved runs: for each of PAIRS pairs, A B B A (A the build BEFORE,
# B this tree's, or the build AFTER), each run N agents (2 unless
# --agents) at RATE probes/s per agent for SECONDS. It prints
# every run's "both:" line, then per rate the median of A's and B's CPU
# per good probe and done share, and the ratio B/A of each pair (the
# mean of its two A and two B runs) as a median with the lowest and
# highest pair's ratio around it: on a shared, noisy host the interval
# says more than the median. With --floor, A is not a build but the
# floor under a probe: the same ping-pongs from C with no runtime
# (scripts/tcp-floor.sh; two agents only).
#
# Usage: scripts/agent-cost-ab.sh {--before BIN | --floor} [--after BIN] [--agents N] [--pairs N] [--seconds S] [--rates "10 50 100"]
set -euo pipefail
rb_prog=agent-cost-ab.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
cd "$here/.."
before= floor= after= agents=2 pairs=3 seconds=20 rates="10 50 100"
while (($#)); do
	case $1 in
	--before) before=$2; shift 2 ;;
	--floor) floor=1; shift ;;
	--after) after=$2; shift 2 ;;
	--agents) agents=$2; shift 2 ;;
	--pairs) pairs=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--rates) rates=$2; shift 2 ;;
	*) rb_die "unknown argument $1 (see the header of $0)" ;;
	esac
done
if [[ -n $floor ]]; then
	[[ -z $before ]] || rb_die "--floor and --before: A is one or the other"
	((agents == 2)) || rb_die "--floor stands for two agents, not --agents $agents"
else
	[[ -x $before ]] || rb_die "--before BIN: an rdmabench build to compare with (or --floor)"
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/rdmabench-agent-ab.XXXXXX")
trap 'rm -rf "$dir"' EXIT
if [[ -n $after ]]; then
	[[ -x $after ]] || rb_die "--after BIN: an rdmabench build"
	cp "$after" "$dir/after"
else
	go build -o "$dir/after" ./cmd/rdmabench
fi
one() { # BIN RATE -> "cpu_ms done_pct"; BIN empty: the floor
	if [[ -z $1 ]]; then
		"$here/tcp-floor.sh" --rate "$2" --seconds "$seconds"
	else
		"$here/agent-cost.sh" --agents "$agents" --bin "$1" --rate "$2" --seconds "$seconds"
	fi >"$dir/run"
	# To stderr through its descriptor: tee /dev/stderr would reopen a
	# file there and write over it from its start.
	cat "$dir/run" >&2
	awk '/^(both|all [0-9]+):/ {sub(/^all /, ""); print $2, $8+0}' "$dir/run"
}
for r in $rates; do
	for ((p = 1; p <= pairs; p++)); do
		a1=$(one "$before" "$r") b1=$(one "$dir/after" "$r") b2=$(one "$dir/after" "$r") a2=$(one "$before" "$r")
		echo "rate $r pair $p: A $a1 | B $b1 | B $b2 | A $a2" >&2
		echo "$r $a1 $b1 $b2 $a2" >>"$dir/runs"
	done
done
awk '
function median(v, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
{ r = $1; n[r]++; k = n[r]
  ca[r, 2*k-1] = $2; da[r, 2*k-1] = $3; cb[r, 2*k-1] = $4; db[r, 2*k-1] = $5
  cb[r, 2*k] = $6; db[r, 2*k] = $7; ca[r, 2*k] = $8; da[r, 2*k] = $9
  ratio[r, k] = ($4 + $6) / ($2 + $8); order[++m] = r }
END {
	printf "%-6s %-22s %-22s %s\n", "rate", "A: ms CPU/probe, done", "B: ms CPU/probe, done", "B/A CPU per probe: median [min, max] of pairs"
	for (i = 1; i <= m; i++) { r = order[i]; if (seen[r]++) continue
		delete x; for (j = 1; j <= 2*n[r]; j++) x[j] = ca[r, j]; mca = median(x, 2*n[r])
		delete x; for (j = 1; j <= 2*n[r]; j++) x[j] = da[r, j]; mda = median(x, 2*n[r])
		delete x; for (j = 1; j <= 2*n[r]; j++) x[j] = cb[r, j]; mcb = median(x, 2*n[r])
		delete x; for (j = 1; j <= 2*n[r]; j++) x[j] = db[r, j]; mdb = median(x, 2*n[r])
		lo = 1e9; hi = 0; delete x
		for (j = 1; j <= n[r]; j++) { x[j] = ratio[r, j]; if (x[j] < lo) lo = x[j]; if (x[j] > hi) hi = x[j] }
		printf "%-6s %8.3f ms, %5.1f%%    %8.3f ms, %5.1f%%    %.3f [%.3f, %.3f]\n", r, mca, mda, mcb, mdb, median(x, n[r]), lo, hi
	}
}' "$dir/runs"
