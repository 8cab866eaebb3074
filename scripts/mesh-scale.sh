#!/usr/bin/env bash
# A mesh of many ranks on this host, every rank a process of its own with its
# test server on 127.0.0.1, over the TCP tests (no RDMA device needed): the
# mesh's own costs at scale (registration, rounds, rank 0's summary and link
# stream) with the tests as cheap as they get.
#
#   scripts/mesh-scale.sh run N [--out] [-- TEST ARGS...]
#       one mesh of N ranks (default tests: tcp-lat -n 100); prints one line
#       "ranks N links L out yes|no wall_s W rank0_rss_kib K summary_bytes S
#       stream_bytes B report_s R report_rss_kib RR plot_s P plot_rss_kib PR"
#   scripts/mesh-scale.sh pattern N PATTERN [-- TEST ARGS...]
#       one load pattern (--pattern PATTERN) over N ranks (default test:
#       tcp-bw -D 500ms); prints one line "ranks N pattern P steps S flows F
#       wall_s W step_s X counters_ms C flows_ms FL setup_ms U record_ms R
#       agg_gbps A jain J load_p99_us L rank0_rss_kib K": the means over
#       the steps of their cost (docs/mesh.md, "Load patterns"), of the
#       receivers' aggregate and Jain index, and of the probes' p99
#   scripts/mesh-scale.sh check N
#       the test run by scripts/test.sh: a mesh of N ranks with --out, then
#       again with rank 0 killed (SIGKILL) mid-run. Asserts that every link
#       is in the summary and in the link stream, that the stream read back
#       makes the same matrices, and that a killed rank 0's stream holds
#       every link it finished, readable by `rdmabench report`. Prints one
#       "--- PASS: mesh-scale/NAME" or "--- FAIL: ..." line per case.
#
# Usage: scripts/mesh-scale.sh run|check N [...]; RDMABENCH_BIN=PATH uses
# that binary (default: built into a temporary folder); with
# RDMABENCH_MESH_SCALE_KEEP=DIR, `run --out` leaves its summary and link
# stream there. Figures are of this host, every rank sharing its CPUs: they
# measure the mesh's overheads, not a network.
set -uo pipefail
rb_prog=mesh-scale.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
cd "$here/.."
rb_need jq jq

mode=${1:-}
n=${2:-}
[[ $mode == run || $mode == check || $mode == pattern ]] && [[ $n =~ ^[0-9]+$ ]] && ((n >= 2)) ||
	rb_die "usage: scripts/mesh-scale.sh run|check N [--out] [-- TEST ARGS...] | pattern N PATTERN [-- TEST ARGS...]"
shift 2
with_out=0
tests=(tcp-lat -n 100)
if [[ $mode == pattern ]]; then
	[[ -n ${1:-} ]] || rb_die "usage: scripts/mesh-scale.sh pattern N PATTERN [-- TEST ARGS...]"
	pattern=$1
	shift
	tests=(tcp-bw -D 500ms)
fi
while (($# > 0)); do
	case $1 in
	--out) with_out=1 ;;
	--)
		shift
		tests=("$@")
		break
		;;
	*) rb_die "unknown option $1" ;;
	esac
	shift
done

work=$(mktemp -d "${TMPDIR:-/tmp}/rdmabench-mesh-scale.XXXXXX")
trap 'jobs -p | xargs -r kill -9 2>/dev/null; rm -rf "$work"' EXIT
bin=${RDMABENCH_BIN:-}
if [[ -z $bin ]]; then
	bin=$work/rdmabench
	go build -o "$bin" ./cmd/rdmabench || rb_die "build failed"
fi
# Many processes: room for their sockets.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# streamed FILE: the number of links in a link stream, whole lines only: a
# rank 0 killed mid-write can leave its last line cut short (a write of
# more than a page stops at a page's end on SIGKILL), and `rdmabench
# report` leaves that line out, saying so.
streamed() {
	local c
	c=$(grep -c '^{"event":"link"' "$1" 2>/dev/null)
	c=${c:-0}
	if [[ $(cut_short "$1") == yes ]] && tail -n 1 "$1" | grep -q '^{"event":"link"'; then
		c=$((c - 1))
	fi
	echo "$c"
}

