#!/usr/bin/env bash
# Compare rdmabench with perftest on the same RDMA device, in the same run,
# in a way that holds on a noisy machine: interleaved pairs, per-pair ratios,
# medians with 95% confidence intervals, and each tool's settings matched
# and printed side by side.
#
# A row is one test at one size in one topology of rdmabench: "loopback"
# (`rdmabench TEST -d DEV -x GID`, both ends in one process) or "serve"
# (`rdmabench serve --once -d DEV` in the background, then `rdmabench TEST
# SERVER -d DEV -x GID -p PORT`, two processes). perftest always runs as
# server (background) and client (against the device's IPv4 address), with
# `-d DEV -x GID -F -p PORT`; every client waits until its server listens.
# Each row runs PAIRS pairs, perftest first in odd pairs and rdmabench first
# in even ones (A B B A A B ...), so drift cancels; every pair gives one
# ratio rdmabench / perftest per figure:
#   latency    perftest t_min and t_typical against rdmabench min_ns and p50_ns
#   bandwidth  perftest "BW average[MB/sec]" (2^20 B/s) and MsgRate[Mpps]
#              against rdmabench bw_mibps and msg_rate_mpps
# The tables give, per row and figure, the median of those ratios with its
# 95% confidence interval (golang.org/x/perf/benchmath, computed by
# internal/tools/vsperfstat), marked when it contains 1.00 or lies within
# 0.98..1.02, and each tool's median figure.
#
# Settings: before a test's rows, one perftest run prints its settings (TX
# and RX depth, CQ moderation, MTU, inline, outstanding reads, QPs, rdma_cm)
# and one rdmabench run prints its own (the result's `effective` block);
# rdmabench then gets the flags (-t -r -Q -l -I -m -q --warmup) that set
# each value perftest uses where its default differs. Both tools get the
# same -n. Those two runs are warm-up, not measured (pair 0 in the files).
# A row whose settings still differ in any run, or differ where rdmabench
# has no flag (outstanding reads, rdma_cm), is marked "not matched".
#
# Time to an answer (--mode time): wall time of `rdmabench suite -d DEV -x
# GID` against a shell loop of the 8 perftest pairs (server and client each)
# at the sizes and iteration counts the suite used, as PAIRS interleaved
# pairs after one unmeasured round of each; reports the median ratio of the
# wall times with its confidence interval.
#
# Usage: scripts/vs-perftest.sh [options]
#   -d DEV             RDMA device (default: RDMABENCH_TEST_DEVICE, else the VM's rxe0)
#   -x INDEX           GID index (default: what `rdmabench devices` auto-selects)
#   -o OUTDIR          where the binary, raw logs, TSV files and table.md go
#                      (default ./out/vs-perftest; emptied of an earlier run's files)
#   --rows LIST        rows as TEST[:SIZE[:ITERS]],... (RDMABENCH_VS_ROWS); a TEST
#                      alone stands for its default sizes
#   --topology LIST    loopback, serve or both (RDMABENCH_VS_TOPOLOGIES,
#                      default loopback,serve)
#   --pairs N          interleaved pairs per row, and in --mode time
#                      (RDMABENCH_VS_PAIRS, default 9; 6 is the fewest that
#                      give a 95% confidence interval)
#   --mode MODE        compare (default), time, or both (RDMABENCH_VS_MODE)
#   --time             the same as --mode time
#   --table            only print the tables of the run already in OUTDIR
#   -h, --help         this text
#
# Where it runs: on this host when RDMABENCH_TEST_DEVICE names a device (or
# Soft-RoCE can be set up on this kernel), else the script re-runs itself
# inside the Soft-RoCE VM (scripts/vm.sh --share OUTDIR);
# RDMABENCH_RDMA_MODE=host|vm forces it. rdmabench is built on the host
# first; perftest and jq come from Debian (scripts/deps.sh); the tables are
# computed on the host with `go run ./internal/tools/vsperfstat`.
#
# Environment:
#   RDMABENCH_VS_ROWS, RDMABENCH_VS_TOPOLOGIES, RDMABENCH_VS_PAIRS,
#   RDMABENCH_VS_MODE          as the options above (an option wins)
#   RDMABENCH_VS_LAT_ITERS     latency iterations (default 1000)
#   RDMABENCH_VS_BW_ITERS      bandwidth iterations below 64 KiB (default 1000)
#   RDMABENCH_VS_BW_ITERS_LARGE
#                              bandwidth iterations at 64 KiB and above (default 500)
#   RDMABENCH_VS_PORT          first TCP port (default 18600; each server gets the next)
#   RDMABENCH_VS_SERVER        address the clients connect to (default: the IPv4
#                              address in the selected GID, else RDMABENCH_VM_IP,
#                              else 127.0.0.1)
#   RDMABENCH_VS_TIMEOUT       seconds allowed to each program of the comparison
#                              (default 120)
#   RDMABENCH_VS_VM_TIMEOUT    seconds allowed to the whole VM (default 10800)
# The default comparison is 40 rows of 9 pairs (760 runs with the settings
# rounds), sized for about 20-30 minutes in the Soft-RoCE VM on an otherwise
# idle 2-core host; on a busy host it takes far longer (runs.tsv has each
# run's wall time). --mode time runs PAIRS + 1 suites and as many perftest
# loops.
#
# Output in OUTDIR: rdmabench (the binary measured), env.txt (where and what
# ran), runs.tsv (one line per run: pair, order, flags, logs, wall time), results.tsv
# (the figures and settings of each run, the stats program's input),
# time.tsv (--mode time), table.md (the tables), logs/ (every log and JSON).
# Exit status: 0 when every run succeeded, 1 otherwise (the tables are still
# printed; failed runs are counted in them).
set -euo pipefail
rb_prog=vs-perftest.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
self=$here/$(basename -- "${BASH_SOURCE[0]}")
. "$here/lib.sh"

