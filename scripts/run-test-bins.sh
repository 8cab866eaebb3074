#!/usr/bin/env bash
# Run compiled Go test binaries, each in its package folder as `go test`
# would, with -test.v, and print one summary line. Used by scripts/test.sh,
# on a host with an RDMA device or inside the Soft-RoCE VM.
#
# Usage: scripts/run-test-bins.sh LIST [EXTRA TEST FLAGS...]
#   LIST has one line per package: BINARY PACKAGE_DIR [TESTS], TESTS a
#   -test.run pattern (the extra flags' own -test.run, coming after it,
#   wins)
set -uo pipefail
list=$1
shift
rc=0
while read -r bin dir tests; do
	[[ -n $bin ]] || continue
	echo "=== package $(basename "$bin" .test) (in $dir, device ${RDMABENCH_TEST_DEVICE:-auto})"
	(cd "$dir" && "$bin" -test.v -test.timeout 600s ${tests:+-test.run "$tests"} "$@") || rc=1
done <"$list"
exit $rc
