#!/usr/bin/env bash
# Agent soak: two `rdmabench agent`s on one RDMA device probe each other
# (write-lat over RC, or --probe TEST, --rate probes/s each) for SECONDS, and their levels
# stay flat. Each agent's levels are read after a warm-up (a minute),
# half-way and at the end, each time with its peers file emptied (the agent
# re-reads it every 2 s and stops probing) and once it is idle (its count
# of verbs objects unchanged for 4 s):
#   - verbs objects: its PDs, MRs, CQs, QPs and contexts in
#     `rdma resource show` (iproute2), and those it counts itself;
#   - open file descriptors (/proc/PID/fd);
#   - goroutines (the line an agent logs on SIGUSR1);
#   - resident memory (VmRSS).
# It exits 1 unless each is back at its level (the device's count and the
# descriptors within 60 s of the probes' end): verbs objects and files
# equal at all three reads, goroutines at most 2 more and resident memory
# at most 16 MiB more at the end; or
# when an agent made fewer than one good probe per 10 s (it stopped
# probing: an emulated probe takes up to seconds, so the rate asked is not
# what is met there, and a rate is not asserted). In between it prints a
# line a minute per agent (RSS, goroutines, good probes) and at the end
# each agent's CPU (utime + stime) per good probe, that probe's cost at both
# of its ends (an agent probes its peer and serves the peer's probes).
# Runs in the Soft-RoCE VM (scripts/vm.sh) when this host has no RDMA
# device; on an emulated device the figures are emulation figures.
# Ends with "--- PASS: agent-soak/..." or "--- FAIL: agent-soak/..." lines.
#
# With --bw-probe TEST the agents probe bandwidth too (TEST for 1 s, 10%
# of the time: one every 10 s), in the same levels, and it exits 1 unless
# each made a good bandwidth probe; the last bandwidth of each is printed.
#
# With --probe ud-lat the probe is the UD probe (one UD QP answering, a
# few probing, nothing set up per probe): its QPs stay open, so its verbs
# objects are flat by construction; what the soak reads is everything else.
#
# Usage: scripts/agent-soak.sh [--seconds S] [--warmup S] [--rate R] [--probe TEST] [--bw-probe TEST] [--out DIR]
#   --seconds S   the soak after the warm-up (default 600; at least 30)
#   --probe T     the latency probe, write-lat (default) or ud-lat
#   --warmup S    the warm-up (default 60)
#   --rate R      probes per second of each agent (default 10)
#   --bw-probe T  a bandwidth probe too, e.g. write-bw (default none)
#   --out DIR     keep the agents' logs and levels there
# Environment: RDMABENCH_RDMA_MODE=vm|host as scripts/test.sh;
#              RDMABENCH_TEST_DEVICE the device (default rxe0).
set -euo pipefail
rb_prog=agent-soak.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"

seconds=600 warmup=60 rate=10 probe=write-lat bw="" out="" in_vm=0 bin=""
while (($#)); do
	case $1 in
	--seconds) seconds=$2; shift 2 ;;
	--warmup) warmup=$2; shift 2 ;;
	--rate) rate=$2; shift 2 ;;
	--probe) probe=$2; shift 2 ;;
	--bw-probe) bw=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--in-vm) in_vm=1; bin=$2; shift 2 ;; # internal: run the soak here, with BINARY
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) rb_log "unknown argument $1 (see --help)"; exit 2 ;;
	esac
done
[[ $seconds =~ ^[0-9]+$ ]] && ((seconds >= 30)) || { rb_log "--seconds must be a whole number, at least 30"; exit 2; }
[[ $warmup =~ ^[0-9]+$ ]] || { rb_log "--warmup must be a whole number of seconds"; exit 2; }
[[ $rate =~ ^[0-9]+$ ]] && ((rate >= 1)) || { rb_log "--rate must be a whole number of probes/s, at least 1"; exit 2; }
rb_fail_on_error "agent-soak/$probe"

