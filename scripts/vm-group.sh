#!/usr/bin/env bash
# Several hosts for real: run one command in each of N throw-away qemu VMs
# (scripts/vm.sh, Soft-RoCE) joined by one Ethernet switch, each with its
# own NIC, address (10.0.0.1 .. 10.0.0.N) and rxe0: scripts/vm-pair.sh's
# network, for more than two hosts; with --nics 2, a second switch and a
# second NIC and device in each VM (hosts of two rails).
#
# Usage: scripts/vm-group.sh [options] [--] CMD [ARGS...]
#
#   scripts/vm-group.sh -n 3 -- sh -c 'echo "$RDMABENCH_VM_INDEX of 3 at $RDMABENCH_VM_IP"'
#
# Options:
#   -n, --vms N         the number of VMs (default 3; at most 20)
#   --nics N            NICs per VM, 1 or 2 (default 1): with 2, each VM also
#                       has eth1 on a second switch, 10.0.1.INDEX, with rxe1
#   --share DIR         share DIR read-write with every VM, at the same path
#                       (repeatable); the rest of the host's filesystem is
#                       visible read-only
#   --mem MB            memory per VM (default 1024)
#   --cpus N            vCPUs per VM (default 1)
#   --timeout SECONDS   kill every VM after SECONDS (default 1800)
#   --suite NAME        boot every VM on the kernel of Debian suite NAME
#                       (scripts/vm.sh --suite; default $RDMABENCH_VM_SUITE,
#                       else this machine's own release)
#   -e, --env NAME[=VALUE]
#                       pass one more environment variable (repeatable)
#   -v, --verbose       print boot timings
#   -h, --help          this text
#
# The same CMD runs in every VM (as root, in the host's current directory,
# with the environment scripts/vm.sh passes) plus RDMABENCH_VM_INDEX (1..N),
# RDMABENCH_VM_COUNT (N), RDMABENCH_VM_NICS (1 or 2), RDMABENCH_VM_IP
# (10.0.0.INDEX) and RDMABENCH_PEER_IPS (the others' addresses): the command
# picks its part from its index. Each guest gets eth0 (virtio-net, MAC
# 02:00:0a:00:00:INDEX) with rxe0 on it; the NICs are joined by a vde_switch
# (Debian's vde-switch) listening on a unix socket in a private folder: no
# host network, no ports. With --nics 2 each guest also gets eth1 (MAC
# 02:00:0a:00:01:INDEX, 10.0.1.INDEX, RDMABENCH_VM_IP2) with rxe1 on it, the
# eth1s joined by a second vde_switch: two rails, each its own network;
# RDMABENCH_TEST_DEVICES is then rxe0,rxe1. Before CMD runs, each guest
# waits until its rxe0 (and rxe1) is ACTIVE and every other guest answers
# ping (on each network: a guest answers only once its own devices are
# ready), so every device is ready when any command starts.
#
# Output: every line of VM i on the host's stdout or stderr, prefixed with
# "[i] ". When VM 1 stops, the others get a second to finish, then are
# stopped. Exit status: VM 1's (its command's, or 1 when its VM failed); 1
# when another VM failed (its VM, not its command: it did not boot, or its
# clock ran at the wrong rate, below). Each VM's status is printed at the
# end.
#
# Each guest's clock is set from the host's at boot, then watched: a VM
# whose clock gains or loses more than 3% of the host's time stops with
# "this VM's clock runs at Rx the host's rate" (scripts/vm.sh, --net),
# instead of its timings reading wrong and Slurm's credentials expiring.
set -euo pipefail

rb_prog=vm-group.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

n=3
nics=1
vm_opts=(--cpus 1 --mem 1024) # a later --cpus or --mem wins
while [[ $# -gt 0 ]]; do
	case $1 in
	-n | --vms) [[ $# -ge 2 ]] || rb_die "$1 needs a number"; n=$2; shift 2 ;;
	--nics) [[ $# -ge 2 ]] || rb_die "$1 needs a number"; nics=$2; shift 2 ;;
	--share | --mem | --cpus | --timeout | --suite | -e | --env)
		[[ $# -ge 2 ]] || rb_die "$1 needs a value"
		vm_opts+=("$1" "$2")
		shift 2
		;;
	-v | --verbose) vm_opts+=(-v); shift ;;
	-h | --help) usage; exit 0 ;;
	--) shift; break ;;
	-*) rb_log "unknown option $1 (see --help)"; exit 2 ;;
	*) break ;;
	esac
