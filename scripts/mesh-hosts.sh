#!/usr/bin/env bash
# The mesh across hosts (run by scripts/mesh-test.sh in every VM of
# scripts/vm-group.sh): a Slurm cluster of all the VMs (slurmd in each,
# slurmctld in the first, scripts/slurm-cluster.sh), and from the first,
# srun -N N -n N: one rank per VM, each on its own rxe0, every link
# crossing the emulated network. The other VMs only run slurmd until the
# first is done. The tests wait on completion events (-e): emulated hosts
# on two cores must not spin, or the ACKs of one come too late. The runs
# (at least 4 VMs):
#   1. slurm-hosts: the mesh as it is: every link measured, none blamed;
#   2. blame-host: every packet the last VM sends delayed 500 ms (tc netem, set
#      there through srun): that host's rank is blamed, not its links;
#   3. blame-link: only the packets from the third VM to the fourth
#      delayed (netem on a prio band that a u32 filter on the destination
#      feeds): that link is blamed, neither of its ends;
#   4. incast: `--pattern incast:N-1 --sample 2 write-bw -D 3s`, every other
#      rank into one at once, two receivers in turn: each step's flows all
#      measured, the receiver's aggregate and Jain index, the ping-pong's
#      p99 beside the flows and every port's counters read;
#   5. bisection: `--topology --pattern bisection`: the last leaf's two
#      hosts against the rest, every pair across the spine at once, both
#      ways, none inside a half;
#   6. agent: `rdmabench agent` in every VM, scraped by Prometheus, one host
#      slowed and blamed (scripts/agent-vms.sh, its own PASS/FAIL lines);
# and with two NICs a VM (vm-group.sh --nics 2: rxe0 on eth0, rxe1 on eth1,
# each rail its own switch; RDMABENCH_VM_NICS=2):
#   7. rails-hosts: srun -N N -n 2N --overcommit (2 ranks a VM), `mesh
#      --rails -d rxe0,rxe1`: a rank per NIC, the local rank picking it; every link
#      joins two NICs of one rail (rxe0 to rxe0, rxe1 to rxe1), both rails
#      of every host pair measured, 2N(N-1) links, none failed;
#   8. host-level: one rank per VM, `mesh --host-level --duplex -d
#      rxe0,rxe1 write-bw -s 8K`: every rank's lanes rxe0,rxe1, every link run on
#      both NICs at once (each its own figures in the link stream's
#      results[].devices, both directions), N(N-1)/2 links, none failed.
#   Both with --blame=false: emulated figures are too noisy to judge.
# RDMABENCH_MESH_HOSTS_CASES (passed with vm-group.sh -e) runs the runs it
# names (default slurm-hosts blame-host blame-link agent, and rails-hosts
# host-level when the VMs have two NICs). A
# two-NIC case named on VMs of one NIC is skipped ("--- SKIP").
# Prints "--- PASS: mesh/NAME" (or FAIL) per run, its table, verdicts and
# wall time, and "mesh-hosts: N passed, N failed".
#
# Usage: mesh-hosts.sh BINARY OUTDIR MUNGE_KEY
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
bin=$1
out=$2
key=$3
i=${RDMABENCH_VM_INDEX:?run me in scripts/vm-group.sh}
n=${RDMABENCH_VM_COUNT:?}

if ! "$here/slurm-cluster.sh" start "$n" "$key" >"$out/slurm-hosts-$i.log" 2>&1; then
	cat "$out/slurm-hosts-$i.log" >&2
	if ((i == 1)); then
		echo "--- FAIL: mesh/slurm-hosts: the cluster did not start"
		echo "mesh-hosts: 0 passed, 1 failed"
	fi
	exit 1
fi
if ((i != 1)); then
	sleep 3600 # slurmd serves until the first VM is done
	exit 0
