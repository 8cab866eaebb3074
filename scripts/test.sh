#!/usr/bin/env bash
# Run every test of rdmabench on a fresh machine: installs the dependencies,
# checks formatting, vet and staticcheck, runs the unit tests with and
# without cgo and each fuzz target for a few seconds (scripts/fuzz.sh), then
# runs the RDMA integration tests and a short soak (scripts/soak.sh) against
# a real kernel RDMA driver (the container image and the packages are
# built and checked in the background meanwhile, at the lowest priority):
#   - on RDMABENCH_TEST_DEVICE when it is set (a NIC, or Soft-RoCE already up);
#     the tests of two devices at once use RDMABENCH_TEST_DEVICES (two names);
#   - else on Soft-RoCE set up on this host when its kernel has rdma_rxe;
#   - else inside a qemu VM with Soft-RoCE (scripts/vm.sh): the tests the
#     host's run skipped for want of a device (the rest ran on the host),
#     and then the ODP and memory-kind tests and a subset of the others
#     once more, and ODP across two hosts, in two VMs of a second kernel
#     (unstable's, scripts/vm-pair.sh --suite).
# Then it checks the Helm chart with the real helm (scripts/helm-check.sh).
# The last line is the total: "tests: N passed, N failed, N skipped".
#
# Usage: scripts/test.sh
# Environment: RDMABENCH_RDMA_MODE=vm|host forces where RDMA tests run;
#              RDMABENCH_TEST_OUT=DIR keeps the logs there;
#              RDMABENCH_SOAK_TESTS=N the soak's tests (default 20);
#              RDMABENCH_SECOND_SUITE=NAME the second kernel's suite
#              (default unstable; none: no second kernel).
set -euo pipefail
rb_prog=test.sh
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
cd "$here/.."

if ! command -v go >/dev/null 2>&1; then
	[[ -x /usr/local/go/bin/go ]] && PATH=$PATH:/usr/local/go/bin
	command -v go >/dev/null 2>&1 || rb_die "go not found: install Go 1.26 or newer"
fi
# While deps.sh installs packages (on a fresh machine: a minute and more,
# mostly one core unpacking), Go's build cache is filled with what needs
# none of them: the standard library and the modules' packages our
# packages and their tests import, with cgo and without, and
# staticcheck's findings on them (through our packages that do not reach
# pkg/verbs' C headers). That is three minutes of compiling on a fresh
# machine that the steps below would otherwise do after the
# installation. Its output is thrown away: those steps report.
prewarm() {
	local ours=github.com/rdmabench/rdmabench
	go build $(go list -deps -test ./... | grep -v "^$ours") || true
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 \
		$(go list -f '{{.ImportPath}} {{join .Deps " "}}' ./... | awk -v v="$ours/pkg/verbs" '$0 !~ v {print $1}') || true
	CGO_ENABLED=0 go build $(CGO_ENABLED=0 go list -deps -test ./... | grep -v "^$ours") || true
}
prewarm_pid=
if ! "$here/deps.sh" --check 2>/dev/null; then
	prewarm >/dev/null 2>&1 &
	prewarm_pid=$!
fi
"$here/deps.sh"
[[ -z $prewarm_pid ]] || wait "$prewarm_pid" || true

# Tests that read our output with its consumers' tools (promtool, Python's
# prometheus_client, man) fail rather than skip when CI is set and the tool
# is missing: deps.sh has just installed them.
export CI=${CI:-true}

