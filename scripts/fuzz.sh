#!/usr/bin/env bash
# Run every native Go fuzz target of the repository (each func FuzzX in a
# _test.go file under pkg/) for a fixed short time, one after the other,
# without cgo. The targets share a budget of RDMABENCH_FUZZ_TOTAL seconds
# (default 55, 5 s each of the 11 there are), at least 5 s each;
# RDMABENCH_FUZZTIME (e.g. 30s) sets the time of each instead. Their seed corpora are in each package's
# testdata/fuzz/FuzzX/ and run with the unit tests too.
#
# Prints one line per target, as `go test -v` does, so that test.sh counts
# them with the unit tests:
#   --- PASS: FuzzReadJSON (pkg/report, 10s)
#   --- FAIL: FuzzClient (pkg/control, 10s)
# followed, for a failure, by go test's output: the failing input is
# written to the package's testdata/fuzz/FuzzX/; once the bug is fixed,
# commit it there as a regression seed. Exits 1 when a target failed.
#
# Usage: scripts/fuzz.sh [LOG]   (LOG also gets go test's full output)
set -euo pipefail
rb_prog=fuzz.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
cd "$here/.."
log=${1:-/dev/null}
: >"$log"

# "DIR NAME" for every target, in a stable order.
mapfile -t targets < <(find pkg -name '*_test.go' -print0 | sort -z |
	xargs -0 grep -H -o '^func Fuzz[A-Za-z0-9_]*(' |
	sed -E 's|^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($|\1 \2|')
((${#targets[@]} > 0)) || rb_die "no fuzz target found under pkg/"

if [[ -n ${RDMABENCH_FUZZTIME:-} ]]; then
	each=$RDMABENCH_FUZZTIME
else
	total=${RDMABENCH_FUZZ_TOTAL:-55}
	each=$((total / ${#targets[@]}))
	((each >= 5)) || each=5
	each=${each}s
fi
rb_log "${#targets[@]} fuzz targets, $each each"

# inputs DIR NAME: the inputs kept in the target's corpus folder.
inputs() { ls "$1/testdata/fuzz/$2" 2>/dev/null | sort || true; }

failed=0
for t in "${targets[@]}"; do
	read -r dir name <<<"$t"
	start=$SECONDS
	before=$(inputs "$dir" "$name")
	if out=$(CGO_ENABLED=0 go test -run '^$' -fuzz "^$name\$" -fuzztime "$each" "./$dir" 2>&1); then
		echo "--- PASS: $name ($dir, $((SECONDS - start))s)"
	elif [[ $(inputs "$dir" "$name") == "$before" ]] && grep -qx '    context deadline exceeded' <<<"$out" &&
		! grep -q 'Failing input' <<<"$out"; then
		# Go's fuzzing coordinator (before Go 1.27) can report its own
		# -fuzztime deadline as a failure when a busy worker stops late
		# (go.dev/issue/75804): no input failed and none was written.
		echo "--- PASS: $name ($dir, $((SECONDS - start))s; the fuzzer's deadline race, no failing input)"
	else
		failed=1
		echo "--- FAIL: $name ($dir, $((SECONDS - start))s)"
		# go test's own "--- FAIL" lines, quoted so that they are not counted.
		echo "$out" | grep -v '^fuzz: elapsed' | sed 's/^/    | /'
	fi
	{
		echo "### $dir $name"
		echo "$out"
	} >>"$log"
done
exit $failed