fi
eval "$("$here/slurm-cluster.sh" env)"
pass=0
fail=0
ok() { echo "--- PASS: mesh/$1"; pass=$((pass + 1)); }
ko() { echo "--- FAIL: mesh/$1: $2"; fail=$((fail + 1)); }
links=$((n * (n - 1)))
nics=${RDMABENCH_VM_NICS:-1}
# The fabric of the VMs (scripts/slurm-cluster.sh's topology.conf, which
# slurmctld reads too), where every rank reads it.
topo=$out/topology.conf
cp "$RDMABENCH_SLURM_TOPOLOGY" "$topo"
# The cases, in order: each is a function case_NAME (dashes as
# underscores) that calls ok or ko once; those of two_nic need two NICs a
# VM. A new case is a function and its name here.
all_cases="slurm-hosts slurm-topology blame-host blame-leaf blame-link incast bisection agent rails-hosts host-level"
two_nic=" rails-hosts host-level "

# mesh NAME [ARGS...]: one mesh across every VM; sets rc and took. With
# per_node=K (default 1), K ranks in every VM; with layout=NODE,NODE,...
# a rank on each node named, in order (srun -m arbitrary).
mesh() {
	local name=$1 start=$SECONDS per=${per_node:-1} spread=(-N "$n" -n "$n" --ntasks-per-node 1) iters=(-n 100)
	shift
	# A load pattern runs its flows for -D, not for a count.
	[[ " $* " != *" --pattern "* ]] || iters=()
	# More ranks than a VM's one vCPU: --ntasks-per-node past a node's CPUs
	# is refused even with --overcommit, which spreads the tasks evenly.
	((per == 1)) || spread=(-N "$n" -n $((n * per)) --overcommit)
	[[ -z ${layout:-} ]] || spread=(-n "$(tr , '\n' <<<"$layout" | wc -l)" -w "$layout" -m arbitrary --overcommit)
	local try
	for try in 1 2; do
		srun "${spread[@]}" \
			"$bin" mesh "${iters[@]}" -e -u 20 --register-timeout 60s "$@" --out "$out/$name.json" \
			>"$out/$name.txt" 2>"$out/$name.err"
		rc=$?
		# Two tasks a VM: a slurmd once failed to launch its tasks ("Zero
		# Bytes were transmitted or received"); no rank ran, so once more.
		((rc != 0 && try == 1)) && [[ $per -gt 1 || -n ${layout:-} ]] && grep -q 'Application launch failed' "$out/$name.err" || break
		echo "mesh-hosts: $name: srun could not launch the tasks: once more" >&2
	done
	took=$((SECONDS - start))
}

# on NODE CMD...: run CMD on Slurm node NODE (where the tc rules go).
on() {
	local node=$1
	shift
	srun -N 1 -n 1 -w "$node" "$@"
}

# rank_of NAME.json HOST: the rank that ran on HOST.
rank_of() {
	jq -r --arg h "$2" '.mesh.ranks[] | select(.host.hostname == $h) | .rank' "$1"
}

# verdicts NAME.json: "subject kind rank from to" per verdict of a rank or
# link (read with $(...): the guest has no /dev/fd for <(...)).
verdicts() {
	jq -r '.mesh.verdicts // [] | .[] | select(.subject != "round") | [.subject, .kind, (.rank // "-"), (.from // "-"), (.to // "-")] | @tsv' "$1"
}

# limits NAME.json: each judged figure's fleet median and limit, for a
# failure's message.
limits() {
	jq -r '[.mesh.blame.figures // [] | .[] | "\(.test) \(.figure): median \(.fleet_median | floor), limit \(.limit * 100 | round / 100)x"] | join("; ")' "$1"
}

