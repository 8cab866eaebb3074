#!/usr/bin/env bash
# Soak: one `rdmabench serve` runs N tests in a row from clients started
# one after another: every kind (the eight RDMA tests and both TCP tests),
# random sizes, QP counts, connections, atomic types, -b, -e and
# --validate; a share of the clients (default 10%) is killed with SIGKILL
# mid-test. The server's levels are read after the first 10 tests (one of
# each kind: the first tests load the provider library and grow the heap)
# and again after the last one, once the server is idle:
#   - verbs objects: its PDs, MRs, CQs, QPs and contexts in
#     `rdma resource show` (iproute2), and those it counts itself;
#   - open file descriptors (/proc/PID/fd);
#   - goroutines (the line `rdmabench serve` logs on SIGUSR1);
#   - resident memory (VmRSS).
# It exits 1 unless each is back at its level within the bound:
# verbs objects and files equal, goroutines at most 2 more, resident memory
# at most 16 MiB more; or when a test that was not killed failed.
# Runs in the Soft-RoCE VM (scripts/vm.sh) when this host has no RDMA
# device, like scripts/test.sh. Ends with "--- PASS: soak/..." or
# "--- FAIL: soak/..." lines and a summary.
#
# With --agent-seconds S, the agent soak (scripts/agent-soak.sh) runs
# after it on the same device (in the same VM), S seconds after a warm-up
# of 20 s, its agents probing with the UD probe (--probe ud-lat) and
# bandwidth too (--bw-probe write-bw: whole tests, each setting up and
# freeing its RC QPs); then again with the default probe, write-lat on
# kept sessions.
#
# Usage: scripts/soak.sh [--tests N] [--kill-pct P] [--seed S] [--out DIR]
#                        [--agent-seconds S]
#   --tests N      tests in all, warm-up included (default 100; at least 11)
#   --kill-pct P   share of clients killed mid-test, percent (default 10)
#   --seed S       seed of the random choices (default: from the clock)
#   --out DIR      keep the server log and each client's document there
# Environment: RDMABENCH_RDMA_MODE=vm|host as scripts/test.sh;
#              RDMABENCH_TEST_DEVICE the device (default rxe0).
set -euo pipefail
rb_prog=soak.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
rb_fail_on_error soak

tests=100 kill_pct=10 seed='' out='' in_vm=0 bin='' agent_seconds=0
while [[ $# -gt 0 ]]; do
	case $1 in
	--tests) tests=$2; shift 2 ;;
	--kill-pct) kill_pct=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--agent-seconds) agent_seconds=$2; shift 2 ;;
	--in-vm) in_vm=1; bin=$2; shift 2 ;; # internal: run the soak here, with BINARY
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) rb_log "unknown argument $1 (see --help)"; exit 2 ;;
	esac
done
for n in "$tests" "$kill_pct" "$agent_seconds" ${seed:+"$seed"}; do
	[[ $n =~ ^[0-9]+$ ]] || { rb_log "not a number: $n"; exit 2; }
done
((tests >= 11)) || { rb_log "--tests must be at least 11 (10 warm up the server)"; exit 2; }
((kill_pct <= 100)) || { rb_log "--kill-pct must be within 0..100"; exit 2; }
seed=${seed:-$((EPOCHSECONDS % 100000))}

if ((!in_vm)); then
	cd "$here/.."
	out=${out:-$(mktemp -d "${TMPDIR:-/tmp}/rdmabench-soak.XXXXXX")}
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	if ! command -v go >/dev/null 2>&1; then
		[[ -x /usr/local/go/bin/go ]] && PATH=$PATH:/usr/local/go/bin
	fi
	go build -o "$out/rdmabench" ./cmd/rdmabench
	args=(--tests "$tests" --kill-pct "$kill_pct" --seed "$seed" --out "$out" --agent-seconds "$agent_seconds" --in-vm "$out/rdmabench")
	if [[ ${RDMABENCH_IN_VM:-} == 1 || $(rb_rdma_mode) == host ]]; then
		exec "$here/soak.sh" "${args[@]}"
	fi
	rb_log "this kernel has no rdma_rxe: the soak runs in the Soft-RoCE VM (logs in $out)"
	exec "$here/vm.sh" --share "$out" --timeout $((600 + tests * 6 + (agent_seconds ? agent_seconds + 600 : 0))) -- "$here/soak.sh" "${args[@]}"
fi

# ---------------------------------------------------------------------------
# The soak itself, on a host with an RDMA device.

dev=${RDMABENCH_TEST_DEVICE:-rxe0}
port=19515
RANDOM=$seed
start=$SECONDS
rb_need rdma iproute2
rb_need ss iproute2

