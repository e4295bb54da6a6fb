#!/usr/bin/env bash
# demo.sh: a synclab lab on this one machine, no root needed. Five hosts on
# loopback addresses (127.77.R.11-15; as root, network namespaces on one
# bridge, 10.77.0.1-5, unless -hosts loopback), each running timed
# (Berkeley, on a simulated clock up to 200 ms off), mutexd and electd,
# plus a sixth following host 1's NTP server. It shows the clocks
# converging (and plots them), the shared counter of the course notes with
# and without `mutexd lock`, and the leader killed with SIGKILL and
# replaced within a fraction of a second; each act (a Berkeley round, a
# lock handoff, the bully failover) is traced on every host and drawn as a
# space-time diagram (SVG and HTML).
#
#   scripts/demo.sh [-short] [-hosts auto|loopback|netns] [-keep] [-plot FILE] [-diagrams DIR]
#
#   -short         the short form (about 30 s), as CI runs it
#   -hosts         loopback addresses, network namespaces (root), or auto:
#                  namespaces when root, ip and nft allow
#   -keep          leave the lab running until Enter
#   -plot FILE     the chart of the clocks (default synclab-demo/clocks.svg)
#   -diagrams DIR  the acts' diagrams and traces (default synclab-demo/diagrams)
#
# What it leaves goes to synclab-demo/ in the directory you run it from
# (the chart, its samples, the diagrams and the traces they are drawn
# from); .gitignore covers it. Everything else it made (processes, files,
# namespaces) is removed when it ends, also on Ctrl-C.
#
# It first builds timed, mutexd, electd and the demo itself with
# `go build -v`, a line per package as it compiles. The first build on a
# machine downloads the Go modules and compiles them all (about 260
# packages): one to four minutes on 2 cores (64 s with an empty Go cache at
# load 5-12; 4 minutes on a slower machine); later builds take seconds.
# Then the demo runs for about a minute (-short: 30 s).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
me=demo.sh

usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
}

# The arguments are checked before anything is built: a typo must not
# cost a build. The names are the demo's flags (internal/demo: a test
# keeps both lists equal).
bool_flags=(short keep)
value_flags=(hosts plot diagrams)
argv=("$@")
for ((i = 0; i < ${#argv[@]}; i++)); do
	a=${argv[$i]}
	case $a in
	-h | -help | --help)
		usage
		exit 0
		;;
	-*) ;;
	*)
		echo "$me: unexpected argument '$a' (see $me -h)" >&2
		exit 2
		;;
	esac
	name=${a#-}
	name=${name#-}
	value_given=0
	case $name in *=*) value_given=1 name=${name%%=*} ;; esac
	if [[ " ${bool_flags[*]} " == *" $name "* ]]; then
		continue
	elif [[ " ${value_flags[*]} " == *" $name "* ]]; then
		if [ "$value_given" = 0 ]; then
			i=$((i + 1))
			[ "$i" -lt ${#argv[@]} ] || {
				echo "$me: $a needs a value (see $me -h)" >&2
				exit 2
			}
		fi
	else
		echo "$me: unknown flag '$a' (see $me -h)" >&2
		exit 2
	fi
done

command -v go >/dev/null || {
	echo "$me: go is not installed: the demo builds the daemons from this checkout (Go 1.26, https://go.dev/dl/)" >&2
	exit 1
}

bin=$(mktemp -d "${TMPDIR:-/tmp}/synclab-demo-bin.XXXXXX")
trap 'rm -rf "$bin"' EXIT
echo "== building timed, mutexd, electd and the demo (go build -v: a line per package as it compiles)"
echo "   the first build on a machine downloads the Go modules and compiles them all (about 260 packages): one to four minutes on 2 cores; later builds take seconds"
start=$SECONDS
(cd "$repo" && go build -v -o "$bin/" ./cmd/timed ./cmd/mutexd ./cmd/electd ./internal/demo) 2>&1 | sed -u 's/^/   /'
echo "== built in $((SECONDS - start)) s"
"$bin/demo" -bin "$bin" -repo "$repo" "$@"
