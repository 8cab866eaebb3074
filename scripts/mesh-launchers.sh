#!/usr/bin/env bash
# The mesh on real launchers in one Soft-RoCE VM (run by scripts/mesh-test.sh
# inside scripts/vm.sh): four ranks on rxe0 (QPs between processes on one
# device are real), started
#   1. by OpenMPI: mpirun -np 4;
#   2. by Slurm: a single-node cluster (scripts/slurm-cluster.sh), srun -n 4;
#   3. by Slurm again, with rank 2 killed (SIGKILL) mid-run: rank 0 still
#      writes a complete document, rank 2's remaining links failed, and
#      exits 1.
# Prints one "--- PASS: mesh/NAME" or "--- FAIL: mesh/NAME" line per case,
# each run's matrix table and wall time, and "mesh: N passed, N failed".
#
# Usage: mesh-launchers.sh BINARY OUTDIR MUNGE_KEY
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
bin=$1
out=$2
key=$3
pass=0
fail=0
ok() { echo "--- PASS: mesh/$1"; pass=$((pass + 1)); }
ko() { echo "--- FAIL: mesh/$1: $2"; fail=$((fail + 1)); }
# The tests of every run: short, and waiting on completion events (-e)
# rather than polling, so that four ranks on two emulated CPUs do not
# starve each other.
args=(-n 100 -e --register-timeout 60s --blame=false)

# check NAME JSON RC WANT_RC LAUNCHER: the document is complete and says
# what it should.
check() {
	local name=$1 doc=$2 rc=$3 want=$4 launcher=$5 facts
	if ! facts=$(jq -r '[.mesh.launcher, (.mesh.links | length), ([.mesh.links[] | select(.error)] | length),
		(.mesh.matrices | length), (.partial // false)] | @tsv' "$doc" 2>&1); then
		ko "$name" "no document: $facts"
		return 1
	fi
	read -r l links failed matrices partial <<<"$facts"
	if [[ $rc == "$want" && $l == "$launcher" && $links == 12 && $matrices == 3 && $partial == false ]]; then
		return 0
	fi
	ko "$name" "exit $rc (want $want), launcher $l, $links links, $failed failed, $matrices matrices, partial $partial"
	return 1
}

# 1. OpenMPI: every rank on this host, rank 0 on node1.
hostname node1
echo "${RDMABENCH_VM_IP:-10.0.0.1} node1" >>/etc/hosts
start=$SECONDS
mpirun --allow-run-as-root --oversubscribe -np 4 "$bin" mesh --coordinator node1 "${args[@]}" \
	--out "$out/mpi.json" >"$out/mpi.txt" 2>"$out/mpi.err"
rc=$?
took=$((SECONDS - start))
if check openmpi "$out/mpi.json" "$rc" 0 openmpi && [[ $(jq '[.mesh.links[] | select(.error)] | length' "$out/mpi.json") == 0 ]]; then
	ok "openmpi (mpirun -np 4: 12 links measured in ${took} s)"
else
	cat "$out/mpi.err"
fi
cat "$out/mpi.txt"

# 2. Slurm, one node.
if ! "$here/slurm-cluster.sh" start 1 "$key" >"$out/slurm-start.log" 2>&1; then
	ko slurm "the cluster did not start: $(cat "$out/slurm-start.log")"
	ko slurm-killed-rank "no cluster"
	echo "mesh: $pass passed, $fail failed"
	exit 1
fi
eval "$("$here/slurm-cluster.sh" env)"
start=$SECONDS
srun -O -n 4 "$bin" mesh "${args[@]}" --out "$out/slurm.json" >"$out/slurm.txt" 2>"$out/slurm.err"
rc=$?
took=$((SECONDS - start))
if check slurm "$out/slurm.json" "$rc" 0 slurm &&
	[[ $(jq -r '.mesh.coordinator' "$out/slurm.json") == node1:19514 ]]; then
	ok "slurm (srun -n 4, coordinator from SLURM_STEP_NODELIST: 12 links measured in ${took} s)"
else
	cat "$out/slurm.err"
fi
cat "$out/slurm.txt"

# 3. Slurm, rank 2 killed once the first round is done. Each task records
# its pid and exit status.
rm -f "$out"/killed.*
start=$SECONDS
# shellcheck disable=SC2016 # expanded by each task's shell
srun -O -n 4 --kill-on-bad-exit=0 bash -c 'echo $$ >"$0/killed.pid.$SLURM_PROCID"; "$1" mesh "${@:2}"; echo $? >"$0/killed.rc.$SLURM_PROCID"' \
	"$out" "$bin" "${args[@]}" --out "$out/killed.json" >"$out/killed.txt" 2>"$out/killed.err" &
srun_pid=$!
killed=
deadline=$((SECONDS + 120))
while ((SECONDS < deadline)) && kill -0 "$srun_pid" 2>/dev/null; do
	n=$(grep -c '^{"event":"link"' "$out/killed.links.ndjson" 2>/dev/null)
	n=${n:-0}
	if ((n >= 4)) && [[ -s $out/killed.pid.2 ]]; then
		# The task's shell runs rdmabench as its only child.
		victim=$(cat "/proc/$(<"$out/killed.pid.2")/task/"*/children 2>/dev/null | tr -s ' ' '\n' | head -1)
		if [[ -n $victim ]] && kill -9 "$victim"; then
			killed="after $n links, $((SECONDS - start)) s in"
			break
		fi
	fi
	sleep 0.2
done
wait "$srun_pid"
took=$((SECONDS - start))
rc0=$(cat "$out/killed.rc.0" 2>/dev/null || echo none)
if [[ -z $killed ]]; then
	ko slurm-killed-rank "rank 2 was not killed (the run ended first?)"
elif check slurm-killed-rank "$out/killed.json" "$rc0" 1 slurm; then
	bad=$(jq -r '[.mesh.links[] | select(.error) | select(.from != 2 and .to != 2)] | length' "$out/killed.json")
	lost=$(jq -r '.mesh.ranks[2].state' "$out/killed.json")
	failed=$(jq -r '[.mesh.links[] | select(.error)] | length' "$out/killed.json")
	if [[ $bad == 0 && $lost == lost && $failed -ge 1 ]] && grep -q "link failed: " "$out/killed.err"; then
		ok "slurm-killed-rank (rank 2 killed $killed: rank 0 exit 1 after ${took} s, 12 links in the document, $failed failed, all of them rank 2's)"
	else
		ko slurm-killed-rank "rank 2 $lost, $failed failed links, $bad of them without rank 2"
	fi
fi
cat "$out/killed.txt"
grep -h "link failed" "$out/killed.err"
"$here/slurm-cluster.sh" stop

echo "mesh: $pass passed, $fail failed"
((fail == 0))
