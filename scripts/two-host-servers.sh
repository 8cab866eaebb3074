#!/usr/bin/env bash
# Host A of the two-host tests (scripts/two-host-test.sh): three servers.
#   :19515  plain;  :19516  --token right;  :19517  killed with SIGKILL 4 s
#   after its first client connects (the "server killed mid-test" case).
# Usage: two-host-servers.sh BINARY LOGDIR
set -uo pipefail
bin=$1
logs=$2
ip=${RDMABENCH_VM_IP:?}
"$bin" serve --listen "$ip:19515" 2>"$logs/serve-plain.log" &
"$bin" serve --listen "$ip:19516" --token right 2>"$logs/serve-token.log" &
"$bin" serve --listen "$ip:19517" 2>"$logs/serve-victim.log" &
victim=$!
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
