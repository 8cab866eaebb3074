#!/usr/bin/env bash
# Check the packages of scripts/package.sh for real: lintian and rpmlint
# on them, then the .deb in a clean Debian root (this machine's release,
# made with mmdebstrap from the archive its apt uses, as scripts/image.sh
# does): it installs with apt-get, `man rdmabench` shows the page, bash
# completes its flags, the unit is where systemd looks, disabled, and
# systemd-analyze verify accepts it, a newer build upgrades it keeping
# the configuration, removal leaves only the configuration, purge
# nothing at all. Prints a --- PASS or --- FAIL line for each.
#
# Usage: scripts/package-check.sh [DIR]     (DIR keeps the packages)
#
# The root's packages (the RDMA libraries, man-db, bash-completion,
# systemd) are fetched once and kept as a tarball under
# ${XDG_CACHE_HOME:-~/.cache}/rdmabench; RDMABENCH_APT_MIRROR overrides
# the archive. Needs root (chroot): otherwise it says so and exits 77.
set -euo pipefail
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
cd "$(dirname -- "${BASH_SOURCE[0]}")/.."

case ${1:-} in
-h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
-*) rb_die "usage: scripts/package-check.sh [DIR]" ;;
esac
if [[ $(id -u) -ne 0 ]]; then
	echo "--- SKIP: package (installing into a clean root needs root: chroot)"
	exit 77
fi
rb_need lintian lintian
rb_need rpmlint rpmlint
rb_need mmdebstrap mmdebstrap
rb_need unshare util-linux

