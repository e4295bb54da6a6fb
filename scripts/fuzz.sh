#!/usr/bin/env bash
# Runs synclab's fuzz targets, one at a time, each for a bounded time on
# one worker (-parallel 1: the lab machines are shared), and prints each
# target's executions per second and what it found. A failing input is
# written to the target's testdata/fuzz, as go test does; the script exits
# 1 if any target failed.
#
#   scripts/fuzz.sh                     every target, 60 s each
#   scripts/fuzz.sh -t 300 Central      targets whose name matches Central, 5 min each
#   scripts/fuzz.sh -l                  list the targets
#
#   -t SECONDS   fuzzing time per target (default 60)
#   -m DURATION  -fuzzminimizetime: how long go test may minimize each new
#                input (default 5s; go test's own default, 60s, stops all
#                fuzzing while it minimizes a long program)
#   -l           list the targets (package and name) and exit
set -euo pipefail
cd "$(dirname "$0")/.."

secs=60 minimize=5s list=
while getopts 't:m:l' opt; do
	case $opt in
	t) secs=$OPTARG ;;
	m) minimize=$OPTARG ;;
	l) list=1 ;;
	*) sed -n '2,17p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
pattern=${1:-.}
case $secs in '' | *[!0-9]*) echo "fuzz.sh: -t wants whole seconds, not $secs" >&2; exit 2 ;; esac

# Every func FuzzX in a _test.go file, as "package-dir name".
targets=$(git grep --untracked -E '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' -- '*_test.go' |
	sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*#./\1 \2#' | sort -u)
targets=$(echo "$targets" | grep -E -- "$pattern" || true)
if [ -z "$targets" ]; then
	echo "fuzz.sh: no fuzz target matches $pattern" >&2
	exit 2
fi
if [ -n "$list" ]; then
	echo "$targets"
	exit 0
fi

failed=0
printf '%-22s %-28s %10s %9s %5s %s\n' target package execs execs/s new result
while read -r pkg name; do
	log=$(mktemp)
	status=ok
	if ! nice -n 10 go test -run '^$' -fuzz "^${name}\$" -fuzztime "${secs}s" -fuzzminimizetime "$minimize" \
		-parallel 1 "$pkg" >"$log" 2>&1; then
		if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
			# go1.26's fuzz coordinator can report its own -fuzztime
			# deadline as a failure (golang/go#75804, fixed in go1.27):
			# no input failed.
			status='ok (go#75804)'
		else
			status=FAIL
			failed=1
		fi
	fi
	execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
	fresh=$(grep -oE 'new interesting: [0-9]+' "$log" | tail -1 | cut -d' ' -f3)
	printf '%-22s %-28s %10s %9s %5s %s\n' "$name" "$pkg" "${execs:-0}" "$(( ${execs:-0} / secs ))" "${fresh:-0}" "$status"
	if [ "$status" = FAIL ]; then
		grep -E -A12 -- '--- FAIL|Failing input|panic:' "$log" | sed 's/^/    /' >&2 || cat "$log" >&2
	fi
	rm -f "$log"
done <<<"$targets"
exit $failed
