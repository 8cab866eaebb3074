#!/usr/bin/env bash
# `rdmabench agent` across hosts, watched by a real Prometheus (run by
# scripts/mesh-hosts.sh in the first VM of its Slurm cluster of
# scripts/vm-group.sh's VMs, after the meshes). One Slurm job step runs
# an agent in every VM (the UD probe, --probe ud-lat, on its rxe0: one UD
# QP answering its peers, a few probing them, nothing set up per probe),
# each with the same peers file
# (every VM; an agent leaves itself out) and /metrics on its own 10.0.0.i;
# Debian's Prometheus, in the first VM (its data on the guest's tmpfs),
# scrapes them every 2 s once it is ready (/-/ready, printed). Its HTTP
# API (curl, every 2 s) is asked:
#   1. series: every agent's latency series of each of its peers, and
#      blame's p50 of each;
#   2. netem-delay: the last VM's sends delayed 500 ms (tc netem, set there
#      by a step of the agents' job): the fleet's p50 of it, from every
#      agent's histogram of it summed over the last 10 s, is 125 ms above
#      what it was over the minute before (half the 250 ms the delay adds to
#      the one-way figure); whether every other agent's own p50 of it rose
#      too, each at least once, is printed;
#   3. own-verdict: every other agent's own blame names the slowed host
#      within 30 s of the delay (the first "blame: peer ... slow" line of
#      each agent's log, its time against the delay's);
#   4. blame: the fleet's verdict, as the rule RdmabenchHostSlow reads it
#      (rdmabench_agent_peer_slow 1 for that peer in at least 2 agents, each
#      verdict over the last 30 s: emulated figures are noisy, a verdict may
#      flap), names that host; how many agents named it is printed;
#   5. dashboard: every query of the Grafana dashboard evaluates, and
#      returns data where this fleet has what it shows.
# The agents are tuned for emulated hosts of one vCPU, the first of which
# also runs Slurm's controller, Prometheus and this script: probes of 3
# ping-pongs at 3/s in all (each peer once a second; through the delay a
# ping-pong takes 500 ms more, so a probe of the slowed host 1.5 s), a
# probe timeout of 5 s, a scrape timeout of 1.9 s, and blame every 2 s
# over each peer's last 3 good probes (--blame-probes 3). Each wait has a
# generous deadline (600 s for Prometheus to be ready, 420 s after that
# for the series, 240 s after the delay for the rest); the seconds it
# took are printed.
# Where the time after the delay goes: an agent's own p50 of the slowed
# host rises after its first probe through the delay (a second or two),
# its verdict after two (the median of 3 probes) and the next blame pass
# (2 s); the fleet's p50 waits for the window of its rate() (10 s: the
# samples from before the delay must leave it), a scrape (2 s) and this
# script's polling (2 s).
# Prints "--- PASS: agent-vms/NAME" (or FAIL) per case and
# "agent-vms: N passed, N failed".
#
# Usage: agent-vms.sh BINARY OUTDIR        (in the first VM, SLURM_CONF set)
#        agent-vms.sh node BINARY DIR      (the agents' step, on each node)
set -uo pipefail
port=19515
mport=19516

if [[ ${1:-} == node ]]; then
	bin=$2 dir=$3
	me=${SLURMD_NODENAME:?run me with srun}
	ip=10.0.0.${me#node}
	exec "$bin" agent --peers "$dir/peers" -d rxe0 --probe ud-lat -n 3 --rate 3 \
		--probe-timeout 5s --blame-every 2s --blame-probes 3 --reload 2s \
		--listen "$ip:$port" --metrics-listen "$ip:$mport" --host "$me" >"$dir/agent-$me.log" 2>&1
fi

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
bin=$1
out=$2
n=${RDMABENCH_VM_COUNT:?run me in scripts/vm-group.sh}
dir=$out/agent-vms
mkdir -p "$dir"
pass=0
fail=0
ok() { echo "--- PASS: agent-vms/$1"; pass=$((pass + 1)); }
ko() { echo "--- FAIL: agent-vms/$1: $2"; fail=$((fail + 1)); }
pairs=$((n * (n - 1)))
slow=node$n
slow_peer=10.0.0.$n:$port
prom=127.0.0.1:9090

for i in $(seq 1 "$n"); do
	echo "10.0.0.$i:$port"
done >"$dir/peers"
targets=$(for i in $(seq 1 "$n"); do printf '"10.0.0.%d:%d", ' "$i" "$mport"; done)
cat >"$dir/prometheus.yml" <<EOF
global:
  scrape_interval: 2s
  scrape_timeout: 1900ms
scrape_configs:
  - job_name: rdmabench-agent
    static_configs:
      - targets: [${targets%, }]
EOF

start=$SECONDS
srun -N "$n" -n "$n" --ntasks-per-node 1 --overlap -J rdmabench-agents "$here/agent-vms.sh" node "$bin" "$dir" \
	>"$dir/srun.log" 2>&1 &
srun_pid=$!
rm -rf /tmp/rdmabench-prometheus
prometheus --config.file "$dir/prometheus.yml" --storage.tsdb.path /tmp/rdmabench-prometheus \
	--web.listen-address "$prom" --log.level warn >"$dir/prometheus.log" 2>&1 &
prom_pid=$!
job=
# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
	[[ -z $job ]] || srun --jobid "$job" --overlap -N 1 -n 1 -w "$slow" tc qdisc del dev eth0 root 2>/dev/null
	[[ -z $job ]] || scancel "$job" 2>/dev/null
	kill "$prom_pid" 2>/dev/null
	wait "$srun_pid" "$prom_pid" 2>/dev/null
}
trap cleanup EXIT