"$bin" serve --listen "127.0.0.1:$port" -d "$dev" 2>"$out/serve.log" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
	(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
	sleep 0.1
done

# levels NAME: wait until the server is idle (no connection, and no verbs
# objects, or the same count for 2 s: a test is still being torn down
# until then), then print "NAME verbs=N rdma=N fds=N goroutines=N
# rss_kib=N"; objects still there are listed in the log.
levels() {
	local name=$1 i line n rdma_n fds rss t0=$SECONDS seen="" same=0
	for i in $(seq 1 150); do
		n=$(grep -c 'stats goroutines=' "$out/serve.log" || true)
		kill -USR1 "$server"
		line=''
		for _ in $(seq 1 50); do
			(($(grep -c 'stats goroutines=' "$out/serve.log" || true) > n)) && break
			sleep 0.05
		done
		line=$(grep 'stats goroutines=' "$out/serve.log" | tail -1)
		rdma_n=0
		for kind in ctx pd mr cq qp; do
			rdma_n=$((rdma_n + $(rdma resource show "$kind" 2>/dev/null | grep -c " pid $server " || true)))
		done
		# (close-wait too: a killed client's connection the server has
		# not closed yet still holds its descriptor)
		if ! ss -Htn state established state close-wait "( sport = :$port )" | grep -q .; then
			[[ $line == *verbs_objects=0* ]] && ((rdma_n == 0)) && break
			[[ "${line##*verbs_objects=}/$rdma_n" == "$seen" ]] && same=$((same + 1)) || same=0
			seen="${line##*verbs_objects=}/$rdma_n"
			((same >= 10)) && break
		fi
		sleep 0.2
	done
	if ((rdma_n > 0)); then
		rb_log "levels $name: the server still holds verbs objects:"
		rdma resource show 2>/dev/null | grep " pid $server " >&2 || true
	fi
	# Descriptors still closing (a test's device or sockets torn down just
	# now): read until two reads 0.5 s apart agree (at most 10 s).
	fds=$(find "/proc/$server/fd" -mindepth 1 -maxdepth 1 | wc -l)
	for _ in $(seq 1 20); do
		sleep 0.5
		local again
		again=$(find "/proc/$server/fd" -mindepth 1 -maxdepth 1 | wc -l)
		((again == fds)) && break
		fds=$again
	done
	rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$server/status")
	local g v
	g=$(sed -n 's/.*goroutines=\([0-9]*\).*/\1/p' <<<"$line")
	v=$(sed -n 's/.*verbs_objects=\([0-9]*\).*/\1/p' <<<"$line")
	echo "$name verbs=$v rdma=$rdma_n fds=$fds goroutines=$g rss_kib=$rss"
	rb_log "levels $name read in $((SECONDS - t0)) s"
}

kinds=(write-lat read-lat send-lat atomic-lat write-bw read-bw send-bw atomic-bw tcp-lat tcp-bw)
pick() { local a=("$@"); echo "${a[RANDOM % ${#a[@]}]}"; }

# args_for TEST KILLED: a random command line for TEST (killed ones run in
# duration mode, so that they are mid-test when killed). Each test moves
# at most about 1 MiB per direction: the soak is about the server's
# life across many tests, not about any one of them.
args_for() {
	local t=$1 killed=$2 a=() size qps=1 n
	case $t in
	tcp-*) size=$(pick 1 64 1000 4096 65536 200000) ;;
	atomic-*) size=8 ;;
	*-lat) size=$(pick 2 13 64 1000 4096 16384) ;;
	*) size=$(pick 2 64 1000 4096 65536 262144) ;;
	esac
	case $t in
	*-bw) [[ $t == tcp-* ]] || qps=$(pick 1 1 2 4 8) ;;
	esac
	n=$(pick 20 50 100 200)
	while ((n > 20 && n * size * qps > 1 << 20)); do
		n=$((n / 2))
	done
	a+=(-s "$size")
	if ((killed)); then
		a+=(-D 5)
	else
		a+=(-n "$n" --warmup "$((n / 10))")
	fi
	case $t in
	write-*) a+=(-c "$(pick RC RC UC)") ;;
	send-*) if ((size <= 1024)); then a+=(-c "$(pick RC UC UD)"); else a+=(-c "$(pick RC UC)"); fi ;;
	esac
	case $t in
	atomic-*) a+=(-A "$(pick FETCH_AND_ADD CMP_AND_SWAP)") ;;
	esac
	case $t in
	tcp-*) ;;
	*-bw)
		a+=(-q "$qps")
		((RANDOM % 5)) || a+=(-b)
		((RANDOM % 10)) || a+=(-e)
		((RANDOM % 5)) || a+=(--validate)
		;;
	*)
		((RANDOM % 10)) || a+=(-e)
		((RANDOM % 5)) || a+=(--validate)
		;;
	esac
	printf '%s\n' "${a[@]}"
}

