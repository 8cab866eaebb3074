#!/usr/bin/env bash
# The mesh on the launchers clusters run, for real, on Soft-RoCE VMs:
#   - one VM (2 vCPUs), four ranks on its rxe0: OpenMPI (mpirun -np 4),
#     Slurm (a single-node cluster, srun -n 4), and Slurm again with rank 2
#     killed mid-run (scripts/mesh-launchers.sh);
#   - four VMs of two NICs each (scripts/vm-group.sh --nics 2: eth0 and
#     rxe0 on one switch, eth1 and rxe1 on a second), a Slurm cluster of all
#     four, one rank per VM on rxe0, then one host and one path slowed with
#     tc netem on eth0 and blamed; then a rank per NIC with --rails (every
#     link on one rail) and a rank per VM with --host-level (every link on
#     both NICs at once) (scripts/mesh-hosts.sh); then, in the same VMs,
#     an agent in each scraped by Prometheus, one host slowed and blamed in
#     the queried metrics (scripts/agent-vms.sh, "--- PASS: agent-vms/NAME").
# Each case prints "--- PASS: mesh/NAME" or "--- FAIL: mesh/NAME", its
# matrices and its wall time. Ends with "mesh: N passed, N failed".
#
# Usage: scripts/mesh-test.sh [OUTDIR]
set -euo pipefail
rb_prog=mesh-test.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
cd "$here/.."

out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/rdmabench-mesh.XXXXXX")}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if ! command -v go >/dev/null 2>&1; then
	[[ -x /usr/local/go/bin/go ]] && PATH=$PATH:/usr/local/go/bin
fi
rb_need mpirun openmpi-bin
rb_need srun slurm-client
rb_need jq jq
rb_need prometheus prometheus
rb_need curl curl
go build -o "$out/rdmabench" ./cmd/rdmabench
# The munge key every Slurm node of these clusters shares.
head -c 1024 /dev/urandom >"$out/munge.key"
rc=0
start=$SECONDS
"$here/vm.sh" --cpus 2 --share "$out" -- "$here/mesh-launchers.sh" "$out/rdmabench" "$out" "$out/munge.key" || rc=1
rb_log "one VM (OpenMPI, Slurm, a rank killed): $((SECONDS - start)) s"
start=$SECONDS
"$here/vm-group.sh" -n 4 --nics 2 --share "$out" -- "$here/mesh-hosts.sh" "$out/rdmabench" "$out" "$out/munge.key" || rc=1
rb_log "four VMs of two NICs (Slurm across them, a host and a path slowed, rails, host level): $((SECONDS - start)) s (logs and documents in $out)"
exit $rc