out=${RDMABENCH_TEST_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/rdmabench-test.XXXXXX")}
mkdir -p "$out"
rb_log "logs in $out"
failed=0
failures=() # the steps that failed, each named once at the end
fail() { failed=1; failures+=("$1"); }

step() { printf '\n### %s\n' "$*"; }

step "gofmt, go vet and staticcheck"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [[ -n $unformatted ]]; then
	echo "not gofmt-formatted:"; echo "$unformatted"; fail "gofmt"
fi
go vet ./... || fail "go vet"
CGO_ENABLED=0 go vet ./... || fail "go vet (CGO_ENABLED=0)"
# staticcheck, pinned, from the Go module proxy: zero findings.
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./... || fail "staticcheck"

step "unit tests without cgo (CGO_ENABLED=0), of the packages whose files differ without it"
CGO_ENABLED=0 go build ./... || fail "go build (CGO_ENABLED=0)"
# The others build the same files either way, and no test of theirs
# takes another path without cgo: the run with cgo below covers them.
files='{{.ImportPath}} {{.GoFiles}} {{.CgoFiles}} {{.TestGoFiles}} {{.XTestGoFiles}}'
mapfile -t nocgo < <(comm -3 <(CGO_ENABLED=0 go list -f "$files" ./... | sort) <(go list -f "$files" ./... | sort) | awk '{print $1}' | sort -u)
CGO_ENABLED=0 go test -count=1 -v "${nocgo[@]}" >"$out/nocgo.log" 2>&1 || fail "unit tests without cgo"
grep -E '^(ok|FAIL|---|panic)|^\s+--- FAIL' "$out/nocgo.log" | grep -v -- '--- PASS\|--- SKIP' || true

step "unit tests with cgo on the host"
go test -count=1 -v ./... >"$out/host.log" 2>&1 || fail "unit tests on the host"
grep -E '^(ok|FAIL|panic)|--- FAIL' "$out/host.log" || true

step "fuzz targets, a fixed few seconds each (scripts/fuzz.sh)"
"$here/fuzz.sh" "$out/fuzz-go.log" 2>&1 | tee "$out/fuzz.log" || fail "scripts/fuzz.sh"

step "mesh at scale on this host: 64 ranks over TCP, with rank 0 killed in a second run (scripts/mesh-scale.sh)"
start=$SECONDS
"$here/mesh-scale.sh" check 64 2>&1 | tee "$out/mesh-scale.log" || fail "scripts/mesh-scale.sh"
rb_log "the 64-rank mesh took $((SECONDS - start)) s"

: >"$out/mesh-topology.log"
if [[ $(id -u) == 0 ]]; then
	step "switch blame on this host: 12 ranks standing for the hosts of a topology, a leaf's uplinks and then a host slowed (scripts/mesh-topology.sh)"
	start=$SECONDS
	"$here/mesh-topology.sh" "$out/mesh-topology" 2>&1 | tee "$out/mesh-topology.log" || fail "scripts/mesh-topology.sh"
	rb_log "the topology cases took $((SECONDS - start)) s"
else
	rb_log "the topology cases need root (a network namespace, tc, iptables): skipped"
fi

# The container image and the packages wait on no clock: they run in the
# background at the lowest priority (SCHED_IDLE: on a CPU only when nothing
# else wants it) beside the VM steps below, whose emulated CPUs leave
# cycles idle (waiting on a delayed link, a timeout, a peer), and report
# after the last of them. Nothing they run has a deadline to miss.
idle_prio=(chrt --idle 0)
"${idle_prio[@]}" true 2>/dev/null || idle_prio=(nice -n 19)
rm -f "$out/image.failed" "$out/package.failed"
(
	start=$SECONDS
	"${idle_prio[@]}" "$here/image.sh" check >"$out/image.log" 2>&1 || (($? == 77)) || echo failed >"$out/image.failed"
	echo "test.sh: the image took $((SECONDS - start)) s (in the background)" >>"$out/image.log"
	start=$SECONDS
	"${idle_prio[@]}" "$here/package-check.sh" >"$out/package.log" 2>&1 || (($? == 77)) || echo failed >"$out/package.failed"
	echo "test.sh: the packages took $((SECONDS - start)) s (in the background)" >>"$out/package.log"
) &
background_pid=$!
rb_log "the container image and the packages build and run in the background (${idle_prio[*]}), beside the VM steps"

step "RDMA integration tests on a real device"
bins=$out/bins
mkdir -p "$bins"
: >"$bins/list"
# Packages whose tests use a device import internal/testutil.
# In the VM only the tests that need a device run: the top-level tests the
# host's run (host.log, without a device) skipped, whole or in a subtest,
# for want of one (their skips say "run under scripts/vm.sh"). The others
# ran on the host already, and take minutes more under emulation.
declare -A needs_device=()
while read -r pkg tests; do
	needs_device[$pkg]=$tests
done < <(awk '
	/^=== (RUN|CONT|NAME) / { test = $3; sub(/\/.*/, "", test) }
	/run under scripts\/vm\.sh/ && test != "" { want[test] = 1 }
	/^(ok|FAIL)[ \t]+[a-z]/ {
		tests = ""
		for (t in want) tests = tests "|" t
		if (tests != "") print $2, substr(tests, 2)
		delete want
		test = ""
	}' "$out/host.log")
: >"$bins/device-list"
device_tests=0
while read -r pkg dir imports; do
	[[ " $imports " == *" github.com/rdmabench/rdmabench/internal/testutil "* ]] || continue
	name=$(echo "$pkg" | tr / _)
	go test -c -o "$bins/$name.test" "$pkg"
	echo "$bins/$name.test $dir" >>"$bins/list"
	tests=${needs_device[$pkg]:-}
	[[ -n $tests ]] || continue
	echo "$bins/$name.test $dir ^($tests)\$" >>"$bins/device-list"
	device_tests=$((device_tests + $(tr '|' '\n' <<<"$tests" | wc -l)))
done < <(go list -f '{{.ImportPath}} {{.Dir}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./...)

mode=$(rb_rdma_mode)
[[ $mode == host && -z ${RDMABENCH_TEST_DEVICE:-} && -z ${RDMABENCH_RDMA_MODE:-} ]] && export RDMABENCH_TEST_DEVICE=${RDMABENCH_RXE_NAME:-rxe0}
start=$SECONDS
case $mode in
host)
	rb_log "RDMA tests on this host's ${RDMABENCH_TEST_DEVICE:-first device}"
	"$here/run-test-bins.sh" "$bins/list" 2>&1 | tee "$out/rdma.log" || fail "RDMA tests (scripts/run-test-bins.sh)"
	;;
vm)
	rb_log "this kernel has no rdma_rxe: RDMA tests run in the Soft-RoCE VM (rxe0, and rxe1 for the tests of two devices)"
	rb_log "the $device_tests tests of $(wc -l <"$bins/device-list") packages that need a device (the others ran on this host)"
	"$here/vm.sh" --devices 2 --share "$out" -- "$here/run-test-bins.sh" "$bins/device-list" 2>&1 | tee "$out/rdma.log" || fail "RDMA tests in the VM (scripts/run-test-bins.sh)"
	;;
*) rb_die "RDMABENCH_RDMA_MODE must be vm or host" ;;
esac
rb_log "RDMA tests took $((SECONDS - start)) s"

