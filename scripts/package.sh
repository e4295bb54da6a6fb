#!/usr/bin/env bash
# package.sh: build synclab's Debian package, one per architecture, from this
# checkout, with nothing but Go installed (and git for the version).
#
#   scripts/package.sh [--arch amd64,arm64] [--out DIR] [--maintainer 'NAME <EMAIL>']
#
#   --arch LIST        architectures, comma-separated (default amd64,arm64)
#   --out DIR          where the .deb files go (default dist/ in the checkout)
#   --maintainer WHO   the package's Maintainer field (default: $SYNCLAB_MAINTAINER,
#                      else "synclab packagers <synclab@example.invalid>")
#
# Each package, dist/synclab_VERSION_ARCH.deb, holds:
#   /usr/bin/X                      every command of cmd/ (static, -trimpath),
#                                   with the version and commit stamped in
#   /lib/systemd/system/*.service   every unit of systemd/, ExecStart= in /usr/bin
#   /etc/default/X                  systemd/X.env.example, as a conffile
#   /etc/synclab/                   where the cluster key goes (never made here)
#   /usr/share/man/man8/X.8.gz      `X man`
#   /usr/share/bash-completion/completions/X, /usr/share/zsh/vendor-completions/_X
#   /usr/share/doc/synclab/         README.md, docs/, the examples, copyright
# Nothing is listed by hand: a new command, unit or example lands in the
# package by being in cmd/ or systemd/.
#
# Installing creates no user (the units run with DynamicUser=: systemd makes
# the user and /var/lib/X at each start), starts and enables nothing, and
# never makes a key: the lab's one key is made with `timed keygen` on the
# first machine and copied to the others. Removing keeps /etc/default/X, the
# key and the state; purging removes them.
#
# The version is the release in internal/app (0.1.0 of 0.1.0-dev), then
# ~git<commit date>.<commit> unless HEAD is tagged v<release>; the files' times
# are the commit's (SOURCE_DATE_EPOCH), so the same commit builds the same
# package. The packaging tool is nfpm, pinned in tools/go.mod and run with
# `go -C tools tool nfpm` (the first run builds it, about 20 s).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
me=package.sh

die() {
	printf '%s: %s\n' "$me" "$*" >&2
	exit 2
}
fail() {
	printf '%s: %s\n' "$me" "$*" >&2
	exit 1
}
usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
}

arches=amd64,arm64
out=$repo/dist
maintainer=${SYNCLAB_MAINTAINER:-synclab packagers <synclab@example.invalid>}
while [ $# -gt 0 ]; do
	arg=$1
	shift
	val=
	case $arg in --*=*) val=${arg#*=} arg=${arg%%=*} ;; esac
	case $arg in
	--arch | --out | --maintainer)
		if [ -z "$val" ]; then
			[ $# -gt 0 ] || die "$arg needs a value (see $me --help)"
			val=$1
			shift
		fi
		case $arg in
		--arch) arches=$val ;;
		--out) out=$val ;;
		--maintainer) maintainer=$val ;;
		esac
		;;
	-h | --help)
		usage
		exit 0
		;;
	*) die "unknown argument '$arg' (see $me --help)" ;;
	esac
done
IFS=, read -r -a archlist <<<"$arches"
for a in "${archlist[@]}"; do
	case $a in amd64 | arm64) ;; *) die "--arch: '$a' is not one of amd64, arm64" ;; esac
done
[[ $maintainer =~ ^[^\<\>]+\ \<[^\<\>@\ ]+@[^\<\>@\ ]+\>$ ]] || die "--maintainer '$maintainer': want 'NAME <EMAIL>'"
command -v go >/dev/null || fail "go is not installed: install Go 1.26"
case $out in /*) ;; *) out=$PWD/$out ;; esac

# The version and commit.
release=$(sed -n 's/^var Version = "\([0-9][0-9.]*\)[^"]*"$/\1/p' "$repo/internal/app/app.go")
[ -n "$release" ] || fail "internal/app/app.go: no 'var Version = \"X.Y.Z...\"' line to take the release from"
if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
	commit=$(git -C "$repo" rev-parse HEAD)
	epoch=$(git -C "$repo" log -1 --format=%ct HEAD)
	if git -C "$repo" describe --exact-match --tags --match "v$release" HEAD >/dev/null 2>&1; then
		version=$release
	else
		version="$release~git$(TZ=UTC date -d "@$epoch" +%Y%m%d).${commit:0:12}"
	fi
	if [ -n "$(git -C "$repo" status --porcelain)" ]; then
		echo "$me: warning: the checkout has uncommitted changes: the package is marked .dirty and its binaries' commit -dirty" >&2
		commit=$commit-dirty
		version=$version.dirty
	fi
else
	echo "$me: warning: not a git checkout: no commit to stamp" >&2
	commit=unknown
	epoch=$(date +%s)
	version="$release~unknown"
fi
export SOURCE_DATE_EPOCH=$epoch

work=$(mktemp -d "${TMPDIR:-/tmp}/synclab-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

cmds=()
for d in "$repo"/cmd/*/; do
	d=${d%/}
	cmds+=("${d##*/}")
