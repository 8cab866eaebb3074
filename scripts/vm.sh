#!/usr/bin/env bash
# Run a command inside a throw-away qemu VM that has a Soft-RoCE device (rxe0),
# for machines whose own kernel has no RDMA support. Exits with the command's
# exit status.
#
# Usage: scripts/vm.sh [options] [--] CMD [ARGS...]
#
# Options:
#   --share DIR         share DIR read-write, mounted at the same absolute path
#                       in the guest; files written there appear on the host.
#                       Repeatable. Everything else is the host's filesystem,
#                       read-only, with writes going to a throw-away tmpfs.
#   --mem MB            guest memory (default 2048); the tmpfs that takes the
#                       guest's writes lives in it
#   --cpus N            guest vCPUs (default 2; 1 makes busy-polling crawl)
#   --timeout SECONDS   kill the VM after SECONDS (default 1800)
#   --devices N         N Soft-RoCE devices (1..4, default 1): rxeI on its own
#                       dummy netdev dummyI at 10.0.I.1, each reaching only
#                       itself (loopback), for tests on several devices at
#                       once; RDMABENCH_TEST_DEVICES lists them
#   -e, --env NAME[=VALUE]
#                       pass one more environment variable (repeatable)
#   --suite NAME        boot the kernel of Debian suite NAME (e.g. trixie,
#                       unstable) instead of the one this machine's apt offers
#                       (bookworm's here): downloaded with apt from the
#                       archive the host's sources name, with NAME added in a
#                       private apt configuration; cached per kernel
#                       (default $RDMABENCH_VM_SUITE)
#   --rebuild           rebuild the cached guest kernel and initramfs first
#                       (with --suite, refresh the suite's package lists too)
#   -v, --verbose       print boot timings
#   -h, --help          this text
#
# Two-VM options (scripts/vm-pair.sh uses them; see docs/two-vm.md):
#   --net NETDEV        a virtio NIC (eth0 in the guest) on the qemu -netdev
#                       backend NETDEV (e.g. "dgram,local.type=unix,...",
#                       without id=) instead of dummy0; rxe0 is on it. The
#                       guest's clock is then set from the host's (within a
#                       few ms) before the command starts, so that VMs agree
#                       (MUNGE rejects a clock a second ahead), and watched:
#                       15 s later, then every 30 s, a guest whose clock has
#                       gained or lost more than 3% of the host's time since
#                       stops, named ("this VM's clock runs at Rx the host's
#                       rate"), with exit status 1
#   --ip IP             the guest's address (default 10.0.0.1, prefix /24)
#   --mac MAC           its MAC (default 02:00:0a:00:00:01)
#   --peer IP[,IP...]   before the command, wait until each IP answers ping
#                       (RDMABENCH_VM_PEER_WAIT seconds, default 60); this
#                       guest answers pings only once its rxe0 (and with
#                       --net2 its rxe1) is ready
#   --status-file FILE  write "exit N" there when the command ran and exited
#                       with N, "error N" when vm.sh failed otherwise
#   --net2 NETDEV       with --net, a second virtio NIC (eth1) on NETDEV, with
#                       rxe1 on it; both devices are ACTIVE before the
#                       command runs (scripts/vm-group.sh --nics 2)
#   --ip2 IP            eth1's address (default 10.0.1.1, prefix /24: keep it
#                       in a subnet of its own, apart from --ip's)
#   --mac2 MAC          eth1's MAC (default 02:00:0a:00:01:01)
#   --peer2 IP[,IP...]  as --peer, for addresses on eth1's network
#
# The command runs as root in the host's current directory (same path), with
# the host's PATH, HOME, TERM, TMPDIR, locale, GO*, CGO_*, RDMABENCH_* and a
# few build variables, plus RDMABENCH_IN_VM=1, RDMABENCH_VM_IP=10.0.0.1 (or
# --ip), RDMABENCH_VM_IP2 (with --net2), RDMABENCH_PEER_IP (with --peer) and
# RDMABENCH_TEST_DEVICE=rxe0 (unless set), RDMABENCH_TEST_DEVICES=rxe0[,rxe1...]
# (unless set; rxe0,rxe1 with --net2); with several
# --peer addresses RDMABENCH_PEER_IP is the first and RDMABENCH_PEER_IPS all
# of them. `ulimit -l` is unlimited. The guest device is rxe0 on dummy0
# (10.0.0.1/24); a server and a client in the same VM talk through it. The
# command's stdin is /dev/null; its stdout and stderr go to the host's stdout
# and stderr (as terminals when the host's are), live, through emulated
# serial ports (about 0.5 MB/s): write bulky output to a --share folder.
# Compile on the host (go test -c) rather than in the guest: it is emulated,
# and GOCACHE writes land in the guest's tmpfs.
# Exit status: the command's; 1 with a message when the VM failed or timed out.
#
# First use downloads the Debian kernel package (apt-get download, needs the
# apt lists: run scripts/deps.sh) and builds a cache in
# ${RDMABENCH_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmabench-vm}. Both
# of Debian's kernel layouts work: one linux-image package (bookworm,
# trixie), or a linux-image metapackage of linux-binary-unsigned (a zstd
# bzImage at usr/lib/modules/KV/vmlinuz.unsigned), linux-modules (.ko.xz
# under usr/lib) and linux-base (unstable's 7.x).
#
# Environment: RDMABENCH_VM_CACHE (cache folder), RDMABENCH_VM_KERNEL_DEB (a
# linux-image .deb to use instead of downloading one; not with --suite),
# RDMABENCH_VM_SUITE (--suite), RDMABENCH_VM_ACCEL
# (qemu accelerator, default "tcg,thread=multi"; "kvm" where KVM works),
# RDMABENCH_VM_QEMU (qemu binary, default qemu-system-x86_64),
# RDMABENCH_VM_TSC_KHZ (under TCG the guest's TSC frequency, tsc_early_khz=:
# default the host kernel's own figure, from dmesg or the journal; 0: the
# guest calibrates it at boot, which goes wrong on a loaded host: see
# host_tsc_khz).
set -euo pipefail

rb_prog=vm.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

# ---------------------------------------------------------------------------
# The guest: modules, stage-1 init (cached) and stage-2 init (written per run).

