# shellcheck shell=bash
# Shared helpers for the scripts in this folder. Source it, don't run it:
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# Every function is prefixed rb_ so sourcing scripts stay readable.

# rb_prog is the name used to prefix messages (the sourcing script's name).
rb_prog=${rb_prog:-$(basename -- "$0")}

# rb_log MSG...: a line on stderr, prefixed with the script name.
rb_log() {
	printf '%s: %s\n' "$rb_prog" "$*" >&2
}

# rb_die MSG...: rb_log, then exit 1.
rb_die() {
	rb_log "error: $*"
	exit 1
}

# rb_fail_on_error NAME: a test script under `set -e` that stops at a
# command that failed says so as a failure of its own, in the tests'
# format, "--- FAIL: NAME/script: line N: COMMAND: exit S", so that a
# tally of its log (scripts/test.sh) names it; without it the script
# would stop with nothing said. Traced into functions (set -E), said by
# the script's own shell only: a subshell's command that failed (in $(...),
# where bash does not stop) is the script's failure only where the
# script's own command then fails.
rb_fail_on_error() {
	set -E
	# shellcheck disable=SC2064 # NAME expands now, the rest when it fires
	trap "rb_fail_rc=\$?; [[ \$BASHPID != \$\$ ]] || echo \"--- FAIL: $1/script: line \$LINENO: \$BASH_COMMAND: exit \$rb_fail_rc\"" ERR
}

# rb_need CMD [PACKAGE]: fail with a hint when CMD is not on PATH (also looks
# in the sbin folders, which non-root PATHs often lack).
rb_need() {
	local cmd=$1 pkg=${2:-}
	if command -v "$cmd" >/dev/null 2>&1; then
		return 0
	fi
	local d
	for d in /usr/local/sbin /usr/sbin /sbin; do
		if [[ -x $d/$cmd ]]; then
			PATH=$PATH:$d
			return 0
		fi
	done
	if [[ -n $pkg ]]; then
		rb_die "'$cmd' not found: install the Debian package '$pkg' (scripts/deps.sh installs everything)"
	fi
	rb_die "'$cmd' not found (scripts/deps.sh installs the dependencies)"
}

