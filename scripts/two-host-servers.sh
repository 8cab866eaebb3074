#!/usr/bin/env bash
# Host A of the two-host tests (scripts/two-host-test.sh): three servers.
#   :19515  plain;  :19516  --token right;  :19517  killed with SIGKILL 4 s
#   after its first client connects (the "server killed mid-test" case).
# It also runs, for the link faults (two-host-faults.sh), the commands host
# B leaves in LOGDIR/fault-a.cmd (tc, ip link), writing each one's exit
# status to LOGDIR/fault-a.done: the shared folder still works when the
# link between the hosts does not.
# Usage: two-host-servers.sh BINARY LOGDIR
set -uo pipefail
bin=$1
logs=$2
ip=${RDMABENCH_VM_IP:?}
"$bin" serve --listen "$ip:19515" 2>"$logs/serve-plain.log" &
"$bin" serve --listen "$ip:19516" --token right 2>"$logs/serve-token.log" &
"$bin" serve --listen "$ip:19517" 2>"$logs/serve-victim.log" &
victim=$!
(
	while :; do
		if [[ -f $logs/fault-a.cmd ]]; then
			cmd=$(<"$logs/fault-a.cmd")
			rm -f "$logs/fault-a.cmd"
			echo "host A: $cmd" >>"$logs/fault-a.log"
			bash -c "$cmd" >>"$logs/fault-a.log" 2>&1
			echo $? >"$logs/fault-a.done.tmp" && mv "$logs/fault-a.done.tmp" "$logs/fault-a.done"
		fi
		sleep 0.05
	done
) &
# Kill the victim about 4 s into its first test: once a client has stayed
# connected for a second (a port probe does not count).
established() { ss -Htn state established '( sport = :19517 )' | grep -q .; }
until established && sleep 1 && established; do
	sleep 0.2
done
sleep 3
kill -9 "$victim"
echo "host A: killed the server on :19517 mid-test" >>"$logs/serve-victim.log"
wait