# Root modules, in load order; their dependencies are resolved at build time
# with modprobe --show-depends. crc32_generic: rxe needs a crc32 algorithm.
# virtio_net: the NIC of the two-VM mode (--net, --net2). sch_netem: link faults
# (loss, delay, partitions) with `tc qdisc ... netem`; sch_prio and cls_u32:
# netem on the traffic to one address only (the mesh's slowed path). vgem: a
# dma-buf exporter (DRM dumb buffers on /dev/dri/card0) for the dma-buf
# registration test. Newer kernels have no crc32_generic (crc32 is built in):
# a module of GUEST_MODULES_OPTIONAL that a kernel lacks is left out.
GUEST_MODULES="crc32_generic rdma_rxe ib_uverbs rdma_ucm ib_umad 9pnet_virtio 9p virtio_pci overlay dummy virtio_net sch_netem sch_prio cls_u32 vgem"
GUEST_MODULES_OPTIONAL="crc32_generic"
# Module parameters, "name:params".
GUEST_MODULE_PARAMS="dummy:numdummies=0"
# Bump when the way the cache is built changes.
CACHE_RECIPE=1

KERNEL_CMDLINE="console=ttyS0 panic=-1 quiet loglevel=4 tsc=reliable no_timer_check cryptomgr.notests pci=noacpi"

# host_tsc_khz: the host's TSC frequency in kHz, for the guest's
# tsc_early_khz=, or nothing. Under TCG the guest's TSC is the host's
# (qemu reads the host's counter), and with tsc=reliable it is the
# guest's clock, monotonic and wall alike. Left to itself the guest
# calibrates it at boot against the emulated HPET: three short windows,
# the lowest figure kept; an emulated CPU descheduled inside one (four
# VMs booting on two cores) gets a figure that is off, and once it is
# more than 1% off the kernel's later refinement is refused, so the
# guest's clocks run at the wrong rate for good (latencies read long,
# bandwidths low, the wall clock gaining until MUNGE and Slurm refuse its
# credentials). Given the frequency, the guest never calibrates. From the
# host kernel's own figure (its refined calibration, else the frequency
# it detected), only where the host's TSC is constant and keeps running
# (constant_tsc, nonstop_tsc); RDMABENCH_VM_TSC_KHZ overrides it (0: let
# the guest calibrate).
host_tsc_khz() {
	if [[ -n ${RDMABENCH_VM_TSC_KHZ:-} ]]; then
		[[ $RDMABENCH_VM_TSC_KHZ =~ ^[0-9]+$ ]] || rb_die "RDMABENCH_VM_TSC_KHZ=$RDMABENCH_VM_TSC_KHZ: want kHz (digits)"
		[[ $RDMABENCH_VM_TSC_KHZ == 0 ]] || echo "$RDMABENCH_VM_TSC_KHZ"
		return 0
	fi
	local flags log
	flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null) || return 0
	[[ " $flags " == *" constant_tsc "* && " $flags " == *" nonstop_tsc "* ]] || return 0
	log=$(dmesg 2>/dev/null) || log=
	[[ $log == *"tsc: "* ]] || log=$(journalctl -k -b -q --no-pager 2>/dev/null) || log=
	awk '
		function khz(s) { sub(/ MHz.*/, "", s); sub(/.* /, "", s); return int(s * 1000 + 0.5) }
		/tsc: Refined TSC clocksource calibration: [0-9.]+ MHz/ { refined = khz($0) }
		/tsc: Detected [0-9.]+ MHz TSC/ { tsc = khz($0) }
		/tsc: Detected [0-9.]+ MHz processor/ { cpu = khz($0) }
		END { k = refined ? refined : tsc ? tsc : cpu; if (k >= 100000) print k }' <<<"$log"
}

# Stage 1, /init in the cached initramfs (busybox sh as PID 1): load the
# modules, mount the exchange share, hand over to the stage-2 script found
# there. Kept minimal so that changing the guest logic needs no rebuild.
read -r -d '' STAGE1_INIT <<'EOF' || true
#!/bin/busybox sh
# Stage 1 of the rdmabench Soft-RoCE VM (built and cached by scripts/vm.sh).
# shellcheck shell=dash
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
while read -r mod args; do
	# shellcheck disable=SC2086
	insmod "/lib/modules/$mod" $args || echo "vm-init: error: insmod $mod failed" >&2
done </modules.load
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=none xchg /xchg; then
	echo "vm-init: error: cannot mount the exchange share" >&2
	reboot -f
fi
exec sh /xchg/init.sh
EOF

# Stage 2, written into the exchange folder for each run and run by stage 1
# (still busybox sh, PID 1). Reads the config written by the host.
read -r -d '' STAGE2_INIT <<'EOF' || true
#!/bin/sh
# Stage 2 of the rdmabench Soft-RoCE VM (written by scripts/vm.sh per run).
# shellcheck shell=dash disable=SC1091,SC2015,SC2016
X=/xchg
. "$X/config"
R=/newroot

say() { echo "vm-guest: $*" >&2; }
stamp() {
	[ "$VM_VERBOSE" = 1 ] || return 0
	read -r up _ </proc/uptime
	say "${up}s after kernel start: $*"
}
halt_guest() {
	sync
	# Keep "reboot: Restarting system" (an emergency-level message) off the console.
	echo 0 >/proc/sys/kernel/printk
	reboot -f
	sleep 10
}
fail() {
	say "error: $*"
	echo "$*" >"$X/error"
	halt_guest
}
mount9p() { # TAG DIR CACHE [ro]
	mount -t 9p -o "trans=virtio,version=9p2000.L,msize=512000,cache=$3${4:+,$4}" "$1" "$2"
}

# net_up IFACE ADDR/PREFIX MAC KIND: give IFACE its address and bring it up.
# KIND "dummy" creates IFACE as a dummy device (one VM: server and client on
# one rxe device); "nic" configures an existing NIC (e.g. a virtio-net joined
# to another VM through a qemu socket netdev).
net_up() {
	case $4 in
	dummy) ip link add "$1" address "$3" type dummy || return 1 ;;
	nic) ip link set "$1" address "$3" || return 1 ;;
	*) say "unknown netdev kind $4"; return 1 ;;
	esac
	ip addr add "$2" dev "$1" && ip link set "$1" up
}

# rxe_up RXE IFACE IP: add Soft-RoCE device RXE on IFACE, wait until port 1
# is ACTIVE and the IPv4-mapped GID of IP is in its GID table.
rxe_up() {
	chroot "$R" rdma link add "$1" type rxe netdev "$2" || return 1
	rxe_wait "$1" "$3"
}

# rxe_wait RXE IP: wait until port 1 of RXE is ACTIVE with the GID of IP.
rxe_wait() {
	set -- "$1" "" "$2"
	old_ifs=$IFS
	IFS=.
	# shellcheck disable=SC2086
	set -- "$1" "$2" "$3" $3
	IFS=$old_ifs
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$4" "$5" "$6" "$7")
	p=/sys/class/infiniband/$1/ports/1
	i=0
	state=missing
	while [ "$i" -lt 150 ]; do
		[ -r "$p/state" ] && read -r state <"$p/state"
		case $state in
		*ACTIVE*)
			for g in 0 1 2 3 4 5 6 7; do
				[ -r "$p/gids/$g" ] && read -r gid <"$p/gids/$g" && [ "$gid" = "$want" ] && return 0
			done
			;;
		esac
		sleep 0.1
		i=$((i + 1))
	done
	say "$1 port 1 state: ${state}; GID ::ffff:$3 ($want) not found"
	return 1
}