# A second kernel, a second driver: unstable's rxe (Linux 7.x) has
# on-demand paging, which bookworm's has not. In two VMs of that kernel
# (scripts/vm-pair.sh): in B, the ODP and memory-kind tests and a subset
# of the RDMA tests (verbs, the data checks, the suite, a server, a mesh),
# then ODP across the two hosts against A's server (two-host-odp.sh).
# RDMABENCH_SECOND_SUITE names another suite; "none" skips the step.
second=${RDMABENCH_SECOND_SUITE:-unstable}
: >"$out/rdma2.log"
if [[ $mode == vm && $second != none ]]; then
	step "RDMA on a second kernel ($second's rxe, with ODP): the ODP and memory-kind tests and a subset of the RDMA tests, then ODP across two VMs"
	second_tests='^(TestODP.*|TestHugePages?.*|TestDmabufRefusedOnRxe|TestCudaStandIn|TestRCWrite|TestRCRead|TestRCSend|TestUDSend|TestFetchAdd|TestCompSwap|TestValidateEveryTest|TestValidateRemote|TestSuite|TestServeRDMA|TestMeshRDMA|TestDevicesOnDevice)$'
	start=$SECONDS
	go build -o "$bins/rdmabench" ./cmd/rdmabench
	# A's server stays up until B ends (vm-pair.sh then stops A).
	serve_a="$(rb_sq "$bins/rdmabench") serve -d rxe0 --listen \"\$RDMABENCH_VM_IP:19515\" 2>$(rb_sq "$out/odp-serve.log")"
	tests_b="rc=0; $(rb_sq "$here/run-test-bins.sh") $(rb_sq "$bins/list") -test.run $(rb_sq "$second_tests") || rc=1;"
	tests_b+=" $(rb_sq "$here/two-host-odp.sh") $(rb_sq "$bins/rdmabench") $(rb_sq "$out/odp") || rc=1; exit \$rc"
	"$here/vm-pair.sh" --suite "$second" --cpus 2 --share "$out" --a "$serve_a" --b "$tests_b" 2>&1 |
		tee "$out/rdma2.log" || fail "RDMA on the second kernel (scripts/vm-pair.sh)"
	rb_log "RDMA tests on $second's kernel took $((SECONDS - start)) s"
