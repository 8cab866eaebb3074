#!/usr/bin/env bash
# Two hosts for real: run CMD A and CMD B at once in two throw-away qemu VMs
# (scripts/vm.sh, Soft-RoCE) joined by a qemu network, each with its own NIC,
# address and rxe0. A is the server side, B the client side, by convention.
#
# Usage: scripts/vm-pair.sh [options] --a 'CMD A' --b 'CMD B'
#
#   scripts/vm-pair.sh --wait-listen 18515 --a 'ib_write_lat -d rxe0 -x 1' \
#                      --b 'ib_write_lat -d rxe0 -x 1 "$RDMABENCH_PEER_IP"'
#
# Options:
#   --a CMD, --b CMD    shell command strings, run with `bash -c` in guest A
#                       (10.0.0.1) and guest B (10.0.0.2)
#   --share DIR         share DIR read-write with both VMs, at the same path
#                       (repeatable); the rest of the host's filesystem is
#                       visible read-only
#   --mem MB            memory per VM (default 2048)
#   --cpus N            vCPUs per VM (default 1: two VMs then fit the host's
#                       2 cores; boots faster, with a little lower latency
#                       and bandwidth than 2; use 2 when one guest runs two
#                       busy-polling processes, e.g. a server and a client)
#   --timeout SECONDS   kill both VMs after SECONDS (default 1800)
#   --wait-listen PORT  start B's command only once A's command listens on
#                       PORT: a TCP socket, or an RDMA CM id (perftest -R);
#                       18515 for perftest. Without it B's command starts as
#                       soon as both guests are up: a client must then sleep
#                       or retry (A's command may still be starting).
#   --suite NAME        boot every VM on the kernel of Debian suite NAME
#                       (scripts/vm.sh --suite; default $RDMABENCH_VM_SUITE,
#                       else this machine's own release)
#   -e, --env NAME[=VALUE]
#                       pass one more environment variable (repeatable)
#   -v, --verbose       print boot timings
#   -h, --help          this text
#
# Each guest gets eth0 (virtio-net, MAC 02:00:0a:00:00:01 or :02, 10.0.0.x/24)
# on a qemu stream netdev (A's qemu listens on a unix socket in a private
# folder, B's connects: no ports, no clash between concurrent pairs), and
# rxe0 on eth0. Before its command runs, each guest waits until rxe0 is
# ACTIVE with its IPv4-mapped GID and until the other guest answers ping (a
# guest answers only once its own rxe0 is ready): when B's command starts,
# A's rxe0 is ready, but A's command may still be starting: use
# --wait-listen, or make B's client sleep or retry.
# The commands run as root in the host's current directory with the same
# environment as under scripts/vm.sh, plus RDMABENCH_VM_IP (the guest's own
# address), RDMABENCH_PEER_IP (the other's) and RDMABENCH_TEST_DEVICE=rxe0.
# The RoCE v2 GID of the address is GID index 1 (perftest: -x 1).
#
# Output: every line of A and of B (commands and guest messages) on the
# host's stdout or stderr, prefixed with "[a] " or "[b] ".
# When B's VM stops, A's VM is stopped too (killed if its command is still
# running: a server usually is). Exit status: B's (its command's, or 1 when
# B's VM failed); 1 when A's VM failed before its command ran. A's status is
# printed at the end. See docs/two-vm.md.
set -euo pipefail

rb_prog=vm-pair.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

# guest_half ROLE PORT SYNC CMD: run inside the guests with --wait-listen.
# A runs CMD and, once it listens on PORT, creates SYNC/a.listening; B waits
# for that file (SYNC is a folder both guests share), then runs CMD.
guest_half() {
	local role=$1 port=$2 sync=$3 cmd=$4 pid st=0
	local secs=${RDMABENCH_VM_PEER_WAIT:-60} hex
	local deadline=$((SECONDS + secs))
	hex=$(printf '%04X' "$port")
	if [[ $role == b ]]; then
		until [[ -e $sync/a.listening ]]; do
			[[ ! -e $sync/a.exited ]] || rb_die "A's command exited without listening on port $port"
			((SECONDS < deadline)) || rb_die "A's command is not listening on port $port after ${secs}s"
			sleep 0.1
		done
		exec bash -c "$cmd"
	fi
	bash -c "$cmd" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		# A listening TCP socket (state 0A), then an RDMA CM id.
		if cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
			awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' ||
			[[ -n $(rdma resource show cm_id src-port "$port" 2>/dev/null) ]]; then
			: >"$sync/a.listening"
			break
		fi
		if ((SECONDS >= deadline)); then
			rb_log "warning: A's command is not listening on port $port after ${secs}s"
			break
		fi
		sleep 0.1
	done
	wait "$pid" || st=$?
	: >"$sync/a.exited"
	return "$st"
}
if [[ ${1:-} == --guest-half ]]; then
	shift
	guest_half "$@"
	exit
fi

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

cmd_a='' cmd_b='' have_a=0 have_b=0 listen_port=''
vm_opts=(--cpus 1) # a later --cpus wins
while [[ $# -gt 0 ]]; do
	case $1 in
	--a | --b | --wait-listen | --share | --mem | --cpus | --timeout | --suite | -e | --env)
		[[ $# -ge 2 ]] || rb_die "$1 needs a value"
		case $1 in
		--a) cmd_a=$2 have_a=1 ;;
		--b) cmd_b=$2 have_b=1 ;;
		--wait-listen) listen_port=$2 ;;
		*) vm_opts+=("$1" "$2") ;;
		esac
		shift 2
		;;
	-v | --verbose) vm_opts+=(-v); shift ;;
	-h | --help) usage; exit 0 ;;
	*) rb_log "unknown argument $1 (see --help)"; exit 2 ;;
	esac
