#!/usr/bin/env bash
# Host B of the two-host tests (scripts/two-host-test.sh): the client side.
# Runs the suite across the two hosts, then the protocol's failure cases,
# what crosses the wire (TestWire), and the link faults (two-host-faults.sh),
# and prints one line per case and a total "two-host: N passed, N failed".
# Usage: two-host-scenarios.sh BINARY OLD_PROTOCOL_BINARY OUTDIR [CMD_TEST_BINARY]
set -uo pipefail
bin=$1
old=$2
out=$3
wire=${4:-}
peer=${RDMABENCH_PEER_IP:?}
pass=0
fail=0
ok() { echo "--- PASS: two-host/$1"; pass=$((pass + 1)); }
ko() { echo "--- FAIL: two-host/$1: $2"; fail=$((fail + 1)); }

# Servers on host A may take a moment to listen.
for _ in $(seq 1 100); do
	(exec 3<>"/dev/tcp/$peer/19515") 2>/dev/null && break
	sleep 0.1
done

# 0. The server killed mid-test (host A kills it 4 s into this run): the
# client exits non-zero, within its deadline, with a clear message, and the
# sizes measured before it are in its output file.
start=$SECONDS
"$bin" write-bw "$peer" -p 19517 -s 2,4K,64K,1M -D 2 --out "$out/killed.json" >"$out/killed.txt" 2>"$out/killed.err"
rc=$?
took=$((SECONDS - start))
measured=$(grep -c '"bw_gbps"' "$out/killed.json" 2>/dev/null || echo 0)
if ((rc != 0 && took < 60 && measured >= 1)) && grep -q '"error"' "$out/killed.json"; then
	ok "server-killed-mid-test (exit $rc after ${took}s, $measured result(s) kept: $(head -c 200 "$out/killed.err" | tr '\n' ' '))"
else
	ko server-killed-mid-test "exit $rc after ${took}s, $measured results kept; stderr: $(cat "$out/killed.err")"
fi

# 1. The whole suite across the two hosts. -u 18 (an ACK timeout of 1.07 s)
# keeps RC from giving up while an emulated host is descheduled.
if "$bin" suite "$peer" -n 200 -u 18 --out "$out/suite.json" >"$out/suite.txt" 2>"$out/suite.err"; then
	n=$(grep -c '"test":' "$out/suite.json")
	if ((n == 10)) && grep -q '"remote"' "$out/suite.json"; then
		ok "suite (10 tests, both hosts' facts)"
	else
		ko suite "$n results"
	fi
else
	ko suite "exit $?: $(cat "$out/suite.err")"
fi
cat "$out/suite.txt"

# 2. Wrong and missing token.
"$bin" write-lat "$peer" -p 19516 --token wrong -n 10 >/dev/null 2>"$out/token.err"
rc=$?
if ((rc == 1)) && grep -q "server $peer:19516: authentication failed" "$out/token.err"; then
	ok "wrong-token ($(head -1 "$out/token.err"))"
else
	ko wrong-token "exit $rc: $(cat "$out/token.err")"
fi
if "$bin" write-lat "$peer" -p 19516 --token right -n 10 >/dev/null 2>"$out/token-ok.err"; then
	ok right-token
else
	ko right-token "$(cat "$out/token-ok.err")"
fi

# 3. A client of another protocol version.
"$old" write-lat "$peer" -n 10 >/dev/null 2>"$out/version.err"
rc=$?
if ((rc == 1)) && grep -q "protocol version 3" "$out/version.err" && grep -q "speaks 2" "$out/version.err"; then
	ok "version-mismatch ($(head -1 "$out/version.err"))"
else
	ko version-mismatch "exit $rc: $(cat "$out/version.err")"
fi

# 4. A busy server: a second client while a test runs.
# The second client starts once the first one's test is measuring (its
# first interval is out), not after a fixed time a slow host may not keep.
"$bin" write-bw "$peer" -D 6 --interval 500ms -u 18 --json-stream >"$out/long.jsonl" 2>"$out/long.err" &
long=$!
for _ in $(seq 100); do
	grep -q '"event":"interval"' "$out/long.jsonl" 2>/dev/null && break
	kill -0 $long 2>/dev/null || break
	sleep 0.2
done
"$bin" write-lat "$peer" -n 10 >/dev/null 2>"$out/busy.err"
rc=$?
wait $long
lrc=$?
if ((rc == 1 && lrc == 0)) && grep -q "busy" "$out/busy.err"; then
	ok "busy-server ($(head -1 "$out/busy.err"))"
else
	ko busy-server "second client exit $rc, first $lrc: $(cat "$out/busy.err" "$out/long.err")"
fi

# 5. A client killed mid-test: the server frees the test and serves the next.
"$bin" write-lat "$peer" -D 30 >/dev/null 2>&1 &
victim=$!
sleep 2
kill -9 $victim
wait $victim 2>/dev/null
served=0
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
	if "$bin" send-lat "$peer" -n 50 -o json --out "$out/after-kill.json" >/dev/null 2>"$out/after-kill.err"; then
		served=1
		break
	fi
	grep -q busy "$out/after-kill.err" || break
	sleep 1 # the server is still tearing the killed client's test down
done
if ((served)); then
	ok "client-killed-mid-test (the next client was served)"
else
	ko client-killed-mid-test "$(cat "$out/after-kill.err")"
fi

# 6. What crosses the wire between the hosts, captured with tcpdump: the
# traffic class both ways, the direction of --reverse, rdma_cm (the Go
# tests print their own PASS and FAIL lines, which test.sh counts).
if [[ -n $wire ]]; then
	if (cd "$(dirname "$0")/../cmd/rdmabench" && "$wire" -test.run '^TestWire' -test.v -test.timeout 300s) >"$out/wire.log" 2>&1; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "two-host/wire failed:"
	fi
	grep -E -- '--- (PASS|FAIL|SKIP)|wire_test.go' "$out/wire.log"
fi

# 7. Faults on the link between the hosts (two-host-faults.sh prints a
# line per case and the table of outcomes).
"$(dirname -- "$0")/two-host-faults.sh" "$bin" "$out" || fail=$((fail + 1))

echo "two-host: $pass passed, $fail failed"
((fail == 0))
