#!/usr/bin/env bash
# Several hosts for real: run one command in each of N throw-away qemu VMs
# (scripts/vm.sh, Soft-RoCE) joined by one Ethernet switch, each with its
# own NIC, address (10.0.0.1 .. 10.0.0.N) and rxe0: scripts/vm-pair.sh's
# network, for more than two hosts.
#
# Usage: scripts/vm-group.sh [options] [--] CMD [ARGS...]
#
#   scripts/vm-group.sh -n 3 -- sh -c 'echo "$RDMABENCH_VM_INDEX of 3 at $RDMABENCH_VM_IP"'
#
# Options:
#   -n, --vms N         the number of VMs (default 3; at most 20)
#   --share DIR         share DIR read-write with every VM, at the same path
#                       (repeatable); the rest of the host's filesystem is
#                       visible read-only
#   --mem MB            memory per VM (default 1024)
#   --cpus N            vCPUs per VM (default 1)
#   --timeout SECONDS   kill every VM after SECONDS (default 1800)
#   -e, --env NAME[=VALUE]
#                       pass one more environment variable (repeatable)
#   -v, --verbose       print boot timings
#   -h, --help          this text
#
# The same CMD runs in every VM (as root, in the host's current directory,
# with the environment scripts/vm.sh passes) plus RDMABENCH_VM_INDEX (1..N),
# RDMABENCH_VM_COUNT (N), RDMABENCH_VM_IP (10.0.0.INDEX) and
# RDMABENCH_PEER_IPS (the others' addresses): the command picks its part
# from its index. Each guest gets eth0 (virtio-net, MAC 02:00:0a:00:00:INDEX)
# with rxe0 on it; the NICs are joined by a vde_switch (Debian's vde-switch)
# listening on a unix socket in a private folder: no host network, no
# ports. Before CMD runs, each guest waits until its rxe0 is ACTIVE and
# every other guest answers ping (a guest answers only once its own rxe0 is
# ready), so every device is ready when any command starts.
#
# Output: every line of VM i on the host's stdout or stderr, prefixed with
# "[i] ". When VM 1 stops, the others get a second to finish, then are
# stopped. Exit status: VM 1's (its command's, or 1 when its VM failed); 1
# when another VM failed before its command ran. Each VM's status is printed
# at the end.
set -euo pipefail

rb_prog=vm-group.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

n=3
vm_opts=(--cpus 1 --mem 1024) # a later --cpus or --mem wins
while [[ $# -gt 0 ]]; do
	case $1 in
	-n | --vms) [[ $# -ge 2 ]] || rb_die "$1 needs a number"; n=$2; shift 2 ;;
	--share | --mem | --cpus | --timeout | -e | --env)
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
[[ $# -gt 0 ]] || { rb_log "usage: scripts/vm-group.sh [-n N] [--share DIR]... [--] CMD [ARGS...]"; exit 2; }
# The switch and the VMs' NICs talk over unix datagram sockets, whose
# queues hold net.unix.max_dgram_qlen datagrams (10 by default): a burst
# beyond that is dropped, and RDMA's retransmissions then time out. As
# root, the group runs in a network namespace of its own (it needs no
# host network) where the queues hold 1024.
if [[ -z ${RB_GROUP_NETNS:-} && $(id -u) == 0 ]] && command -v unshare >/dev/null 2>&1; then
	exec env RB_GROUP_NETNS=1 unshare --net -- bash -c 'sysctl -qw net.unix.max_dgram_qlen=1024 && exec "$0" "$@"' \
		"$0" -n "$n" "${vm_opts[@]}" -- "$@"
fi
[[ -n ${RB_GROUP_NETNS:-} ]] || rb_log "warning: not root: the switch's queues keep the default length, and may drop packets under load"
[[ $n =~ ^[0-9]+$ ]] && ((n >= 2 && n <= 20)) || rb_die "--vms $n: want 2 to 20"
rb_need vde_switch vde-switch

group_dir=
switch_pid=
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
	[[ -z $switch_pid ]] || kill "$switch_pid" 2>/dev/null || true
	[[ -z $group_dir ]] || rm -rf "$group_dir"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

group_dir=$(mktemp -d "${TMPDIR:-/tmp}/rdmabench-group.XXXXXX")
((${#group_dir} < 90)) || rb_die "TMPDIR is too long for unix socket paths: $group_dir"
vde_switch -s "$group_dir/switch" -d -p "$group_dir/switch.pid" >/dev/null 2>"$group_dir/switch.err" ||
	rb_die "vde_switch did not start: $(cat "$group_dir/switch.err")"
for _ in $(seq 1 50); do
	[[ -s $group_dir/switch.pid ]] && break
	sleep 0.1
done
switch_pid=$(cat "$group_dir/switch.pid" 2>/dev/null) || rb_die "vde_switch wrote no pid"

status_of() { cat "$group_dir/$1.status" 2>/dev/null || true; }

t0=$SECONDS
for i in $(seq 1 "$n"); do
	peers=()
	for j in $(seq 1 "$n"); do
		((j == i)) || peers+=("10.0.0.$j")
	done
	peer_list=$(
		IFS=,
		echo "${peers[*]}"
	)
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
		--net "vde,sock=${group_dir//,/,,}/switch" \
		--ip "10.0.0.$i" --peer "$peer_list" --mac "$(printf '02:00:0a:00:00:%02x' "$i")" \
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
				rb_log "error: VM $i failed ($(status_of "$i")) before its command ran: stopping the others"
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