# q PROMQL: the result of an instant query, one "LABELS VALUE" line a sample.
q() {
	curl -sf --max-time 5 "http://$prom/api/v1/query" --data-urlencode "query=$1" |
		jq -r '.data.result[] | "\(.metric | del(.__name__, .job, .instance, .device, .test, .basis) | to_entries | map("\(.key)=\(.value)") | join(",")) \(.value[1])"'
}
# count_of PROMQL: how many samples the query returns.
count_of() { q "$1" | grep -c . ; }

# until_true SECONDS CMD...: run CMD every 2 s until it succeeds or
# SECONDS pass; sets took.
until_true() {
	local limit=$1 t0=$SECONDS
	shift
	while ! "$@"; do
		if ((SECONDS - t0 >= limit)); then
			took=$((SECONDS - t0))
			return 1
		fi
		sleep 2
	done
	took=$((SECONDS - t0))
}

for _ in $(seq 1 60); do
	job=$(squeue -h -n rdmabench-agents -o %i 2>/dev/null | head -1)
	[[ -n $job ]] && break
	sleep 0.5
done

slow_q='last_over_time(rdmabench_agent_peer_slow[15s]) == 1'
probes_q='sum by (host, result) (last_over_time(rdmabench_agent_probes_total[15s])) > 0'

# 1. Every (agent, peer) latency series, and blame's p50 of each.
# (Over the last 15 s: a scrape of an emulated host can miss its 1.9 s.)
lat='last_over_time(rdmabench_agent_probe_latency_seconds_count{job="rdmabench-agent"}[15s]) > 0'
p50='last_over_time(rdmabench_agent_peer_p50_seconds{job="rdmabench-agent"}[15s])'
up='max_over_time(up{job="rdmabench-agent"}[15s]) == 1'
all_series() {
	[[ $(count_of "$lat") == "$pairs" && $(count_of "$p50") == "$pairs" && $(count_of "$up") == "$n" ]]
}
ready() { curl -sf --max-time 5 "http://$prom/-/ready" >/dev/null; }
if [[ -z $job ]]; then
	ko series "the agents' Slurm job did not start: $(cat "$dir/srun.log")"
elif ! until_true 600 ready; then
	ko series "Prometheus not ready after $took s: $(tail -n 5 "$dir/prometheus.log")"
elif echo "  Prometheus ready $((SECONDS - start)) s after it started" && until_true 420 all_series; then
	ok "series (Prometheus scraping $n agents in $n VMs: all $pairs latency series and blame p50s, $took s after Prometheus was ready, $((SECONDS - start)) s after the agents started)"
else
	ko series "after $took s: $(count_of "$lat") latency series and $(count_of "$p50") p50s of $pairs, $(count_of "$up") of $n targets up"
	tail -n 5 "$dir"/agent-*.log "$dir/prometheus.log" "$dir/srun.log"
fi
q "$p50" | sed 's/^/  before: /'
q "$slow_q" | sed 's/^/  slow before: /'
q "$probes_q" | sed 's/^/  probes before: /'