done
units=()
for u in "$repo"/systemd/*.service "$repo"/systemd/*.socket "$repo"/systemd/*.timer "$repo"/systemd/*.target "$repo"/systemd/*.path; do
	[ -e "$u" ] && units+=("${u##*/}")
done
[ ${#units[@]} -gt 0 ] || fail "no unit files in systemd/"

ldflags="-s -w -X github.com/synclab/synclab/internal/app.Version=$version -X github.com/synclab/synclab/internal/app.Commit=$commit"
build() { # build GOARCH DIR
	echo "== building ${cmds[*]} for linux/$1 (version $version)"
	(cd "$repo" && CGO_ENABLED=0 GOOS=linux GOARCH=$1 go build -trimpath -ldflags "$ldflags" -o "$2/" "${cmds[@]/#/./cmd/}") ||
		fail "go build for $1 failed: see the errors above"
}

# Man pages and completions come from binaries that run here; they are the
# same text whatever the architecture.
host=$(go env GOARCH)
build "$host" "$work/host"

common=$work/common
mkdir -p "$common/units" "$common/man" "$common/bash" "$common/zsh" "$common/default" "$common/examples"
for u in "${units[@]}"; do
	sed 's#/usr/local/bin/#/usr/bin/#g' "$repo/systemd/$u" >"$common/units/$u"
	if grep -q '/usr/local/' "$common/units/$u"; then
		fail "systemd/$u names /usr/local/ beyond ExecStart's /usr/local/bin/: fix the unit or this script"
	fi
done
for c in "${cmds[@]}"; do
	"$work/host/$c" man | gzip -9n >"$common/man/$c.8.gz"
	"$work/host/$c" completion bash >"$common/bash/$c"
	"$work/host/$c" completion zsh >"$common/zsh/_$c"
done
for e in "$repo"/systemd/*.example; do
	[ -e "$e" ] || continue
	n=${e##*/}
	cp "$e" "$common/examples/$n"
	case $n in
	# Any other example (the lab file's) is documentation only: a lab file
	# installed live would configure every daemon with the example's lab.
	*.env.example) cp "$e" "$common/default/${n%.env.example}" ;;
	esac
done

# The copyright file: the project's, Go's and every module linked in.
copyright=$common/copyright
{
	echo "synclab $version, built from commit $commit."
	echo
	echo "synclab's own source: Copyright the synclab authors. The repository states"
	echo "no license of its own; ask its owners before you redistribute this package."
	echo
	echo "The programs are statically linked Go binaries. They contain the Go runtime"
	echo "and standard library and the modules below, each under its license, which"
	echo "follows its name."
	echo
	echo "==> The Go runtime and standard library ($(go env GOVERSION)), $(go env GOROOT)/LICENSE"
	cat "$(go env GOROOT)/LICENSE"
	for mod in $(for c in "${cmds[@]}"; do go version -m "$work/host/$c"; done | awk '$1 == "dep" { print $2 "@" $3 }' | sort -u); do
		dir=$(cd "$repo" && go list -m -f '{{.Dir}}' "$mod") || fail "go list -m $mod failed"
		lic=$(find "$dir" -maxdepth 1 -type f \( -iname 'LICENSE*' -o -iname 'COPYING*' -o -iname 'LICENCE*' \) | sort | head -1)
		[ -n "$lic" ] || fail "$mod: no LICENSE or COPYING file in $dir: its license must be in the package"
		echo
		echo "==> $mod, ${lic##*/}"
		cat "$lic"
	done
} >"$copyright"

# A changelog entry for this build (Debian wants one in every package).
{
	echo "synclab ($version) unstable; urgency=medium"
	echo
	echo "  * Built from commit $commit."
	echo
	echo " -- $maintainer  $(LC_ALL=C TZ=UTC date -R -d "@$epoch")"
} | gzip -9n >"$common/changelog.gz"

# The maintainer scripts, with the units and the state directories this
# package's units use filled in.
services=()
statedirs=()
for u in "${units[@]}"; do
	case $u in *.service) services+=("$u") ;; esac
	for s in $(sed -n 's/^StateDirectory=//p' "$common/units/$u"); do
		statedirs+=("$s")
	done
