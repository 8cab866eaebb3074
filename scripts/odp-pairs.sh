#!/usr/bin/env bash
# write-lat and write-bw with pinned memory against ODP (--odp), in
# interleaved pairs (pinned first in odd pairs, ODP first in even ones:
# A B B A ...), in loopback on one device that has on-demand paging; prints
# lines "ROW PAIR KIND FIGURE" that internal/tools/ratiostat reads
# (odp/pinned). Each run registers its buffers anew, so the rows
# write-lat-first (the p50 of the first 10 iterations, no warm-up: the
# device's first touch of every page) and write-lat (the p50 of 500 after
# 50 of warm-up) show what the first touch costs. write-bw is one packet a
# message (1 KiB): rxe in Linux 7.2 misplaces ODP copies that start inside
# a page (docs/memory.md). Run in the Soft-RoCE VM of a kernel whose rxe has
# ODP (emulation figures):
#
#   go build -o /tmp/m/rdmabench ./cmd/rdmabench
#   scripts/vm.sh --suite unstable --share /tmp/m -- scripts/odp-pairs.sh /tmp/m/rdmabench rxe0 6 >/tmp/m/odp.txt
#   go run ./internal/tools/ratiostat /tmp/m/odp.txt odp/pinned
#
# Usage: scripts/odp-pairs.sh RDMABENCH DEVICE PAIRS
set -euo pipefail
bin=$1 dev=$2 pairs=$3
# fig JSON FIELD: the first result's FIELD (a jq path) of the document.
fig() { jq -r ".results[0].$2" <<<"$1"; }
run() { # KIND PAIR
	local odp=() doc
	[[ $1 == odp ]] && odp=(--odp)
	doc=$("$bin" write-lat -d "$dev" -n 10 --warmup 0 "${odp[@]}" -o json)
	echo "write-lat-first $2 $1 $(fig "$doc" latency.p50_ns)"
	doc=$("$bin" write-lat -d "$dev" -n 500 --warmup 50 "${odp[@]}" -o json)
	echo "write-lat $2 $1 $(fig "$doc" latency.p50_ns)"
	doc=$("$bin" write-bw -d "$dev" -s 1024 -n 2000 "${odp[@]}" --validate -o json)
	echo "write-bw-1K $2 $1 $(fig "$doc" bandwidth.bw_gbps)"
}
for ((p = 1; p <= pairs; p++)); do
	if ((p % 2)); then
		run pinned "$p"
		run odp "$p"
	else
		run odp "$p"
		run pinned "$p"
	fi
done