fi

soak_tests=${RDMABENCH_SOAK_TESTS:-20}
step "soak: $soak_tests tests against one server, 30% of the clients after the warm-up killed mid-test, then two agents probing each other for 30 s with the UD probe and write-bw, and for 30 s with kept write-lat sessions (scripts/soak.sh, scripts/agent-soak.sh)"
start=$SECONDS
RDMABENCH_RDMA_MODE=$mode "$here/soak.sh" --tests "$soak_tests" --kill-pct 30 --agent-seconds 30 --out "$out/soak" 2>&1 | tee "$out/soak.log" || fail "scripts/soak.sh"
rb_log "the soak took $((SECONDS - start)) s"

: >"$out/readme-vm.log"
if [[ $mode == vm ]]; then
	step "the README's Soft-RoCE VM example, as written"
	go build -o out/rdmabench ./cmd/rdmabench
	readme_vm=$(grep -o '`scripts/vm.sh -- out/rdmabench [^`]*`' README.md | head -1 | tr -d '`')
	if [[ -z $readme_vm ]]; then
		echo "--- FAIL: README's scripts/vm.sh example: README.md has none" | tee "$out/readme-vm.log"
		fail "the README's VM example (none)"
	elif eval "$readme_vm" >"$out/readme-vm.out" 2>&1 && grep -q '^write-lat ' "$out/readme-vm.out"; then
		echo "--- PASS: README's scripts/vm.sh example ($readme_vm)" | tee "$out/readme-vm.log"
	else
		cat "$out/readme-vm.out"
		echo "--- FAIL: README's scripts/vm.sh example ($readme_vm)" | tee "$out/readme-vm.log"
		fail "the README's VM example"
	fi
fi

: >"$out/two-host.log"
if [[ $mode == vm ]]; then
	step "two hosts: two VMs, a server in one, the suite and the failure cases from the other"
	start=$SECONDS
	"$here/two-host-test.sh" "$out/two-host" 2>&1 | tee "$out/two-host.log" || fail "scripts/two-host-test.sh"
	rb_log "two-host tests took $((SECONDS - start)) s"
else
	rb_log "two-host tests need two VMs; they run when this script uses the Soft-RoCE VM (RDMABENCH_RDMA_MODE=vm)"
fi

: >"$out/mesh.log"
if [[ $mode == vm ]]; then
	step "mesh: OpenMPI and Slurm in one VM (a rank killed mid-run), Slurm across four VMs of two NICs (a host, then a path, slowed and blamed; rails; host level)"
	start=$SECONDS
	"$here/mesh-test.sh" "$out/mesh" 2>&1 | tee "$out/mesh.log" || fail "scripts/mesh-test.sh"
	rb_log "mesh tests took $((SECONDS - start)) s"
else
	rb_log "the mesh's launcher tests boot VMs; they run when this script uses the Soft-RoCE VM (RDMABENCH_RDMA_MODE=vm)"
fi

wait "$background_pid" || true
step "container image: deploy/Containerfile built from Debian packages with podman and run (scripts/image.sh check; in the background since the RDMA tests)"
cat "$out/image.log"
[[ ! -e $out/image.failed ]] || fail "scripts/image.sh"
step "packages: the .deb and .rpm linted, the .deb installed, upgraded, removed and purged in a clean root (scripts/package-check.sh; in the background since the RDMA tests)"
cat "$out/package.log"
[[ ! -e $out/package.failed ]] || fail "scripts/package-check.sh"
# The chart after the VM steps, not beside them: the VMs' clocks are
# watched (scripts/vm.sh), and more load beside a VM of the second
# kernel once slowed its clock past the check's 3% (0.64x the host's,
# the packages and the chart built beside it; the cause not yet found).
step "Helm chart: helm lint --strict and helm template with the real helm, the rendered manifests checked, the dashboard against its generator (scripts/helm-check.sh)"
start=$SECONDS
if "$here/helm-check.sh" >"$out/helm.log" 2>&1; then
	echo "--- PASS: helm-check (helm lint --strict, helm template, the dashboard)" >>"$out/helm.log"