all_tests="write-lat read-lat send-lat atomic-lat write-bw read-bw send-bw atomic-bw"

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
	--rows) [[ $# -ge 2 ]] || rb_die "--rows needs a list"; export RDMABENCH_VS_ROWS=$2; shift 2 ;;
	--topology) [[ $# -ge 2 ]] || rb_die "--topology needs a list"; export RDMABENCH_VS_TOPOLOGIES=$2; shift 2 ;;
	--pairs) [[ $# -ge 2 ]] || rb_die "--pairs needs a number"; export RDMABENCH_VS_PAIRS=$2; shift 2 ;;
	--mode) [[ $# -ge 2 ]] || rb_die "--mode needs compare, time or both"; export RDMABENCH_VS_MODE=$2; shift 2 ;;
	--time) export RDMABENCH_VS_MODE=time; shift ;;
	--inner) inner=1; shift ;; # internal: measure here (host or inside the VM)
	--table) table_only=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) rb_log "usage: scripts/vs-perftest.sh [-d DEV] [-x INDEX] [-o OUTDIR] [--rows LIST] [--topology LIST] [--pairs N] [--mode compare|time|both] [--table]"; exit 2 ;;
	esac
done
[[ -z $gid || $gid =~ ^[0-9]+$ ]] || rb_die "-x: not a GID index: $gid"

lat_iters=${RDMABENCH_VS_LAT_ITERS:-1000}
bw_iters=${RDMABENCH_VS_BW_ITERS:-1000}
bw_iters_large=${RDMABENCH_VS_BW_ITERS_LARGE:-500}
pairs=${RDMABENCH_VS_PAIRS:-9}
port=${RDMABENCH_VS_PORT:-18600}
prog_timeout=${RDMABENCH_VS_TIMEOUT:-120}
vm_timeout=${RDMABENCH_VS_VM_TIMEOUT:-10800}
mode=${RDMABENCH_VS_MODE:-compare}
topologies=${RDMABENCH_VS_TOPOLOGIES:-loopback,serve}
for v in lat_iters bw_iters bw_iters_large pairs port prog_timeout vm_timeout; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || rb_die "$v must be a positive integer, not '${!v}'"
done
case $mode in compare | time | both) ;; *) rb_die "mode must be compare, time or both, not '$mode'" ;; esac
topologies=${topologies//both/loopback,serve}
for t in ${topologies//,/ }; do
	[[ $t == loopback || $t == serve ]] || rb_die "topology must be loopback, serve or both, not '$t'"
done

# default_sizes TEST: the sizes of a test's rows when only the test is named.
default_sizes() {
	case $1 in
	atomic-*) echo 8 ;;
	*) echo "2 4096 65536" ;;
	esac
}