done
if [[ $have_a == 0 || $have_b == 0 ]]; then
	rb_log "usage: scripts/vm-pair.sh [--share DIR]... [--timeout S] [--mem MB] [--cpus N] [--wait-listen PORT] --a 'CMD A' --b 'CMD B'"
	exit 2
fi

pair_dir=
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
	[[ -z $pair_dir ]] || rm -rf "$pair_dir"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

if [[ -n $listen_port ]]; then
	if ! [[ $listen_port =~ ^[1-9][0-9]{0,4}$ ]] || ((listen_port > 65535)); then
		rb_die "--wait-listen $listen_port: not a port number"
	fi
fi

pair_dir=$(mktemp -d "${TMPDIR:-/tmp}/rdmabench-pair.XXXXXX")
# A unix socket path has at most 107 bytes.
((${#pair_dir} < 90)) || rb_die "TMPDIR is too long for unix socket paths: $pair_dir"
run=()
if [[ -n $listen_port ]]; then
	mkdir "$pair_dir/sync"
	vm_opts+=(--share "$pair_dir/sync")
	run=("$here/vm-pair.sh" --guest-half)
fi

# status_of NAME: "exit N" (its command exited with N), "error N" (its VM
# failed before or instead of that), or empty.
status_of() {
	cat "$pair_dir/$1.status" 2>/dev/null || true
}

# start_vm NAME SERVER IP PEER_IP MAC CMD: boot VM NAME in the background,
# its stdout and stderr prefixed with "[NAME] ". SERVER: on (its qemu listens
# on the network socket) or off (it connects).
start_vm() {
	local name=$1 server=$2 ip=$3 peer_ip=$4 mac=$5 cmd=(bash -c "$6")
	[[ -z $listen_port ]] || cmd=("${run[@]}" "$name" "$listen_port" "$pair_dir/sync" "$6")
	local d=${pair_dir//,/,,} # qemu option values double their commas
	local fd
	for fd in out err; do
		mkfifo "$pair_dir/$name.$fd"
		if [[ $fd == out ]]; then
			sed -u "s/^/[$name] /" <"$pair_dir/$name.$fd" &
		else
			sed -u "s/^/[$name] /" <"$pair_dir/$name.$fd" >&2 &
		fi
		pfx_pids+=($!)
	done
	"$here/vm.sh" "${vm_opts[@]}" \
		--net "stream,server=$server,addr.type=unix,addr.path=$d/net.sock" \
		--ip "$ip" --peer "$peer_ip" --mac "$mac" --status-file "$pair_dir/$name.status" \
		-- "${cmd[@]}" >"$pair_dir/$name.out" 2>"$pair_dir/$name.err" &
	vm_pid[$name]=$!
}

t0=$SECONDS
start_vm a on 10.0.0.1 10.0.0.2 02:00:0a:00:00:01 "$cmd_a"
# B's qemu connects to A's: wait for A's socket (A may first build the cache).
until [[ -S $pair_dir/net.sock ]]; do
	if ! kill -0 "${vm_pid[a]}" 2>/dev/null; then
		wait "${vm_pid[a]}" || true
		unset 'vm_pid[a]'
		rb_die "VM a failed to start ($(status_of a))"
	fi
	sleep 0.05
done
start_vm b off 10.0.0.2 10.0.0.1 02:00:0a:00:00:02 "$cmd_b"

a_note=
# Poll rather than `wait -n`: bash's `wait -n` can miss a job that ends
# while it is being set up, and then waits forever.
while :; do
	if ! kill -0 "${vm_pid[b]}" 2>/dev/null; then
		b_st=0
		wait "${vm_pid[b]}" || b_st=$?
		unset 'vm_pid[b]'
		break
	fi
	if [[ -n ${vm_pid[a]:-} ]] && ! kill -0 "${vm_pid[a]}" 2>/dev/null; then
		wait "${vm_pid[a]}" || true
		unset 'vm_pid[a]'
		a_st=$(status_of a)
		if [[ $a_st != exit* ]]; then
			rb_log "error: VM a failed (${a_st:-no status}) before its command ran: stopping VM b"
			exit 1
		fi
		a_note="exited with status ${a_st#exit } before b finished"
	fi
	sleep 0.2
done

if [[ -n ${vm_pid[a]:-} ]]; then
	# A second for a command that has just exited to report its status
	# (a guest takes about that to stop), then the VM is killed.
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		kill -0 "${vm_pid[a]}" 2>/dev/null || break
		sleep 0.1
	done
	kill -TERM "${vm_pid[a]}" 2>/dev/null || true
	wait "${vm_pid[a]}" || true
	unset 'vm_pid[a]'
	a_st=$(status_of a)
	case $a_st in
	exit*) a_note="exited with status ${a_st#exit }" ;;
	*) a_note="still running when b finished: its VM was stopped" ;;
	esac
fi
for p in "${pfx_pids[@]}"; do
	wait "$p" 2>/dev/null || true
done
pfx_pids=()
b_note=$(status_of b)
case $b_note in
exit*) b_note="exited with status ${b_note#exit }" ;;
*) b_note="VM failed (vm.sh status $b_st)" ;;
esac
rb_log "a: $a_note; b: $b_note; $((SECONDS - t0))s"
exit "$b_st"
