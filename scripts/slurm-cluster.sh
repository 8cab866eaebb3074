#!/usr/bin/env bash
# Start a real Slurm cluster inside the Soft-RoCE VMs (scripts/vm.sh,
# scripts/vm-group.sh): munged and slurmd on every node, slurmctld on the
# first, from Debian's slurm-wlm and munge, with a generated slurm.conf.
# Node i is "node<i>" at 10.0.0.<i> (the VMs' addresses); /etc/hosts (the
# guest's own, throw-away) gets every node's name.
#
# Usage (inside a guest, as root):
#   slurm-cluster.sh start NODES KEY      start this node's daemons (the first
#                                         node also slurmctld) and, on the
#                                         first, wait until NODES nodes are idle
#   slurm-cluster.sh env                  print the export line that makes srun
#                                         use this cluster (SLURM_CONF)
#   slurm-cluster.sh stop                 stop this node's daemons
#
# KEY is a munge key file every node shares (at least 32 bytes). Logs and
# state are in /tmp/rdmabench-slurm (the guest's tmpfs). Slurm runs as root,
# with proctrack/linuxproc and task/none (no cgroups), select/cons_tres by
# core; srun needs --overcommit (-O) for more tasks than a node's CPUs.
# TopologyPlugin=topology/tree reads topology.conf beside slurm.conf (its
# leaves: below; `env` names it RDMABENCH_SLURM_TOPOLOGY).
set -euo pipefail
rb_prog=slurm-cluster.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

d=/tmp/rdmabench-slurm
conf=$d/slurm.conf

node_ip() { echo "10.0.0.$1"; }

case ${1:-} in
env)
	echo "export SLURM_CONF=$conf RDMABENCH_SLURM_TOPOLOGY=$d/topology.conf"
	exit 0
	;;
stop)
	for p in slurmctld slurmd munged; do
		[[ -s $d/$p.pid ]] && kill "$(<"$d/$p.pid")" 2>/dev/null || true
	done
	exit 0
	;;
start) ;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
[[ $# -eq 3 ]] || rb_die "usage: slurm-cluster.sh start NODES KEY"
nodes=$2 key=$3
[[ $nodes =~ ^[1-9][0-9]?$ ]] || rb_die "NODES must be 1..99, not $nodes"
[[ -r $key ]] || rb_die "no munge key $key"
rb_need munged munge
rb_need slurmctld slurmctld
rb_need slurmd slurmd
rb_need sinfo slurm-client

ip=${RDMABENCH_VM_IP:?this runs in a Soft-RoCE VM (scripts/vm.sh)}
me=${ip##*.}
((me >= 1 && me <= nodes)) || rb_die "this VM's address $ip is not one of the $nodes nodes (10.0.0.1..$nodes)"
hostname "node$me"
for i in $(seq 1 "$nodes"); do
	echo "$(node_ip "$i") node$i"
done >>/etc/hosts

mkdir -p "$d/state" "$d/spool" "$d/munge"
chmod 700 "$d/munge"
install -m 0400 "$key" "$d/munge/munge.key"
cpus=$(nproc)
{
	echo "ClusterName=rdmabench"
	echo "SlurmctldHost=node1($(node_ip 1))"
	echo "SlurmUser=root"
	echo "SlurmdUser=root"
	echo "AuthType=auth/munge"
	echo "CredType=cred/munge"
	echo "AuthInfo=socket=$d/munge/munge.socket"
	echo "MpiDefault=none"
	echo "ProctrackType=proctrack/linuxproc"
	echo "TaskPlugin=task/none"
	echo "SwitchType=switch/none"
	echo "SchedulerType=sched/builtin"
	echo "SelectType=select/cons_tres"
	echo "SelectTypeParameters=CR_Core"
	echo "ReturnToService=2"
	echo "StateSaveLocation=$d/state"
	echo "SlurmdSpoolDir=$d/spool"
	echo "SlurmctldPidFile=$d/slurmctld.pid"
	echo "SlurmdPidFile=$d/slurmd.pid"
	echo "SlurmctldLogFile=$d/slurmctld.log"
	echo "SlurmdLogFile=$d/slurmd.log"
	echo "JobCompType=jobcomp/none"
	echo "AccountingStorageType=accounting_storage/none"
	echo "JobAcctGatherType=jobacct_gather/none"
	echo "KillOnBadExit=0"
	echo "InactiveLimit=0"
	echo "MessageTimeout=30"
	echo "TopologyPlugin=topology/tree"
	for i in $(seq 1 "$nodes"); do
		echo "NodeName=node$i NodeAddr=$(node_ip "$i") CPUs=$cpus State=UNKNOWN"
	done
	echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
} >"$conf"
# The fabric, for the tree plugin and `rdmabench mesh --topology` alike
# (scripts/mesh-hosts.sh): with 3 nodes or more, a leaf for each node but
# the last two, which share one, under a spine (4 nodes: leaf1 node1,
# leaf2 node2, leaf3 node3 and node4); fewer, one switch.
{
	echo "# the leaves of the $nodes Soft-RoCE VMs, under a spine (scripts/slurm-cluster.sh)"
	if ((nodes >= 3)); then
		for i in $(seq 1 $((nodes - 2))); do
			echo "SwitchName=leaf$i Nodes=node$i"
		done
		echo "SwitchName=leaf$((nodes - 1)) Nodes=node[$((nodes - 1))-$nodes]"
		echo "SwitchName=spine Switches=leaf[1-$((nodes - 1))]"
	elif ((nodes == 2)); then
		echo "SwitchName=leaf1 Nodes=node[1-2]"
	else
		echo "SwitchName=leaf1 Nodes=node1"
	fi
} >"$d/topology.conf"
# slurmd initialises its cgroup plugin whatever the proctrack and task
# plugins: cgroup v2, without systemd (the guest has none).
printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n' >"$d/cgroup.conf"
if ! grep -q ' /sys/fs/cgroup cgroup2 ' /proc/mounts; then
	mount -t cgroup2 none /sys/fs/cgroup || rb_die "cannot mount cgroup2 on /sys/fs/cgroup"
fi
mkdir -p /sys/fs/cgroup/system.slice
export SLURM_CONF=$conf

munged --force --socket="$d/munge/munge.socket" --key-file="$d/munge/munge.key" \
	--pid-file="$d/munged.pid" --log-file="$d/munged.log" --seed-file="$d/munge/seed" ||
	rb_die "munged did not start: $(tail -3 "$d/munged.log" 2>/dev/null)"
if ((me == 1)); then
	slurmctld -f "$conf" || rb_die "slurmctld did not start: $(tail -5 "$d/slurmctld.log" 2>/dev/null)"
fi
slurmd -f "$conf" -N "node$me" || rb_die "slurmd did not start: $(tail -5 "$d/slurmd.log" 2>/dev/null)"

((me == 1)) || exit 0
# The controller: wait until every node is idle.
deadline=$((SECONDS + 90))
while :; do
	idle=$(sinfo -h -N -o '%N %T' 2>/dev/null | awk '$2 == "idle" { n++ } END { print n + 0 }')
	((idle == nodes)) && break
	if ((SECONDS >= deadline)); then
		sinfo -N 2>&1 | sed 's/^/  /' >&2
		tail -5 "$d/slurmctld.log" >&2 || true
		rb_die "$idle of $nodes Slurm nodes idle after 90 s"
	fi
	sleep 0.5
done
rb_log "Slurm: $nodes node(s) idle (slurmctld on node1; SLURM_CONF=$conf)"