if ((!in_vm)); then
	cd "$here/.."
	out=${out:-$(mktemp -d "${TMPDIR:-/tmp}/rdmabench-agent-soak.XXXXXX")}
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	if ! command -v go >/dev/null 2>&1; then
		[[ -x /usr/local/go/bin/go ]] && PATH=$PATH:/usr/local/go/bin
	fi
	go build -o "$out/rdmabench" ./cmd/rdmabench
	args=(--seconds "$seconds" --warmup "$warmup" --rate "$rate" --probe "$probe" --out "$out" --in-vm "$out/rdmabench")
	[[ -z $bw ]] || args+=(--bw-probe "$bw")
	if [[ ${RDMABENCH_IN_VM:-} == 1 || $(rb_rdma_mode) == host ]]; then
		exec "$here/agent-soak.sh" "${args[@]}"
	fi
	rb_log "this kernel has no rdma_rxe: the agent soak runs in the Soft-RoCE VM (logs in $out)"
	exec "$here/vm.sh" --share "$out" --timeout $((seconds + warmup + 600)) -- "$here/agent-soak.sh" "${args[@]}"
fi

# ---------------------------------------------------------------------------
# The soak itself, on a host with an RDMA device.

dev=${RDMABENCH_TEST_DEVICE:-rxe0}
rb_need rdma iproute2
rb_need curl curl
rb_need ss iproute2
fail=0
ko() { echo "--- FAIL: agent-soak/$1: $2"; fail=1; }

# Agent a serves on 19515 (metrics 19516), b on 19525 (19526): each
# probes the other on 127.0.0.1 through the device. The emulated device
# takes milliseconds an iteration, so the probes are short and patient.
# (write-lat's ends poll memory for each ping: on the emulated device that
# keeps a core busy per agent, so its CPU per probe there is the
# emulation's, not the agent's.) The probes' timeout is long, 30 s: the
# soak is of whole probes.
declare -A pid ctl met
ctl[a]=19515 met[a]=19516 ctl[b]=19525 met[b]=19526
peer_of() { [[ $1 == a ]] && echo b || echo a; }
bw_args=()
[[ -z $bw ]] || bw_args=(--bw-probe "$bw" --bw-share 10% --bw-duration 1s)
case $probe in
write-lat) probe_args=(--probe write-lat -n 10 --warmup 2 -u 18) ;;
ud-lat) probe_args=(--probe ud-lat -n 10 -u 18) ;;
*) rb_log "--probe $probe: want write-lat or ud-lat"; exit 2 ;;
esac
for x in a b; do
	echo "127.0.0.1:${ctl[$(peer_of $x)]}" >"$out/peers.$x"
	"$bin" agent -d "$dev" --listen "127.0.0.1:${ctl[$x]}" --metrics-listen "127.0.0.1:${met[$x]}" \
		--peers "$out/peers.$x" --reload 2s --rate "$rate" "${probe_args[@]}" --probe-timeout 30s "${bw_args[@]}" \
		2>"$out/agent.$x.log" &
	pid[$x]=$!
done
# tell X: whether agent X had exited, and the end of its log.
tell() {
	kill -0 "${pid[$1]}" 2>/dev/null || echo "  agent $1 (pid ${pid[$1]}) had exited"
	grep -v 'stats goroutines=' "$out/agent.$1.log" | tail -n 20 | sed "s/^/  agent $1 log: /" || true
}
# finish: stop both agents and wait until they have exited (at most 30 s,
# then they are killed): the ports are free again for whatever runs next
# (soak.sh runs this script twice in a row, with the same ports). After a
# stop no check explains (a command of this script failed), tell them
# first.
finish() {
	local rc=$? x
	if ((rc != 0 && fail == 0)); then
		for x in a b; do tell $x; done
	fi
	kill "${pid[a]}" "${pid[b]}" 2>/dev/null || true
	for _ in $(seq 1 300); do
		kill -0 "${pid[a]}" 2>/dev/null || kill -0 "${pid[b]}" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "${pid[a]}" "${pid[b]}" 2>/dev/null || true
	wait "${pid[a]}" "${pid[b]}" 2>/dev/null || true
}
trap finish EXIT
for x in a b; do
	up=0
	for _ in $(seq 1 100); do
		curl -fs -m 20 "http://127.0.0.1:${met[$x]}/metrics" >/dev/null && up=1 && break
		kill -0 "${pid[$x]}" 2>/dev/null || break
		sleep 0.1
	done
	if ((!up)); then
		ko "$x-start" "agent $x never answered on its metrics port"
		tell $x
		exit 1
	fi
done

