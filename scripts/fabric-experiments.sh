#!/usr/bin/env bash
# The measurements behind docs/fabric.md, each as rounds of runs on the
# same device in one boot, summarised by internal/tools/ratiostat (the
# median of the per-round ratios with its 95% confidence interval) and by
# the median of each figure.
#
# Usage: scripts/fabric-experiments.sh [-o OUTDIR] [-r ROUNDS] EXPERIMENT
#
# Experiments:
#   threads  write-bw 2 B over 4 QPs (-q 4), --threads 2 against
#            --threads 1, in the order A B then B A, ROUNDS rounds (default
#            9) of 1 s (-D 1): message rate (Mmsg/s).
#   pacing   write-bw 64 KiB at --rate-limit 0.05, 0.1 and 0.2 Gbit/s and
#            2 B at 2000, 5000 and 10000 msg/s, and each size without a
#            limit, ROUNDS rounds (default 5) of 1 s: the rate measured
#            against the limit.
#   load     write-lat 2 B idle against under --load write-bw (1 QP of
#            64 KiB), in the order A B then B A, ROUNDS rounds (default 9)
#            of 2000 iterations: p50 and p99, and the load's bandwidth.
#
# Where it runs: on RDMABENCH_TEST_DEVICE when it names a device here, else
# in the Soft-RoCE VM (scripts/vm.sh). Output in OUTDIR (default
# ./out/fabric/EXPERIMENT): the binary, rounds.txt (one line per run: ROW
# ROUND TOOL FIGURES...) and table.md.
set -euo pipefail
rb_prog=fabric-experiments.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
self=$here/$(basename -- "${BASH_SOURCE[0]}")
. "$here/lib.sh"

usage() {
	sed -n '2,/^set -euo/p' "$self" | sed '$d' | sed 's/^# \{0,1\}//'
}

out="" rounds="" inner=0
while (($#)); do
	case $1 in
	-o) out=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	--inner) inner=1; shift ;; # internal: measure here (host or inside the VM)
	-h | --help) usage; exit 0 ;;
	-*) rb_die "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
done
(($# == 1)) || rb_die "name one experiment: threads, pacing or load (see --help)"
exp=$1
case $exp in
threads | load) rounds=${rounds:-9} ;;
pacing) rounds=${rounds:-5} ;;
*) rb_die "unknown experiment $exp (threads, pacing or load)" ;;
esac
[[ $rounds =~ ^[1-9][0-9]*$ ]] || rb_die "-r wants a positive count, not $rounds"
out=${out:-out/fabric/$exp}
dev=${RDMABENCH_TEST_DEVICE:-}

# run ROW ROUND TOOL JQ ARGS...: one rdmabench run; JQ picks its figures
# from the document's first result.
run() {
	local row=$1 round=$2 tool=$3 q=$4
	shift 4
	local figs
	figs=$("$out/rdmabench" "$@" ${dev:+-d "$dev"} -o json | jq -r ".results[0] | $q") ||
		rb_die "rdmabench $* failed"
	echo "$row $round $tool $figs" | tee -a "$out/rounds.txt"
}

measure() {
	: >"$out/rounds.txt"
	local r t pair
	case $exp in
	threads)
		for ((r = 1; r <= rounds; r++)); do
			pair=(1 2)
			((r % 2)) || pair=(2 1)
			for t in "${pair[@]}"; do
				run write-bw-2B-q4 "$r" "threads$t" '.bandwidth.msg_rate_mpps' write-bw -s 2 -q 4 --threads "$t" -D 1
			done
		done
		;;
	pacing)
		for ((r = 1; r <= rounds; r++)); do
			run write-bw-64K-max "$r" measured '.bandwidth.bw_gbps' write-bw -s 64K -D 1
			for g in 0.05 0.1 0.2; do
				run "write-bw-64K-${g}Gbps" "$r" measured '.bandwidth.bw_gbps' write-bw -s 64K -D 1 --rate-limit "${g}Gbps"
				echo "write-bw-64K-${g}Gbps $r limit $g" >>"$out/rounds.txt"
			done
			run write-bw-2B-max "$r" measured '.bandwidth.msg_rate_mpps * 1e6' write-bw -s 2 -D 1
			for p in 2000 5000 10000; do
				run "write-bw-2B-${p}pps" "$r" measured '.bandwidth.msg_rate_mpps * 1e6' write-bw -s 2 -D 1 --rate-limit "${p}pps"
				echo "write-bw-2B-${p}pps $r limit $p" >>"$out/rounds.txt"
			done
		done
		;;
	load)
		local q='"\(.latency.p50_ns) \(.latency.p99_ns) \(.load.bandwidth.bw_gbps // 0)"'
		for ((r = 1; r <= rounds; r++)); do
			pair=(idle loaded)
			((r % 2)) || pair=(loaded idle)
			for t in "${pair[@]}"; do
				if [[ $t == idle ]]; then
					run write-lat-2B "$r" idle "$q" write-lat -s 2 -n 2000
				else
					run write-lat-2B "$r" loaded "$q" write-lat -s 2 -n 2000 --load write-bw --load-size 64K
				fi
			done
		done
		;;
	esac
}

# median ROW TOOL COLUMN: the median of one figure over the rounds.
median() {
	awk -v row="$1" -v tool="$2" -v col="$3" '$1 == row && $3 == tool { print $(3 + col) }' "$out/rounds.txt" |
		sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

summarise() {
	{
		echo "# $exp: $rounds rounds"
		echo
		case $exp in
		threads)
			echo "| row | threads 1 (Mmsg/s, median) | threads 2 (Mmsg/s, median) |"
			echo "|---|---:|---:|"
			echo "| write-bw-2B-q4 | $(median write-bw-2B-q4 threads1 1) | $(median write-bw-2B-q4 threads2 1) |"
			go run ./internal/tools/ratiostat "$out/rounds.txt" threads2/threads1
			;;
		pacing)
			echo "| row | limit | measured (median) |"
			echo "|---|---:|---:|"
			for row in $(awk '{ print $1 }' "$out/rounds.txt" | awk '!seen[$0]++'); do
				echo "| $row | $(median "$row" limit 1) | $(median "$row" measured 1) |"
			done
			go run ./internal/tools/ratiostat "$out/rounds.txt" measured/limit
			;;
		load)
			echo "| row | idle p50 | idle p99 | loaded p50 | loaded p99 | load Gbit/s (ns, medians) |"
			echo "|---|---:|---:|---:|---:|---:|"
			echo "| write-lat-2B | $(median write-lat-2B idle 1) | $(median write-lat-2B idle 2) | $(median write-lat-2B loaded 1) | $(median write-lat-2B loaded 2) | $(median write-lat-2B loaded 3) |"
			go run ./internal/tools/ratiostat "$out/rounds.txt" loaded/idle
			;;
		esac
	} >"$out/table.md"
	cat "$out/table.md"
}

if ((inner)); then
	measure
	exit 0
fi
mkdir -p "$out"
out=$(cd -- "$out" && pwd)
cd "$here/.."
go build -o "$out/rdmabench" ./cmd/rdmabench
rb_need jq jq
if [[ -n $dev ]]; then
	"$self" --inner -o "$out" -r "$rounds" "$exp"
else
	"$here/vm.sh" --share "$out" -- "$self" --inner -o "$out" -r "$rounds" "$exp"
fi
summarise