done
[[ $# -gt 0 ]] || { rb_log "usage: scripts/vm-group.sh [-n N] [--nics N] [--share DIR]... [--] CMD [ARGS...]"; exit 2; }
# The switch and the VMs' NICs talk over unix datagram sockets, whose
# queues hold net.unix.max_dgram_qlen datagrams (10 by default): a burst
# beyond that is dropped, and RDMA's retransmissions then time out. As
# root, the group runs in a network namespace of its own (it needs no
# host network) where the queues hold 1024.
if [[ -z ${RB_GROUP_NETNS:-} && $(id -u) == 0 ]] && command -v unshare >/dev/null 2>&1; then
	exec env RB_GROUP_NETNS=1 unshare --net -- bash -c 'sysctl -qw net.unix.max_dgram_qlen=1024 && exec "$0" "$@"' \
		"$0" -n "$n" --nics "$nics" "${vm_opts[@]}" -- "$@"
fi
[[ -n ${RB_GROUP_NETNS:-} ]] || rb_log "warning: not root: the switch's queues keep the default length, and may drop packets under load"
[[ $n =~ ^[0-9]+$ ]] && ((n >= 2 && n <= 20)) || rb_die "--vms $n: want 2 to 20"
[[ $nics == 1 || $nics == 2 ]] || rb_die "--nics $nics: want 1 or 2"
rb_need vde_switch vde-switch

group_dir=
switch_pids=()
declare -A vm_pid=()
pfx_pids=()
# shellcheck disable=SC2317 # invoked by the traps
cleanup() {
	local rc=$? p
	trap - EXIT INT TERM HUP
	for p in "${vm_pid[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${vm_pid[@]}" "${pfx_pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	for p in "${switch_pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	[[ -z $group_dir ]] || rm -rf "$group_dir"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

group_dir=$(mktemp -d "${TMPDIR:-/tmp}/rdmabench-group.XXXXXX")
((${#group_dir} < 90)) || rb_die "TMPDIR is too long for unix socket paths: $group_dir"
# start_switch NAME: a vde_switch on the socket $group_dir/NAME.
start_switch() {
	local s=$group_dir/$1 pid
	vde_switch -s "$s" -d -p "$s.pid" >/dev/null 2>"$s.err" ||
		rb_die "vde_switch did not start: $(cat "$s.err")"
	for _ in $(seq 1 50); do
		[[ -s $s.pid ]] && break
		sleep 0.1
	done
	pid=$(cat "$s.pid" 2>/dev/null) || rb_die "vde_switch wrote no pid"
	switch_pids+=("$pid")
}
start_switch switch
((nics == 1)) || start_switch switch2

status_of() { cat "$group_dir/$1.status" 2>/dev/null || true; }

t0=$SECONDS
for i in $(seq 1 "$n"); do
	peers=() peers2=()
	for j in $(seq 1 "$n"); do
		((j == i)) || peers+=("10.0.0.$j") peers2+=("10.0.1.$j")
	done
	peer_list=$(
		IFS=,
		echo "${peers[*]}"
	)
	nic2=()
	if ((nics == 2)); then
		nic2=(--net2 "vde,sock=${group_dir//,/,,}/switch2" --ip2 "10.0.1.$i"
			--mac2 "$(printf '02:00:0a:00:01:%02x' "$i")" --peer2 "$(
				IFS=,
				echo "${peers2[*]}"
			)")
	fi
	for fd in out err; do
		mkfifo "$group_dir/$i.$fd"
		if [[ $fd == out ]]; then
			sed -u "s/^/[$i] /" <"$group_dir/$i.$fd" &
		else
			sed -u "s/^/[$i] /" <"$group_dir/$i.$fd" >&2 &
		fi
		pfx_pids+=($!)
	done
	"$here/vm.sh" "${vm_opts[@]}" -e "RDMABENCH_VM_INDEX=$i" -e "RDMABENCH_VM_COUNT=$n" \
		-e "RDMABENCH_VM_NICS=$nics" --net "vde,sock=${group_dir//,/,,}/switch" \
		--ip "10.0.0.$i" --peer "$peer_list" --mac "$(printf '02:00:0a:00:00:%02x' "$i")" "${nic2[@]}" \
		--status-file "$group_dir/$i.status" -- "$@" >"$group_dir/$i.out" 2>"$group_dir/$i.err" &
	vm_pid[$i]=$!
done

# Poll rather than `wait -n` (see vm-pair.sh).
st1=
while :; do
	if ! kill -0 "${vm_pid[1]}" 2>/dev/null; then
		st1=0
		wait "${vm_pid[1]}" || st1=$?
		unset 'vm_pid[1]'
		break
	fi
	for i in "${!vm_pid[@]}"; do
		if ! kill -0 "${vm_pid[$i]}" 2>/dev/null; then
			wait "${vm_pid[$i]}" || true
			unset "vm_pid[$i]"
			if [[ $(status_of "$i") != exit* ]]; then
				rb_log "error: VM $i failed ($(status_of "$i"): its VM, not its command; its messages above say why): stopping the others"
				exit 1
			fi
		fi
	done
	sleep 0.2
done
for _ in 1 2 3 4 5 6 7 8 9 10; do
	((${#vm_pid[@]} > 0)) || break
	for i in "${!vm_pid[@]}"; do
		if ! kill -0 "${vm_pid[$i]}" 2>/dev/null; then
			wait "${vm_pid[$i]}" || true
			unset "vm_pid[$i]"
		fi
	done
	sleep 0.1
done
for i in "${!vm_pid[@]}"; do
	kill -TERM "${vm_pid[$i]}" 2>/dev/null || true
	wait "${vm_pid[$i]}" || true
	unset "vm_pid[$i]"
done
for p in "${pfx_pids[@]}"; do
	wait "$p" 2>/dev/null || true
done
pfx_pids=()
notes=()
for i in $(seq 1 "$n"); do
	s=$(status_of "$i")
	case $s in
	exit*) notes+=("$i: exited with status ${s#exit }") ;;
	*) notes+=("$i: still running or failed (${s:-stopped})") ;;
	esac
done
rb_log "$(
	IFS=';'
	echo "${notes[*]}"
); $((SECONDS - t0))s"
exit "$st1"