failed=0 killed_n=0 busy=0 ok_n=0
declare -a report=()
check_level() { # NAME BASE END BOUND
	local name=$1 base=$2 end=$3 bound=$4
	if ((end <= base + bound && end >= base - bound)) || { [[ $name == rss_kib ]] && ((end <= base + bound)); }; then
		report+=("$(printf '%-12s %10s %10s %+8d  within %s' "$name" "$base" "$end" $((end - base)) "$bound")")
		return 0
	fi
	report+=("$(printf '%-12s %10s %10s %+8d  OUT OF %s' "$name" "$base" "$end" $((end - base)) "$bound")")
	return 1
}

first=$(levels start)
for i in $(seq 1 "$tests"); do
	if ((i <= ${#kinds[@]})); then
		t=${kinds[i - 1]}
		kill_it=0
	else
		t=$(pick "${kinds[@]}")
		kill_it=$((RANDOM % 100 < kill_pct))
	fi
	mapfile -t a <<<"$(args_for "$t" "$kill_it")" # (no /dev/fd in the VM)
	[[ $t == tcp-* ]] || a+=(-d "$dev")
	doc=$out/t$i.json
	for attempt in $(seq 1 60); do
		"$bin" "$t" 127.0.0.1 -p "$port" "${a[@]}" -o json --out "$doc" >/dev/null 2>"$out/t$i.err" &
		client=$!
		if ((kill_it)); then
			sleep "$((RANDOM % 2)).$((RANDOM % 10))" # 0..1.9 s after its start
			kill -9 "$client" 2>/dev/null || true
			wait "$client" 2>/dev/null || true
			killed_n=$((killed_n + 1))
			echo "$i $t ${a[*]}: killed" >>"$out/tests.log"
			break
		fi
		rc=0
		t0=$EPOCHREALTIME
		wait "$client" || rc=$?
		if ((rc == 1)) && grep -q busy "$out/t$i.err"; then
			busy=$((busy + 1))
			sleep 0.5 # the server is still tearing the last test down
			continue
		fi
		echo "$i $t ${a[*]}: exit $rc, $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}') s" >>"$out/tests.log"
		if ((rc == 0)); then
			ok_n=$((ok_n + 1))
		else
			failed=$((failed + 1))
			echo "--- FAIL: soak/test-$i ($t ${a[*]}): exit $rc: $(head -c 300 "$out/t$i.err")"
		fi
		break
	done
	if ((i == ${#kinds[@]})); then
		base=$(levels after-warm-up)
		echo "$base" >>"$out/levels.log"
	elif ((i % 100 == 0 && i < tests)); then
		levels "after-$i" >>"$out/levels.log" # the trend, for the record
		rb_log "$i tests, $killed_n killed, $failed failed, $((SECONDS - start)) s"
	fi
done
end=$(levels end)
echo "$end" >>"$out/levels.log"

val() { sed -n "s/.* $2=\([0-9-]*\).*/\1/p" <<<"$1"; }
bad=0
check_level verbs "$(val "$base" verbs)" "$(val "$end" verbs)" 0 || bad=1
check_level rdma "$(val "$base" rdma)" "$(val "$end" rdma)" 0 || bad=1
check_level fds "$(val "$base" fds)" "$(val "$end" fds)" 0 || bad=1
check_level goroutines "$(val "$base" goroutines)" "$(val "$end" goroutines)" 2 || bad=1
check_level rss_kib "$(val "$base" rss_kib)" "$(val "$end" rss_kib)" 16384 || bad=1
took=$((SECONDS - start))

echo "soak: $tests tests against one server in ${took}s (seed $seed): $ok_n passed, $killed_n killed mid-test, $failed failed, $busy busy retries"
echo "server levels (verbs: its own count of open verbs objects; rdma: its objects in rdma resource show):"
echo "  $first"
sed 's/^/  /' "$out/levels.log"
printf '%-12s %10s %10s %8s\n' level warm-up end change
printf '%s\n' "${report[@]}"
if ((failed == 0)); then
	echo "--- PASS: soak/tests ($ok_n passed, $killed_n killed mid-test)"
else
	echo "--- FAIL: soak/tests ($failed failed)"
fi
if ((bad == 0)); then
	echo "--- PASS: soak/levels (back at the warm-up level within the bounds)"
else
	echo "--- FAIL: soak/levels (see the table above)"
fi
if ((agent_seconds > 0)); then
	kill "$server" 2>/dev/null || true
	wait "$server" 2>/dev/null || true
	mkdir -p "$out/agent"
	"$here/agent-soak.sh" --seconds "$agent_seconds" --warmup 20 --probe ud-lat --bw-probe write-bw --out "$out/agent" --in-vm "$bin" || bad=1
	# The default probe, write-lat on kept sessions (both ends' loops
	# napping in long waits), alone.
	mkdir -p "$out/agent-kept"
	"$here/agent-soak.sh" --seconds "$agent_seconds" --warmup 20 --probe write-lat --out "$out/agent-kept" --in-vm "$bin" || bad=1
fi
((failed == 0 && bad == 0))
