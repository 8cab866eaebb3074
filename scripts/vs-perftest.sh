#!/usr/bin/env bash
# Compare rdmabench with perftest on the same RDMA device, in the same run:
# every test pair (write/read/send/atomic, lat and bw) runs perftest (server
# in the background, client against it) and `rdmabench TEST` (both ends in one
# process) at the same size and iteration count, interleaved twice
# (perftest, rdmabench, perftest, rdmabench) so run-to-run noise shows. Prints
# markdown tables: perftest's figure, rdmabench's and the ratio
# rdmabench / perftest.
#
# Latency: perftest t_min vs min, t_typical (its median) vs p50, t_avg vs
# mean, in microseconds; both report half the round trip for write and send
# and the full round trip for read and atomic. Bandwidth: perftest
# "BW average[MB/sec]" (MB = 2^20 bytes) vs MiB/s, MsgRate[Mpps] vs Mmsg/s.
# Each tool runs with its own defaults otherwise (inline, CQ moderation,
# outstanding reads...); perftest's are recorded in the table notes.
#
# Usage: scripts/vs-perftest.sh [-d DEV] [-x GID_INDEX] [-o OUTDIR] [--table]
#   -d DEV        RDMA device (default: RDMABENCH_TEST_DEVICE, else the VM's rxe0)
#   -x INDEX      GID index (default: what `rdmabench devices` auto-selects)
#   -o OUTDIR     where the binary, raw logs, results.tsv and table.md go
#                 (default ./out/vs-perftest)
#   --table       only print the tables of the run already in OUTDIR
#
# Where it runs: on this host when RDMABENCH_TEST_DEVICE names a device (or
# Soft-RoCE can be set up on this kernel), else the script re-runs itself
# inside the Soft-RoCE VM (scripts/vm.sh); RDMABENCH_RDMA_MODE=host|vm forces it.
#
# Environment:
#   RDMABENCH_VS_LAT_ITERS   latency iterations (default 2000)
#   RDMABENCH_VS_BW_ITERS    bandwidth iterations (default 2000)
#   RDMABENCH_VS_RUNS        runs per tool and row (default 2)
#   RDMABENCH_VS_ROWS        rows as TEST:SIZE,... (default: each latency test at 2 B,
#                            atomic 8 B; each bandwidth test at 64 KiB, atomic 8 B;
#                            plus write-lat:4096 and write-bw:4096)
#   RDMABENCH_VS_PORT        first perftest TCP port (default 18600; one per pair)
#   RDMABENCH_VS_SERVER      address perftest's client connects to (default: the
#                            IPv4 address in the selected GID, else RDMABENCH_VM_IP,
#                            else 127.0.0.1)
# Exit status: 0 when every measurement succeeded, 1 otherwise (the table is
# still printed, failures shown as "fail").
set -euo pipefail
rb_prog=vs-perftest.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
self=$here/$(basename -- "${BASH_SOURCE[0]}")
. "$here/lib.sh"

default_rows="write-lat:2,write-lat:4096,read-lat:2,send-lat:2,atomic-lat:8,write-bw:65536,write-bw:4096,read-bw:65536,send-bw:65536,atomic-bw:8"

usage() {
	sed -n '2,/^set -euo/p' "$self" | sed '$d' | sed 's/^# \{0,1\}//'
}