# rows_list: the rows as TEST:SIZE:ITERS, one per line, checked.
rows_list() {
	local spec=${RDMABENCH_VS_ROWS:-$all_tests} item test size iters seen=" "
	local -a items parts
	IFS=', ' read -r -a items <<<"$spec"
	for item in "${items[@]}"; do
		[[ -n $item ]] || continue
		IFS=: read -r -a parts <<<"$item"
		test=${parts[0]}
		[[ " $all_tests " == *" $test "* ]] || rb_die "rows: unknown test '$test' (one of: $all_tests)"
		local sizes=${parts[1]:-$(default_sizes "$test")}
		for size in $sizes; do
			[[ $size =~ ^[1-9][0-9]*$ ]] || rb_die "rows: size of '$item' must be bytes"
			[[ $test == atomic-* && $size != 8 ]] && rb_die "rows: atomic tests use 8-byte messages, not $size"
			iters=${parts[2]:-}
			if [[ -z $iters ]]; then
				case $test in
				*-lat) iters=$lat_iters ;;
				*) ((size >= 65536)) && iters=$bw_iters_large || iters=$bw_iters ;;
				esac
			fi
			[[ $iters =~ ^[1-9][0-9]*$ ]] || rb_die "rows: iterations of '$item' must be a positive integer"
			# A row's logs and figures are named by its test and size.
			[[ $seen == *" $test:$size "* ]] && rb_die "rows: $test at $size B is there twice; run other iterations in a run of their own"
			seen+="$test:$size "
			echo "$test:$size:$iters"
		done
	done
}

# ---------------------------------------------------------------------------
# Reading each tool's output (inside the VM for the first round of a test,
# on the host for everything else).

# perftest_bin TEST: the perftest program for an rdmabench test name.
perftest_bin() {
	local t=$1
	echo "ib_${t%-*}_${t##*-}"
}

# perftest_read TEST CLIENT_LOG SERVER_LOG: one line, "FIGURES<TAB>SETTINGS":
# FIGURES are min_us p50_us mibps mpps ("-" when not reported) separated by
# tabs, SETTINGS key=value,... from the header perftest printed. Fails when
# the client printed no result line.
perftest_read() {
	awk -v test="$1" -v client="$2" '
		function val(s) { sub(/^[^:]*:[ \t]*/, "", s); sub(/[ \t]+$/, "", s); sub(/\[B\]$/, "", s); return s }
		function put(k, v) { if (v != "" && !(k in set)) { set[k] = v; keys[++nk] = k } }
		FILENAME == client && /^ *TX depth *:/      { tx = val($0) }
		/^ *RX depth *:/                            { if (rx == "" || FILENAME != client) rx = val($0) }
		FILENAME == client && /^ *CQ Moderation *:/ { cq = val($0) }
		FILENAME == client && /^ *Post List *:/     { pl = val($0) }
		FILENAME == client && /^ *Mtu *:/           { mtu = val($0) }
		FILENAME == client && /^ *Max inline data *:/ { inl = val($0) }
		FILENAME == client && /^ *Outstand reads *:/  { rd = val($0) }
		FILENAME == client && /^ *rdma_cm QPs/      { cm = val($0) }
		FILENAME == client && /Number of qps *:/    { if (match($0, /Number of qps *: *[0-9]+/)) { q = substr($0, RSTART, RLENGTH); sub(/.*: */, "", q) } }
		FILENAME == client && /^ *#bytes/ { hdr = 1; next }
		FILENAME == client && hdr && $1 ~ /^[0-9]+$/ && !done {
			done = 1; n = $2
			if (test ~ /-lat$/) { mn = $3; ty = $5 } else { bw = $4; mr = $5 }
		}
		END {
			if (!done) exit 1
			bwtest = test ~ /-bw$/
			put("n", n); put("warmup", 0); put("tx_depth", tx)
			if (test ~ /^send/) put("rx_depth", rx)
			put("cq_mod", cq)
			# perftest prints "Post List" only above 1.
			if (bwtest) put("post_list", pl == "" ? 1 : pl)
			if (test ~ /^(write|send)/) put("inline", inl)
			put("mtu", mtu); put("rd_atomic", rd); put("qps", q); put("rdma_cm", cm)
			s = ""
			for (i = 1; i <= nk; i++) s = s (i > 1 ? "," : "") keys[i] "=" set[keys[i]]
			d = "-"
			printf "%s\t%s\t%s\t%s\t%s\n", (mn == "" ? d : mn), (ty == "" ? d : ty), (bw == "" ? d : bw), (mr == "" ? d : mr), s
		}' "$2" "$3"
}

# rdmabench_read JSON: the same line from an rdmabench document (-o json).
# Fails when the document is empty or it or its result carries an error.
rdmabench_read() {
	local line
	line=$(rdmabench_jq "$1") && [[ -n $line ]] && echo "$line"
}

