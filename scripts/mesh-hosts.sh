#!/usr/bin/env bash
# The mesh across hosts (run by scripts/mesh-test.sh in every VM of
# scripts/vm-group.sh): a Slurm cluster of all the VMs (slurmd in each,
# slurmctld in the first, scripts/slurm-cluster.sh), and from the first,
# srun -N N -n N: one rank per VM, each on its own rxe0, every link
# crossing the emulated network. The other VMs only run slurmd until the
# first is done. The tests wait on completion events (-e): three emulated
# hosts on two cores must not spin, or the ACKs of one come too late.
# Prints "--- PASS: mesh/slurm-hosts" (or FAIL), the matrix
# table and the wall time, and "mesh-hosts: N passed, N failed".
#
# Usage: mesh-hosts.sh BINARY OUTDIR MUNGE_KEY
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
bin=$1
out=$2
key=$3
i=${RDMABENCH_VM_INDEX:?run me in scripts/vm-group.sh}
n=${RDMABENCH_VM_COUNT:?}

if ! "$here/slurm-cluster.sh" start "$n" "$key" >"$out/slurm-hosts-$i.log" 2>&1; then
	cat "$out/slurm-hosts-$i.log" >&2
	if ((i == 1)); then
		echo "--- FAIL: mesh/slurm-hosts: the cluster did not start"
		echo "mesh-hosts: 0 passed, 1 failed"
	fi
	exit 1
fi
if ((i != 1)); then
	sleep 3600 # slurmd serves until the first VM is done
	exit 0
fi
eval "$("$here/slurm-cluster.sh" env)"
start=$SECONDS
srun -N "$n" -n "$n" --ntasks-per-node 1 "$bin" mesh -n 100 -e -u 20 --register-timeout 60s --out "$out/hosts.json" \
	>"$out/hosts.txt" 2>"$out/hosts.err"
rc=$?
took=$((SECONDS - start))
links=$((n * (n - 1)))
facts=$(jq -r '[(.mesh.links | length), ([.mesh.links[] | select(.error)] | length), ([.mesh.ranks[].host.hostname] | unique | length),
	([.mesh.ranks[].host.device.gid] | unique | length), .mesh.launcher] | @tsv' "$out/hosts.json" 2>&1)
read -r got failed hosts gids launcher <<<"$facts"
if [[ $rc == 0 && $got == "$links" && $failed == 0 && $hosts == "$n" && $gids == "$n" && $launcher == slurm ]]; then
	echo "--- PASS: mesh/slurm-hosts (srun -N $n -n $n across $n VMs: $links links measured in $took s)"
	st=0
else
	echo "--- FAIL: mesh/slurm-hosts: exit $rc, links/failed/hosts/GIDs/launcher: $facts"
	cat "$out/hosts.err"
	st=1
fi
cat "$out/hosts.txt"
echo "mesh-hosts: $((1 - st)) passed, $st failed"
exit $st