case_slurm_hosts() {
	# 1. The mesh as it is.
	mesh slurm-hosts
	facts=$(jq -r '[(.mesh.links | length), ([.mesh.links[] | select(.error)] | length), ([.mesh.ranks[].host.hostname] | unique | length),
		([.mesh.ranks[].host.device.gid] | unique | length), .mesh.launcher, ([.mesh.verdicts // [] | .[] | select(.kind == "bad")] | length)] | @tsv' \
		"$out/slurm-hosts.json" 2>&1)
	read -r got failed hosts gids launcher bad <<<"$facts"
	if [[ $rc == 0 && $got == "$links" && $failed == 0 && $hosts == "$n" && $gids == "$n" && $launcher == slurm && $bad == 0 ]]; then
		ok "slurm-hosts (srun -N $n -n $n across $n VMs: $links links measured in $took s, none blamed)"
	else
		ko slurm-hosts "exit $rc, links/failed/hosts/GIDs/launcher/bad verdicts: $facts"
		cat "$out/slurm-hosts.err"
	fi
	cat "$out/slurm-hosts.txt"
}

# The blame runs: 5 ping-pongs a link after 1 of warm-up; a 500 ms delay,
# far above the milliseconds the emulated hosts take to wake on an event:
# their links differ from each other by up to 8x unslowed (a fabric's by
# percents), and a busy host's by 25x, a spread that would excuse a slowed
# link too. So blame's spread is fixed at 100% (with the multiplier 4: bad
# past 16 times the fleet median) where a slowed link is 30 to 500 times.
# A link of that noise may still be judged slow and recover on retest: a
# flaky verdict is not a blame, so only bad verdicts other than the one
# wanted fail a case.
blame=(--duplex write-lat -n 5 --warmup 1 --blame-multiplier 4 --blame-min-spread 100% --blame-max-spread 100%)
slow=node$n
# blame-link's slowed path is judged against a limit that load moves: a
# ping-pong's figure is half its round trip, so a 500 ms delay made about
# 260 ms, and a busy host raised the fleet median of write-lat from 10 to
# 43 ms (the limit, 16 times it, then above the slowed path: no verdict)
# and made an unslowed link 16 times the median (311 ms: blamed). So the
# path's RoCE packets (UDP 4791; the ranks' TCP is not slowed, or every
# exchange of the link's set-up would wait too) are delayed 3 s (1.5 s a
# ping-pong, 35 times a median of 43 ms) and the limit is 24 times the
# median (multiplier 4.6, 2^4.6): 1.5 times the worst noise seen, and below
# the slowed path while the median stays under 62 ms. The ACK timeout is
# raised to 17 s (-u 22) so that no packet of the path is resent; no
# warm-up: it would cost 3 s more each time the link runs (twice a
# direction: the schedule, the retest), and the p50 of 5 does not see one
# slow first iteration.
link_delay=3000ms
blame_link=(--duplex -u 22 write-lat -n 5 --warmup 0 --blame-multiplier 4.6 --blame-min-spread 100% --blame-max-spread 100%)
# blame-leaf slows 8 pairs of ranks, not 1: 3 ping-pongs a link (9 s each
# slowed). The blame runs are --duplex: a ping-pong's figure is its pair's
# both ways, so each pair runs once, not once a direction (half the time).
blame_leaf=(--duplex -u 22 write-lat -n 3 --warmup 0 --blame-multiplier 4.6 --blame-min-spread 100% --blame-max-spread 100%)

case_blame_host() {
	# 2. One host slowed: everything it sends waits 500 ms. With the
	# topology: the host shares its leaf (leaf N-1) with node N-1, whose
	# links through the leaf's uplinks are good, so a quarter of the leaf's
	# cross-switch links are slow and one of its hosts, and its inner link
	# is slow too: the host is blamed, not its leaf (no switch verdict).
	on "$slow" tc qdisc add dev eth0 root netem delay 500ms
	mesh blame-host --topology "$topo" "${blame[@]}"
	on "$slow" tc qdisc del dev eth0 root
	want=$(rank_of "$out/blame-host.json" "$slow")
	vs=$(verdicts "$out/blame-host.json")
	ranks_bad=$(awk -F'\t' -v r="$want" '$1 == "rank" && $2 == "bad" && $3 == r' <<<"$vs" | wc -l)
	others=$(awk -F'\t' -v r="$want" '$2 == "bad" && !($1 == "rank" && $3 == r)' <<<"$vs" | wc -l)
	# Every link records the switches it crossed.
	unplaced=$(jq -r '[.mesh.links[] | select((.switches // []) | length == 0)] | length' "$out/blame-host.json" 2>&1)
	if [[ $rc == 3 && -n $want && $ranks_bad -ge 1 && $others == 0 && $unplaced == 0 ]] && grep -q "^bad rank: rank $want ($slow" "$out/blame-host.err"; then
		ok "blame-host (--topology, netem delay 500ms on $slow: rank $want blamed, not its leaf leaf$((n - 1)), no link, exit 3, in $took s)"
	else
		ko blame-host "exit $rc (want 3), rank of $slow: ${want:-none}, verdicts: ${vs:-none}, links without switches: $unplaced; $(limits "$out/blame-host.json")"
		cat "$out/blame-host.err"
	fi
	cat "$out/blame-host.txt"
}

case_slurm_topology() {
	# Slurm took the fabric: slurmctld (TopologyPlugin=topology/tree) lists
	# every switch of topology.conf, with its nodes as written.
	local got name nodes line missing=()
	got=$(scontrol show topology 2>&1)
	while read -r name nodes; do
		line=$(grep -F "$name " <<<"$got") && [[ -z $nodes || " $line " == *" $nodes "* ]] || missing+=("$name${nodes:+ $nodes}")
	done < <(grep -o '^SwitchName=[^ ]*\( Nodes=[^ ]*\)\?' "$topo")
	if ((${#missing[@]} == 0)) && [[ -n $got ]]; then
		ok "slurm-topology (TopologyPlugin=topology/tree: scontrol show topology lists the $(grep -c '^SwitchName=' "$topo") switches of topology.conf)"
	else
		ko slurm-topology "scontrol show topology lacks: ${missing[*]:-everything}"
	fi
	echo "$got"
}

# blame-leaf: the uplinks of the last leaf (node N-1 and node N) slowed:
# the RoCE packets those two send to the other leaves' hosts (UDP 4791,
# netem on a prio band fed by u32 filters on the destination; the ranks'
# TCP is not slowed), delayed 3 s as in blame-link and judged as it is
# (24 times the fleet median). A switch is blamed only by the fleet
# around it, so the fleet must stay mostly good: one rank a VM would make
# 8 of the 12 links cross the leaf, every rank's median slow and the slow
# figure the fleet's. So the VMs of the single-node leaves run two ranks
# each and the leaf's one each (srun -m arbitrary; for 4 VMs 6 ranks):
# the leaf's 16 cross-switch links slow, from both its hosts; its inner
# link (node N-1 to node N) and the 12 links of the other leaves good.
# The other leaves are never blamed: one host each (a switch needs 2), and
# the links of their uplinks mostly good. The leaf, not its hosts, not
# single links: pkg/blame's switch verdict, exit 3.
case_blame_leaf() {
	local leaf=leaf$((n - 1)) lhosts="node$((n - 1)),node$n" lay=() k j
	for ((k = 1; k <= n - 2; k++)); do lay+=("node$k" "node$k"); done
	lay+=("node$((n - 1))" "node$n")
	local filters="tc qdisc add dev eth0 root handle 1: prio && tc qdisc add dev eth0 parent 1:3 handle 30: netem delay $link_delay"
	for ((j = 1; j <= n - 2; j++)); do
		filters+=" && tc filter add dev eth0 protocol ip parent 1: prio 1 u32 match ip dst 10.0.0.$j/32 match ip protocol 17 0xff match ip dport 4791 0xffff flowid 1:3"
	done
	srun -N 2 -n 2 -w "$lhosts" sh -c "$filters"
	layout=$(IFS=,; echo "${lay[*]}") mesh blame-leaf --topology "$topo" "${blame_leaf[@]}"
	srun -N 2 -n 2 -w "$lhosts" tc qdisc del dev eth0 root
	local vs switch_bad others ranks
	vs=$(jq -r '.mesh.verdicts // [] | .[] | select(.subject != "round") | [.subject, .kind, (.switch.switch // .rank // "-" | tostring), ((.switch.or // []) | join(","))] | @tsv' "$out/blame-leaf.json" 2>&1)
	switch_bad=$(awk -F'\t' -v l="$leaf" '$1 == "switch" && $2 == "bad" && $3 == l && $4 == ""' <<<"$vs" | wc -l)
	others=$(awk -F'\t' -v l="$leaf" '$2 == "bad" && !($1 == "switch" && $3 == l)' <<<"$vs" | wc -l)
	ranks=$(jq -r '.mesh.ranks | length' "$out/blame-leaf.json" 2>&1)
	if [[ $rc == 3 && $switch_bad == 1 && $others == 0 && $ranks == "${#lay[@]}" ]] && grep -q "^bad switch: $leaf: " "$out/blame-leaf.err"; then
		ok "blame-leaf (--topology, netem delay $link_delay of RoCE from $lhosts to the other leaves: $leaf blamed, none of its hosts, no link, exit 3, ${#lay[@]} ranks, in $took s)"
	else
		ko blame-leaf "exit $rc (want 3), ranks $ranks (want ${#lay[@]}), verdicts: ${vs:-none}; $(limits "$out/blame-leaf.json")"
		cat "$out/blame-leaf.err"
	fi
	cat "$out/blame-leaf.txt"
}

case_blame_link() {
	# 3. One path slowed: only the RoCE packets node N-1 sends to node N wait.
	from=node$((n - 1))
	on "$from" sh -c "tc qdisc add dev eth0 root handle 1: prio &&
	tc qdisc add dev eth0 parent 1:3 handle 30: netem delay $link_delay &&
	tc filter add dev eth0 protocol ip parent 1: prio 1 u32 match ip dst 10.0.0.$n/32 match ip protocol 17 0xff match ip dport 4791 0xffff flowid 1:3"
	mesh blame-link "${blame_link[@]}"
	on "$from" tc qdisc del dev eth0 root
	a=$(rank_of "$out/blame-link.json" "$from")
	b=$(rank_of "$out/blame-link.json" "$slow")
	vs=$(verdicts "$out/blame-link.json")
	links_bad=$(awk -F'\t' -v a="$a" -v b="$b" '$1 == "link" && $2 == "bad" && (($4 == a && $5 == b) || ($4 == b && $5 == a))' <<<"$vs" | wc -l)
	others=$(awk -F'\t' -v a="$a" -v b="$b" '$2 == "bad" && !($1 == "link" && (($4 == a && $5 == b) || ($4 == b && $5 == a)))' <<<"$vs" | wc -l)
	if [[ $rc == 3 && -n $a && -n $b && $links_bad -ge 1 && $others == 0 ]]; then
		ok "blame-link (netem delay $link_delay of RoCE from $from to $slow only: the link $a <-> $b blamed, neither rank, exit 3, in $took s)"
	else
		ko blame-link "exit $rc (want 3), ranks ${a:-none} and ${b:-none}, verdicts: ${vs:-none}; $(limits "$out/blame-link.json")"
		cat "$out/blame-link.err"
	fi
	cat "$out/blame-link.txt"
}

# 6. An agent in every VM, scraped by Prometheus; one host slowed and blamed.
case_agent() {
	if "$here/agent-vms.sh" "$bin" "$out"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
}

case_rails_hosts() {
	# 7. A rank per NIC, the rails: NIC i of every VM meets NIC i of the others.
	per_node=2 mesh rails-hosts --rails -d rxe0,rxe1 --blame=false write-lat -n 20
	# Each rank's device by rank, then per link whether its ends share it.
	facts=$(jq -r '(.mesh.ranks | map({key: (.rank | tostring), value: (.host.device.name // "none")}) | from_entries) as $dev
		| [.mesh.links[] | {a: $dev[.from | tostring], b: $dev[.to | tostring], error: (.error // .result_errors)}] as $l
		| [($l | length), ([$l[] | select(.error)] | length), ([$l[] | select(.a != .b)] | length),
			([$l[] | select(.a == "rxe0" and .b == "rxe0")] | length), ([$l[] | select(.a == "rxe1" and .b == "rxe1")] | length),
			([.mesh.ranks[].host.hostname] | unique | length), (.mesh.ranks | length), .mesh.schedule] | @tsv' \
		"$out/rails-hosts.json" 2>&1)
	read -r got failed across rail0 rail1 hosts ranks schedule <<<"$facts"
	want=$((2 * links))
	if [[ $rc == 0 && $got == "$want" && $failed == 0 && $across == 0 && $rail0 == "$links" && $rail1 == "$links" &&
		$hosts == "$n" && $ranks == $((2 * n)) && $schedule == rail-aligned ]]; then
		ok "rails-hosts (srun -N $n -n $((2 * n)) --overcommit, --rails -d rxe0,rxe1: $want links, $links on each rail, none across rails, none failed, in $took s)"
	else
		ko rails-hosts "exit $rc, links/failed/across rails/rxe0/rxe1/hosts/ranks/schedule: $facts (want $want links, $links a rail)"
		cat "$out/rails-hosts.err"
	fi
	cat "$out/rails-hosts.txt"
}

# steps NAME.json: per step, "receiver flows measured aggregate jain
# probe-p99-ns counters-watched flows-crossing-the-last-leaf" (the last
# leaf's hosts are the last two VMs).
steps() {
	jq -r --arg a "node$((n - 1))" --arg b "node$n" '(.mesh.ranks | map({key: (.rank | tostring), value: .host.hostname}) | from_entries) as $h
		| def last_leaf(r): ($h[r | tostring] == $a or $h[r | tostring] == $b);
		.mesh.steps // [] | .[] | [(.receiver // "-"), (.flows | length),
		([.flows[] | select(.bw_gbps > 0)] | length), ([.receivers[].aggregate_gbps] | add // 0),
		([.receivers[].jain] | min // 0), (.probe.latency.p99_ns // 0),
		([.counters // [] | .[] | .watched] | min // 0),
		([.flows[] | select(last_leaf(.from) != last_leaf(.to))] | length)] | @tsv' "$1" 2>&1
}

# The load patterns' flows: 8 KiB messages, 16 in flight, for 3 s (as
# host-level's: deeper queues of larger messages overflow the emulated
# switches), with an ACK timeout of 1.07 s (-u 18): eight flows at once
# through the emulated switches still lose a packet now and then, and at
# the mesh's -u 20 its flow waited 4.3 s to resend it, past its 3 s: no
# message completed in its duration, and the flow failed ("the stream
# made no progress", bisection's 2 -> 1 once in two runs). A resend 1.07
# s on leaves it two seconds to complete in; 7 retries of it still
# outlast an emulated host's longest stall seen (1.6 s).
flow_args=(-u 18 write-bw -s 8K -t 16 -D 3s)

# 4. incast: 3 senders into one receiver at once, two of the ranks
# receiving in turn (--sample 2): each step's receiver aggregate, its
# fairness, the ping-pong beside the flows and every port's counters.
case_incast() {
	mesh incast --topology "$topo" --pattern incast:$((n - 1)) --sample 2 "${flow_args[@]}"
	local st bad
	st=$(steps "$out/incast.json")
	# A step that is not n-1 flows all measured into one receiver, with an
	# aggregate, a Jain index, a latency under the load and counters read.
	bad=$(awk -F'\t' -v k=$((n - 1)) '$1 == "-" || $2 != k || $3 != k || !($4 > 0) || !($5 > 0) || !($6 > 0) || !($7 > 0)' <<<"$st" | wc -l)
	if [[ $rc == 0 && $(grep -c . <<<"$st") == 2 && $bad == 0 ]]; then
		ok "incast (--pattern incast:$((n - 1)) --sample 2 ${flow_args[*]}: 2 steps, each $((n - 1)) flows measured into one receiver, its aggregate, Jain, p99 under load and the ports' counters, in $took s)"
	else
		ko incast "exit $rc; steps (receiver flows measured aggregate jain p99 watched): ${st:-none}"
		cat "$out/incast.err"
	fi
	cat "$out/incast.txt"
}

# 5. bisection across the top switch: the last leaf's two hosts against the
# others, every pair across at once, both directions, none inside a half.
case_bisection() {
	mesh bisection --topology "$topo" --pattern bisection "${flow_args[@]}"
	local st want=$((2 * 2 * (n - 2)))
	st=$(steps "$out/bisection.json")
	read -r _ flows measured agg jain p99 watched across <<<"$st"
	if [[ $rc == 0 && $(grep -c . <<<"$st") == 1 && $flows == "$want" && $measured == "$want" && $across == "$want" ]] &&
		awk -v a="$agg" -v j="$jain" -v p="$p99" -v w="$watched" 'BEGIN { exit !(a > 0 && j > 0 && p > 0 && w > 0) }'; then
		ok "bisection (--topology: leaf$((n - 1)) against the rest, $want flows at once, each across, all measured, aggregate $agg Gbit/s, in $took s)"
	else
		ko bisection "exit $rc; the step (receiver flows measured aggregate jain p99 watched across): ${st:-none} (want $want flows, all across)"
		cat "$out/bisection.err"
	fi
	cat "$out/bisection.txt"
}

case_host_level() {
	# 8. A rank per VM, every link on both NICs at once, both directions.
	# 8 KiB messages, 16 in flight: four streams of 64 KiB, 128 deep (the
	# defaults) overflow the switches' queues, and RC's retransmissions on
	# emulated hosts then outlast the mesh's 10 s without progress.
	mesh host-level --host-level --duplex -d rxe0,rxe1 --blame=false write-bw -n 200 -s 8K -t 16 -Q 8
	want=$((links / 2))
	facts=$(jq -r '[(.mesh.host_level // false), (.mesh.links | length), ([.mesh.links[] | select(.error // .result_errors)] | length),
		([.mesh.ranks[] | select((.lanes // []) != ["rxe0", "rxe1"])] | length), (.mesh.links_file // "none")] | @tsv' \
		"$out/host-level.json" 2>&1)
	read -r hl got failed lanes stream <<<"$facts"
	# In the link stream: links whose results are not each on both NICs,
	# rxe0 to rxe0 and rxe1 to rxe1, with both directions' figures.
	lane_facts=$(jq -rs '[.[] | select(.event == "link") | .link] as $l
		| [($l | length), ([$l[] | select((.results | length) == 0 or any(.results[];
			[.devices[]?.device] != ["rxe0", "rxe1"] or [.devices[]?.server_device] != ["rxe0", "rxe1"]
			or any(.devices[]; .error or .bandwidth == null or .reverse == null)))] | length)] | @tsv' \
		"$out/$stream" 2>&1)
	read -r streamed off_lanes <<<"$lane_facts"
	if [[ $rc == 0 && $hl == true && $got == "$want" && $failed == 0 && $lanes == 0 && $streamed == "$want" && $off_lanes == 0 ]]; then
		ok "host-level (srun -N $n -n $n, --host-level --duplex -d rxe0,rxe1 write-bw -s 8K: $want links, each on rxe0 and rxe1 at once, both ways, none failed, in $took s)"
	else
		ko host-level "exit $rc, host_level/links/failed/ranks without lanes rxe0,rxe1/stream: $facts; streamed links/not on both NICs: $lane_facts (want $want links)"
		cat "$out/host-level.err"
	fi
	cat "$out/host-level.txt"
}
for c in ${RDMABENCH_MESH_HOSTS_CASES:-$all_cases}; do
	if [[ " $all_cases " != *" $c "* ]]; then
		ko "$c" "no such case (the cases: $all_cases)"
	elif [[ $two_nic == *" $c "* ]] && ((nics < 2)); then
		# Named on VMs of one NIC: skipped; by default, left out.
		[[ -z ${RDMABENCH_MESH_HOSTS_CASES:-} ]] || echo "--- SKIP: mesh/$c: the VMs have one NIC (vm-group.sh --nics 2)"
	else
		"case_${c//-/_}"
	fi
done
echo "mesh-hosts: $pass passed, $fail failed"
((fail == 0))
