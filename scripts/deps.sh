#!/usr/bin/env bash
# Install the Debian packages needed to build rdmabench and to run its tests,
# including the Soft-RoCE VM harness (scripts/vm.sh) and the headless
# browser that tests the plots.
#
# Usage: scripts/deps.sh [--check]
#   --check   install nothing: exit 0 when every package is installed, else
#             1 with the missing ones listed
#
# Idempotent: when every package is already installed it does nothing and
# never calls apt. Runs non-interactively; uses sudo when not root. dpkg
# unpacks without syncing each file (--force-unsafe-io, as Debian's
# container images do): a fifth less time on a fresh machine; a machine
# that loses power mid-installation runs it again.
# The Go toolchain itself is not installed here (Debian's is too old).
set -euo pipefail
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

packages=(
	# build
	gcc pkg-config ca-certificates libibverbs-dev librdmacm-dev
	# RDMA user space: providers (rxe), tools, perftest for comparisons
	rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest iproute2
	# scripts/vs-perftest.sh parses rdmabench's JSON; scripts/mesh-scale.sh
	# takes rank 0's peak RSS with GNU time
	jq time
	# the browser test of `rdmabench plot` (headless, driven by chromedp) and
	# a font for its screenshots
	chromium fonts-dejavu-core
	# the OpenMetrics tests lint and parse the output with the consumers'
	# own tools: promtool (Prometheus) and the Python client's parser
	prometheus python3-prometheus-client
	# scripts/agent-vms.sh asks Prometheus' HTTP API in the VMs
	curl
	# the man page test reads the generated pages with man (groff)
	man-db groff-base
	# the container image test builds deploy/Containerfile offline: podman,
	# and a base made from Debian packages with mmdebstrap
	podman runc mmdebstrap
	# scripts/package.sh checks the .deb and .rpm it builds with the
	# distributions' own linters (and finds the .deb's library dependencies
	# with dpkg-shlibdeps)
	lintian rpmlint rpm dpkg-dev
	# scripts/helm-check.sh takes helm's release binary out of the zip
	# an npm package ships it in
	unzip
	# the traffic-class test captures RoCE v2 packets (UDP 4791) in the VM
	tcpdump
	# the Soft-RoCE VM: emulator, guest initramfs tools (zstd: newer kernels'
	# images), the clock it sets from the host's (perl's Time::HiRes)
	qemu-system-x86 busybox-static kmod cpio xz-utils zstd libperl5.36
	# the mesh's launchers, run for real in the VMs: OpenMPI, Slurm and its
	# munge, the switch joining several VMs (scripts/vm-group.sh)
	openmpi-bin slurm-wlm munge vde-switch
)

check=0
if [[ $# -gt 0 ]]; then
	case $1 in
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
		exit 0
		;;
	--check) check=1 ;;
	*)
		rb_log "usage: scripts/deps.sh [--check]"
		exit 2
		;;
	esac
fi

command -v dpkg-query >/dev/null 2>&1 || rb_die "this script needs a Debian-based system (dpkg/apt)"

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[[ $status == installed ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
	rb_log "all ${#packages[@]} packages already installed"
	exit 0
fi
if ((check)); then
	rb_log "missing: ${missing[*]}"
	exit 1
fi

rb_log "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
rb_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
rb_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	-o Dpkg::Options::=--force-unsafe-io --no-install-recommends "${missing[@]}"
rb_log "done"