# rb_as_root CMD [ARGS...]: run CMD as root, through sudo when we are not root.
rb_as_root() {
	if [[ $(id -u) -eq 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo -- "$@"
	else
		rb_die "'$1' needs root and sudo is not available: run this script as root"
	fi
}

# rb_sq STRING: STRING single-quoted for any POSIX shell (sh, dash, busybox ash).
rb_sq() {
	local s=${1//\'/\'\\\'\'}
	printf "'%s'" "$s"
}

# rb_default_netdev: the interface of the IPv4 default route (empty if none).
rb_default_netdev() {
	ip -o -4 route show default 2>/dev/null |
		awk '{for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit }}'
}

# rb_rxe_wait DEV [SECONDS]: wait until port 1 of RDMA device DEV is ACTIVE.
# Returns 1 (after a message) when it is not within SECONDS (default 10).
rb_rxe_wait() {
	local dev=$1 secs=${2:-10} state=''
	local f=/sys/class/infiniband/$dev/ports/1/state
	local deadline=$((SECONDS + secs))
	while :; do
		if [[ -r $f ]]; then
			state=$(<"$f")
			[[ $state == *ACTIVE* ]] && return 0
		fi
		if ((SECONDS >= deadline)); then
			rb_log "error: port 1 of $dev is not ACTIVE after ${secs}s (state: ${state:-missing}); is its netdev up and carrying a link?"
			return 1
		fi
		sleep 0.2
	done
}

# rb_os_release: this machine's Debian release (VERSION_CODENAME of
# /etc/os-release, e.g. bookworm); fails with a message when there is none.
rb_os_release() {
	local release
	release=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[[ -n $release ]] || { rb_log "error: no VERSION_CODENAME in /etc/os-release: cannot tell this machine's Debian release"; return 1; }
	printf '%s\n' "$release"
}

# rb_apt_mirror: the URI of the archive this machine's apt takes its own
# release from (rb_os_release), as apt itself reads its configuration
# (sources.list, sources.list.d/*.list and deb822 *.sources alike), without
# a trailing slash. RDMABENCH_APT_MIRROR overrides it. Fails with a message
# when apt has no source for the release.
rb_apt_mirror() {
	if [[ -n ${RDMABENCH_APT_MIRROR:-} ]]; then
		printf '%s\n' "${RDMABENCH_APT_MIRROR%/}"
		return 0
	fi
	local release uri
	release=$(rb_os_release) || return 1
	rb_need apt-get apt
	# shellcheck disable=SC2016 # apt's own placeholders
	uri=$(apt-get indextargets --format '$(TARGET_OF) $(RELEASE) $(REPO_URI)' 2>/dev/null |
		awk -v r="$release" '$1 == "deb" && $2 == r {print $3; exit}')
	[[ -n $uri ]] || { rb_log "error: apt has no source for $release (see /etc/apt/sources.list and /etc/apt/sources.list.d); set RDMABENCH_APT_MIRROR"; return 1; }
	printf '%s\n' "${uri%/}"
}

# rb_rdma_mode: where RDMA runs: "host" when RDMABENCH_TEST_DEVICE names a
# device here or Soft-RoCE can be set up on this kernel (then it is, and
# RDMABENCH_TEST_DEVICE is exported), else "vm" (the Soft-RoCE VM).
# RDMABENCH_RDMA_MODE=host|vm forces the choice.
rb_rdma_mode() {
	local here
	here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
	if [[ -n ${RDMABENCH_RDMA_MODE:-} ]]; then
		echo "$RDMABENCH_RDMA_MODE"
	elif [[ -n ${RDMABENCH_TEST_DEVICE:-} ]]; then
		echo host
	elif "$here/softroce.sh" up >/dev/null 2>&1; then
		export RDMABENCH_TEST_DEVICE=${RDMABENCH_RXE_NAME:-rxe0}
		echo host
	else
		echo vm
	fi
}

# rb_local_copy BIN: prints the path of a copy of BIN in a new temporary
# directory of this machine. A program that is timed runs from there: in
# the VM, the folder a script shares with the host is read without a page
# cache, so a program started from it reads its pages over 9p at every
# start (0.5 s for rdmabench's 13 MB), while the programs it is timed
# against start from the VM's cached root.
rb_local_copy() {
	local dir
	dir=$(mktemp -d "${TMPDIR:-/tmp}/rb-bin.XXXXXX") || return 1
	cp -- "$1" "$dir/" && echo "$dir/$(basename -- "$1")"
}

# rb_build_release OUT [VERSION]: cmd/rdmabench built as it ships, in the
# packages (scripts/package.sh) and the container image (scripts/image.sh):
# hardened as Debian builds (PIE, full RELRO, fortified C), stripped, and
# stamped vVERSION when one is given. One set of flags for both: Go
# compiles every package again for each set (a minute on a fresh machine).
rb_build_release() {
	local out=$1 version=${2:-} ldflags="-s -w"
	[[ -z $version ]] || ldflags+=" -X github.com/rdmabench/rdmabench/internal/buildinfo.Version=v$version"
	CGO_ENABLED=1 CGO_CFLAGS="-O2 -g0 -D_FORTIFY_SOURCE=2 -fstack-protector-strong" \
		CGO_LDFLAGS="-Wl,-z,relro,-z,now" \
		go build -trimpath -buildmode=pie -ldflags "$ldflags" -o "$out" ./cmd/rdmabench
}

# rb_free_ports N: N free TCP ports of 127.0.0.1 on one line, below the
# kernel's ephemeral range (where processes' own connections take
# theirs: one could take a port before the process meant to listen on it
# starts), each bound and closed at once. (Python's, not <(...): the VM
# of scripts/vm.sh has no /dev/fd.)
rb_free_ports() {
	python3 - "$1" <<'PY'
import random, socket, sys
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
got = []
for p in random.sample(range(10000, low), low - 10000):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
        got.append(p)
    except OSError:
        pass
    finally:
        s.close()
    if len(got) == int(sys.argv[1]):
        break
print(" ".join(map(str, got)))
PY
}
