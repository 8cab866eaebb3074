#!/usr/bin/env bash
# Build rdmabench's .deb and .rpm into DIR with nfpm (deploy/package): the
# binary, its man pages and bash/zsh/fish completions (which the binary
# writes), the agent's systemd unit (installed disabled), an example peers
# file and /etc/default/rdmabench-agent (configuration: kept on removal,
# gone on purge), the license and a changelog.
#
# Usage: scripts/package.sh DIR [VERSION]
#
# VERSION (also RDMABENCH_VERSION) is the packages' version and the
# binary's (`rdmabench --version` says vVERSION): by default the newest
# tag vX.Y.Z at HEAD (X.Y.Z), else 0.0.0~git<commit time>.<commit>, which
# a later commit's build upgrades. The date of the pages and files is the
# commit's (SOURCE_DATE_EPOCH), so that a commit builds the same packages.
# Prints the packages' paths. RDMABENCH_PACKAGERS=deb builds the .deb alone.
set -euo pipefail
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
cd "$(dirname -- "${BASH_SOURCE[0]}")/.."

case ${1:-} in
-h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
'' | -*) rb_die "usage: scripts/package.sh DIR [VERSION]" ;;
esac
out=$1
version=${2:-${RDMABENCH_VERSION:-}}
rb_need dpkg-shlibdeps dpkg-dev
rb_need gzip gzip

if [[ -z $version ]]; then
	if tag=$(git describe --tags --exact-match --match 'v[0-9]*' HEAD 2>/dev/null); then
		version=${tag#v}
	else
		version=0.0.0~git$(TZ=UTC git log -1 --date=format-local:%Y%m%d%H%M%S --format=%cd HEAD).$(git rev-parse --short=7 HEAD)
	fi
fi
# Debian's and RPM's versions alike: digits first; letters, digits, . + ~.
[[ $version =~ ^[0-9][A-Za-z0-9.+~]*$ ]] ||
	rb_die "version '$version': want digits first, then letters, digits, '.', '+' or '~' (e.g. 1.2.0 or 1.2.0~rc1)"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct HEAD)}
arch=$(go env GOARCH)

mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d "${TMPDIR:-/tmp}/rdmabench-package.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,man,completions,unit,etc,doc}

rb_log "building rdmabench v$version ($arch)"
rb_build_release "$stage/bin/rdmabench" "$version"
bin=$stage/bin/rdmabench
got=$("$bin" version -o json | sed -n 's/.*"version": "\(.*\)".*/\1/p')
[[ $got == "v$version" ]] || rb_die "the binary says version '$got', want v$version"

"$bin" man "$stage/man" >/dev/null
gzip -9n "$stage"/man/*.1
"$bin" completion bash >"$stage/completions/rdmabench.bash"
"$bin" completion zsh >"$stage/completions/_rdmabench"
"$bin" completion fish >"$stage/completions/rdmabench.fish"

# The unit runs the packaged binary.
sed 's#/usr/local/bin/rdmabench#/usr/bin/rdmabench#g' deploy/systemd/rdmabench-agent.service >"$stage/unit/rdmabench-agent.service"
grep -q '^ExecStart=/usr/bin/rdmabench ' "$stage/unit/rdmabench-agent.service" ||
	rb_die "deploy/systemd/rdmabench-agent.service: no ExecStart of rdmabench to point at /usr/bin"
cp deploy/systemd/peers.example "$stage/etc/peers"
cp deploy/systemd/rdmabench-agent.default "$stage/etc/rdmabench-agent"
cp LICENSE "$stage/doc/LICENSE"
{
	echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
	echo "Upstream-Name: rdmabench"
	echo "Source: https://github.com/rdmabench/rdmabench"
	echo
	echo "Files: *"
	echo "Copyright: $(sed -n 's/^Copyright (c) //p' LICENSE)"
	echo "License: MIT"
	sed -n '/^Permission/,$p' LICENSE | sed 's/^$/./; s/^/ /'
} >"$stage/doc/copyright"
# The changelog: this build, its commit and the commits since the last tag.
since=$(git describe --tags --abbrev=0 --match 'v[0-9]*' HEAD 2>/dev/null || true)
{
	echo "- semver: $version-1"
	echo "  deb: {urgency: medium, distributions: [unstable]}"
	echo "  date: $(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
	echo "  packager: rdmabench developers <rdmabench@users.noreply.github.com>"
	echo "  changes:"
	echo "    - note: 'rdmabench $version, built from commit $(git rev-parse --short=12 HEAD)${since:+ (changes since $since: git log $since..)}'"
} >"$stage/doc/changelog.yml"
cp -r deploy/package/deb deploy/package/rpm "$stage/"

# The .deb's library dependencies, as Debian's tools find them.
mkdir -p "$stage/shlibs/debian"
printf 'Source: rdmabench\n\nPackage: rdmabench\nArchitecture: any\n' >"$stage/shlibs/debian/control"
depends=$(cd "$stage/shlibs" && dpkg-shlibdeps -O "$bin" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[[ -n $depends ]] || rb_die "dpkg-shlibdeps found no dependency of the binary"

# The .rpm's: the sonames the binary needs.
rb_need readelf binutils
mapfile -t sonames < <(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[[ ${#sonames[@]} -gt 0 ]] || rb_die "readelf found no library the binary needs"
[[ $arch == amd64 || $arch == arm64 ]] || rb_die "the .rpm's library requirements are written for 64-bit builds, not $arch"
cp deploy/package/lintian-overrides "$stage/"

nfpm=$(go -C deploy/package tool -n nfpm)
cfg=$stage/nfpm.yaml
while IFS= read -r line; do
	if [[ $line == *': MAN PAGES' ]]; then
		for page in "$stage"/man/*.1.gz; do
			p=${page##*/}
			printf '  - {src: man/%s, dst: /usr/share/man/man1/%s, packager: deb, file_info: {mode: 0644}}\n' "$p" "$p"
			printf '  - {src: man/%s, dst: /usr/share/man/man1/%s, packager: rpm, type: doc, file_info: {mode: 0644}}\n' "$p" "$p"
		done
	elif [[ $line == *': RPM REQUIRES' ]]; then
		echo "    depends:"
		for so in "${sonames[@]}"; do
			echo "      - $so()(64bit)"
		done
	else
		printf '%s\n' "$line"
	fi
done <deploy/package/nfpm.yaml >"$cfg"
grep -q 'man/rdmabench.1.gz' "$cfg" || rb_die "deploy/package/nfpm.yaml: no MAN PAGES line to list the pages at"
for packager in ${RDMABENCH_PACKAGERS:-deb rpm}; do
	[[ $packager == deb || $packager == rpm ]] || rb_die "RDMABENCH_PACKAGERS: '$packager' is neither deb nor rpm"
	(cd "$stage" && RDMABENCH_VERSION=$version RDMABENCH_ARCH=$arch RDMABENCH_DEPENDS=$depends \
		"$nfpm" package --config "$cfg" --packager "$packager" --target "$out/" >"$stage/nfpm-$packager.log" 2>&1) ||
		{ cat "$stage/nfpm-$packager.log" >&2; rb_die "nfpm $packager failed"; }
	grep -o '[^ ]*\.'"$packager"'$' "$stage/nfpm-$packager.log" | tail -1
done
