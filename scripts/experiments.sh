#!/usr/bin/env bash
# The experiments behind docs/vs-perftest.md ("What the missing microseconds
# were", "Time to an answer"), each as interleaved rounds in one run on the
# same device, summarised as the median of the per-round ratios with its 95%
# confidence interval (internal/tools/ratiostat).
#
# Usage: scripts/experiments.sh [-o OUTDIR] [-r ROUNDS] [--rows LIST] EXPERIMENT
#
# Experiments:
#   fd-table   rdmabench built with a private descriptor table on its loop
#              threads (the default), rdmabench built with the process's
#              shared table (-ldflags -X ...workloads.privateFiles=no) and
#              perftest, in the order A B C then C B A, ROUNDS rounds
#              (default 15) of 2000 iterations of write-lat 2 B and 4 KiB,
#              read-lat 2 B, atomic-lat 8 B, atomic-bw 8 B and write-bw 2 B.
#              Latency rows: min and p50 (perftest: t_min and t_typical);
#              bandwidth rows: Mmsg/s. rdmabench runs in one process,
#              perftest as server and client; write-lat and send-lat run
#              with -I 0, perftest's inline default for them. --rows
#              picks rows as KIND:TEST:SIZE,... (KIND lat or bw), e.g.
#              --rows bw:write:2.
#   suite      wall time of `rdmabench suite` against a loop of the 8
#              perftest pairs at perftest's own defaults (as it runs when
#              nobody counts), ROUNDS rounds (default 7), alternating which
#              goes first; and the precision the suite's tests reached
#              (their documents are kept as suite-ROUND.json).
#
# Where it runs: as scripts/vs-perftest.sh (this host's device when
# RDMABENCH_TEST_DEVICE names one or Soft-RoCE can be set up here, else the
# Soft-RoCE VM; RDMABENCH_RDMA_MODE=host|vm forces it). perftest and jq come
# from Debian (scripts/deps.sh). Output in OUTDIR (default
# ./out/experiments/EXPERIMENT): the binaries, rounds.txt (one line per run:
# ROW ROUND TOOL FIGURES...) and table.md.
set -euo pipefail
rb_prog=experiments.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
self=$here/$(basename -- "${BASH_SOURCE[0]}")
. "$here/lib.sh"

usage() {
	sed -n '2,/^set -euo/p' "$self" | sed '$d' | sed 's/^# \{0,1\}//'
}

out="" rounds="" inner=0 rows="lat:write:2 lat:write:4096 lat:read:2 lat:atomic:8 bw:atomic:8 bw:write:2" dev=${RDMABENCH_TEST_DEVICE:-rxe0}
while (($#)); do
	case $1 in
	-o) out=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	--rows) rows=${2//,/ }; shift 2 ;;
	--inner) inner=1; shift ;; # internal: measure here (host or inside the VM)
	-h | --help) usage; exit 0 ;;
	-*) rb_die "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
done
(($# == 1)) || rb_die "name one experiment: fd-table or suite (see --help)"
exp=$1
case $exp in
fd-table) rounds=${rounds:-15} ;;
suite) rounds=${rounds:-7} ;;
*) rb_die "unknown experiment $exp (fd-table or suite)" ;;
esac
[[ $rounds =~ ^[1-9][0-9]*$ ]] || rb_die "-r wants a positive count, not $rounds"
for row in $rows; do
	[[ $row =~ ^(lat|bw):(write|read|send|atomic):[0-9]+$ ]] || rb_die "--rows: $row is not KIND:TEST:SIZE (lat or bw; write, read, send or atomic)"
done
out=${out:-out/experiments/$exp}

# ---------------------------------------------------------------------------
# Measuring (where the device is).

port=${RDMABENCH_VS_PORT:-18700}
gid="" server="" rb="" rb_shared=""

# select_gid: the GID index rdmabench auto-selects on port 1 (both tools get
# it), and the IPv4 address in it, where perftest's clients connect.
select_gid() {
	local sel
	sel=$("$rb" devices -d "$dev" -o json | jq -r '.[0].ports[] | select(.port == 1) | .gid_selection | "\(.index) \(.gid)"')
	gid=${sel%% *}
	[[ $gid =~ ^[0-9]+$ ]] || rb_die "no usable GID on $dev port 1 (rdmabench devices -d $dev)"
	server=${RDMABENCH_VS_SERVER:-}
	if [[ -z $server && ${sel#* } =~ ^::ffff:([0-9.]+)$ ]]; then
		server=${BASH_REMATCH[1]}
	fi
	server=${server:-${RDMABENCH_VM_IP:-127.0.0.1}}
}

# perftest_pair PROGRAM ARGS...: a perftest server in the background and its
# client; the client's output on stdout.
perftest_pair() {
	local prog=$1 i
	shift
	port=$((port + 1))
	"$prog" -d "$dev" -x "$gid" -F -p "$port" "$@" >/dev/null 2>&1 &
	local spid=$!
	for ((i = 0; i < 500; i++)); do
		grep -q ":$(printf %04X "$port") .* 0A " /proc/net/tcp && break
		sleep 0.02
	done
	"$prog" -d "$dev" -x "$gid" -F -p "$port" "$@" "$server"
	wait "$spid"
}

# fd_perftest KIND TEST SIZE: "MIN P50" (latency) or "MMSGS" (bandwidth).
fd_perftest() {
	local kind=$1 test=$2 size=$3
	perftest_pair "ib_${test}_$kind" -n 2000 -s "$size" 2>&1 | if [[ $kind == lat ]]; then
		awk '/^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+/ {f = $3 " " $5} END {print f}'
	else
		awk '/^[[:space:]]*[0-9]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+/ {f = $5} END {print f}'
	fi
}

# fd_rdmabench BINARY KIND TEST SIZE: as fd_perftest.
fd_rdmabench() {
	local bin=$1 kind=$2 test=$3 size=$4 inline=()
	[[ $kind == lat && ($test == write || $test == send) ]] && inline=(-I 0)
	"$bin" "$test-$kind" -d "$dev" -x "$gid" -n 2000 -s "$size" --warmup 0 "${inline[@]}" -o json 2>/dev/null | if [[ $kind == lat ]]; then
		jq -r '.results[0].latency | "\(.min_ns / 1000) \(.p50_ns / 1000)"'
	else
		jq -r '.results[0].bandwidth.msg_rate_mpps'
	fi
}

fd_table() {
	local row kind test size r order x
	for row in $rows; do
		IFS=: read -r kind test size <<<"$row"
		for ((r = 1; r <= rounds; r++)); do
			order="A B C"
			((r % 2)) || order="C B A"
			for x in $order; do
				case $x in
				A) echo "$test-$kind-$size $r private $(fd_rdmabench "$rb" "$kind" "$test" "$size")" ;;
				B) echo "$test-$kind-$size $r shared $(fd_rdmabench "$rb_shared" "$kind" "$test" "$size")" ;;
				C) echo "$test-$kind-$size $r perftest $(fd_perftest "$kind" "$test" "$size")" ;;
				esac
			done
		done
	done
}

