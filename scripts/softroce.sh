#!/usr/bin/env bash
# Set up Soft-RoCE (the kernel's rdma_rxe driver) directly on this host.
#
# Usage: scripts/softroce.sh up [NETDEV]   load rdma_rxe, add rxe0 on NETDEV
#                                          (default: the default route's
#                                          interface), wait until it is ACTIVE
#        scripts/softroce.sh down          remove rxe0
#        scripts/softroce.sh status        show the RDMA links; exit 0 when
#                                          rxe0 is there and ACTIVE
#
# Needs root (uses sudo otherwise). When this kernel has no rdma_rxe (many
# cloud and CI kernels), it says so and exits 1: run things inside the
# Soft-RoCE VM instead, e.g. scripts/vm.sh -- go test ./...
# Environment: RDMABENCH_RXE_NAME names the device (default rxe0).
set -euo pipefail
rb_prog=softroce.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

rxe=${RDMABENCH_RXE_NAME:-rxe0}

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

# has_rxe: does the running kernel have rdma_rxe (loaded, built in, or loadable)?
has_rxe() {
	[[ -d /sys/module/rdma_rxe ]] && return 0
	local kd
	kd=/lib/modules/$(uname -r)
	[[ -f $kd/modules.builtin ]] && grep -q '/rdma_rxe\.ko$' "$kd/modules.builtin" && return 0
	if command -v modinfo >/dev/null 2>&1 || [[ -x /sbin/modinfo ]]; then
		PATH=$PATH:/sbin:/usr/sbin modinfo rdma_rxe >/dev/null 2>&1 && return 0
	fi
	return 1
}

no_rxe() {
	rb_log "error: this kernel ($(uname -r)) has no Soft-RoCE driver (rdma_rxe)."
	if [[ ! -d /sys/class/infiniband && ! -d /sys/module/ib_core ]]; then
		rb_log "It has no RDMA support loaded at all (no ib_core)."
	fi
	rb_log "Run RDMA programs inside the Soft-RoCE VM instead, for example:"
	rb_log "  scripts/vm.sh -- ibv_devinfo"
	rb_log "  scripts/vm.sh -- go test ./..."
	exit 1
}

# link_netdev DEV: the netdev an RDMA device is bound to (empty if none).
link_netdev() {
	rdma link show "$1/1" 2>/dev/null |
		awk '{for (i = 1; i < NF; i++) if ($i == "netdev") { print $(i + 1); exit }}'
}

cmd=${1:-}
[[ $# -gt 0 ]] && shift
case $cmd in
up)
	[[ $# -le 1 ]] || { usage >&2; exit 2; }
	rb_need ip iproute2
	rb_need rdma iproute2
	has_rxe || no_rxe
	netdev=${1:-$(rb_default_netdev)}
	[[ -n $netdev ]] || rb_die "no default route to pick a netdev from: name one (scripts/softroce.sh up eth0)"
	[[ -d /sys/class/net/$netdev ]] || rb_die "no network interface '$netdev' (see: ip link)"
	if [[ -d /sys/class/infiniband/$rxe ]]; then
		cur=$(link_netdev "$rxe")
		if [[ $cur != "$netdev" ]]; then
			rb_die "$rxe already exists on ${cur:-another device}: run 'scripts/softroce.sh down' first"
		fi
		rb_log "$rxe already exists on $netdev"
	else
		# rxe needs a crc32 algorithm; the generic one may not autoload.
		if [[ ! -d /sys/module/rdma_rxe ]]; then
			rb_as_root modprobe -q crc32_generic 2>/dev/null || true
			rb_as_root modprobe rdma_rxe || no_rxe
		fi
		rb_as_root rdma link add "$rxe" type rxe netdev "$netdev" ||
			rb_die "'rdma link add $rxe type rxe netdev $netdev' failed"
	fi
	rb_rxe_wait "$rxe" 10 || exit 1
	rdma link show "$rxe/1"
	if [[ $(ulimit -l) != unlimited ]]; then
		rb_log "note: ulimit -l is $(ulimit -l) KiB here; large memory registrations need more (ulimit -l unlimited)"
	fi
	;;
down)
	[[ $# -eq 0 ]] || { usage >&2; exit 2; }
	rb_need rdma iproute2
	if [[ -d /sys/class/infiniband/$rxe ]]; then
		rb_as_root rdma link delete "$rxe"
		rb_log "$rxe removed"
	else
		rb_log "$rxe is not present"
	fi
	;;
status)
	[[ $# -eq 0 ]] || { usage >&2; exit 2; }
	rb_need rdma iproute2
	if [[ -d /sys/module/ib_core ]]; then
		rdma link show || true
	else
		rb_log "no RDMA support loaded in this kernel (no ib_core)"
	fi
	if [[ ! -d /sys/class/infiniband/$rxe ]]; then
		if has_rxe; then
			rb_log "$rxe is not set up (scripts/softroce.sh up)"
		else
			rb_log "this kernel ($(uname -r)) has no rdma_rxe: use scripts/vm.sh"
		fi
		exit 1
	fi
	state=$(<"/sys/class/infiniband/$rxe/ports/1/state")
	[[ $state == *ACTIVE* ]] || { rb_log "$rxe port 1 is $state"; exit 1; }
	;;
-h | --help | help)
	usage
	;;
*)
	usage >&2
	exit 2
	;;
esac