else
	echo "--- FAIL: helm-check (helm lint --strict, helm template, the dashboard)" >>"$out/helm.log"
	fail "scripts/helm-check.sh"
fi
echo "test.sh: the chart took $((SECONDS - start)) s" >>"$out/helm.log"
cat "$out/helm.log"

tally() { # LOG... -> "P F S" (lines of a VM of a pair or group carry a "[b] " or "[1] " prefix)
	local p f s
	p=$(cat "$@" | grep -cE '^(\[[a-z0-9]+\] )?\s*--- PASS:' || true)
	f=$(cat "$@" | grep -cE '^(\[[a-z0-9]+\] )?\s*--- FAIL:' || true)
	s=$(cat "$@" | grep -cE '^(\[[a-z0-9]+\] )?\s*--- SKIP:' || true)
	echo "$p $f $s"
}
read -r rp rf rs < <(tally "$out/rdma.log")
if ((rp == 0)); then
	echo "no RDMA test passed: the integration tests did not run on a device"
	fail "RDMA tests (none passed)"
fi
echo
echo "RDMA on ${RDMABENCH_TEST_DEVICE:-rxe0} ($mode): $rp passed, $rf failed, $rs skipped"
if [[ $mode == vm && $second != none ]]; then
	read -r kp kf ks < <(tally "$out/rdma2.log")
	echo "RDMA on $second's kernel (vm): $kp passed, $kf failed, $ks skipped"
	((kp > 0)) || fail "RDMA on the second kernel (none passed)"
fi
if [[ $mode == vm ]]; then
	read -r tp tf ts < <(tally "$out/two-host.log")
	echo "two hosts (two VMs): $tp passed, $tf failed"
	((tp > 0)) || fail "two hosts (none passed)"
	read -r mp mf _ < <(tally "$out/mesh.log")
	echo "mesh on launchers (VMs): $mp passed, $mf failed"
	((mp > 0)) || fail "mesh on launchers (none passed)"
fi
read -r fp ff _ < <(tally "$out/fuzz.log")
echo "fuzz targets: $fp passed, $ff failed"
read -r msp msf _ < <(tally "$out/mesh-scale.log")
echo "mesh of 64 ranks on this host: $msp passed, $msf failed"
((msp > 0)) || fail "the 64-rank mesh (none passed)"
read -r mtp mtf _ < <(tally "$out/mesh-topology.log")
echo "switch blame on this host: $mtp passed, $mtf failed"
read -r imp imf ims < <(tally "$out/image.log")
echo "container image: $imp passed, $imf failed, $ims skipped"
read -r pkp pkf pks < <(tally "$out/package.log")
echo "packages: $pkp passed, $pkf failed, $pks skipped"
read -r hp hf _ < <(tally "$out/helm.log")
echo "Helm chart: $hp passed, $hf failed"
read -r sp sf _ < <(tally "$out/soak.log")
echo "soak: $sp passed, $sf failed"
((sp > 0)) || fail "the soak (none passed)"
logs=()
for l in nocgo host fuzz rdma rdma2 soak readme-vm two-host mesh mesh-scale mesh-topology image package helm; do
	[[ ! -e $out/$l.log ]] || logs+=("$out/$l.log")
done
read -r p f s < <(tally "${logs[@]}")
if ((failed)) && ((f == 0)); then
	f=1 # a build, vet or format failure, or a script's exit, counts as one
fi
if ((f > 0)); then
	# The failures again, last, where a reader of the run's tail sees them:
	# the steps that failed (one may have failed without a test's line: a
	# script's own exit), then each test's line (its first 400 bytes).
	echo
	echo "the failures:"
	((${#failures[@]} == 0)) || printf 'step failed: %s\n' "${failures[@]}"
	cat "${logs[@]}" | grep -E '^(\[[a-z0-9]+\] )?\s*--- FAIL:' | cut -c 1-400 || true
fi
echo "tests: $p passed, $f failed, $s skipped"
exit $failed