# cut_short FILE: "yes" when the stream's last line has no newline (cut short).
cut_short() {
	[[ -n $(tail -c 1 "$1" 2>/dev/null) ]] && echo yes || echo no
}

# free_port: a port free now below Linux's ephemeral range (32768 and up),
# so that no rank's server, started on port 0 meanwhile, is given it.
free_port() {
	python3 -c '
import random, socket
for _ in range(200):
    p = random.randrange(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
'
}

# mesh DIR OUT [KILL_AFTER]: run the N ranks; rank 0 under GNU time (its
# peak RSS into DIR/rank0.time), writing --out OUT when OUT is set. With
# KILL_AFTER, rank 0 is killed (SIGKILL) once its link stream holds that
# many links. Sets rc0 (rank 0's exit status) and wall (seconds).
mesh() {
	local dir=$1 out=$2 kill_after=${3:-} port pids=() r start
	mkdir -p "$dir"
	port=$(free_port)
	local common=(mesh --ranks "$n" --coordinator "127.0.0.1:$port" --listen 127.0.0.1:0 --register-timeout 120s)
	start=$(date +%s.%N)
	local outargs=()
	[[ -n $out ]] && outargs=(--out "$out")
	# Rank 0 first, so that no other rank's server takes its port; the
	# others try to register until it listens.
	/usr/bin/time -f '%M' -o "$dir/rank0.time" "$bin" "${common[@]}" --rank 0 "${tests[@]}" "${outargs[@]}" \
		>"$dir/rank0.txt" 2>"$dir/rank0.err" &
	local p0=$!
	for ((r = 1; r < n; r++)); do
		"$bin" "${common[@]}" --rank "$r" "${tests[@]}" >/dev/null 2>>"$dir/ranks.err" &
		pids+=($!)
	done
	if [[ -n $kill_after ]]; then
		local stream=${out%.*}.links.ndjson
		while kill -0 "$p0" 2>/dev/null; do
			if (($(streamed "$stream") >= kill_after)); then
				pkill -9 -P "$p0" 2>/dev/null # GNU time's child: rank 0 itself
				break
			fi
			sleep 0.05
		done
	fi
	wait "$p0"
	rc0=$?
	wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	# The other ranks end once rank 0 ends the mesh (or is lost).
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null
	done
}

# timed FILE CMD...: CMD's wall seconds and peak RSS (KiB) as "S K".
timed() {
	local f=$1 start
	shift
	start=$(date +%s.%N)
	/usr/bin/time -f '%M' -o "$f" "$@" >/dev/null 2>&1 || {
		echo "fail 0"
		return
	}
	echo "$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') $(tail -1 "$f")"
}

links=$((n * (n - 1)))
case $mode in
run)
	out=
	((with_out)) && out=$work/m.json
	mesh "$work/run" "$out"
	((rc0 == 0)) || rb_log "rank 0 exited $rc0: $(tail -3 "$work/run/rank0.err")"
	rss=$(tail -1 "$work/run/rank0.time")
	line="ranks $n links $links out $([[ -n $out ]] && echo yes || echo no) wall_s $wall rank0_rss_kib $rss"
	if [[ -n $out ]]; then
		# (here-strings, not <(...): a Soft-RoCE VM's guest has no /dev/fd)
		read -r rs rk <<<"$(timed "$work/report.time" "$bin" report "$out")"
		read -r ps pk <<<"$(timed "$work/plot.time" "$bin" plot "$out" -o "$work/m.html")"
		line+=" summary_bytes $(stat -c %s "$out") stream_bytes $(stat -c %s "${out%.*}.links.ndjson")"
		line+=" report_s $rs report_rss_kib $rk plot_s $ps plot_rss_kib $pk"
		[[ -n ${RDMABENCH_MESH_SCALE_KEEP:-} ]] && cp "$out" "${out%.*}.links.ndjson" "$RDMABENCH_MESH_SCALE_KEEP/"
	fi
	echo "$line"
	;;
