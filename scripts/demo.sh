#!/usr/bin/env bash
# A synclab lab on this one machine, no root needed: five hosts on loopback
# addresses 127.0.0.11-15, each running timed (on a simulated clock) and
# electd, multicast on lo. It shows the daemons finding each other, four
# clocks up to 200 ms off converging on host 1's over NTP, the hosts
# agreeing on a leader, the leader killed with SIGKILL and a new one agreed
# within a fraction of a second, the old one returning; then it stops
# everything it started and removes its files.
#
#   scripts/demo.sh [--keep]   (--keep: leave the lab running until Enter)
set -euo pipefail
cd "$(dirname "$0")/.."

keep=0
[ "${1:-}" = "--keep" ] && keep=1

hosts=5
work=$(mktemp -d /tmp/synclab-demo.XXXXXX)
pids=()
cleanup() {
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "building timed, mutexd and electd"
go build -o "$work/bin/" ./cmd/...

members() { # members PORT
	local m="" i
	for i in $(seq 1 $hosts); do m+="${m:+,}$i=127.0.0.1$i:$1"; done
	echo "$m"
}
timed_members=$(members 7300)
electd_members=$(members 7500)

# start DAEMON ID ARGS...: one daemon of one host, logs in $work/hID/DAEMON.log
start() {
	local d=$1 id=$2
	shift 2
	mkdir -p "$work/h$id"
	"$work/bin/$d" run --id "$id" --control "$work/h$id/$d.sock" --state-dir "$work/h$id/$d.state" \
		--multicast 239.77.0.1:$((7399 + ${#d})) --interface lo --multicast-ttl 0 "$@" \
		>>"$work/h$id/$d.log" 2>&1 &
	pids+=($!)
	eval "pid_${d}_$id=$!"
}

say "starting $hosts hosts on 127.0.0.11-1$hosts: timed on simulated clocks up to ±200 ms off, and electd"
echo "host 1's timed serves NTP (stratum 8, its clock is the reference); hosts 2-$hosts follow it with --server"
ntp_server=127.0.0.11:12300
for i in $(seq 1 $hosts); do
	if [ "$i" = 1 ]; then
		start timed 1 --members "$timed_members" --clock sim --serve "$ntp_server" --stratum 8
	else
		offset=$(( (RANDOM % 401) - 200 ))ms
		drift=$(( (RANDOM % 61) - 30 ))
		start timed "$i" --members "$timed_members" --clock sim --sim-offset "$offset" --sim-drift "$drift" --server "$ntp_server"
	fi
	start electd "$i" --members "$electd_members"
done

now_ms() { echo $(($(date +%s%N) / 1000000)); }
elapsed() { local ms=$(($(now_ms) - $1)); printf '%d.%03d' $((ms / 1000)) $((ms % 1000)); }

status() { "$work/bin/$1" status --control "$work/h$2/$1.sock" "${@:3}"; }

wait_for() { # wait_for SECONDS CMD...: poll until CMD succeeds
	local deadline=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.1
	done
}
# all_alive DAEMON HOST N: the daemon on HOST sees exactly N other hosts alive
all_alive() { status "$1" "$2" --json | grep -o '"alive": *true' | wc -l | grep -qx "$3"; }

wait_for 10 all_alive timed 1 $((hosts - 1))
say "timed on host 1 sees every host (heartbeats over multicast on lo)"
status timed 1

true_offsets() { # one line: every host's exact clock error, from the simulated clocks
	local i line=""
	for i in $(seq 1 $hosts); do
		line+=$(status timed "$i" --json | sed -n 's/.*"true_offset_ns": *\(-\{0,1\}[0-9]*\).*/\1/p' | awk -v h="$i" '{printf "  h%d %+10.3f ms", h, $1/1e6}')
	done
	echo "$line"
}
# synced HOST: the host's true clock error is under 1 ms
synced() { status timed "$1" --json | sed -n 's/.*"true_offset_ns": *-\{0,1\}\([0-9]*\).*/\1/p' | awk '{exit !($1 < 1000000)}'; }
all_synced() { local i; for i in $(seq 2 $hosts); do synced "$i" || return 1; done; }

say "true clock offsets (ground truth of the simulated clocks), once a second"
t0=$(now_ms)
for _ in $(seq 1 12); do
	printf '%5ss%s\n' "$(elapsed "$t0")" "$(true_offsets)"
	all_synced && break
	sleep 1
done
if all_synced; then
	printf 'every clock within 1 ms of true time after %s s; a few seconds later:\n' "$(elapsed "$t0")"
	sleep 3
	printf '%5ss%s\n' "$(elapsed "$t0")" "$(true_offsets)"
else
	echo "not every clock converged within 12 s (see $work/h*/timed.log)"
fi
status timed 2 | sed -n '/^NTP client/,$p'

# agreed: every running electd reports the same leader; prints it
agreed() {
	local i lead="" l
	for i in $(seq 1 $hosts); do
		[ -n "${dead:-}" ] && [ "$i" = "$dead" ] && continue
		l=$(status_leader "$i") || return 1
		[ -z "$lead" ] || [ "$l" = "$lead" ] || return 1
		lead=$l
	done
	echo "$lead"
}
status_leader() { "$work/bin/electd" leader --json --control "$work/h$1/electd.sock" 2>/dev/null | sed -n 's/.*"leader":\([0-9]*\).*/\1/p'; }
agreed_on() { [ "$(agreed)" = "$1" ]; }
leader_is_not() { local l; l=$(agreed) && [ -n "$l" ] && [ "$l" != "$1" ]; }

wait_for 10 agreed
leader=$(agreed)
say "electd: all $hosts hosts agree that host $leader leads (bully: the highest live ID wins)"
"$work/bin/electd" leader --control "$work/h1/electd.sock"

say "SIGKILL the leader (electd on host $leader)"
dead=$leader
eval "lpid=\$pid_electd_$leader"
t0=$(now_ms)
{ kill -KILL "$lpid" && wait "$lpid"; } 2>/dev/null || true
wait_for 10 leader_is_not "$dead"
printf 'every survivor agrees on host %s after %s s\n' "$(agreed)" "$(elapsed "$t0")"
status electd 1

say "restarting electd on host $dead: it outranks the new leader and takes over in a higher term"
start electd "$dead" --members "$electd_members"
dead=""
t0=$(now_ms)
wait_for 10 agreed_on "$leader"
printf 'host %s leads again after %s s\n' "$leader" "$(elapsed "$t0")"
"$work/bin/electd" leader --control "$work/h1/electd.sock"

if [ $keep = 1 ]; then
	say "lab running in $work (status: $work/bin/electd status --control $work/h1/electd.sock); Enter stops it"
	read -r _
fi
say "done: stopping ${#pids[@]} daemons and removing $work"
