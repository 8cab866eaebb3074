#!/usr/bin/env bash
# The main job, on a fresh machine: install the dependencies, build
# rdmabench, and run the full benchmark (`rdmabench suite`: every RDMA test
# and the TCP baseline) on a real Soft-RoCE device: on this host when its
# kernel has rdma_rxe (or RDMABENCH_TEST_DEVICE names a device), otherwise
# inside the Soft-RoCE VM. Prints the device list and the results table, and
# keeps the JSON results document.
#
# Usage: scripts/demo.sh [OUTDIR] [-- EXTRA SUITE FLAGS...]
#   OUTDIR defaults to ./out; it receives rdmabench (the binary), suite.json
#   and suite.txt.
# Environment: RDMABENCH_RDMA_MODE=vm|host forces where it runs.
set -euo pipefail
rb_prog=demo.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
cd "$here/.."

out=./out
if [[ $# -gt 0 && $1 != -- ]]; then
	out=$1
	shift
fi
[[ ${1:-} == -- ]] && shift
mkdir -p "$out"
out=$(cd "$out" && pwd)

"$here/deps.sh"
if ! command -v go >/dev/null 2>&1; then
	[[ -x /usr/local/go/bin/go ]] && PATH=$PATH:/usr/local/go/bin
	command -v go >/dev/null 2>&1 || rb_die "go not found: install Go 1.26 or newer"
fi
rb_log "building rdmabench"
go build -o "$out/rdmabench" ./cmd/rdmabench

job=(bash -c 'set -o pipefail; "$0" devices && "$0" suite --out "$1/suite.json" "${@:2}" | tee "$1/suite.txt"' "$out/rdmabench" "$out" "$@")
mode=$(rb_rdma_mode)
case $mode in
host)
	rb_log "running on this host's ${RDMABENCH_TEST_DEVICE:-first RDMA device}"
	"${job[@]}"
	;;
vm)
	rb_log "this kernel has no rdma_rxe: running in the Soft-RoCE VM (rxe0)"
	"$here/vm.sh" --share "$out" -- "${job[@]}"
	;;
*) rb_die "RDMABENCH_RDMA_MODE must be vm or host" ;;
esac
rb_log "results: $out/suite.json (JSON), $out/suite.txt (table)"