# good X [FAMILY]: the good probes agent X made (of FAMILY, default
# rdmabench_agent_probes_total: the latency probes).
good() {
	curl -fs -m 20 "http://127.0.0.1:${met[$1]}/metrics" |
		awk -v f="^${2:-rdmabench_agent_probes_total}\\{" '$0 ~ f && /result="ok"/ {n += $NF} END {print n + 0}'
}
# cpu X: agent X's CPU time in clock ticks (utime + stime).
cpu() { awk '{print $14 + $15}' "/proc/${pid[$1]}/stat"; }
# stats X: the last stats line agent X logged on SIGUSR1, fresh.
stats() {
	local n
	n=$(grep -c 'stats goroutines=' "$out/agent.$1.log" || true)
	kill -USR1 "${pid[$1]}"
	for _ in $(seq 1 50); do
		(($(grep -c 'stats goroutines=' "$out/agent.$1.log" || true) > n)) && break
		sleep 0.05
	done
	grep 'stats goroutines=' "$out/agent.$1.log" | tail -1
}
field() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" <<<"$2"; }
rss() { awk '/^VmRSS:/ {print $2}' "/proc/${pid[$1]}/status"; }

# device_read: what the device holds, every agent's objects in `rdma
# resource show` (one listing of each kind for both agents: a program
# start costs a tenth of a second and more under emulation), into
# $out/device.now; held X: agent X's count of them.
device_read() {
	local kind
	for kind in ctx pd mr cq qp; do
		rdma resource show "$kind" 2>/dev/null || true
	done >"$out/device.now"
}
held() { grep -c " pid ${pid[$1]} " "$out/device.now" || true; }
fds() { find "/proc/${pid[$1]}/fd" -mindepth 1 -maxdepth 1 | wc -l; }

# levels NAME: both agents' peers emptied, then, once no connection
# between them is left and both are idle (their own counts of verbs
# objects the same for 4 s, then the device's counts and their
# descriptors settled), a line
# "NAME X verbs=N rdma=N fds=N goroutines=N rss_kib=N" per agent; the
# peers are put back after.
levels() {
	local name=$1 x v seen same now want
	local -A line fd
	for x in a b; do : >"$out/peers.$x"; done
	sleep 3 # a reload of the emptied file
	# No connection between them left, open or closing: a probe in flight
	# ends within --probe-timeout.
	for _ in $(seq 1 80); do
		ss -Htn state established state close-wait \
			"( sport = :${ctl[a]} or dport = :${ctl[a]} or sport = :${ctl[b]} or dport = :${ctl[b]} )" | grep -q . || break
		sleep 0.5
	done
	seen="" same=0
	for _ in $(seq 1 60); do
		v=""
		for x in a b; do
			line[$x]=$(stats $x)
			v+="$(field verbs_objects "${line[$x]}") "
		done
		[[ $v == "$seen" ]] && same=$((same + 1)) || same=0
		seen=$v
		((same >= 4)) && break
		sleep 1
	done
	# The device's counts of their objects and their descriptors: half-way
	# and at the end, until they are back at the read before (a test torn
	# down just now closes its context last), at most 60 s; after the
	# warm-up, until 3 reads a second apart agree.
	want=$(for x in a b; do grep " $x " "$out/levels" 2>/dev/null | tail -1 | sed -n "s/.*\(rdma=[0-9]* fds=[0-9]*\).*/\1/p"; done | paste -sd' ' - || true)
	seen="" same=0
	for _ in $(seq 1 60); do
		device_read
		now=""
		for x in a b; do
			fd[$x]=$(fds $x)
			now+="${now:+ }rdma=$(held $x) fds=${fd[$x]}"
		done
		[[ $name != warm && $now == "$want" ]] && break
		[[ $now == "$seen" ]] && same=$((same + 1)) || same=0
		seen=$now
		[[ $name == warm ]] && ((same >= 2)) && break
		sleep 1
	done
	for x in a b; do
		echo "$name $x verbs=$(field verbs_objects "${line[$x]}") rdma=$(held $x) fds=${fd[$x]} goroutines=$(field goroutines "${line[$x]}") rss_kib=$(rss $x)"
		# What it holds, kept for comparing the reads.
		{
			date +%s.%N
			ls -l "/proc/${pid[$x]}/fd"
			grep " pid ${pid[$x]} " "$out/device.now" || true
		} >"$out/held.$name.$x" 2>&1
	done
	for x in a b; do echo "127.0.0.1:${ctl[$(peer_of $x)]}" >"$out/peers.$x"; done
}

