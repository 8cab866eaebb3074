#!/usr/bin/env bash
# The figures of docs/fabric.md: what -R (rdma_cm) and --reverse change, as
# interleaved pairs in one run on the same device (A B, then B A in the next
# round), summarised as the median of the per-round ratios B/A with its 95%
# confidence interval (internal/tools/ratiostat).
#
# Usage: scripts/fabric-figures.sh [-o OUTDIR] [-r ROUNDS]
#
# Rows (ROUNDS rounds, default 9):
#   lat       write-lat 2 B, 2000 iterations: p50 with the QPs connected by
#             an exchange of endpoints (A) and by rdma_cm (B, -R)
#   bw-write  write-bw 64 KiB, 500 iterations, Gbit/s: the client sends
#             (A), the server sends (B, --reverse)
#   bw-send   send-bw 4 KiB, 500 iterations, Gbit/s: likewise
#
# Runs in the Soft-RoCE VM (scripts/vm.sh) unless RDMABENCH_RDMA_MODE=host
# and RDMABENCH_TEST_DEVICE name a device here. Output in OUTDIR (default
# ./out/fabric-figures): rounds.txt (ROW ROUND TOOL FIGURE) and table.md.
set -euo pipefail
rb_prog=fabric-figures.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

out="" rounds=9 inner=0
while (($#)); do
	case $1 in
	-o) out=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	--inner) inner=1; shift ;; # internal: measure here
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) rb_die "unknown argument $1 (see --help)" ;;
	esac
done

if ((inner)); then
	bin=$out/rdmabench
	dev=${RDMABENCH_TEST_DEVICE:-rxe0}
	# one ROW ROUND TOOL: prints the row's figure of one run
	one() {
		local row=$1 round=$2 tool=$3 args=() fig
		case $row in
		lat) args=(write-lat -s 2 -n 2000) ;;
		bw-write) args=(write-bw -s 64K -n 500) ;;
		bw-send) args=(send-bw -s 4K -n 500) ;;
		esac
		case $tool in
		rdma_cm) args+=(-R) ;;
		reverse) args+=(--reverse) ;;
		esac
		"$bin" "${args[@]}" -d "$dev" -o json >"$out/run.json"
		case $row in
		lat) fig=$(jq '.results[0].latency.p50_ns' "$out/run.json") ;;
		*) fig=$(jq '.results[0].bandwidth.bw_gbps' "$out/run.json") ;;
		esac
		echo "$row $round $tool $fig"
	}
	for ((r = 1; r <= rounds; r++)); do
		for row in lat bw-write bw-send; do
			a=exchange b=rdma_cm
			[[ $row == bw-* ]] && a=forward b=reverse
			if ((r % 2)); then one "$row" "$r" "$a"; one "$row" "$r" "$b"; else one "$row" "$r" "$b"; one "$row" "$r" "$a"; fi
		done
	done
	exit 0
fi

out=${out:-out/fabric-figures}
mkdir -p "$out"
out=$(cd "$out" && pwd)
command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin
go build -o "$out/rdmabench" ./cmd/rdmabench
inner=("$here/fabric-figures.sh" --inner -o "$out" -r "$rounds")
if [[ ${RDMABENCH_RDMA_MODE:-vm} == host ]]; then
	"${inner[@]}" | tee "$out/rounds.txt"
else
	"$here/vm.sh" --share "$out" -- "${inner[@]}" | tee "$out/rounds.txt"
fi
go run ./internal/tools/ratiostat "$out/rounds.txt" rdma_cm/exchange reverse/forward | tee "$out/table.md"