# 2. The last VM's sends delayed: the others' histogram p50 of it rises.
t_fault=$(date +%s)
if [[ -n $job ]] && srun --jobid "$job" --overlap -N 1 -n 1 -w "$slow" tc qdisc add dev eth0 root netem delay 500ms; then
	p50_of() { # WINDOW [MODIFIER]: each agent's p50 of the slowed host from its histogram
		echo "histogram_quantile(0.5, sum by (host, le) (rate(rdmabench_agent_probe_latency_seconds_bucket{peer=\"$slow_peer\"}[$1] ${2:-})))"
	}
	# hosts_of PROMQL: the host labels of the query's samples, added to seen.
	declare -A seen=()
	hosts_of() {
		local h
		for h in $(q "$1" | sed -n 's/^.*host=\([^, ]*\).*$/\1/p'); do
			seen[$h]=1
		done
		((${#seen[@]} == n - 1))
	}
	# The fleet's p50 of it (every agent's histogram of it summed) has
	# risen; and each other agent's own p50 of it, or it has named it slow,
	# at least once (emulated hosts' figures are noisy: a verdict may flap).
	fleet_p50_of() { # WINDOW [MODIFIER]
		echo "histogram_quantile(0.5, sum by (le) (rate(rdmabench_agent_probe_latency_seconds_bucket{peer=\"$slow_peer\"}[$1] ${2:-})))"
	}
	fleet_risen() { [[ $(count_of "$(fleet_p50_of 10s) > $(fleet_p50_of 1m "@ $t_fault") + 0.125") == 1 ]]; }
	risen() { hosts_of "$(p50_of 10s) > on (host) $(p50_of 1m "@ $t_fault") + 0.125"; }
	named() { hosts_of "last_over_time(rdmabench_agent_peer_slow{peer=\"$slow_peer\"}[15s]) == 1"; }
	q "$(p50_of 1m "@ $t_fault")" | sed 's/^/  p50 of the slowed host, the minute before: /'
	q "$(fleet_p50_of 1m "@ $t_fault")" | sed 's/^/  the fleet p50 of the slowed host, the minute before: /'
	t0=$SECONDS
	if until_true 240 fleet_risen; then
		ok "netem-delay (delay 500ms on $slow's eth0: the fleet's p50 of it, all agents' histograms over 10 s, 125 ms above the minute before, $took s after the delay)"
	else
		ko netem-delay "after $took s, the fleet's histogram p50 of $slow over 10 s: $(q "$(fleet_p50_of 10s)" | tr '\n' ' ')"
	fi
	# Each agent's own view waits for its turn at the slowed host's server
	# (see above): printed, not judged.
	if until_true $((240 - (SECONDS - t0))) risen; then
		echo "  each other agent's own p50 of $slow 125 ms above the minute before, each at least once, $((SECONDS - t0)) s after the delay"
	else
		echo "  after $((SECONDS - t0)) s, ${#seen[@]} of $((n - 1)) other agents' own p50 of $slow seen 125 ms above the minute before"
	fi
	q "$(p50_of 10s)" | sed 's/^/  p50 of the slowed host, the last 10 s: /'
	# Each other agent's own verdict: its first "blame: peer X slow" line
	# after the delay, timed against it (the guests' clocks are the
	# host's; the log's times are whole seconds).
	own_verdicts() { # -> "AGENT SECONDS" a line, each other agent that named it
		local f t s
		for f in "$dir"/agent-node*.log; do
			[[ $f == */agent-$slow.log ]] && continue
			for t in $(grep " blame: peer $slow_peer slow" "$f" | cut -d' ' -f1); do
				s=$(date -d "$t" +%s)
				((s >= t_fault)) || continue
				f=${f##*/agent-}
				echo "${f%.log} $((s - t_fault))"
				break
			done
		done
	}
	all_named() { (($(own_verdicts | wc -l) == n - 1)); }
	until_true 120 all_named || true
	verdicts=$(own_verdicts | sort -k2 -n | awk '{printf "%s%s %d s", (NR > 1 ? ", " : ""), $1, $2}')
	last=$(own_verdicts | sort -k2 -n | tail -1 | cut -d' ' -f2)
	if (($(own_verdicts | wc -l) == n - 1)) && ((last <= 30)); then
		ok "own-verdict (each of the $((n - 1)) other agents' own blame named $slow slow within 30 s of the delay: $verdicts after it)"
	else
		ko own-verdict "$(own_verdicts | wc -l) of $((n - 1)) other agents named $slow slow: ${verdicts:-none} after the delay (want all, each within 30 s)"
		grep -h 'blame:' "$dir"/agent-*.log | tail -n 10
	fi
	# The fleet's verdict, as RdmabenchHostSlow reads it: the slowed host
	# slow for at least 2 agents (each verdict over the last 30 s: an
	# emulated host's verdict may flap).
	fleet_slow='count by (peer) (max_over_time(rdmabench_agent_peer_slow[30s]) == 1) >= 2'
	blamed() { q "$fleet_slow" | grep -q "^peer=$slow_peer "; }
	if until_true $((240 - (SECONDS - t0))) blamed; then
		ok "blame (slow for 2 agents or more over 30 s: $(q "$fleet_slow" | cut -d' ' -f1 | tr '\n' ' ')$((SECONDS - t0)) s after the delay)"
	else
		ko blame "after $((SECONDS - t0)) s, the hosts slow for at least 2 agents over 30 s: $(q "$fleet_slow" | cut -d' ' -f1 | tr '\n' ' ')(want $slow_peer among them); each agent's verdict of $slow: $(q "last_over_time(rdmabench_agent_peer_slow{peer=\"$slow_peer\"}[15s])" | tr '\n' ' ')"
		grep -h blame: "$dir"/agent-*.log | tail -n 10
	fi
	seen=()
	named && echo "  all $((n - 1)) other agents named $slow slow, each at least once, $((SECONDS - t0)) s after the delay" ||
		echo "  ${#seen[@]} of $((n - 1)) other agents named $slow slow at least once, $((SECONDS - t0)) s after the delay"
	q "$p50" | sed 's/^/  after: /'
	q "$slow_q" | sed 's/^/  slow after: /'
	q "$probes_q" | sed 's/^/  probes after: /'
	q "sum by (host, result) (increase(rdmabench_agent_probes_total{peer=\"$slow_peer\"}[$((SECONDS - t0 + 5))s])) > 0" |
		sed 's/^/  probes of the slowed host since the delay: /'
	grep -h 'blame:' "$dir"/agent-*.log | sed 's/^/  /'
else
	ko netem-delay "could not set netem on $slow in the agents' job ${job:-none}"
fi
# 5. The Grafana dashboard's queries (deploy/grafana/rdmabench-fleet.json)
# against this Prometheus, its variables as Grafana fills them (every
# host and peer, a rate window of 30 s, a range of 5 min): each evaluates,
# and each returns data but those of what this fleet does not run (the
# bandwidth probe, a registry, kept sessions: tcp-lat's; the unit test
# TestDashboardQueriesOnPrometheus returns data for those, from agents on
# the host; the network's time, which needs NICs that stamp completions:
# Soft-RoCE stamps none) and those that select only trouble (a comparison last: `> 0`,
# `== 0`, `== 1`, empty on a fleet without that trouble, or between a
# flapping verdict's turns).
dash=$here/../deploy/grafana/rdmabench-fleet.json
if [[ -n $job && -f $dash ]]; then
	ndata=0 bad=() empty=() t_dash=$SECONDS
	features_off='bandwidth|registrations|probe_sessions|probe_network_latency' trouble_only='(>|==) [0-9]+\)?$'
	mapfile -t exprs <<<"$(jq -r '[.. | objects | select(has("expr")) | .expr] | unique[]' "$dash")" # (the guest has no /dev/fd)
	nq=${#exprs[@]}
	# One curl for all the queries, an answer a line (a process costs
	# seconds on the emulated CPU).
	args=()
	for expr in "${exprs[@]}"; do
		promql=${expr//\$host/.+}
		promql=${promql//\$peer/.+}
		promql=${promql//\$__rate_interval/30s}
		promql=${promql//\$__range/5m}
		((${#args[@]} == 0)) || args+=(--next)
		args+=(-s --max-time 10 -w '\n' --data-urlencode "query=$promql" "http://$prom/api/v1/query")
	done
	mapfile -t answers <<<"$(curl "${args[@]}")"
	for i in "${!exprs[@]}"; do
		expr=${exprs[i]} res=${answers[i]:-}
		if [[ $res != '{"status":"success"'* ]]; then
			bad+=("$expr: ${res:-no answer}")
		elif [[ $res != *'"result":[]'* ]]; then
			ndata=$((ndata + 1))
		elif [[ $expr =~ $features_off || $expr =~ $trouble_only ]]; then
			empty+=("$expr")
		else
			bad+=("$expr: no data")
		fi
	done
	if ((${#bad[@]} == 0 && ndata > 0)); then
		ok "dashboard ($nq queries of rdmabench-fleet.json evaluated, $ndata with data, ${#empty[@]} empty as expected: features off or no trouble, in $((SECONDS - t_dash)) s)"
	else
		ko dashboard "$((nq - ndata - ${#empty[@]})) of $nq queries failed or had no data: $(printf '%s; ' "${bad[@]}")"
	fi
	printf '  empty as expected: %s\n' "${empty[@]}"
fi
echo "agent-vms: $pass passed, $fail failed in $((SECONDS - start)) s"
((fail == 0))