done
for s in postinst prerm postrm; do
	sed -e "s#@SERVICES@#${services[*]}#g" -e "s#@STATEDIRS@#${statedirs[*]}#g" "$repo/packaging/deb/$s" >"$common/$s"
	chmod 0755 "$common/$s"
	if grep -q '@[A-Z]*@' "$common/$s"; then
		fail "packaging/deb/$s: a placeholder was left unfilled"
	fi
done

docfiles=("$repo/README.md")
while IFS= read -r -d '' f; do docfiles+=("$f"); done < <(cd "$repo" && find docs -type f -not -path 'docs/pending/*' -print0 | sort -z)

# yaml writes the nfpm configuration for one architecture.
yaml() { # yaml GOARCH BINDIR
	local arch=$1 bindir=$2 c u f
	cat <<EOF
name: synclab
arch: $arch
platform: linux
version: "$version"
version_schema: none
section: net
priority: optional
maintainer: "$maintainer"
description: |-
  agreement daemons for a lab LAN: time, locks, leaders, ordered multicast
  synclab keeps the machines of a lab LAN in agreement: on the time (timed,
  an NTP client and server, Cristian and Berkeley), on who may use a shared
  resource (mutexd, distributed locks with fences and leases), on who leads
  (electd, leader election) and on the order of what they tell each other
  (orderd, FIFO, causal and total order multicast). Built for university
  labs that teach distributed systems: the classic algorithms, made to
  survive crashes, loss and partitions.
  .
  Installing starts nothing and makes no key: make the lab's one key with
  "timed keygen" on the first machine and copy it to the others.
mtime: "$(TZ=UTC date -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)"
scripts:
  postinstall: $common/postinst
  preremove: $common/prerm
  postremove: $common/postrm
contents:
  - dst: /etc/synclab
    type: dir
    file_info: {mode: 0755}
EOF
	for c in "${cmds[@]}"; do
		cat <<EOF
  - src: $bindir/$c
    dst: /usr/bin/$c
    file_info: {mode: 0755}
  - src: $common/man/$c.8.gz
    dst: /usr/share/man/man8/$c.8.gz
    file_info: {mode: 0644}
  - src: $common/bash/$c
    dst: /usr/share/bash-completion/completions/$c
    file_info: {mode: 0644}
  - src: $common/zsh/_$c
    dst: /usr/share/zsh/vendor-completions/_$c
    file_info: {mode: 0644}
EOF
	done
	for u in "${units[@]}"; do
		cat <<EOF
  - src: $common/units/$u
    dst: /lib/systemd/system/$u
    file_info: {mode: 0644}
EOF
	done
	for f in "$common"/default/*; do
		[ -e "$f" ] || continue
		cat <<EOF
  - src: $f
    dst: /etc/default/${f##*/}
    type: config|noreplace
    file_info: {mode: 0644}
EOF
	done
	for f in "$common"/examples/*; do
		[ -e "$f" ] || continue
		cat <<EOF
  - src: $f
    dst: /usr/share/doc/synclab/examples/${f##*/}
    file_info: {mode: 0644}
EOF
	done
	for f in "${docfiles[@]}"; do
		cat <<EOF
  - src: $repo/${f#"$repo"/}
    dst: /usr/share/doc/synclab/${f#"$repo"/}
    file_info: {mode: 0644}
EOF
	done
	cat <<EOF
  - src: $repo/systemd/README.md
    dst: /usr/share/doc/synclab/examples/README.md
    file_info: {mode: 0644}
  - src: $copyright
    dst: /usr/share/doc/synclab/copyright
    file_info: {mode: 0644}
  - src: $common/changelog.gz
    dst: /usr/share/doc/synclab/changelog.gz
    file_info: {mode: 0644}
  - src: $repo/packaging/deb/lintian-overrides
    dst: /usr/share/lintian/overrides/synclab
    file_info: {mode: 0644}
EOF
}

nfpm() { go -C "$repo/tools" tool nfpm "$@"; }
echo "== the packaging tool: nfpm $(sed -n 's#^[[:space:]]*github.com/goreleaser/nfpm/v2 \(v[^ ]*\).*#\1#p' "$repo/tools/go.mod") (pinned in tools/go.mod; built on first use)"
nfpm --version >/dev/null || fail "go -C tools tool nfpm failed (see above): nfpm comes from the Go module proxy"

for a in "${archlist[@]}"; do
	bindir=$work/host
	if [ "$a" != "$host" ]; then
		bindir=$work/$a
		build "$a" "$bindir"
	fi
	yaml "$a" "$bindir" >"$work/nfpm-$a.yaml"
	deb=$out/synclab_${version}_$a.deb
	rm -f "$deb"
	nfpm package --config "$work/nfpm-$a.yaml" --packager deb --target "$deb" >/dev/null ||
		fail "nfpm could not build $deb (its configuration: $work/nfpm-$a.yaml)"
	echo "== $deb"
done