pattern)
	tests=(--pattern "$pattern" "${tests[@]}")
	out=$work/p.json
	mesh "$work/pattern" "$out"
	((rc0 == 0)) || rb_log "rank 0 exited $rc0: $(tail -3 "$work/pattern/rank0.err")"
	figs=$(jq -r '.mesh.steps as $s | ($s | length) as $n | [$n, ([$s[].flows | length] | add),
		([$s[].cost | .counters_ns + .flows_ns + .record_ns] | add / $n / 1e9),
		([$s[].cost.counters_ns] | add / $n / 1e6), ([$s[].cost.flows_ns] | add / $n / 1e6),
		([$s[].cost.setup_ns] | add / $n / 1e6), ([$s[].cost.record_ns] | add / $n / 1e6),
		([$s[].receivers[].aggregate_gbps] | add / length), ([$s[].receivers[].jain] | add / length),
		([$s[].probe.latency.p99_ns // empty] | if length > 0 then add / length / 1e3 else 0 end)]
		| map(if type == "number" and . != floor then (. * 1000 | round / 1000) else . end) | @tsv' "$out")
	read -r steps flows step_s cms fms sms rms agg jain p99 <<<"$figs"
	echo "ranks $n pattern $pattern steps $steps flows $flows wall_s $wall step_s $step_s counters_ms $cms flows_ms $fms" \
		"setup_ms $sms record_ms $rms agg_gbps $agg jain $jain load_p99_us $p99 rank0_rss_kib $(tail -1 "$work/pattern/rank0.time")"
	;;
check)
	pass=0 fail=0
	ok() { echo "--- PASS: mesh-scale/$1"; pass=$((pass + 1)); }
	ko() { echo "--- FAIL: mesh-scale/$1: $2"; fail=$((fail + 1)); }
	tests=(tcp-lat -n 20 --blame=false)
	out=$work/full.json
	mesh "$work/full" "$out"
	stream=${out%.*}.links.ndjson
	got=$(jq -r '[(.mesh.links | length), ([.mesh.links[] | select(.error)] | length), (.mesh.matrices | length),
		([.mesh.links[] | select(.results)] | length), .mesh.links_file, (.partial // false)] | @tsv' "$out" 2>&1)
	streamed=$(streamed "$stream")
	if [[ $rc0 == 0 && $got == "$links	0	2	0	full.links.ndjson	false" && $streamed == "$links" ]]; then
		ok "full ($n ranks, $links links in the summary and the stream, in $wall s)"
	else
		ko full "rank 0 exit $rc0; summary: links, failed, matrices, with results, links_file, partial = $got; $streamed links streamed; $(tail -3 "$work/full/rank0.err")"
	fi
	if "$bin" report "$stream" -o json >"$work/back.json" 2>"$work/back.err" &&
		[[ $(jq -c .mesh.matrices "$work/back.json") == "$(jq -c .mesh.matrices "$out")" ]] &&
		[[ $(jq -c '.mesh.links | length' "$work/back.json") == "$links" ]]; then
		ok "stream-reads-back (rdmabench report of the link stream: the summary's matrices)"
	else
		ko stream-reads-back "$(head -3 "$work/back.err")"
	fi
	kill_at=$((links / 3))
	out=$work/killed.json
	mesh "$work/killed" "$out" "$kill_at"
	stream=${out%.*}.links.ndjson
	streamed=$(streamed "$stream")
	cut=$(cut_short "$stream")
	nl= partial= warned=
	if [[ ! -e $out ]] && "$bin" report "$stream" -o json >"$work/killed-back.json" 2>"$work/killed-back.err" &&
		read -r nl partial warned <<<"$(jq -r '[(.mesh.links | length), .partial,
			([.warnings[]? | select(test("cut short"))] | length > 0)] | @tsv' "$work/killed-back.json")" &&
		((nl >= kill_at && nl == streamed)) && [[ $partial == true && $warned == "$([[ $cut == yes ]] && echo true || echo false)" ]]; then
		ok "killed-rank-0 (SIGKILL after $kill_at links: its stream holds $nl whole links$([[ $cut == yes ]] && echo ' and a last line cut short, left out with a warning'), read back as a partial summary)"
	else
		ko killed-rank-0 "exit $rc0, summary present: $([[ -e $out ]] && echo yes || echo no), $streamed whole links streamed, last line cut short: $cut; read back: $nl links, partial $partial, the cut line warned of: $warned; $(head -3 "$work/killed-back.err" 2>/dev/null)"
	fi
	echo "mesh-scale: $pass passed, $fail failed"
	((fail == 0))
	;;
esac
