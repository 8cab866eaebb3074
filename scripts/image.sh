#!/usr/bin/env bash
# Build the rdmabench container image (deploy/Containerfile) with podman,
# from Debian packages only: no registry is needed.
#
# Usage: scripts/image.sh [build] [TAG]   build the image (default rdmabench:latest)
#        scripts/image.sh check           build it under a test tag and run it:
#                                         `version` prints this build's version,
#                                         `devices` fails cleanly with no device
#
# The base is made with mmdebstrap from the archive this machine's apt takes
# its release from (the release whose glibc the binary is built against):
# the RDMA user space (libibverbs1, librdmacm1, ibverbs-providers) and what
# it depends on, nothing else. RDMABENCH_IMAGE_MIRROR (or RDMABENCH_APT_MIRROR)
# overrides the mirror.
# Where podman cannot build or run images (no user namespaces, no storage
# driver), `check` says why and exits 77 (skipped).
set -euo pipefail
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
cd "$(dirname -- "${BASH_SOURCE[0]}")/.."

mode=build
case ${1:-} in
build) shift ;;
check) mode=check; shift ;;
-h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
-*) rb_die "usage: scripts/image.sh [build [TAG] | check]" ;;
esac
tag=${1:-rdmabench:latest}
[[ $mode == check ]] && tag=localhost/rdmabench:image-check

rb_need podman podman
rb_need mmdebstrap mmdebstrap

release=$(rb_os_release) || exit 1
mirror=${RDMABENCH_IMAGE_MIRROR:-$(rb_apt_mirror)} || exit 1

work=$(mktemp -d "${TMPDIR:-/tmp}/rdmabench-image.XXXXXX")
trap 'rm -rf "$work"' EXIT

skip() {
	echo "--- SKIP: image ($*)"
	exit 77
}
# Can podman run anything at all here? An empty image answers without a
# registry.
if ! podman info >"$work/info" 2>&1; then
	[[ $mode == check ]] && skip "podman cannot start here: $(tail -1 "$work/info")"
	rb_die "podman cannot start here: $(tail -1 "$work/info")"
fi

rb_log "building the binary"
rb_build_release "$work/rdmabench" # as the packages ship it

rb_log "making the base from $release's packages ($mirror)"
mmdebstrap --quiet --variant=extract \
	--include=libibverbs1,librdmacm1,ibverbs-providers \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	"$release" "$work/base.tar" "$mirror" >"$work/mmdebstrap.log" 2>&1 ||
	{ tail -5 "$work/mmdebstrap.log" >&2; rb_die "mmdebstrap failed"; }
base=localhost/rdmabench-base:$release
podman import --quiet "$work/base.tar" "$base" >/dev/null

rb_log "building $tag"
if ! podman build --quiet -f deploy/Containerfile --build-arg "BASE=$base" -t "$tag" "$work" >"$work/build.log" 2>&1; then
	tail -5 "$work/build.log" >&2
	[[ $mode == check ]] && skip "podman cannot build images here: $(tail -1 "$work/build.log")"
	rb_die "podman build failed"
fi
size=$(podman image inspect --format '{{.Size}}' "$tag")
rb_log "built $tag: $((size / 1000000)) MB"
[[ $mode == build ]] && exit 0

# check: the image's binary is this build, and with no device it fails
# cleanly: exit 1, one error line naming the missing device, no crash.
# The limits asked are at most any host's, so that no runtime needs to raise
# them; crun cannot run under cgroup v1 in some containers, runc then can.
run_args=(--rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
runtime=()
if ! out=$(podman run "${run_args[@]}" "$tag" version 2>&1) && [[ $out == *"OCI runtime"* ]]; then
	command -v runc >/dev/null 2>&1 || skip "podman cannot run containers here: $out"
	rb_log "the default runtime cannot run containers here ($out); using runc"
	runtime=(--runtime runc)
	out=$(podman "${runtime[@]}" run "${run_args[@]}" "$tag" version 2>&1) || true
	[[ $out == *"OCI runtime"* ]] && skip "podman cannot run containers here: $out"
fi
fail=0
want=$("$work/rdmabench" version)
got=$out
if [[ $got == "$want" ]]; then
	echo "--- PASS: image/version (the image's binary is this build: $(head -1 <<<"$got"))"
else
	echo "--- FAIL: image/version: '$got', want '$want'"
	fail=1
fi
rc=0
out=$(podman "${runtime[@]}" run "${run_args[@]}" "$tag" devices 2>&1) || rc=$?
if [[ $rc -eq 1 && $out == *"no RDMA device"* && $out != *panic* && $out != *"error while loading"* ]]; then
	echo "--- PASS: image/devices (no device: exit 1, '$(head -1 <<<"$out")')"
else
	echo "--- FAIL: image/devices: no device: exit $rc (want 1), output: $out"
	fail=1
fi
podman rmi --force "$tag" "$base" >/dev/null 2>&1 || true
exit "$fail"
