#!/usr/bin/env bash
# write-bw with host memory against huge pages, in interleaved pairs
# (host first in odd pairs, huge pages first in even ones: A B B A ...),
# in loopback on one device; prints lines "ROW PAIR KIND GBIT/S" that
# internal/tools/ratiostat reads (hugepages/host). Run where the device is,
# e.g. in the Soft-RoCE VM (emulation figures):
#
#   go build -o /tmp/m/rdmabench ./cmd/rdmabench
#   scripts/vm.sh --share /tmp/m -- scripts/memory-pairs.sh /tmp/m/rdmabench rxe0 8 >/tmp/m/pairs.txt
#   go run ./internal/tools/ratiostat /tmp/m/pairs.txt hugepages/host
#
# Usage: scripts/memory-pairs.sh RDMABENCH DEVICE PAIRS [SIZE] [ITERS]
set -euo pipefail
bin=$1 dev=$2 pairs=$3 size=${4:-64K} iters=${5:-2000}
# Huge pages for both ends (one buffer each), with room to spare.
echo $(($(cat /proc/sys/vm/nr_hugepages) + 8)) >/proc/sys/vm/nr_hugepages
run() { # KIND PAIR
	local mem=host
	[[ $1 == hugepages ]] && mem=hugepages
	local gbps
	gbps=$("$bin" write-bw -d "$dev" -s "$size" -n "$iters" --mem "$mem" -o json |
		grep -o '"bw_gbps": *[0-9.e+-]*' | head -1 | sed 's/.*: *//')
	echo "write-bw-$size $2 $1 $gbps"
}
for ((p = 1; p <= pairs; p++)); do
	if ((p % 2)); then
		run host "$p"
		run hugepages "$p"
	else
		run hugepages "$p"
		run host "$p"
	fi
done