work=$(mktemp -d "${TMPDIR:-/tmp}/rdmabench-package-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
out=${1:-$work/packages}
mkdir -p "$out"
fail=0
pass() { echo "--- PASS: package/$1 ($2)"; }
failed() {
	echo "--- FAIL: package/$1: $2"
	fail=1
}

# Two builds: this one, and a newer one to upgrade to.
start=$SECONDS
mapfile -t built < <(scripts/package.sh "$out/old" 2>"$work/build.log") || { cat "$work/build.log" >&2; rb_die "scripts/package.sh failed"; }
deb=$(printf '%s\n' "${built[@]}" | grep '\.deb$')
rpm=$(printf '%s\n' "${built[@]}" | grep '\.rpm$')
old=$(dpkg-deb -f "$deb" Version)
newer=${old%-1}.1
new_deb=$(RDMABENCH_PACKAGERS=deb scripts/package.sh "$out/new" "$newer" 2>>"$work/build.log") || { cat "$work/build.log" >&2; rb_die "scripts/package.sh $newer failed"; }

rb_log "two builds: $((SECONDS - start)) s"
start=$SECONDS

# The distributions' linters: no error, and no warning that no override
# explains (deploy/package/lintian-overrides, rpmlint.toml).
if lintian --fail-on error,warning "$deb" >"$work/lintian.log" 2>&1; then
	pass lintian "$(grep -c '^I:' "$work/lintian.log" || true) notes, no error or warning"
else
	failed lintian "$(grep -E '^[EW]:' "$work/lintian.log" | head -5 | paste -sd';' -)"
fi
if rpmlint -c deploy/package/rpmlint.toml "$rpm" >"$work/rpmlint.log" 2>&1 &&
	grep -q ' 0 errors, 0 warnings' "$work/rpmlint.log"; then
	pass rpmlint "$(grep -o '[0-9]* errors, [0-9]* warnings' "$work/rpmlint.log")"
else
	failed rpmlint "$(grep -E ': [EW]: ' "$work/rpmlint.log" | head -5 | paste -sd';' -)"
fi

rb_log "linters: $((SECONDS - start)) s"
start=$SECONDS

# The clean root, from a tarball made once.
release=$(rb_os_release)
mirror=$(rb_apt_mirror)
include=libibverbs1,librdmacm1,man-db,bash-completion,systemd
cache=${XDG_CACHE_HOME:-$HOME/.cache}/rdmabench
excluded=(/usr/share/locale/* /usr/share/doc/*)
key=$(printf '%s %s %s %s\n' "$release" "$mirror" "$include" "${excluded[*]}" | sha256sum | cut -c1-16)
base=$cache/package-root-$release-$key.tar
if [[ ! -s $base ]]; then
	rb_log "making the clean root from $release's packages ($mirror), once"
	mkdir -p "$cache"
	mmdebstrap --quiet --variant=minbase --include="$include" \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/rdmabench/*' \
		"$release" "$work/base.tar" "$mirror" >"$work/mmdebstrap.log" 2>&1 ||
		{ tail -5 "$work/mmdebstrap.log" >&2; rb_die "mmdebstrap failed"; }
	mv "$work/base.tar" "$base"
fi
root=$work/root
mkdir -p "$root"
tar -xf "$base" -C "$root"
cp "$deb" "$root/tmp/old.deb"
cp "$new_deb" "$root/tmp/new.deb"
# in_root CMD...: CMD in the root, with /proc (bash's /dev/fd) mounted in
# a mount namespace of its own, gone when CMD ends.
in_root() {
	unshare --mount --fork --mount-proc="$root/proc" \
		chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 HOME=/root TERM=dumb "$@"
}
# files: what the root holds, less what dpkg, apt and man-db keep of their own.
files() {
	(cd "$root" && find . \( -path ./var/lib/dpkg -o -path ./var/lib/apt -o -path ./var/cache -o -path ./var/log -o -path ./tmp -o -path ./run -o -path ./proc -o -path ./dev \) -prune -o -print | sort)
}
files >"$work/before"
rb_log "the clean root: $((SECONDS - start)) s"
start=$SECONDS

if in_root apt-get install -y -q --no-install-recommends /tmp/old.deb >"$work/install.log" 2>&1 &&
	[[ $(in_root rdmabench --version | head -1) == "rdmabench v${old%-1}" ]]; then
	pass install "apt-get install ./$(basename "$deb"): $(in_root rdmabench --version | head -1)"
else
	failed install "$(tail -3 "$work/install.log" | paste -sd';' -)"
fi

page=$(in_root env MANWIDTH=80 man rdmabench 2>&1 || true)
mesh=$(in_root env MANWIDTH=80 man rdmabench-mesh 2>&1 || true)
if [[ $page == *"rdmabench - "* && $page == *SYNOPSIS* && $mesh == *"--host-level   ranks are hosts"* ]]; then
	pass man "man rdmabench and man rdmabench-mesh (its schedule a table) from the installed pages"
else
	failed man "man rdmabench: $(head -3 <<<"$page" | paste -sd';' -)"
fi

# bash as a user's: bash-completion loads rdmabench's on demand.
words=$(in_root bash -c '
	. /usr/share/bash-completion/bash_completion
	_completion_loader rdmabench
	COMP_WORDS=(rdmabench write-lat --mem "") COMP_CWORD=3 COMP_LINE="rdmabench write-lat --mem " COMP_POINT=26
	$(complete -p rdmabench | sed -n "s/.*-F \([^ ]*\) .*/\1/p") rdmabench "" --mem
	echo "${COMPREPLY[*]}"' 2>"$work/completion.log" || true)
zsh=/usr/share/zsh/vendor-completions/_rdmabench fish=/usr/share/fish/vendor_completions.d/rdmabench.fish
if [[ $words == "host hugepages hugepages:1G cuda" && -s $root$zsh && -s $root$fish ]]; then
	pass completion "bash: rdmabench write-lat --mem <TAB> offers $words; zsh's and fish's installed"
else
	failed completion "bash offers '$words' ($(head -2 "$work/completion.log" | paste -sd';' -)); zsh's $(test -s "$root$zsh" && echo there || echo missing), fish's $(test -s "$root$fish" && echo there || echo missing)"
fi

unit=/lib/systemd/system/rdmabench-agent.service
if [[ -s $root$unit ]] && grep -q '^ExecStart=/usr/bin/rdmabench agent ' "$root$unit" &&
	[[ ! -e $root/etc/systemd/system/multi-user.target.wants/rdmabench-agent.service ]] &&
	[[ $(in_root systemctl is-enabled rdmabench-agent.service 2>&1 || true) == disabled ]] &&
	verify=$(in_root systemd-analyze verify "$unit" 2>&1) && [[ -z $verify ]]; then
	pass unit "$unit installed, disabled; systemd-analyze verify accepts it"
else
	failed unit "$unit: $(in_root systemctl is-enabled rdmabench-agent.service 2>&1 || true); verify: ${verify:-}"
fi

# Upgrade: the configuration edited here stays as edited.
echo "node9" >>"$root/etc/rdmabench/peers"
if in_root apt-get install -y -q /tmp/new.deb >"$work/upgrade.log" 2>&1 &&
	[[ $(in_root rdmabench --version | head -1) == "rdmabench v$newer" ]] &&
	[[ $(tail -1 "$root/etc/rdmabench/peers") == node9 ]] &&
	[[ -z $(find "$root/etc" -name '*.dpkg-*') ]]; then
	pass upgrade "to $newer: the binary upgraded, the edited peers file kept, no .dpkg-* left"
else
	failed upgrade "$(tail -3 "$work/upgrade.log" | paste -sd';' -); $(in_root rdmabench --version 2>&1 | head -1)"
fi

in_root apt-get remove -y -q rdmabench >"$work/remove.log" 2>&1 || true
files >"$work/removed"
left=$(comm -13 "$work/before" "$work/removed" | paste -sd' ' -)
if [[ $(in_root dpkg-query -W -f='${db:Status-Status}' rdmabench 2>&1) == config-files &&
	$left == "./etc/default/rdmabench-agent ./etc/rdmabench ./etc/rdmabench/peers" ]]; then
	pass remove "only the configuration left: $left"
else
	failed remove "left: $left; $(tail -2 "$work/remove.log" | paste -sd';' -)"
fi

in_root apt-get purge -y -q rdmabench >"$work/purge.log" 2>&1 || true
files >"$work/purged"
left=$(comm -3 "$work/before" "$work/purged" | paste -sd' ' -)
if [[ -z $left ]] && ! in_root dpkg-query -W rdmabench >/dev/null 2>&1; then
	pass purge "the root as before the install"
else
	failed purge "differs from before the install: $left"
fi
rb_log "in the root: $((SECONDS - start)) s"
exit "$fail"
