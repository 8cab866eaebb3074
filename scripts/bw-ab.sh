#!/bin/sh
# Interleaved rounds (A B B A, then B A A B, ...) of write-bw at 2 B (the
# message rate, where a cost per poll shows most) and at 64 KiB, with two
# rdmabench binaries on one device, for a ratio of their figures that the
# host's noise does not bias. Prints "ROW ROUND TOOL MSG_RATE_MPPS" lines for
# internal/tools/ratiostat (`go run ./internal/tools/ratiostat FILE b/a`).
#
# Usage: scripts/bw-ab.sh A_BINARY B_BINARY [ROUNDS] [DEVICE]
#   e.g. scripts/vm.sh --share /tmp/ab -- scripts/bw-ab.sh out/rb-old out/rb-new 10 > /tmp/ab/ab.txt
set -eu
a=$1 b=$2 rounds=${3:-10} dev=${4:-rxe0}
round=1
while [ "$round" -le "$rounds" ]; do
	if [ $((round % 2)) = 1 ]; then order="a b b a"; else order="b a a b"; fi
	for tool in $order; do
		if [ "$tool" = a ]; then bin=$a; else bin=$b; fi
		for sn in 2:20000 65536:1000; do
			s=${sn%%:*} n=${sn##*:}
			"$bin" write-bw -d "$dev" -s "$s" -n "$n" -o json 2>/dev/null |
				jq -r --arg t "$tool" --arg r "$round" --arg s "$s" \
					'.results[0].bandwidth | "write-bw-\($s) \($r) \($t) \(.msg_rate_mpps)"'
		done
	done
	round=$((round + 1))
done