# seconds CMD...: wall time of CMD, its output discarded.
seconds() {
	local t0=${EPOCHREALTIME/./}
	"$@" >/dev/null 2>&1 || rb_log "$1 failed"
	local us=$((10#${EPOCHREALTIME/./} - 10#$t0))
	printf '%d.%06d\n' $((us / 1000000)) $((us % 1000000))
}

perftest_loop() {
	local t
	for t in write_lat read_lat send_lat atomic_lat write_bw read_bw send_bw atomic_bw; do
		perftest_pair "ib_$t"
	done
}

# suite ROUND: rdmabench suite, as a user runs it, keeping its document in
# $docs (on this machine: see rb_local_copy).
suite() {
	"$rb" suite -d "$dev" -x "$gid" --out "$docs/suite-$1.json"
}

suite_time() {
	local r docs
	docs=$(mktemp -d "${TMPDIR:-/tmp}/rb-suite.XXXXXX")
	for ((r = 1; r <= rounds; r++)); do
		if ((r % 2)); then
			echo "suite-seconds $r perftest $(seconds perftest_loop)"
			echo "suite-seconds $r rdmabench $(seconds suite "$r")"
		else
			echo "suite-seconds $r rdmabench $(seconds suite "$r")"
			echo "suite-seconds $r perftest $(seconds perftest_loop)"
		fi
	done
	cp "$docs"/suite-*.json "$out/"
}

# precision_table: for each test of the suite documents, how many of its
# runs met the precision asked, and the medians of the half-width reached
# and of the rounds run.
precision_table() {
	echo
	echo "| test | runs | met ±5% | median half-width | median rounds |"
	echo "|---|---:|---:|---:|---:|"
	jq -rs '[.[].results[]] | group_by(.test) | sort_by(.[0].test) | .[] |
		def median: sort | .[length / 2 | floor];
		"| \(.[0].test) | \(length) | \(map(select(.precision.met)) | length) | \(map(.precision.half_width_pct // 1e9) | median | . * 10 | round / 10)% | \(map(.precision.rounds) | median) |"' "$out"/suite-*.json
}

if ((inner)); then
	rb=$(rb_local_copy "$out/rdmabench") || rb_die "cannot copy $out/rdmabench"
	if [[ $exp == fd-table ]]; then
		rb_shared=$(rb_local_copy "$out/rdmabench-shared") || rb_die "cannot copy $out/rdmabench-shared"
	fi
	select_gid
	case $exp in
	fd-table) fd_table >"$out/rounds.txt" ;;
	suite) suite_time >"$out/rounds.txt" ;;
	esac
	exit 0
fi

# ---------------------------------------------------------------------------
# On the host: build, measure where the device is, summarise.

cd "$here/.."
"$here/deps.sh"
rb_need jq jq
mkdir -p "$out"
out=$(cd "$out" && pwd)
go build -o "$out/rdmabench" ./cmd/rdmabench
if [[ $exp == fd-table ]]; then
	go build -ldflags "-X github.com/rdmabench/rdmabench/pkg/workloads.privateFiles=no" -o "$out/rdmabench-shared" ./cmd/rdmabench
fi
start=$SECONDS
case $(rb_rdma_mode) in
host) RDMABENCH_TEST_DEVICE=${RDMABENCH_TEST_DEVICE:-${RDMABENCH_RXE_NAME:-rxe0}} "$self" --inner -o "$out" -r "$rounds" --rows "$rows" "$exp" ;;
vm) "$here/vm.sh" --timeout 7200 --share "$out" -- "$self" --inner -o "$out" -r "$rounds" --rows "$rows" "$exp" ;;
*) rb_die "RDMABENCH_RDMA_MODE must be vm or host" ;;
esac
[[ -s $out/rounds.txt ]] || rb_die "no rounds measured"
{
	echo "experiment $exp, $rounds rounds, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $((SECONDS - start)) s"
	case $exp in
	fd-table) go run ./internal/tools/ratiostat "$out/rounds.txt" private/shared private/perftest shared/perftest ;;
	suite)
		go run ./internal/tools/ratiostat "$out/rounds.txt" rdmabench/perftest
		precision_table
		;;
	esac
} >"$out/table.md"
cat "$out/table.md"