rdmabench_jq() {
	jq -r '
		def f: if . == null then "-" else tostring end;
		def kv(k; v): if v == null then empty else "\(k)=\(v)" end;
		if .error then error(.error) else . end
		| .results[0]
		| if . == null then error("no result") elif .error then error(.error) else . end
		| . as $r | (.effective // {}) as $e | .test as $t
		| [ (.latency.min_ns | if . == null then null else . / 1000 end | f),
		    (.latency.p50_ns | if . == null then null else . / 1000 end | f),
		    (.bandwidth.bw_mibps | f), (.bandwidth.msg_rate_mpps | f),
		    ([ kv("n"; $r.iterations), kv("warmup"; $r.warmup), kv("tx_depth"; $e.tx_depth),
		       (if $t | startswith("send") then kv("rx_depth"; $e.rx_depth) else empty end),
		       kv("cq_mod"; $e.cq_mod), kv("post_list"; $e.post_list),
		       (if ($t | startswith("write")) or ($t | startswith("send")) then kv("inline"; $e.inline_max // 0) else empty end),
		       kv("mtu"; $e.path_mtu), kv("rd_atomic"; $e.max_rd_atomic), kv("qps"; $r.qps // 1),
		       "rdma_cm=OFF" ] | join(",")) ]
		| join("\t")' "$1"
}

# ---------------------------------------------------------------------------
# Measuring (run where the device is: this host, or inside the VM).

# nap SECONDS: sleep without starting a program (each start costs about
# 0.15 s in the VM): a read with a timeout on a FIFO nobody writes to
# (opened by measure).
nap() { read -r -t "${1:-0.02}" -u "$nap_fd" _ || true; }

# listening PORT: whether a socket listens on TCP PORT (reads /proc, starts
# no program).
listening() {
	local hex f loc st
	printf -v hex '%04X' "$1"
	for f in /proc/net/tcp /proc/net/tcp6; do
		[[ -r $f ]] || continue
		while read -r _ loc _ st _; do
			[[ $st == 0A && $loc == *:"$hex" ]] && return 0
		done <"$f"
	done
	return 1
}

# wait_listen PORT PID: wait until something listens on PORT, at most 20 s,
# or until PID died.
wait_listen() {
	local p=$1 pid=$2 i
	for ((i = 0; i < 1000; i++)); do
		listening "$p" && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		nap 0.02
	done
	return 1
}

# next_port: sets $p to a fresh TCP port.
next_port() {
	p=$port
	port=$((port + 1))
	((port < ${RDMABENCH_VS_PORT:-18600} + 2000)) || port=${RDMABENCH_VS_PORT:-18600}
}

# runs_line FIELDS...: one line of runs.tsv.
runs_line() {
	local IFS=$'\t'
	echo "$*" >>"$out/runs.tsv"
}

# guard PID...: kill the PIDs when they outlive RDMABENCH_VS_TIMEOUT; a
# forked shell waiting on the nap FIFO, cheaper in the VM than starting
# timeout(1) for each program. unguard ends it.
guard() {
	(
		read -r -t "$prog_timeout" -u "$nap_fd" _ || true
		echo "$rb_prog: killing $* after ${prog_timeout}s" >&2
		kill "$@" 2>/dev/null
	) &
	guard_pid=$!
}
unguard() {
	kill "$guard_pid" 2>/dev/null || true
	wait "$guard_pid" 2>/dev/null || true
}

# elapsed START_US: seconds since START_US (an $EPOCHREALTIME without its
# dot), with 3 decimals.
elapsed() {
	local ms=$(((10#${EPOCHREALTIME/./} - 10#$1) / 1000))
	printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}

# run_perftest TEST SIZE ITERS TOPOLOGY PAIR POS: one perftest server and
# client. Sets $last_client and $last_server to the logs.
run_perftest() {
	local test=$1 size=$2 iters=$3 topo=$4 pair=$5 pos=$6
	local bin stem spid cpid rc=0 src=0 st=ok p t_start=${EPOCHREALTIME/./}
	bin=$(perftest_bin "$test")
	next_port
	stem=$test-$size-$topo-pair$pair-perftest
	last_server=logs/$stem-server.log
	last_client=logs/$stem-client.log
	local args=(-d "$dev" -x "$gid" -n "$iters" -p "$p" -F)
	[[ $test == atomic-* ]] || args+=(-s "$size")
	echo "$bin ${args[*]}" >"$out/$last_server"
	echo "$bin ${args[*]} $server" >"$out/$last_client"
	"$bin" "${args[@]}" >>"$out/$last_server" 2>&1 &
	spid=$!
	guard "$spid"
	if wait_listen "$p" "$spid"; then
		"$bin" "${args[@]}" "$server" >>"$out/$last_client" 2>&1 &
		cpid=$!
		unguard
		guard "$spid" "$cpid"
		wait "$cpid" || rc=$?
		((rc == 0)) || kill "$spid" 2>/dev/null || true
	else
		rb_log "perftest $test $size B ($topo, pair $pair): the server did not listen on port $p (see $out/$last_server)"
		rc=1
		kill "$spid" 2>/dev/null || true
	fi
	wait "$spid" || src=$?
	unguard
	if ((rc != 0 || src != 0)); then
		st=fail
		rb_log "perftest $test $size B ($topo, pair $pair) failed: client exit $rc, server exit $src (see $out/$last_client)"
	fi
	runs_line "$test" "$size" "$topo" "$pair" "$pos" perftest "$st" - "$last_client" "$last_server" "$(elapsed "$t_start")"
	[[ $st == ok ]]
}

# run_rdmabench TEST SIZE ITERS TOPOLOGY PAIR POS FLAGS: rdmabench in one
# process (loopback) or as serve + client (serve), with FLAGS (one word,
# split on spaces) added. Sets $last_json.
run_rdmabench() {
	local test=$1 size=$2 iters=$3 topo=$4 pair=$5 pos=$6 flags=$7
	local stem rc=0 src=0 spid='' cpid st=ok p slog=- log t_start=${EPOCHREALTIME/./}
	local -a extra
	read -r -a extra <<<"$flags"
	stem=$test-$size-$topo-pair$pair-rdmabench
	last_json=logs/$stem.json
	log=logs/$stem.log
	local args=("$test" -d "$dev" -x "$gid" -s "$size" -n "$iters" "${extra[@]}" -o json)
	if [[ $topo == serve ]]; then
		next_port
		slog=logs/$stem-server.log
		args=("$test" "$server" -p "$p" "${args[@]:1}")
		echo "rdmabench serve --once -d $dev --listen :$p" >"$out/$slog"
		"$rb" serve --once -d "$dev" --listen ":$p" >>"$out/$slog" 2>&1 &
		spid=$!
		guard "$spid"
		if ! wait_listen "$p" "$spid"; then
			rb_log "rdmabench serve ($test $size B, pair $pair) did not listen on port $p (see $out/$slog)"
			kill "$spid" 2>/dev/null || true
			wait "$spid" 2>/dev/null || true
			unguard
			runs_line "$test" "$size" "$topo" "$pair" "$pos" rdmabench fail "${flags:--}" "$last_json" "$slog" "$(elapsed "$t_start")"
			return 1
		fi
		unguard
	fi
	echo "rdmabench ${args[*]}" >"$out/$log"
	"$rb" "${args[@]}" >"$out/$last_json" 2>>"$out/$log" &
	cpid=$!
	guard "$cpid" $spid
	wait "$cpid" || rc=$?
	if [[ -n $spid ]]; then
		((rc == 0)) || kill "$spid" 2>/dev/null || true
		wait "$spid" || src=$?
	fi
	unguard
	if ((rc != 0 || src != 0)); then
		st=fail
		rb_log "rdmabench $test $size B ($topo, pair $pair) failed: exit $rc, server exit $src (see $out/$log)"
	fi
	runs_line "$test" "$size" "$topo" "$pair" "$pos" rdmabench "$st" "${flags:--}" "$last_json" "$slog" "$(elapsed "$t_start")"
	[[ $st == ok ]]
}

# settings_map NAME SETTINGS: fills associative array NAME from key=value,...
# shellcheck disable=SC2034 # m is a name reference to the caller's array
settings_map() {
	local -n m=$1
	local kv
	local -a kvs
	IFS=, read -r -a kvs <<<"$2"
	for kv in "${kvs[@]}"; do
		[[ $kv == *=* ]] && m[${kv%%=*}]=${kv#*=}
	done
}

# matching_flags TEST PERFTEST_SETTINGS RDMABENCH_SETTINGS: the rdmabench
# flags that set each value perftest used where rdmabench's differs.
matching_flags() {
	local test=$1 k flag
	local -A pt=() rb=()
	settings_map pt "$2"
	settings_map rb "$3"
	local -a added=()
	for k in warmup tx_depth rx_depth cq_mod post_list inline mtu qps; do
		[[ -n ${pt[$k]:-} && -n ${rb[$k]:-} && ${pt[$k]} != "${rb[$k]}" ]] || continue
		case $k:$test in
		warmup:*) flag=--warmup ;;
		tx_depth:*) flag=-t ;;
		rx_depth:send-*) flag=-r ;;
		cq_mod:*-bw) flag=-Q ;;
		post_list:*-bw) flag=-l ;;
		inline:write-* | inline:send-*) flag=-I ;;
		mtu:*) flag=-m ;;
		qps:*-bw) flag=-q ;;
		*) continue ;;
		esac
		added+=("$flag" "${pt[$k]}")
	done
	echo "${added[*]}"
}

