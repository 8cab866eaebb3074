#!/usr/bin/env bash
# Two real hosts: two qemu VMs joined by a network, each with its own
# Soft-RoCE device on its own NIC (scripts/vm-pair.sh). Host A runs
# `rdmabench serve`; host B runs the suite across them, then the control
# protocol's failure cases: wrong token, another protocol version, a busy
# server, a client killed mid-test, a server killed mid-test; then what
# crosses the wire (cmd/rdmabench's TestWire tests: the traffic class both
# ways, the direction of --reverse, rdma_cm between the hosts); then faults
# on the link (two-host-faults.sh: loss, delay, partitions, a netdev
# down). Ends with "two-host: N passed, N failed".
#
# Usage: scripts/two-host-test.sh [OUTDIR]
set -euo pipefail
rb_prog=two-host-test.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
cd "$here/.."

out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/rdmabench-2host.XXXXXX")}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if ! command -v go >/dev/null 2>&1; then
	[[ -x /usr/local/go/bin/go ]] && PATH=$PATH:/usr/local/go/bin
fi
go build -o "$out/rdmabench" ./cmd/rdmabench
go test -c -o "$out/cmd.test" ./cmd/rdmabench
# A client that speaks protocol version 3 (this build speaks 2), for the mismatch case.
go build -o "$out/rdmabench-proto3" \
	-ldflags "-X github.com/rdmabench/rdmabench/internal/buildinfo.Version=v0.0.0-proto3 -X github.com/rdmabench/rdmabench/internal/buildinfo.protocol=3" \
	./cmd/rdmabench
start=$SECONDS
rc=0
"$here/vm-pair.sh" --share "$out" \
	--a "$(rb_sq "$here/two-host-servers.sh") $(rb_sq "$out/rdmabench") $(rb_sq "$out")" \
	--b "$(rb_sq "$here/two-host-scenarios.sh") $(rb_sq "$out/rdmabench") $(rb_sq "$out/rdmabench-proto3") $(rb_sq "$out") $(rb_sq "$out/cmd.test")" || rc=$?
rb_log "two-host tests took $((SECONDS - start)) s (logs in $out)"
exit $rc