sleep "$warmup"
levels warm | tee "$out/levels"
# good0 X: agent X's good probes when the soak's count of them (before[X]
# more) began; a read empties the peers, and their counts with them.
declare -A cpu0 good0 before bw_before
for x in a b; do cpu0[$x]=$(cpu $x) good0[$x]=$(good $x) before[$x]=0; done
start=$SECONDS
# soak_until S: probe until S seconds of the soak have passed, a line a
# minute per agent.
soak_until() {
	local line
	while ((SECONDS - start < $1)); do
		sleep $(($1 - (SECONDS - start) < 60 ? $1 - (SECONDS - start) : 60))
		for x in a b; do
			line=$(stats $x)
			rb_log "after $((SECONDS - start)) s: agent $x rss_kib=$(rss $x) goroutines=$(field goroutines "$line") good_probes=$((before[$x] + $(good $x) - good0[$x]))"
		done
	done
}
soak_until $((seconds / 2))
for x in a b; do
	before[$x]=$((before[$x] + $(good $x) - good0[$x]))
	bw_before[$x]=$(good $x rdmabench_agent_bandwidth_probes_total)
done
paused=$SECONDS
levels mid | tee -a "$out/levels"
for x in a b; do good0[$x]=$(good $x); done
start=$((start + SECONDS - paused)) # the read is not soak time
soak_until "$seconds"
took=$((SECONDS - start))
declare -A cpu1 good1
for x in a b; do
	cpu1[$x]=$(cpu $x) good1[$x]=$(good $x)
	# Before the levels: emptying the peers drops their counts.
	curl -fs -m 20 "http://127.0.0.1:${met[$x]}/metrics" >"$out/metrics.$x" || true
done
levels end | tee -a "$out/levels"

hz=$(getconf CLK_TCK)
for x in a b; do
	n=$((before[$x] + good1[$x] - good0[$x]))
	ms=$(awk -v c=$((cpu1[$x] - cpu0[$x])) -v hz="$hz" -v n="$n" 'BEGIN {printf "%.2f", n ? 1000 * c / hz / n : 0}')
	echo "agent $x (pid ${pid[$x]}): $n good probes in $took s ($rate/s asked), CPU $ms ms a probe ($((cpu1[$x] - cpu0[$x])) ticks of 1/$hz s)"
	((10 * n >= took)) || ko "$x-probes" "$n good probes in $took s: fewer than one per 10 s"
	if [[ -n $bw ]]; then
		bwn=$((bw_before[$x] + $(awk '/^rdmabench_agent_bandwidth_probes_total\{/ && /result="ok"/ {n += $NF} END {print n + 0}' "$out/metrics.$x")))
		bps=$(awk '/^rdmabench_agent_peer_bandwidth_bytes_per_second\{/ {print $NF}' "$out/metrics.$x")
		echo "agent $x: $bwn good $bw probes, the last at $(awk -v b="${bps:-0}" 'BEGIN {printf "%.3f", b * 8 / 1e9}') Gbit/s (emulation figures)"
		((bwn >= 1)) || ko "$x-bw-probes" "no good $bw probe in $took s (one every 10 s asked)"
	fi
	w=$(grep "^warm $x " "$out/levels") m=$(grep "^mid $x " "$out/levels") e=$(grep "^end $x " "$out/levels")
	held=0
	for k in verbs rdma fds; do
		if [[ $(field $k "$w") != "$(field $k "$m")" || $(field $k "$m") != "$(field $k "$e")" ]]; then
			ko "$x-$k" "$k $(field $k "$w") after the warm-up, $(field $k "$m") half-way, $(field $k "$e") at the end"
			held=1
		fi
	done
	if ((held)); then
		# What it holds, for the one who reads this: what changed in its
		# descriptors and device objects between the reads, and the end
		# of its log.
		diff "$out/held.warm.$x" "$out/held.end.$x" | sed "s/^/  agent $x held (warm-up to end): /" || true
		grep -v 'stats goroutines=' "$out/agent.$x.log" | tail -n 20 | sed "s/^/  agent $x log: /"
	fi
	(($(field goroutines "$e") <= $(field goroutines "$w") + 2)) ||
		ko "$x-goroutines" "goroutines $(field goroutines "$w") after the warm-up, $(field goroutines "$e") at the end"
	(($(field rss_kib "$e") <= $(field rss_kib "$w") + 16384)) ||
		ko "$x-rss" "resident $(field rss_kib "$w") KiB after the warm-up, $(field rss_kib "$e") KiB at the end"
done
if ((fail == 0)); then
	echo "--- PASS: agent-soak/levels (two agents probing each other on $dev for $took s at $rate $probe probes/s: verbs objects, descriptors, goroutines and memory flat)"
fi
exit $fail