# peer_wait IP SECONDS: wait until IP answers ping. A ping every 0.2 s, each
# in the background (busybox ping waits whole seconds for a lost reply).
peer_wait() {
	rm -f /peer.ok
	i=0
	while [ ! -e /peer.ok ]; do
		[ "$i" -lt $(($2 * 5)) ] || return 1
		{ ping -c 1 -W 1 "$1" >/dev/null 2>&1 && : >/peer.ok; } &
		sleep 0.2
		i=$((i + 1))
	done
}

stamp "stage 2"
ulimit -l unlimited || fail "cannot set ulimit -l unlimited"
ulimit -n 65536 2>/dev/null || true

mkdir -p /host /ovl "$R"
mount9p hostroot /host loose ro || fail "cannot mount the host's root (9p)"
mount -t tmpfs -o mode=0755 tmpfs /ovl && mkdir -p /ovl/upper /ovl/work &&
	mount -t overlay -o lowerdir=/host,upperdir=/ovl/upper,workdir=/ovl/work overlay "$R" ||
	fail "cannot mount the overlay on the host's root"
mkdir -p "$R/proc" "$R/sys" "$R/dev" &&
	mount -t proc proc "$R/proc" &&
	mount -t sysfs sysfs "$R/sys" &&
	mount -t devtmpfs devtmpfs "$R/dev" &&
	mkdir -p "$R/dev/pts" "$R/dev/shm" &&
	mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts "$R/dev/pts" &&
	mount -t tmpfs -o mode=1777 tmpfs "$R/dev/shm" ||
	fail "cannot mount proc, sys, dev in the guest root"
mkdir -p "$R$VM_XCHG" && mount -o bind "$X" "$R$VM_XCHG" ||
	fail "cannot bind the exchange folder to $VM_XCHG"
i=0
while [ "$i" -lt "$VM_NSHARES" ]; do
	eval "dir=\$VM_SHARE_$i"
	# shellcheck disable=SC2154
	{ mkdir -p "$R$dir" && mount9p "share$i" "$R$dir" none; } || fail "cannot mount the share $dir"
	i=$((i + 1))
done
stamp "file systems mounted"

# The guest clock, when VMs talk to each other (--net): the kernel sets it
# from the emulated RTC, which has whole seconds (plus half a second, the
# kernel's guess), so each VM starts up to half a second off the host and
# two VMs up to a second apart. MUNGE rejects a credential stamped by a
# clock ahead of the decoder's, to the second ("Rewound credential", Slurm:
# "Check for out of sync clocks"), so a Slurm node failed at start whenever
# a message crossed a second boundary in that gap. Set it from the host's:
# a file created on the exchange share gets the host's time as its mtime;
# one process reads its own clock around five creates, takes the one with
# the shortest round trip and steps the clock by the difference (off by a
# few ms: that round trip and the file system's coarse timestamps). In the
# background, while the network comes up; the command waits for it.
# 227 is x86_64's clock_settime (syscall.ph reads dozens of files over 9p).
clock_pid=
if [ "$VM_NETKIND" = nic ]; then
	chroot "$R" perl -MTime::HiRes=time,stat -e '
		my ($f, $best, $off) = (shift, 1e9, 0);
		for my $i (1 .. 5) {
			my $t0 = time; open(my $h, ">", $f) or die "$f: $!\n"; close $h; my $t1 = time;
			my $host = (stat $f)[9] or die "$f: $!\n";
			($best, $off) = ($t1 - $t0, $host - ($t0 + $t1) / 2) if $t1 - $t0 < $best;
		}
		my $now = time + $off;
		my $s = int $now;
		syscall(227, 0, pack("q q", $s, int(($now - $s) * 1e9))) == 0 or die "clock_settime: $!\n";
	' "$VM_XCHG/clock" &
	clock_pid=$!
fi

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ip link set lo up || fail "cannot bring lo up"
# With a peer: answer its pings only once rxe is ready (see peer_wait).
[ -z "$VM_PEER_IP" ] || echo 1 >/proc/sys/net/ipv4/icmp_echo_ignore_all
net_up "$VM_NETDEV" "$VM_IP/$VM_PREFIX" "$VM_MAC" "$VM_NETKIND" ||
	fail "cannot set up $VM_NETDEV ($VM_IP/$VM_PREFIX)"
rxe_up "$VM_RXE" "$VM_NETDEV" "$VM_IP" ||
	fail "Soft-RoCE device $VM_RXE on $VM_NETDEV did not become ready (port ACTIVE with GID ::ffff:$VM_IP)"
stamp "$VM_RXE ready"
# A second NIC (--net2): eth1, another virtio-net, with rxe1 on it.
if [ -n "$VM_IP2" ]; then
	net_up eth1 "$VM_IP2/$VM_PREFIX" "$VM_MAC2" nic ||
		fail "cannot set up eth1 ($VM_IP2/$VM_PREFIX)"
	rxe_up rxe1 eth1 "$VM_IP2" ||
		fail "Soft-RoCE device rxe1 on eth1 did not become ready (port ACTIVE with GID ::ffff:$VM_IP2)"
	stamp "rxe1 ready"
fi
# More devices (--devices): rxeN on dummyN at 10.0.N.1, added together.
n=1
while [ "$n" -lt "$VM_NDEVICES" ]; do
	net_up "dummy$n" "10.0.$n.1/24" "02:00:0a:00:0$n:01" dummy || fail "cannot set up dummy$n (10.0.$n.1/24)"
	chroot "$R" rdma link add "rxe$n" type rxe netdev "dummy$n" || fail "cannot add rxe$n on dummy$n"
	n=$((n + 1))
done
n=1
while [ "$n" -lt "$VM_NDEVICES" ]; do
	rxe_wait "rxe$n" "10.0.$n.1" || fail "Soft-RoCE device rxe$n on dummy$n did not become ready"
	n=$((n + 1))
done
[ "$VM_NDEVICES" -lt 2 ] || stamp "$((VM_NDEVICES - 1)) more Soft-RoCE devices ready"
if [ -n "$VM_PEER_IP" ]; then
	echo 0 >/proc/sys/net/ipv4/icmp_echo_ignore_all
	for p in $(echo "$VM_PEER_IP" | tr , ' '); do
		peer_wait "$p" "$VM_PEER_WAIT" ||
			fail "the peer $p does not answer ping after ${VM_PEER_WAIT}s (its VM did not boot, or its $VM_RXE is not ready)"
		stamp "peer $p answers ping"
	done
	for p in $(echo "$VM_PEER_IP2" | tr , ' '); do
		peer_wait "$p" "$VM_PEER_WAIT" ||
			fail "the peer $p does not answer ping on eth1 after ${VM_PEER_WAIT}s"
		stamp "peer $p answers ping"
	done