dev=${RDMABENCH_TEST_DEVICE:-}
gid=''
out=./out/vs-perftest
inner=0
table_only=0
while [[ $# -gt 0 ]]; do
	case $1 in
	-d) [[ $# -ge 2 ]] || rb_die "-d needs a device"; dev=$2; shift 2 ;;
	-x) [[ $# -ge 2 ]] || rb_die "-x needs a GID index"; gid=$2; shift 2 ;;
	-o) [[ $# -ge 2 ]] || rb_die "-o needs a folder"; out=$2; shift 2 ;;
	--inner) inner=1; shift ;; # internal: measure here (host or inside the VM)
	--table) table_only=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) rb_log "usage: scripts/vs-perftest.sh [-d DEV] [-x GID_INDEX] [-o OUTDIR] [--table]"; exit 2 ;;
	esac
done
[[ -z $gid || $gid =~ ^[0-9]+$ ]] || rb_die "-x: not a GID index: $gid"

lat_iters=${RDMABENCH_VS_LAT_ITERS:-2000}
bw_iters=${RDMABENCH_VS_BW_ITERS:-2000}
runs=${RDMABENCH_VS_RUNS:-2}
rows=${RDMABENCH_VS_ROWS:-$default_rows}
port=${RDMABENCH_VS_PORT:-18600}
for v in lat_iters bw_iters runs port; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || rb_die "$v must be a positive integer, not '${!v}'"
done

# ---------------------------------------------------------------------------
# Measuring (run where the device is: this host, or inside the VM).

# perftest_bin TEST: the perftest program for an rdmabench test name.
perftest_bin() {
	local t=$1
	echo "ib_${t%-*}_${t##*-}"
}

# wait_listen PORT PID: wait until something listens on TCP PORT (perftest's
# server), at most 10 s, or until PID died. Falls back to a sleep without ss.
wait_listen() {
	local p=$1 pid=$2 i
	if ! command -v ss >/dev/null 2>&1; then
		sleep 1
		return 0
	fi
	for ((i = 0; i < 200; i++)); do
		[[ -n $(ss -Hltn "sport = :$p" 2>/dev/null) ]] && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# tsv FIELDS...: one line of results.tsv.
tsv() {
	local IFS=$'\t'
	echo "$*" >>"$out/results.tsv"
}

# perftest row: the figures of the client's report line, "-" when missing.
# Prints: min typical avg p99 mibps mpps inline cq_mod
perftest_figures() { # LOG METRIC
	awk -v metric="$2" '
		/Max inline data/ { split($0, a, ":"); inl = a[2]; gsub(/[^0-9]/, "", inl) }
		/CQ Moderation/   { split($0, a, ":"); cqm = a[2]; gsub(/[^0-9]/, "", cqm) }
		/^ *#bytes/ { hdr = 1; next }
		hdr && $1 ~ /^[0-9]+$/ && !done {
			done = 1
			if (metric == "lat") { mn = $3; ty = $5; av = $6; p99 = $8 }
			else { bw = $4; mr = $5 }
		}
		END {
			if (!done) exit 1
			d = "-"
			printf "%s %s %s %s %s %s %s %s\n", (mn == "" ? d : mn), (ty == "" ? d : ty), (av == "" ? d : av),
				(p99 == "" ? d : p99), (bw == "" ? d : bw), (mr == "" ? d : mr),
				(inl == "" ? d : inl), (cqm == "" ? d : cqm)
		}' "$1"
}

run_perftest() { # TEST SIZE RUN
	local test=$1 size=$2 run=$3 metric=${1##*-}
	local bin log_s log_c spid rc=0 p
	bin=$(perftest_bin "$test")
	p=$port
	port=$((port + 1))
	log_s=$logs/perftest-$test-$size-run$run-server.log
	log_c=$logs/perftest-$test-$size-run$run-client.log
	local args=(-d "$dev" -x "$gid" -n "$iters" -p "$p" -F)
	[[ $test == atomic-* ]] || args+=(-s "$size")
	echo "$bin ${args[*]}" >"$log_s"
	echo "$bin ${args[*]} $server" >"$log_c"
	timeout 120 "$bin" "${args[@]}" >>"$log_s" 2>&1 &
	spid=$!
	if ! wait_listen "$p" "$spid"; then
		rb_log "perftest $test $size run $run: the server did not listen on port $p (see $log_s)"
		kill "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
		tsv "$test" "$size" "$run" perftest fail - - - - - - - - "$(basename "$log_s")"
		return 1
	fi
	timeout 120 "$bin" "${args[@]}" "$server" >>"$log_c" 2>&1 || rc=$?
	if ((rc != 0)); then
		kill "$spid" 2>/dev/null || true
	fi
	wait "$spid" 2>/dev/null || true
	local fig
	if ((rc == 0)) && fig=$(perftest_figures "$log_c" "$metric"); then
		# shellcheck disable=SC2086
		tsv "$test" "$size" "$run" perftest ok $fig "$(basename "$log_c")"
		return 0
	fi
	rb_log "perftest $test $size run $run failed (exit $rc; see $log_c)"
	tsv "$test" "$size" "$run" perftest fail - - - - - - - - "$(basename "$log_c")"
	return 1
}

run_rdmabench() { # TEST SIZE RUN
	local test=$1 size=$2 run=$3 rc=0
	local json=$logs/rdmabench-$test-$size-run$run.json
	local log=$logs/rdmabench-$test-$size-run$run.log
	local args=("$test" -d "$dev" -x "$gid" -s "$size" -n "$iters" -o json)
	echo "rdmabench ${args[*]}" >"$log"
	timeout 120 "$rb" "${args[@]}" >"$json" 2>>"$log" || rc=$?
	local fig
	fig=$(jq -r '
		def f: if . == null then "-" else tostring end;
		if .error then error(.error) else . end
		| .results[0]
		| if .error then error(.error) else . end
		| [ (.latency.min_ns   | if . == null then null else . / 1000 end),
		    (.latency.p50_ns   | if . == null then null else . / 1000 end),
		    (.latency.mean_ns  | if . == null then null else . / 1000 end),
		    (.latency.p99_ns   | if . == null then null else . / 1000 end),
		    .bandwidth.bw_mibps, .bandwidth.msg_rate_mpps, "-", "-" ]
		| map(f) | join(" ")' "$json" 2>>"$log") || { ((rc)) || rc=1; }
	if ((rc == 0)) && [[ -n $fig ]]; then
		# shellcheck disable=SC2086
		tsv "$test" "$size" "$run" rdmabench ok $fig "$(basename "$json")"
		return 0
	fi
	rb_log "rdmabench $test $size run $run failed (exit $rc; see $log)"
	tsv "$test" "$size" "$run" rdmabench fail - - - - - - - - "$(basename "$log")"
	return 1
}

measure() {
	rb_need jq jq
	rb_need timeout coreutils
	rb=$out/rdmabench
	[[ -x $rb ]] || rb_die "$rb: not built"
	[[ -n $dev ]] || dev=$("$rb" devices -o json | jq -r '.[0].name // empty')
	[[ -n $dev ]] || rb_die "no RDMA device found (set RDMABENCH_TEST_DEVICE or -d)"
	local sel
	sel=$("$rb" devices -d "$dev" -o json | jq -r '.[0].ports[] | select(.port == 1) | .gid_selection | "\(.index) \(.gid)"') ||
		rb_die "rdmabench devices -d $dev failed"
	local sel_gid=${sel#* }
	if [[ -z $gid ]]; then
		gid=${sel%% *}
		[[ $gid =~ ^[0-9]+$ ]] || rb_die "no usable GID on $dev port 1 (rdmabench devices -d $dev)"
	else
		sel_gid=$("$rb" devices -d "$dev" -o json | jq -r --argjson i "$gid" '.[0].ports[] | select(.port == 1) | .gids[] | select(.index == $i) | .gid')
	fi
	server=${RDMABENCH_VS_SERVER:-}
	if [[ -z $server && $sel_gid =~ ^::ffff:([0-9.]+)$ ]]; then
		server=${BASH_REMATCH[1]}
	fi
	server=${server:-${RDMABENCH_VM_IP:-127.0.0.1}}

	logs=$out/logs
	rm -rf "$logs"
	mkdir -p "$logs"
	: >"$out/results.tsv"
	{
		echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
		if [[ -n ${RDMABENCH_IN_VM:-} ]]; then
			echo "where: the Soft-RoCE VM of scripts/vm.sh (qemu TCG, $(nproc) vCPUs)"
		else
			echo "where: this host ($(hostname))"
		fi
		echo "kernel: $(uname -r), $(nproc) CPUs, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
		echo "device: $dev, GID index $gid ($sel_gid), perftest server address $server"
		echo "perftest: $(ib_write_lat -V 2>&1 | head -1), package $(dpkg-query -W -f='${Version}' perftest 2>/dev/null || echo '?')"
		echo "rdmabench: $("$rb" version 2>&1 | head -1)"
		echo "iterations: latency $lat_iters, bandwidth $bw_iters; runs: $runs (perftest then rdmabench, alternating)"
	} >"$out/env.txt"
	cat "$out/env.txt" >&2

	local failed=0 row test size run t0=$SECONDS
	local -a list
	IFS=, read -r -a list <<<"$rows"
	for row in "${list[@]}"; do
		test=${row%%:*}
		size=${row#*:}
		case $test in
		*-lat) iters=$lat_iters ;;
		*-bw) iters=$bw_iters ;;
		*) rb_die "RDMABENCH_VS_ROWS: unknown test '$test'" ;;
		esac
		[[ $size =~ ^[0-9]+$ ]] || rb_die "RDMABENCH_VS_ROWS: size of '$row' must be bytes"
		command -v "$(perftest_bin "$test")" >/dev/null || rb_die "$(perftest_bin "$test") not found (scripts/deps.sh installs perftest)"
		for ((run = 1; run <= runs; run++)); do
			rb_log "$test $size B, run $run/$runs ($((SECONDS - t0)) s)"
			run_perftest "$test" "$size" "$run" || failed=1
			run_rdmabench "$test" "$size" "$run" || failed=1
		done
	done
	rb_log "measured in $((SECONDS - t0)) s"
	return $failed
}

# ---------------------------------------------------------------------------
# The tables, from results.tsv (on the host, after the VM is gone).

render() {
	sed "s/^/    /" "$out/env.txt"
	echo
	awk -F'\t' '
		function num(x) { return x ~ /^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ }
		function ratio(a, b) { return (num(a) && num(b) && b + 0 > 0) ? sprintf("%.2f", a / b) : "-" }
		function f2(x) { return num(x) ? sprintf("%.2f", x) : (x == "" ? "-" : x) }
		function f6(x) { return num(x) ? sprintf("%.6f", x) : (x == "" ? "-" : x) }
		function lat_table(	i, k, a, P, R) {
			print "Latency, µs (write/send: one-way = RTT/2; read/atomic: full RTT). ratio = rdmabench / perftest (> 1: rdmabench reports slower)."
			print ""
			print "| test | bytes | run | perftest t_typical | rdmabench p50 | ratio | perftest t_min | rdmabench min | ratio | perftest t_avg | rdmabench mean | ratio |"
			print "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
			for (i = 1; i <= n; i++) {
				k = order[i]; split(k, a, SUBSEP)
				if (a[1] !~ /-lat$/) continue
				P = k SUBSEP "perftest"; R = k SUBSEP "rdmabench"
				if (st[P] != "ok") { ty[P] = mn[P] = av[P] = "fail" }
				if (st[R] != "ok") { ty[R] = mn[R] = av[R] = "fail" }
				printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", a[1], a[2], a[3],
					f2(ty[P]), f2(ty[R]), ratio(ty[R], ty[P]),
					f2(mn[P]), f2(mn[R]), ratio(mn[R], mn[P]),
					f2(av[P]), f2(av[R]), ratio(av[R], av[P])
			}
			print ""
		}
		function bw_table(	i, k, a, P, R) {
			print "Bandwidth (sender side, payload bytes): MiB/s (perftest \"MB/sec\" is 2^20 bytes/s) and million messages/s. ratio = rdmabench / perftest (< 1: rdmabench reports less)."
			print ""
			print "| test | bytes | run | perftest MiB/s | rdmabench MiB/s | ratio | perftest Mpps | rdmabench Mmsg/s | ratio |"
			print "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
			for (i = 1; i <= n; i++) {
				k = order[i]; split(k, a, SUBSEP)
				if (a[1] !~ /-bw$/) continue
				P = k SUBSEP "perftest"; R = k SUBSEP "rdmabench"
				if (st[P] != "ok") { bw[P] = mr[P] = "fail" }
				if (st[R] != "ok") { bw[R] = mr[R] = "fail" }
				printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", a[1], a[2], a[3],
					f2(bw[P]), f2(bw[R]), ratio(bw[R], bw[P]),
					f6(mr[P]), f6(mr[R]), ratio(mr[R], mr[P])
			}
			print ""
		}
		{
			key = $1 SUBSEP $2 SUBSEP $3
			if (!(key in seen)) { seen[key] = 1; order[++n] = key }
			st[key, $4] = $5; mn[key, $4] = $6; ty[key, $4] = $7; av[key, $4] = $8
			p99[key, $4] = $9; bw[key, $4] = $10; mr[key, $4] = $11
			if ($4 == "perftest" && $5 == "ok" && !(($1, $2) in inl)) {
				inl[$1, $2] = $12; cqm[$1, $2] = $13; sorder[++m] = $1 SUBSEP $2
			}
		}
		END {
			for (i = 1; i <= n; i++) { split(order[i], a, SUBSEP); if (a[1] ~ /-lat$/) nlat++; else nbw++ }
			if (nlat) lat_table()
			if (nbw) bw_table()
			s = ""
			for (i = 1; i <= m; i++) {
				k = sorder[i]; split(k, a, SUBSEP)
				s = s sprintf("%s%s %s B: inline %s, CQ moderation %s", (s == "" ? "" : "; "), a[1], a[2], inl[k], cqm[k])
			}
			if (s != "") print "perftest settings as it printed them (\"-\": not printed): " s "."
		}' "$out/results.tsv"
}

# ---------------------------------------------------------------------------

if ((inner)); then
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	measure
	exit $?
fi

if ((table_only)); then
	[[ -s $out/results.tsv && -f $out/env.txt ]] || rb_die "no earlier run in $out"
	render
	exit 0
fi

cd "$here/.."
mkdir -p "$out"
out=$(cd "$out" && pwd)
"$here/deps.sh"
if ! command -v go >/dev/null 2>&1; then
	[[ -x /usr/local/go/bin/go ]] && PATH=$PATH:/usr/local/go/bin
	command -v go >/dev/null 2>&1 || rb_die "go not found: install Go 1.26 or newer"
fi
rb_need jq jq
rb_log "building rdmabench into $out"
go build -o "$out/rdmabench" ./cmd/rdmabench

load0=$(cut -d' ' -f1-3 /proc/loadavg)
start=$SECONDS
inner_args=(--inner -o "$out")
[[ -n $gid ]] && inner_args+=(-x "$gid")
rc=0
mode=$(rb_rdma_mode)
# rb_rdma_mode ran in a subshell: its export of the device did not survive.
[[ $mode == host && -z $dev && -z ${RDMABENCH_RDMA_MODE:-} ]] && dev=${RDMABENCH_RXE_NAME:-rxe0}
case $mode in
host)
	[[ -n $dev ]] && inner_args+=(-d "$dev")
	rb_log "measuring on this host's ${dev:-first RDMA device}"
	"$self" "${inner_args[@]}" || rc=$?
	;;
vm)
	[[ -n $dev ]] && inner_args+=(-d "$dev")
	rb_log "this kernel has no rdma_rxe: measuring in the Soft-RoCE VM (rxe0)"
	"$here/vm.sh" --share "$out" -- "$self" "${inner_args[@]}" || rc=$?
	;;
*) rb_die "RDMABENCH_RDMA_MODE must be vm or host" ;;
esac
[[ -s $out/results.tsv ]] || rb_die "no results (exit $rc)"
src=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[[ -n $(git status --porcelain -- cmd pkg internal go.mod go.sum 2>/dev/null) ]] && src="$src + uncommitted changes"
echo "source: commit $src" >>"$out/env.txt"
echo "host: $(nproc) CPUs, load average (1/5/15 min) $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end; $((SECONDS - start)) s" >>"$out/env.txt"
render | tee "$out/table.md"
rb_log "took $((SECONDS - start)) s; raw logs in $out/logs, figures in $out/results.tsv, table in $out/table.md"
exit $rc