# compare_row TEST SIZE ITERS: the first round (settings), then the pairs of
# each topology. Returns 1 when a run failed.
compare_row() {
	local test=$1 size=$2 iters=$3 failed=0 flags='' ptset='' rbset='' line topo pair
	rb_log "$test $size B, $iters iterations: settings round ($((SECONDS - t0)) s)"
	# The settings round is tried twice: a row without known settings
	# cannot be matched. Its runs are pair 0 of topology "first" ("retry").
	for topo in first retry; do
		if [[ -z $ptset ]]; then
			if run_perftest "$test" "$size" "$iters" "$topo" 0 1 &&
				line=$(perftest_read "$test" "$out/$last_client" "$out/$last_server"); then
				ptset=${line##*$'\t'}
			else
				failed=1
			fi
		fi
		if [[ -z $rbset ]]; then
			if run_rdmabench "$test" "$size" "$iters" "$topo" 0 2 '' &&
				line=$(rdmabench_read "$out/$last_json" 2>/dev/null); then
				rbset=${line##*$'\t'}
			else
				failed=1
			fi
		fi
		[[ -z $ptset || -z $rbset ]] || break
	done
	if [[ -n $ptset && -n $rbset ]]; then
		flags=$(matching_flags "$test" "$ptset" "$rbset")
		rb_log "  perftest:  $ptset"
		rb_log "  rdmabench: $rbset"
		rb_log "  rdmabench flags added: ${flags:-none}"
	else
		rb_log "  settings not known: rdmabench runs with its defaults"
	fi
	local -a topos
	IFS=, read -r -a topos <<<"$topologies"
	for topo in "${topos[@]}"; do
		rb_log "$test $size B, $topo: pairs 1..$pairs ($((SECONDS - t0)) s)"
		for ((pair = 1; pair <= pairs; pair++)); do
			if ((pair % 2)); then
				run_perftest "$test" "$size" "$iters" "$topo" "$pair" 1 || failed=1
				run_rdmabench "$test" "$size" "$iters" "$topo" "$pair" 2 "$flags" || failed=1
			else
				run_rdmabench "$test" "$size" "$iters" "$topo" "$pair" 1 "$flags" || failed=1
				run_perftest "$test" "$size" "$iters" "$topo" "$pair" 2 || failed=1
			fi
		done
	done
	return $failed
}

# time_line PAIR POS TOOL STATUS START_US END_US LOG: one line of time.tsv
# (the times as $EPOCHREALTIME without its dot: microseconds).
time_line() {
	local us=$((10#$6 - 10#$5))
	local IFS=$'\t'
	echo "$1	$2	$3	$4	$(printf '%d.%06d' $((us / 1000000)) $((us % 1000000)))	$7" >>"$out/time.tsv"
}

# time_suite PAIR POS: one `rdmabench suite`, timed.
time_suite() {
	local pair=$1 pos=$2 json=logs/time-pair$1-suite.json st=ok t_start t_end
	echo "rdmabench suite -d $dev -x $gid -o json" >"$out/${json%.json}.log"
	t_start=${EPOCHREALTIME/./}
	"$rb" suite -d "$dev" -x "$gid" -o json >"$out/$json" 2>>"$out/${json%.json}.log" || st=fail
	t_end=${EPOCHREALTIME/./}
	[[ $st == ok ]] || rb_log "rdmabench suite (pair $pair) failed (see $out/${json%.json}.log)"
	time_line "$pair" "$pos" rdmabench "$st" "$t_start" "$t_end" "$json"
	suite_json=$out/$json
	[[ $st == ok ]]
}

# time_loop PAIR POS: the 8 perftest pairs of $loop (bin:size:iters ...),
# each server in the background and its client once it listens, timed.
time_loop() {
	local pair=$1 pos=$2 log=logs/time-pair$1-perftest.log st=ok t_start t_end item bin size iters spid rc p
	: >"$out/$log"
	t_start=${EPOCHREALTIME/./}
	for item in $loop; do
		IFS=: read -r bin size iters <<<"$item"
		next_port
		local args=(-d "$dev" -x "$gid" -n "$iters" -p "$p" -F)
		[[ $bin == ib_atomic_* ]] || args+=(-s "$size")
		"$bin" "${args[@]}" >>"$out/$log" 2>&1 &
		spid=$!
		rc=0
		if wait_listen "$p" "$spid"; then
			"$bin" "${args[@]}" "$server" >>"$out/$log" 2>&1 || rc=$?
		else
			rc=1
		fi
		((rc == 0)) || kill "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || rc=1
		((rc == 0)) || st=fail
	done
	t_end=${EPOCHREALTIME/./}
	[[ $st == ok ]] || rb_log "perftest loop (pair $pair) failed (see $out/$log)"
	time_line "$pair" "$pos" perftest "$st" "$t_start" "$t_end" "$log"
	[[ $st == ok ]]
}

# time_mode: one unmeasured round of each (the suite's sizes and iteration
# counts come from it), then the pairs.
time_mode() {
	local failed=0 pair
	printf 'pair\tpos\ttool\tstatus\twall_s\tlog\n' >"$out/time.tsv"
	rb_log "time to an answer: first round ($((SECONDS - t0)) s)"
	time_suite 0 1 || rb_die "rdmabench suite failed: no sizes and iteration counts for the perftest loop"
	loop=$(jq -r '.results[] | select(.test | startswith("tcp-") | not) | "\(.test) \(.size) \(.iterations)"' "$suite_json" |
		while read -r t s n; do echo "$(perftest_bin "$t"):$s:$n"; done | tr '\n' ' ')
	[[ -n $loop ]] || rb_die "no RDMA result in the suite's document $suite_json"
	rb_log "perftest loop: $loop"
	echo "time to an answer: rdmabench suite -d $dev -x $gid; perftest loop (program:size:iterations): $loop" >>"$out/env.txt"
	time_loop 0 2 || failed=1
	for ((pair = 1; pair <= pairs; pair++)); do
		rb_log "time to an answer: pair $pair/$pairs ($((SECONDS - t0)) s)"
		if ((pair % 2)); then
			time_loop "$pair" 1 || failed=1
			time_suite "$pair" 2 || failed=1
		else
			time_suite "$pair" 1 || failed=1
			time_loop "$pair" 2 || failed=1
		fi
	done
	return $failed
}

measure() {
	rb_need jq jq
	[[ -x $out/rdmabench ]] || rb_die "$out/rdmabench: not built"
	rb=$(rb_local_copy "$out/rdmabench") || rb_die "cannot copy $out/rdmabench"
	local fifo
	fifo=$(mktemp -u "${TMPDIR:-/tmp}/vs-perftest-nap.XXXXXX")
	mkfifo "$fifo"
	exec {nap_fd}<>"$fifo"
	rm -f "$fifo"
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

	local -a rows
	mapfile -t rows <<<"$(rows_list)"
	local test
	for test in $all_tests; do
		command -v "$(perftest_bin "$test")" >/dev/null || rb_die "$(perftest_bin "$test") not found (scripts/deps.sh installs perftest)"
	done

	rm -rf "$out/logs" "$out/runs.tsv" "$out/results.tsv" "$out/time.tsv" "$out/table.md"
	mkdir -p "$out/logs"
	{
		echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
		if [[ -n ${RDMABENCH_IN_VM:-} ]]; then
			echo "where: the Soft-RoCE VM of scripts/vm.sh (qemu TCG, $(nproc) vCPUs)"
		else
			echo "where: this host ($(hostname))"
		fi
		echo "kernel: $(uname -r), $(nproc) CPUs, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
		echo "device: $dev, GID index $gid ($sel_gid), servers at $server"
		echo "perftest: $(ib_write_lat -V 2>&1 | head -1), package $(dpkg-query -W -f='${Version}' perftest 2>/dev/null || echo '?')"
		echo "rdmabench: $("$rb" version 2>&1 | head -1)"
		echo "mode: $mode; pairs: $pairs (perftest first in odd pairs, rdmabench first in even ones)"
		if [[ $mode != time ]]; then
			echo "topologies: $topologies"
			echo "rows (test:size:iterations): ${rows[*]}"
		fi
	} >"$out/env.txt"
	cat "$out/env.txt" >&2

	local failed=0 row size iters
	t0=$SECONDS
	if [[ $mode != time ]]; then
		printf 'test\tsize\ttopology\tpair\tpos\ttool\tstatus\tflags\tlog\tserver_log\twall_s\n' >"$out/runs.tsv"
		for row in "${rows[@]}"; do
			IFS=: read -r test size iters <<<"$row"
			compare_row "$test" "$size" "$iters" || failed=1
		done
	fi
	if [[ $mode != compare ]]; then
		time_mode || failed=1
	fi
	rb_log "measured in $((SECONDS - t0)) s"
	return $failed
}

# ---------------------------------------------------------------------------
# The tables (on the host, after the VM is gone).

# extract: results.tsv from runs.tsv and the logs.
extract() {
	[[ -s $out/runs.tsv ]] || return 0
	rb_need jq jq
	local tsv=$out/results.tsv.tmp
	printf 'test\tsize\ttopology\tpair\tpos\ttool\tstatus\tmin_us\tp50_us\tmibps\tmpps\tsettings\tflags\tlog\n' >"$tsv"
	local test size topo pair pos tool st flags log slog line
	while IFS=$'\t' read -r test size topo pair pos tool st flags log slog _; do
		[[ $test == test ]] && continue
		line=''
		if [[ $st == ok ]]; then
			if [[ $tool == perftest ]]; then
				line=$(perftest_read "$test" "$out/$log" "$out/$slog") || line=''
			else
				line=$(rdmabench_read "$out/$log" 2>/dev/null) || line=''
			fi
			[[ -n $line ]] || rb_log "no figures in $out/$log: counted as failed"
		fi
		if [[ -n $line ]]; then
			printf '%s\t%s\t%s\t%s\t%s\t%s\tok\t%s\t%s\t%s\n' "$test" "$size" "$topo" "$pair" "$pos" "$tool" "$line" "${flags:--}" "$log"
		else
			printf '%s\t%s\t%s\t%s\t%s\t%s\tfail\t-\t-\t-\t-\t-\t%s\t%s\n' "$test" "$size" "$topo" "$pair" "$pos" "$tool" "${flags:--}" "$log"
		fi
	done <"$out/runs.tsv" >>"$tsv"
	mv "$tsv" "$out/results.tsv"
}

render() {
	sed "s/^/    /" "$out/env.txt"
	echo
	if [[ -s $out/results.tsv ]]; then
		go run ./internal/tools/vsperfstat "$out/results.tsv"
	fi
	if [[ -s $out/time.tsv ]]; then
		go run ./internal/tools/vsperfstat -time "$out/time.tsv"
		echo
	fi
}

# ---------------------------------------------------------------------------

if ((inner)); then
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	measure
	exit $?
fi

cd "$here/.."
if ! command -v go >/dev/null 2>&1; then
	[[ -x /usr/local/go/bin/go ]] && PATH=$PATH:/usr/local/go/bin
	command -v go >/dev/null 2>&1 || rb_die "go not found: install Go 1.26 or newer"
fi

if ((table_only)); then
	[[ -f $out/env.txt && (-s $out/runs.tsv || -s $out/time.tsv) ]] || rb_die "no earlier run in $out"
	extract
	render
	exit 0
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
"$here/deps.sh"
rb_need jq jq
rows_list >/dev/null # check the rows before building or booting anything
rb_log "building rdmabench into $out"
go build -o "$out/rdmabench" ./cmd/rdmabench

load0=$(cut -d' ' -f1-3 /proc/loadavg)
start=$SECONDS
inner_args=(--inner -o "$out")
[[ -n $gid ]] && inner_args+=(-x "$gid")
rc=0
where=$(rb_rdma_mode)
# rb_rdma_mode ran in a subshell: its export of the device did not survive.
[[ $where == host && -z $dev && -z ${RDMABENCH_RDMA_MODE:-} ]] && dev=${RDMABENCH_RXE_NAME:-rxe0}
[[ -n $dev ]] && inner_args+=(-d "$dev")
case $where in
host)
	rb_log "measuring on this host's ${dev:-first RDMA device}"
	"$self" "${inner_args[@]}" || rc=$?
	;;
vm)
	rb_log "this kernel has no rdma_rxe: measuring in the Soft-RoCE VM (rxe0)"
	"$here/vm.sh" --timeout "$vm_timeout" --share "$out" -- "$self" "${inner_args[@]}" || rc=$?
	;;
*) rb_die "RDMABENCH_RDMA_MODE must be vm or host" ;;
esac
[[ -s $out/runs.tsv || -s $out/time.tsv ]] || rb_die "no results (exit $rc)"
src=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[[ -n $(git status --porcelain -- cmd pkg internal go.mod go.sum 2>/dev/null) ]] && src="$src + uncommitted changes"
echo "source: commit $src" >>"$out/env.txt"
echo "host: $(nproc) CPUs, load average (1/5/15 min) $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end; $((SECONDS - start)) s" >>"$out/env.txt"
extract
render >"$out/table.md.tmp"
mv "$out/table.md.tmp" "$out/table.md"
cat "$out/table.md"
rb_log "took $((SECONDS - start)) s; raw logs in $out/logs, tables in $out/table.md"
exit $rc