fi

if [ -n "$clock_pid" ]; then
	wait "$clock_pid" || fail "cannot set the guest clock from the host's"
	stamp "clock set from the host's"
	# Then watch its rate: 15 s after it was set, then every 30 s, its
	# offset from the host's again (as above, the best of 3); when it has
	# gained or lost more than 3% of the host's time since, past what the
	# round trips leave unknown, the guest stops, named: its timings and
	# clock-stamped credentials are all wrong. The last figure is in
	# clock.rate (rate, host seconds, seconds gained) for the host side.
	{
		bad=$(chroot "$R" perl -MTime::HiRes=time,stat,sleep -e '
			my ($f, $out) = @ARGV;
			sub off {
				my ($best, $off) = (1e9, 0);
				for my $i (1 .. 3) {
					my $t0 = time; open(my $h, ">", $f) or die "$f: $!\n"; close $h; my $t1 = time;
					my $host = (stat $f)[9] or die "$f: $!\n";
					($best, $off) = ($t1 - $t0, $host - ($t0 + $t1) / 2) if $t1 - $t0 < $best;
				}
				return ($off, $best);
			}
			my ($o0, $r0) = off();
			my $h0 = time + $o0;
			for (my $wait = 15; ; $wait = 30) {
				sleep $wait;
				my ($o, $r) = off();
				my $el = time + $o - $h0;
				next if $el <= 0;
				my $gained = $o0 - $o;
				if (open(my $w, ">", "$out.tmp")) {
					printf $w "%.5f %.1f %.3f\n", ($el + $gained) / $el, $el, $gained;
					close $w;
					rename "$out.tmp", $out;
				}
				if (abs($gained) - ($r0 + $r) / 2 > 0.03 * $el) {
					printf "%.2f %.0f %+.1f\n", ($el + $gained) / $el, $el, $gained;
					exit 3;
				}
			}' "$VM_XCHG/clock" "$VM_XCHG/clock.rate" 2>/dev/null)
		if [ -n "$bad" ]; then
			# shellcheck disable=SC2086
			set -- $bad
			why="it calibrated its TSC at boot, wrong"
			[ -z "$VM_TSC_KHZ" ] || why="its TSC does not run at the $VM_TSC_KHZ kHz it was given (tsc_early_khz=)"
			fail "this VM's clock runs at $1x the host's rate ($3 s off in the host's $2 s since it was set): its timings are wrong, and MUNGE and Slurm refuse its credentials; $why: set RDMABENCH_VM_TSC_KHZ to the host's TSC kHz"
		fi
	} &
fi

# The guest terminals: no output post-processing (no LF -> CRLF).
stty -F /dev/ttyS0 -opost 2>/dev/null
stty -F /dev/ttyS1 -opost 2>/dev/null
# stdout/stderr are terminals only when the host's are; otherwise pipes.
out=/dev/ttyS1
err=/dev/ttyS0
relays=
if [ "$VM_STDOUT_TTY" != 1 ]; then
	mkfifo /out.fifo && out=/out.fifo
	cat /out.fifo >/dev/ttyS1 &
	relays="$relays $!"
fi
if [ "$VM_STDERR_TTY" != 1 ]; then
	mkfifo /err.fifo && err=/err.fifo
	cat /err.fifo >/dev/ttyS0 &
	relays="$relays $!"
fi

. "$X/args"
stamp "command starts"
env -i /bin/busybox chroot "$R" /bin/sh -c '. "$1" && cd "$2" && shift 2 && exec "$@"' \
	sh "$VM_XCHG/env.sh" "$VM_CWD" "$@" </dev/null >"$out" 2>"$err"
st=$?
stamp "command exited with status $st"

# Let the relays drain; a background process of the command may still hold
# the pipe open, so don't wait for them forever.
i=0
for pid in $relays; do
	while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 30 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill "$pid" 2>/dev/null
done
sync
echo "$st" >"$X/status"
halt_guest
EOF

# ---------------------------------------------------------------------------
# Host side.

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

shares=()
extra_env=()
mem=2048
cpus=2
timeout=1800
ndevices=1
rebuild=0
suite=${RDMABENCH_VM_SUITE:-}
verbose=${RDMABENCH_VM_VERBOSE:-0}
net='' ip=10.0.0.1 mac=02:00:0a:00:00:01 peer='' status_file=''
net2='' ip2=10.0.1.1 mac2=02:00:0a:00:01:01 peer2=''

while [[ $# -gt 0 ]]; do
	case $1 in
	--share) [[ $# -ge 2 ]] || rb_die "--share needs a folder"; shares+=("$2"); shift 2 ;;
	--share=*) shares+=("${1#*=}"); shift ;;
	--mem) [[ $# -ge 2 ]] || rb_die "--mem needs MB"; mem=$2; shift 2 ;;
	--mem=*) mem=${1#*=}; shift ;;
	--cpus) [[ $# -ge 2 ]] || rb_die "--cpus needs a number"; cpus=$2; shift 2 ;;
	--cpus=*) cpus=${1#*=}; shift ;;
	--timeout) [[ $# -ge 2 ]] || rb_die "--timeout needs seconds"; timeout=$2; shift 2 ;;
	--timeout=*) timeout=${1#*=}; shift ;;
	--devices) [[ $# -ge 2 ]] || rb_die "--devices needs a number"; ndevices=$2; shift 2 ;;
	--devices=*) ndevices=${1#*=}; shift ;;
	-e | --env) [[ $# -ge 2 ]] || rb_die "$1 needs NAME[=VALUE]"; extra_env+=("$2"); shift 2 ;;
	--env=*) extra_env+=("${1#*=}"); shift ;;
	--net | --ip | --mac | --peer | --status-file | --net2 | --ip2 | --mac2 | --peer2)
		[[ $# -ge 2 ]] || rb_die "$1 needs a value"
		opt=${1#--}
		printf -v "${opt/-/_}" '%s' "$2" # net, ip, mac, peer, status_file, net2, ...
		shift 2
		;;
	--suite) [[ $# -ge 2 ]] || rb_die "--suite needs a Debian suite"; suite=$2; shift 2 ;;
	--suite=*) suite=${1#*=}; shift ;;
	--rebuild) rebuild=1; shift ;;
	-v | --verbose) verbose=1; shift ;;
	-h | --help) usage; exit 0 ;;
	--) shift; break ;;
	-*) rb_log "unknown option $1 (see --help)"; exit 2 ;;
	*) break ;;
	esac
done
if [[ $# -eq 0 ]]; then
	rb_log "usage: scripts/vm.sh [--share DIR]... [--mem MB] [--timeout SECONDS] [--] CMD [ARGS...]"
	exit 2
fi
peer_wait=${RDMABENCH_VM_PEER_WAIT:-60}
for n in "$mem" "$cpus" "$timeout" "$peer_wait"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || { rb_log "not a positive number: $n"; exit 2; }
done
IFS=, read -r -a peers <<<"$peer"
for a in "$ip" ${peer:+"${peers[@]}"}; do
	[[ $a =~ ^([0-9]{1,3}\.){3}[0-9]{1,3}$ ]] || { rb_log "not an IPv4 address: $a"; exit 2; }
done
[[ $mac =~ ^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$ ]] || { rb_log "not a MAC address: $mac"; exit 2; }
if [[ -n $net2 ]]; then
	[[ -n $net ]] || { rb_log "--net2 is a second NIC: it needs --net"; exit 2; }
	IFS=, read -r -a peers2 <<<"$peer2"
	for a in "$ip2" ${peer2:+"${peers2[@]}"}; do
		[[ $a =~ ^([0-9]{1,3}\.){3}[0-9]{1,3}$ ]] || { rb_log "not an IPv4 address: $a"; exit 2; }
	done
	[[ ${ip2%.*} != "${ip%.*}" ]] || { rb_log "--ip2 $ip2: want a subnet (/24) apart from --ip $ip"; exit 2; }
	[[ $mac2 =~ ^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$ ]] || { rb_log "not a MAC address: $mac2"; exit 2; }
	[[ ${mac2,,} != "${mac,,}" ]] || { rb_log "--mac2 $mac2: the same as --mac"; exit 2; }
elif [[ -n $peer2 ]]; then
	rb_log "--peer2 is for addresses on the second NIC's network: it needs --net2"
	exit 2
fi
if [[ -n $suite ]]; then
	[[ $suite =~ ^[a-z][a-z0-9.-]*$ ]] || { rb_log "--suite $suite: not a Debian suite name (e.g. trixie, unstable)"; exit 2; }
	[[ -z ${RDMABENCH_VM_KERNEL_DEB:-} ]] || { rb_log "--suite $suite and RDMABENCH_VM_KERNEL_DEB: choose one kernel"; exit 2; }
fi
[[ $ndevices =~ ^[1-4]$ ]] || { rb_log "--devices $ndevices: want 1 to 4"; exit 2; }
[[ -z $net || $ndevices == 1 ]] || { rb_log "--devices is for one VM on dummy netdevs, not --net"; exit 2; }

now() { printf '%s' "${EPOCHREALTIME/[,.]/}"; } # microseconds
t_start=$(now)
vlog() { [[ $verbose == 1 ]] && rb_log "$(awk -v a="$t_start" -v b="$(now)" 'BEGIN{printf "%6.2fs", (b-a)/1e6}'): $*"; true; }

[[ $(uname -m) == x86_64 ]] || rb_die "only x86_64 hosts are supported (the guest is Debian's amd64 kernel)"
qemu=${RDMABENCH_VM_QEMU:-qemu-system-x86_64}
rb_need "$qemu" qemu-system-x86
rb_need rdma iproute2 # runs inside the guest, from the host's root
rb_need timeout coreutils

# ---------------------------------------------------------------------------
# The cache: vmlinux + initramfs.cpio + stamp, in a folder named after a hash
# of everything that goes into it.

cache_root=${RDMABENCH_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdmabench-vm}
cache_key=$(printf '%s\n' "$CACHE_RECIPE" "$GUEST_MODULES" "$GUEST_MODULE_PARAMS" "$STAGE1_INIT" |
	sha256sum | cut -c1-12)
# The default kernel's folder is guest-KEY; a suite's, guest-KERNEL-KEY,
# named in suite-NAME once built (so that a run needs no apt).
cache=$cache_root/guest-$cache_key

cache_ok() {
	[[ -s $1/stamp && -s $1/vmlinux && -s $1/initramfs.cpio ]]
}

# The apt options of the kernel's packages: none for the host's own
# configuration; with --suite, a private list of the suite alone, from the
# archive the host's apt takes its release from, kept in apt-NAME.
apt_opts=()
[[ $(id -u) -eq 0 ]] && apt_opts=(-o APT::Sandbox::User=root)
if [[ -n $suite ]]; then
	apt_dir=$cache_root/apt-$suite
	apt_opts+=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
		-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
fi

# suite_update: fetch the suite's package lists (Packages only).
suite_update() {
	local mirror log=$cache_root/apt-$suite.log
	mirror=$(rb_apt_mirror) || exit 1
	mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
	printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nTargets: Packages\nLanguages: none\n' \
		"$mirror" "$suite" >"$apt_dir/sources.list.d/suite.sources"
	rb_log "fetching the package lists of $suite ($mirror)"
	apt-get "${apt_opts[@]}" -q update >"$log" 2>&1 ||
		rb_die "apt-get update of $suite failed (see $log)"
	apt-cache "${apt_opts[@]}" show linux-image-amd64 >/dev/null 2>&1 ||
		rb_die "$suite has no linux-image-amd64 (a Debian suite? see $log)"
}

# kernel_pkgs: print the kernel's package, then the packages to download:
# the package linux-image-amd64 depends on, or, where that is a metapackage
# of linux-binary-*, linux-modules-* and linux-base-*, those three (the
# unsigned binary where there is one).
kernel_pkgs() {
	local pkg deps d
	pkg=$(apt-cache "${apt_opts[@]}" depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-/ {print $2; exit}') || true
	[[ -n $pkg ]] || rb_die "apt does not know linux-image-amd64: run 'apt-get update' (or scripts/deps.sh) first"
	echo "$pkg"
	deps=$(apt-cache "${apt_opts[@]}" depends "$pkg" 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-(binary|modules|base)-/ {print $2}') || true
	if [[ -z $deps ]]; then
		echo "$pkg"
		return 0
	fi
	for d in $deps; do
		if [[ $d == linux-binary-* ]] &&
			apt-cache "${apt_opts[@]}" show "linux-binary-unsigned-${d#linux-binary-}" >/dev/null 2>&1; then
			d=linux-binary-unsigned-${d#linux-binary-}
		fi
		echo "$d"
	done
}

# strip_sig FILE: drop the appended module signature (saves ~0.5 s a boot:
# the guest kernel then does not verify it).
strip_sig() {
	local f=$1 size len magic
	size=$(stat -c %s "$f")
	((size > 40)) || return 0
	magic=$(tail -c 28 "$f" | tr -d '\n')
	[[ $magic == '~Module signature appended~' ]] || return 0
	# struct module_signature (12 bytes) ends with the signature length, big-endian.
	len=$(od -An -tu1 -j $((size - 32)) -N4 "$f" | awk '{print $1*16777216 + $2*65536 + $3*256 + $4}')
	((len > 0 && len < size - 40)) || return 0
	truncate -s $((size - 28 - 12 - len)) "$f"
}

# build_cache DIR PKG...: the kernel (ELF vmlinux) and initramfs of PKG...
# (kernel_pkgs' list) in DIR.
build_cache() {
	local tmp=$1 log=$1/build.log pkg=$2
	shift 2
	local deb base m line path name vmlinuz off kv
	rb_need apt-get apt
	rb_need dpkg-deb dpkg
	rb_need depmod kmod
	rb_need modprobe kmod
	rb_need cpio cpio
	rb_need xz xz-utils
	rb_need zstd zstd
	mkdir -p "$tmp/dl" "$tmp/root" "$tmp/initramfs/bin" "$tmp/initramfs/lib/modules" \
		"$tmp/initramfs/proc" "$tmp/initramfs/sys" "$tmp/initramfs/dev" "$tmp/initramfs/xchg" \
		"$tmp/modprobe.d"

	if [[ -n ${RDMABENCH_VM_KERNEL_DEB:-} ]]; then
		cp -- "$RDMABENCH_VM_KERNEL_DEB" "$tmp/dl/"
	else
		# A mirror that drops a download (apt's own quick retries all
		# answered "Ign") is given two more tries, a little later.
		local try
		for try in 1 2 3; do
			(cd "$tmp/dl" && apt-get download -q "${apt_opts[@]}" "$@") >>"$log" 2>&1 && break
			((try < 3)) || rb_die "apt-get download $* failed, three times (see $log)"
			rb_log "apt-get download $* failed (try $try of 3); again in $((try * 10)) s"
			sleep $((try * 10))
		done
	fi
	for deb in "$tmp"/dl/*.deb; do
		dpkg-deb -x "$deb" "$tmp/root" >>"$log" 2>&1 || rb_die "cannot extract $deb"
	done

	# Modules in /lib/modules, or in /usr/lib/modules: kmod's -b and -d then
	# want the root's lib to be usr/lib, as on a merged-/usr system.
	base=$tmp/root
	if [[ ! -e $base/lib ]] && compgen -G "$base/usr/lib/modules/*" >/dev/null; then
		ln -s usr/lib "$base/lib"
	fi
	compgen -G "$base/lib/modules/*" >/dev/null || rb_die "$pkg ships no modules"
	kv=$(basename "$(echo "$base"/lib/modules/*)")
	depmod -b "$base" "$kv" >>"$log" 2>&1 || rb_die "depmod failed (see $log)"

	# The modules and their dependencies, in load order, each once,
	# uncompressed (busybox insmod reads plain .ko).
	local -A seen=()
	: >"$tmp/initramfs/modules.load"
	for m in $GUEST_MODULES; do
		# An empty config dir: ignore the host's modprobe.d options.
		if ! modprobe -C "$tmp/modprobe.d" -d "$base" -S "$kv" --show-depends "$m" >"$tmp/deps" 2>>"$log"; then
			[[ " $GUEST_MODULES_OPTIONAL " == *" $m "* ]] || rb_die "module $m not found in $pkg"
			echo "module $m: not in $kv, left out" >>"$log"
			continue
		fi
		while read -r line path _; do
			[[ $line == insmod ]] || continue # "builtin x": nothing to load
			name=$(basename "$path")
			name=${name%.xz}
			name=${name%.zst}
			[[ -z ${seen[$name]:-} ]] || continue
			seen[$name]=1
			case $path in
			*.xz) xz -dc "$path" >"$tmp/initramfs/lib/modules/$name" ;;
			*.zst) zstd -q -dc "$path" >"$tmp/initramfs/lib/modules/$name" ;;
			*) cp "$path" "$tmp/initramfs/lib/modules/$name" ;;
			esac || rb_die "cannot copy the module $path"
			strip_sig "$tmp/initramfs/lib/modules/$name"
			local params='' p
			for p in $GUEST_MODULE_PARAMS; do
				[[ ${p%%:*}.ko == "$name" ]] && params=${p#*:}
			done
			echo "$name $params" >>"$tmp/initramfs/modules.load"
		done <"$tmp/deps"
	done

	# busybox must be static: it runs before any library is reachable.
	local bb
	bb=$(command -v busybox || true)
	[[ -n $bb ]] || rb_die "busybox not found: install busybox-static"
	if ldd "$bb" >/dev/null 2>&1; then
		rb_die "$bb is dynamically linked: install busybox-static"
	fi
	cp "$bb" "$tmp/initramfs/bin/busybox"
	for m in $("$bb" --list); do
		[[ $m == busybox ]] || ln -s busybox "$tmp/initramfs/bin/$m"
	done
	printf '%s\n' "$STAGE1_INIT" >"$tmp/initramfs/init"
	chmod 755 "$tmp/initramfs/init"
	(cd "$tmp/initramfs" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$tmp/initramfs.cpio"

	# Boot the uncompressed ELF vmlinux (PVH entry): much faster than
	# letting the guest decompress the bzImage under emulation. The bzImage
	# is /boot/vmlinuz-KV (XZ payload) or lib/modules/KV/vmlinuz.unsigned
	# (zstd payload).
	vmlinuz=
	for f in "$base/boot/vmlinuz-$kv" "$base/lib/modules/$kv/vmlinuz.unsigned" "$base/lib/modules/$kv/vmlinuz"; do
		[[ -f $f ]] && { vmlinuz=$f; break; }
	done
	[[ -n $vmlinuz ]] || rb_die "$pkg has no kernel image (boot/vmlinuz-$kv or lib/modules/$kv/vmlinuz*)"
	if off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$vmlinuz" | head -n1 | cut -d: -f1) && [[ -n $off ]]; then
		tail -c +$((off + 1)) "$vmlinuz" | xz -dc --single-stream >"$tmp/vmlinux" 2>>"$log" || true
	elif off=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$vmlinuz" | head -n1 | cut -d: -f1) && [[ -n $off ]]; then
		# What follows the zstd frame is not zstd: zstd complains of it,
		# after writing the whole frame.
		tail -c +$((off + 1)) "$vmlinuz" | zstd -q -dc >"$tmp/vmlinux" 2>>"$log" || true
	fi
	if [[ ! -s $tmp/vmlinux || $(head -c 4 "$tmp/vmlinux" | od -An -c | tr -d ' ') != 177ELF ]]; then
		echo "no XZ or zstd-compressed ELF in $vmlinuz: booting the bzImage" >>"$log"
		cp "$vmlinuz" "$tmp/vmlinux"
	fi

	rm -rf "$tmp/root" "$tmp/dl" "$tmp/deps" "$tmp/modprobe.d" "$tmp/initramfs"
	printf 'package=%s\nkernel=%s\nsuite=%s\nbuilt=%s\n' "$pkg" "$kv" "${suite:-}" "$(date -u +%FT%TZ)" >"$tmp/stamp"
}

# suite_cache: the cache folder the suite's map names, if it is complete
# and built by this recipe (its name ends in this cache key: the modules,
# their parameters and stage 1 as this script has them).
suite_cache() {
	local m=$cache_root/suite-$suite d
	[[ -s $m ]] || return 1
	d=$cache_root/$(<"$m")
	[[ $d == *-"$cache_key" ]] || return 1
	cache_ok "$d" || return 1
	echo "$d"
}

ensure_cache() {
	if [[ $rebuild == 0 ]]; then
		if [[ -z $suite ]] && cache_ok "$cache"; then
			return 0
		fi
		if [[ -n $suite ]] && cache=$(suite_cache); then
			return 0
		fi
	fi
	mkdir -p "$cache_root"
	# One builder at a time; the others wait for it and use its result.
	exec {lockfd}>"$cache_root/.lock"
	if ! flock -n "$lockfd"; then
		rb_log "waiting for another vm.sh to finish building the guest cache"
		flock "$lockfd"
	fi
	local pkgs=() stale
	if [[ -n $suite ]]; then
		if [[ $rebuild == 1 ]] || ! cache=$(suite_cache); then
			# The lists of an earlier build serve until --rebuild.
			if [[ $rebuild == 1 ]] || ! compgen -G "$apt_dir/lists/*_Packages*" >/dev/null; then
				suite_update
			fi
			mapfile -t pkgs < <(kernel_pkgs)
			[[ ${#pkgs[@]} -ge 2 ]] || exit 1
			cache=$cache_root/guest-${pkgs[0]#linux-image-}-$cache_key
		fi
		stale="guest-${pkgs[0]#linux-image-}-*"
	else
		stale='guest-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'
	fi
	if [[ $rebuild == 1 ]] || ! cache_ok "$cache"; then
		if [[ ${#pkgs[@]} -eq 0 ]]; then
			if [[ -n ${RDMABENCH_VM_KERNEL_DEB:-} ]]; then
				[[ -f $RDMABENCH_VM_KERNEL_DEB ]] || rb_die "RDMABENCH_VM_KERNEL_DEB=$RDMABENCH_VM_KERNEL_DEB: no such file"
				pkgs=("$(dpkg-deb -f "$RDMABENCH_VM_KERNEL_DEB" Package)")
			else
				mapfile -t pkgs < <(kernel_pkgs)
				[[ ${#pkgs[@]} -ge 2 ]] || exit 1
			fi
		fi
		rb_log "building the guest kernel cache in $cache (one-time, 10-60 s)"
		local t0 tmp
		t0=$(now)
		tmp=$(mktemp -d "$cache_root/.build.XXXXXX")
		build_tmp=$tmp
		build_cache "$tmp" "${pkgs[0]}" "${pkgs[@]:1}"
		chmod 755 "$tmp"
		# Publish atomically: a folder is either complete or absent.
		if [[ -e $cache ]]; then
			rm -rf "$cache.old.$$"
			mv -T "$cache" "$cache.old.$$"
			rm -rf "$cache.old.$$"
		fi
		mv -T "$tmp" "$cache"
		build_tmp=
		# Caches of the same kernel by other versions of this script are
		# stale: drop them (other kernels' stay).
		local old
		for old in "$cache_root"/$stale; do
			[[ ! -e $old || $old == "$cache" ]] || rm -rf "$old"
		done
		rb_log "guest cache built in $(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", (b-a)/1e6}')s ($(sed -n 's/^package=//p' "$cache/stamp"))"
	fi
	[[ -z $suite ]] || basename "$cache" >"$cache_root/suite-$suite"
	flock -u "$lockfd"
	exec {lockfd}>&-
}

# ---------------------------------------------------------------------------
# Run.

build_tmp=
run_dir=
qemu_pid=
relay_pids=()
# shellcheck disable=SC2317 # invoked by the traps
cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	if [[ -n $qemu_pid ]] && kill -0 "$qemu_pid" 2>/dev/null; then
		kill -TERM "$qemu_pid" 2>/dev/null || true
		wait "$qemu_pid" 2>/dev/null || true
	fi
	local p
	for p in "${relay_pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	[[ -z $build_tmp ]] || rm -rf "$build_tmp"
	[[ -z $run_dir ]] || rm -rf "$run_dir"
	if [[ -n $status_file && ! -s $status_file ]]; then
		echo "error $rc" >"$status_file" || true
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

ensure_cache
vlog "cache ready"

accel=${RDMABENCH_VM_ACCEL:-tcg,thread=multi}
cpu=qemu64
[[ $accel == kvm* ]] && cpu=host
cmdline=$KERNEL_CMDLINE
tsc_khz=
if [[ $accel == tcg* ]]; then
	tsc_khz=$(host_tsc_khz)
	[[ -z $tsc_khz ]] || cmdline+=" tsc_early_khz=$tsc_khz"
fi
if [[ -n $tsc_khz ]]; then
	vlog "guest TSC: $tsc_khz kHz (tsc_early_khz=, the host's)"
else
	vlog "guest TSC: calibrated by the guest at boot"
fi

run_dir=$(mktemp -d "${TMPDIR:-/tmp}/rdmabench-vm.XXXXXX")
x=$run_dir/x
mkdir "$x"
mkfifo "$run_dir/ttyS0" "$run_dir/ttyS1"

# qemu option values escape commas by doubling them.
qarg() { printf '%s' "${1//,/,,}"; }

stdout_tty=0 stderr_tty=0
[[ -t 1 ]] && stdout_tty=1
[[ -t 2 ]] && stderr_tty=1
virtfs=(-virtfs "local,path=/,mount_tag=hostroot,security_model=none,multidevs=remap,readonly=on"
	-virtfs "local,path=$(qarg "$x"),mount_tag=xchg,security_model=none,multidevs=remap")
{
	printf 'VM_XCHG=%s\n' "$(rb_sq "$x")"
	printf 'VM_CWD=%s\n' "$(rb_sq "$PWD")"
	printf 'VM_VERBOSE=%s\n' "$verbose"
	printf 'VM_STDOUT_TTY=%s\nVM_STDERR_TTY=%s\n' "$stdout_tty" "$stderr_tty"
	# The guest network: dummy0, or eth0 (virtio-net) joined to a peer VM.
	if [[ -n $net ]]; then
		printf 'VM_NETDEV=eth0\nVM_NETKIND=nic\n'
	else
		printf 'VM_NETDEV=dummy0\nVM_NETKIND=dummy\n'
	fi
	printf 'VM_IP=%s\nVM_PREFIX=24\nVM_MAC=%s\nVM_RXE=rxe0\n' "$ip" "$mac"
	printf 'VM_NDEVICES=%s\n' "$ndevices"
	printf 'VM_TSC_KHZ=%s\n' "$tsc_khz"
	printf 'VM_PEER_IP=%s\nVM_PEER_WAIT=%s\n' "$peer" "$peer_wait"
	# The second NIC (--net2): eth1 and rxe1, when VM_IP2 is set.
	if [[ -n $net2 ]]; then
		printf 'VM_IP2=%s\nVM_MAC2=%s\nVM_PEER_IP2=%s\n' "$ip2" "$mac2" "$peer2"
	else
		printf 'VM_IP2=\nVM_MAC2=\nVM_PEER_IP2=\n'
	fi
	printf 'VM_NSHARES=%s\n' "${#shares[@]}"
	i=0
	for d in "${shares[@]}"; do
		[[ -d $d ]] || rb_die "--share $d: not a folder"
		d=$(cd -- "$d" && pwd -P)
		[[ $d != / ]] || rb_die "--share /: the root is already shared (read-only)"
		printf 'VM_SHARE_%d=%s\n' "$i" "$(rb_sq "$d")"
		virtfs+=(-virtfs "local,path=$(qarg "$d"),mount_tag=share$i,security_model=none,multidevs=remap")
		i=$((i + 1))
	done
} >"$x/config"
printf '%s\n' "$STAGE2_INIT" >"$x/init.sh"

# The command and its environment, shell-quoted for the guest's /bin/sh.
{
	printf 'set --'
	for a in "$@"; do printf ' %s' "$(rb_sq "$a")"; done
	printf '\n'
} >"$x/args"
{
	while IFS= read -r name; do
		case $name in
		PATH | HOME | USER | LOGNAME | LANG | LANGUAGE | LC_* | TZ | TERM | TMPDIR | CI) ;;
		GO* | CGO_* | RDMABENCH_*) ;;
		CC | CXX | CFLAGS | CPPFLAGS | CXXFLAGS | LDFLAGS | PKG_CONFIG_PATH) ;;
		*) continue ;;
		esac
		printf 'export %s=%s\n' "$name" "$(rb_sq "${!name}")"
	done < <(compgen -e)
	for kv in "${extra_env[@]}"; do
		name=${kv%%=*}
		[[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || rb_die "--env $kv: bad variable name"
		if [[ $kv == *=* ]]; then
			printf 'export %s=%s\n' "$name" "$(rb_sq "${kv#*=}")"
		elif [[ -n ${!name+set} ]]; then
			printf 'export %s=%s\n' "$name" "$(rb_sq "${!name}")"
		fi
	done
	# shellcheck disable=SC2016 # expanded in the guest
	printf 'export RDMABENCH_TEST_DEVICE="${RDMABENCH_TEST_DEVICE:-rxe0}"\n'
	devs=rxe0
	for ((d = 1; d < ndevices; d++)); do devs+=,rxe$d; done
	[[ -z $net2 ]] || devs=rxe0,rxe1
	# shellcheck disable=SC2016 # expanded in the guest
	printf 'export RDMABENCH_TEST_DEVICES="${RDMABENCH_TEST_DEVICES:-%s}"\n' "$devs"
	printf 'export RDMABENCH_IN_VM=1 RDMABENCH_VM_IP=%s\n' "$ip"
	[[ -z $net2 ]] || printf 'export RDMABENCH_VM_IP2=%s\n' "$ip2"
	[[ -z $peer ]] || printf 'export RDMABENCH_PEER_IP=%s RDMABENCH_PEER_IPS=%s\n' "${peer%%,*}" "$peer"
} >"$x/env.sh"

# Console (ttyS0, kernel messages and the command's stderr) -> our stderr;
# ttyS1 (the command's stdout) -> our stdout. Through FIFOs so that qemu
# never touches our stdin or terminal settings.
# We hold both FIFOs open read-write until qemu is gone: no open() blocks,
# whatever starts or fails first, and the relays see EOF once we close them.
exec {hold0}<>"$run_dir/ttyS0" {hold1}<>"$run_dir/ttyS1"
cat "$run_dir/ttyS0" >&2 {hold0}>&- {hold1}>&- &
relay_pids+=($!)
cat "$run_dir/ttyS1" {hold0}>&- {hold1}>&- &
relay_pids+=($!)

bios=()
[[ -f /usr/share/qemu/qboot.rom ]] && bios=(-bios /usr/share/qemu/qboot.rom)
nic=()
[[ -z $net ]] || nic=(-netdev "$net,id=n0" -device "virtio-net-pci,netdev=n0,mac=$mac")
[[ -z $net2 ]] || nic+=(-netdev "$net2,id=n1" -device "virtio-net-pci,netdev=n1,mac=$mac2")

vlog "starting qemu"
timeout --foreground -k 10 "$timeout" \
	"$qemu" -M pc "${bios[@]}" -accel "$accel" -cpu "$cpu" -smp "$cpus" -m "$mem" \
	-nodefaults -no-user-config -display none -no-reboot \
	-kernel "$cache/vmlinux" -initrd "$cache/initramfs.cpio" -append "$cmdline" \
	-chardev "file,id=ttyS0,path=$(qarg "$run_dir/ttyS0")" -serial chardev:ttyS0 \
	-chardev "file,id=ttyS1,path=$(qarg "$run_dir/ttyS1")" -serial chardev:ttyS1 \
	"${virtfs[@]}" "${nic[@]}" </dev/null {hold0}>&- {hold1}>&- &
qemu_pid=$!
qrc=0
wait "$qemu_pid" || qrc=$?
qemu_pid=
exec {hold0}>&- {hold1}>&-
for p in "${relay_pids[@]}"; do
	wait "$p" 2>/dev/null || true
done
relay_pids=()
vlog "qemu exited ($qrc)"

if [[ -s $x/clock.rate ]]; then
	read -r rate secs gained <"$x/clock.rate" || true
	vlog "guest clock: ${rate:-?} times the host's rate (${gained:-?} s gained in ${secs:-?} s)"
fi
if [[ -f $x/status ]]; then
	st=$(<"$x/status")
	[[ $st =~ ^[0-9]+$ ]] || rb_die "the guest wrote a bad exit status: $st"
	[[ -z $status_file ]] || echo "exit $st" >"$status_file"
	exit "$st"
fi
if [[ -f $x/error ]]; then
	rb_die "the guest failed: $(<"$x/error")"
fi
if [[ $qrc == 124 || $qrc == 137 ]]; then
	rb_die "timed out after ${timeout}s (--timeout); the VM was killed"
fi
rb_die "the VM stopped without an exit status (qemu exit status $qrc): the guest crashed or qemu failed; see the messages above"
