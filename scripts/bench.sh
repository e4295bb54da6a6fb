#!/usr/bin/env bash
# bench.sh: the synclab benchmarks. Each measures a daemon on an emulated LAN
# of network namespaces (scripts/lab.sh, internal/testkit/labnet) and a reference
# system in the same run, and prints the figures side by side with the
# project's targets. Not part of the pass/fail tests.
#
# Usage:
#   bench.sh elect [--algorithm NAME|all] [--trials N] [--idle D] [--loss PCT]
#                  [--traffic D] [--settle D] [--partition D] [--big N] [--big-trials N]
#                  [--tuned 'ELECTD-FLAGS']... [--keep DIR] [--no-trial-traces]
#       electd against etcd 3.4's election (single node, 2 s lease): failover
#       after SIGKILL of the leader (p50/p99/max over N trials, default 20;
#       electd with default flags over unicast and with multicast heartbeats,
#       and one more column per --tuned set of flags), false elections
#       in an idle period D (default 10m) with PCT% loss (default 5) on every
#       host, messages per election, idle traffic per node over --traffic
#       (default 30s), RSS. --algorithm (default bully) picks electd's
#       algorithm; `all` measures every one of pkg/elect/algorithms side by
#       side (bully over unicast and multicast, the others over unicast),
#       with messages per election at 5 and --big (default 16) hosts beside
#       the notes' cost (and the failover there, over --big-trials
#       kills, default 3), and the time two nodes both lead during a
#       --partition (default 5s) of {1,2} from {3,4,5}. Every failover
#       trial is traced (electd trace start on every member before the
#       kill, stop once the survivors agree); the traces of a trial over
#       the goal, with more election frames than the run's fewest, or in
#       which no survivor took a port hint are kept in --keep (default: a
#       new synclab-elect-traces-TIME under $TMPDIR or /tmp, made only if a
#       trial is kept) and named in the output with the trial's frames by
#       kind. Each trial's line says when the killed process was reaped
#       and, for bully, each survivor's port hint (its link to the leader
#       up before the kill, when the port closed, the hints it took and
#       ignored, given up on one or timed out);
#       --no-trial-traces traces nothing (to measure what tracing costs).
#       Installs etcd-server and etcd-client if missing.
#   bench.sh mutex [--algorithm NAME[,NAME...]|all] [--samples N] [--window D] [--clients N]
#                  [--trials N] [--traffic D] [--count-hosts N] [--flags 'MUTEXD-FLAGS'] [--no-faults|--recovery-only]
#       every mutexd algorithm (pkg/mutex/algorithms; --algorithm picks one or a comma-separated list,
#       default all), one 5-host cluster after the other, against etcd 3.4's
#       lock (one node; its v3lock gateway and etcdctl lock), in one table:
#       messages per entry measured (frames sent by all daemons / entries)
#       beside the notes' figure, uncontended acquire+release p50/p99 through
#       the API (--samples, default 2000) and the CLIs, handoffs/s and wait
#       with --clients (default 8) contending for one lock over --window
#       (default 5s), idle traffic per node over --traffic (default 10s),
#       recovery after SIGKILL of the holder, of the last holder and of a
#       bystander (--trials, default 5), after the holder is partitioned
#       alone or its daemon paused 5 s (--trials each), with the link between
#       the holder and a waiter cut while the holder keeps the lock 6 s (two
#       holders, or the handoff after its release; --trials), RSS; then the message counts alone
#       on --count-hosts hosts (default 16; 0 skips). --flags are added to
#       every mutexd run. --no-faults skips every fault trial (recovery,
#       partition, pause, link cut, maker kill): latency, throughput and
#       cost only, for quick A/B runs; --recovery-only runs only the
#       recovery trials (holder, last holder, bystander) and etcd's, for
#       quick A/B runs of recovery. Installs etcd-server and etcd-client.
#   bench.sh mutex-profile [--algorithm NAME[,NAME...]] [--samples N]
#       one uncontended entry taken apart, step by step, from mutexd's traces
#       (--trace on h1..h5): the request leaving, reaching the peers, their
#       answers, the grant, the release; median offsets from the acquire call
#       (default ricartagrawala,lamport, 200 entries each).
#   bench.sh timesync [--warmup D] [--window D] [--load D] [--conns N]
#                     [--impair [--jitter D] [--asym D]] [--no-serve-ab]
#       timed's NTP client against chronyd's (-x), both following one chronyd
#       server every second: |error| p50/p99 over --window (default 2m) after
#       --warmup (default 1m), time to 1 ms and 100 us from +-100 ms, NTP
#       server replies/s (--conns closed loops for --load, default 8 and 5s),
#       timed's RSS and CPU. With --impair, then the same accuracy figures on
#       a lab built on the user-space switch (another warm-up and window),
#       three conditions at once: no impairment, symmetric jitter (each
#       direction uniform over 0..2x --jitter, default 250us) and asymmetry
#       (client->server --asym slower, default 400us, which biases ANY NTP
#       client by half of it). Last, unless --no-serve-ab, the NTP server
#       A/B against chronyd of `bench.sh ntpserve` with its defaults.
#       Installs chrony if missing (never starting it).
#   bench.sh ntpserve [--load D] [--rounds N] [--clients 1,8,32] [--no-floor]
#       timed's NTP server against chronyd's (-x), A/B on one namespace LAN
#       with the same per-client rate limit on both (2^-19 s, burst 8):
#       replies/s from 1, 8 and 32 closed request loops, each from its own
#       address (--clients), --rounds runs of --load each per server and
#       concurrency (default 5 and 3s, taking turns; the median is compared),
#       the servers' CPU per reply and share of a core, and VmRSS idle and
#       under load, read the same way for both. Unless --no-floor (or
#       without cc), the floor too: a minimal C server (blocking recvmmsg,
#       sendmmsg, nothing else; internal/testkit/bench/testdata/ntpfloor.c)
#       taking its turns beside them. About three minutes. Installs chrony
#       if missing (never starting it).
#   bench.sh berkeley [--warmup D] [--window D] [--trials N] [--seed S] [--no-unicast]
#       timed --mode berkeley on 8 hosts, simulated clocks at random +-200 ms and
#       +-50 ppm: time to converge to 1 ms and 100 us, group precision (max
#       pairwise true offset difference) p50/p99 over --window (default 2m)
#       after --warmup (default 1m), first round under a new master after
#       SIGKILL of the master (--trials, default 10), frames per round; with
#       multicast polls, then unicast (unless --no-unicast), then a group of 4
#       for the traffic's growth. No reference system (chronyd -x cannot move
#       its clock). Needs nothing beyond iproute2 and nftables.
#   bench.sh idle [--window D] [--scale N] [--settle D]
#       what each daemon costs while nothing happens: three members of
#       electd, mutexd, orderd and timed's cluster on loopback, and timed as
#       an NTP server alone and as a client following it, at their defaults;
#       each process's CPU time (its threads' schedstat, in ns) over --window
#       (default 30s) as a share of one core, mean and max, and the largest
#       VmRSS at the end. Targets (issue 34): <= 0.1% and <= 8 MB for every
#       daemon. --scale N (4..64) adds electd clusters of N members (omega,
#       bully), their whole CPU (target: <= 5% of a core at 64) and the
#       frames they send a second, after --settle (default 5s; at 64 members
#       the configuration announcements reach their rest after ~70s). No
#       lab, no reference system.
#   bench.sh pv [--n N] [--m M] [--rate R] [--hold D] [--acquisitions A] [--seed S]
#       the course notes' P_v experiment on the simulator (scripts/bench-pv.sh): the
#       majority quorum of N coordinators (default 5) with quorum M (default
#       3), each restarted R times a second (Poisson, default 0.5), two
#       clients holding for D (default 200ms), A acquisitions (default 1000),
#       in three arms (votes forgotten and given again at once; forgotten
#       but no vote for a lease after a restart, mutexd's default; written
#       to disk per vote): violations per acquisition beside the notes'
#       formula. No root, no lab.
#   bench.sh order [--samples N] [--burst N] [--trials N]
#       orderd (5 hosts) against etcd 3.4 used as an ordered log (put +
#       watch; one node, then a 5-member cluster with the puts at its
#       leader, then at a follower): frames per multicast per order at 5
#       and 16 members beside the notes' counts (simulator), delivery
#       latency p50/p99 per order over --samples multicasts (default 200)
#       to every member, multicasts/s with every host sending --burst
#       (default 200) back to back, the Lamport total order too, and
#       recovery after SIGKILL of the sequencer (--trials, default 5).
#       Installs etcd-server and etcd-client.
#   bench.sh list                the benchmarks
#   bench.sh help                this text
#
#   bench.sh --record[=DIR] NAME [ARGS...]
#       run NAME as above and, when it succeeds, keep its output as a dated
#       result file, DIR/YYYY-MM-DD-HHMM-NAME.md (default DIR: docs/benchmarks),
#       headed by the date, the machine (kernel, CPUs, memory), the load
#       average at the start and the end, the commit and the command. Then
#       add what the run shows, and its line in docs/benchmarks/README.md.
#
# Every benchmark needs root (it builds network namespaces and may install
# the reference system with apt-get, never starting the services packages
# ship). Durations are Go durations: 500ms, 30s, 2m, 10m. The lab's traffic
# stays inside its own namespaces; nothing it starts can set the clock.
# Everything the run starts (lab namespaces, processes, temp directories) is
# removed when it ends, also on Ctrl-C.
#
# To add a benchmark NAME: write bench_NAME (parse its flags, call
# need_root, need_packages, setup, build, run_go_bench) and a line for it
# above; `list` and the dispatcher find it by its name.
set -Eeuo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
readonly REPO
prog=$(basename "$0")
readonly GUARD=/usr/sbin/policy-rc.d

WORK=""         # temporary directory of this run: binaries, sockets, logs
PREFIX=""       # lab namespace prefix of this run
child=""        # PID of the running measurement
created_guard=0 # we wrote $GUARD and must remove it
saved_guard=""  # the $GUARD that was there before ours, to put back

die() {
	echo "$prog: $*" >&2
	exit 1
}

usage() {
	sed -n '/^# Usage/,/^# Every benchmark/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

log() { echo "[$(date +%T)] $*" >&2; }

# benchmarks lists the defined benchmarks: every function bench_NAME.
benchmarks() { declare -F | sed -n 's/^declare -f bench_//p'; }

# need_root BENCHMARK ARGS...: fails, saying how to rerun, unless root with Go.
need_root() {
	local again
	again="$0 $(printf '%q ' "$@")"
	[ "$(id -u)" = 0 ] || die "must run as root: benchmarks build network namespaces (CAP_SYS_ADMIN, CAP_NET_ADMIN) and install their reference systems with apt-get. Run: sudo $again"
	command -v go >/dev/null || die "go not found in PATH (as root): install Go 1.26 or run: sudo env PATH=\"\$PATH\" $again"
}

# need_packages installs the Debian packages that are missing, with a
# policy-rc.d guard so that no service they ship starts (etcd-server's would
# listen on 127.0.0.1:2379 and outlive the run). Afterwards the guard is
# removed, or the one that was there before put back.
need_packages() {
	local p missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	# Our guard goes in even over an existing one, which might allow
	# starts: that one is kept aside and put back afterwards.
	if [ -e "$GUARD" ]; then
		saved_guard=$(mktemp "$GUARD.synclab.XXXXXX")
		cp -p "$GUARD" "$saved_guard"
	fi
	created_guard=1
	printf '#!/bin/sh\n# synclab bench.sh: never start services while installing benchmark dependencies\nexit 101\n' >"$GUARD.new"
	chmod 755 "$GUARD.new"
	mv -f "$GUARD.new" "$GUARD"
	log "installing ${missing[*]} (services will not be started)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null || apt-get update
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	remove_guard
	# The packages also enable their services for the next boot: a
	# benchmark dependency must not become a running etcd, or a chronyd
	# setting the clock, after a reboot.
	for p in "${missing[@]}"; do
		command -v systemctl >/dev/null || break
		case $p in
		etcd-server) systemctl disable --quiet etcd.service 2>/dev/null || true ;;
		chrony) systemctl disable --quiet chrony.service 2>/dev/null || true ;;
		esac
	done
}

remove_guard() {
	if [ "$created_guard" = 1 ]; then
		if [ -n "$saved_guard" ]; then
			mv -f "$saved_guard" "$GUARD"
			saved_guard=""
		else
			rm -f "$GUARD"
		fi
		created_guard=0
	fi
}

# setup makes the run's temporary directory (also TMPDIR, so the Go side's
# temporary files land in it) and picks a lab prefix of its own, so the
# cleanup knows exactly what is ours.
setup() {
	WORK=$(mktemp -d /tmp/synclab-bench.XXXXXX)
	export TMPDIR=$WORK
	PREFIX="slb$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
}

# build PKG... compiles the given commands (./cmd/electd) as scripts/install.sh
# ships them (static, CGO_ENABLED=0: no libc mapped in) and the measuring
# code (package internal/testkit/bench) into $WORK/bin.
build() {
	log "building $* and the benchmark harness"
	(cd "$REPO" && CGO_ENABLED=0 go build -trimpath -o "$WORK/bin/" "$@" && go test -c -o "$WORK/bin/bench.test" ./internal/testkit/bench)
}

# run_go_bench NAME ARGS...: runs BenchmarkNAME of internal/testkit/bench once, in
# the background so that a signal reaches this script at once and can be
# passed on; the harness then tears its lab down itself.
run_go_bench() {
	local name=$1
	shift
	(cd "$REPO/internal/testkit/bench" && exec "$WORK/bin/bench.test" -test.run '^$' -test.bench "^Benchmark$name\$" \
		-test.benchtime 1x -test.timeout 0 "$@") &
	child=$!
	local rc=0
	wait "$child" || rc=$?
	child=""
	return "$rc"
}

# stop_child asks the measurement to stop (SIGINT: it cancels and runs its
# cleanups), then kills it by PID if it has not ended within 30 s.
stop_child() {
	[ -n "$child" ] || return 0
	kill -INT "$child" 2>/dev/null || return 0
	local i
	for ((i = 0; i < 300; i++)); do
		kill -0 "$child" 2>/dev/null || { wait "$child" 2>/dev/null || true; child=""; return 0; }
		sleep 0.1
	done
	echo "$prog: the measurement (pid $child) did not stop within 30 s: killing it" >&2
	kill -KILL "$child" 2>/dev/null || true
	wait "$child" 2>/dev/null || true
	child=""
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	stop_child
	# The harness removes its lab; if it was killed first, lab.sh removes
	# the namespaces it recorded (by this run's prefix only) and kills the
	# processes left in them, by PID.
	if [ -n "$PREFIX" ] && { [ -d "/run/synclab-lab-$PREFIX" ] || ip netns list 2>/dev/null | grep -q "^$PREFIX-"; }; then
		echo "$prog: removing lab $PREFIX left behind" >&2
		"$REPO/scripts/lab.sh" down --prefix "$PREFIX" >&2 || echo "$prog: lab.sh down --prefix $PREFIX failed: remove it by hand" >&2
	fi
	remove_guard
	if [ -n "$WORK" ]; then
		rm -rf "$WORK"
	fi
	finish_record "$rc" "$BENCH_NAME"
	exit "$rc"
}

on_signal() {
	echo "$prog: interrupted: stopping and cleaning up" >&2
	exit 130 # runs cleanup
}

# Recording (--record): the run's output goes to the terminal and, through
# tee, to $RECORD_RAW; finish_record makes the dated file of it.
RECORD_DIR=""   # where the result file goes
RECORD_RAW=""   # the run's output so far
RECORD_TEE=""   # PID of the tee
RECORD_HEAD=""  # the file's header, known at the start

machine() {
	local cpu mem
	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
	mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
	echo "$(uname -srm), $(nproc) CPUs${cpu:+ ($cpu)}, $mem"
}

start_record() { # start_record NAME ARGS...
	local name=$1 commit
	shift
	mkdir -p "$RECORD_DIR" || die "--record: cannot create $RECORD_DIR"
	commit=$(git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
	if [ -n "$(git -C "$REPO" status --porcelain 2>/dev/null)" ]; then
		commit="$commit, with uncommitted changes"
	fi
	RECORD_HEAD=$(
		printf '# %s, %s UTC\n\n' "$name" "$(date -u '+%Y-%m-%d %H:%M')"
		printf -- '- command: `scripts/bench.sh %s`\n' "$(printf '%q ' "$name" "$@" | sed 's/ $//')"
		printf -- '- machine: %s\n' "$(machine)"
		printf -- '- commit: %s\n' "$commit"
		printf -- '- load average (1, 5, 15 min) at the start: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
	)
	RECORD_RAW=$(mktemp "${TMPDIR:-/tmp}/synclab-bench-record.XXXXXX")
	exec 3>&1 4>&2
	exec > >(tee -a "$RECORD_RAW") 2>&1
	RECORD_TEE=$!
}

# finish_record RC NAME: writes the result file if the run succeeded.
finish_record() {
	local rc=$1 name=$2 file
	[ -n "$RECORD_RAW" ] || return 0
	exec 1>&3 2>&4 3>&- 4>&-
	wait "$RECORD_TEE" 2>/dev/null || true
	if [ "$rc" != 0 ]; then
		echo "$prog: not recorded: the run failed (exit $rc)" >&2
	else
		file=$RECORD_DIR/$(date -u +%Y-%m-%d-%H%M)-$name.md
		{
			echo "$RECORD_HEAD"
			printf -- '- load average at the end: %s\n\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
			echo '```'
			cat "$RECORD_RAW"
			echo '```'
		} >"$file"
		echo "$prog: recorded in $file: add what the run shows, and its line in docs/benchmarks/README.md" >&2
	fi
	rm -f "$RECORD_RAW"
	RECORD_RAW=""
}

is_duration() { [[ $1 =~ ^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$ ]]; }

bench_elect() {
	local trials=20 idle=10m loss=5 traffic=30s settle=1s algorithm=bully partition=5s big=16 bigtrials=3 tuned=() keep="" traces=true argv=("$@")
	while [ $# -gt 0 ]; do
		case $1 in
		--algorithm) algorithm=${2:?--algorithm needs a name or all} && shift ;;
		--partition) partition=${2:?--partition needs a duration} && shift ;;
		--big) big=${2:?--big needs a number of hosts} && shift ;;
		--big-trials) bigtrials=${2:?--big-trials needs a number} && shift ;;
		--trials) trials=${2:?--trials needs a number} && shift ;;
		--idle) idle=${2:?--idle needs a duration} && shift ;;
		--loss) loss=${2:?--loss needs a percentage} && shift ;;
		--traffic) traffic=${2:?--traffic needs a duration} && shift ;;
		--settle) settle=${2:?--settle needs a duration} && shift ;;
		--tuned) tuned+=("${2:?--tuned needs electd flags}") && shift ;;
		--keep) keep=${2:?--keep needs a directory} && shift ;;
		--no-trial-traces) traces=false ;;
		-h | --help) usage ;;
		*) echo "$prog elect: unknown argument '$1'" >&2 && usage ;;
		esac
		shift
	done
	if ! [[ $trials =~ ^[0-9]{1,6}$ ]] || [ "$trials" -lt 1 ]; then
		die "elect: --trials $trials: want a whole number >= 1"
	fi
	if ! [[ $bigtrials =~ ^[0-9]{1,4}$ ]] || [ "$bigtrials" -lt 1 ]; then
		die "elect: --big-trials $bigtrials: want a whole number >= 1"
	fi
	if ! [[ $loss =~ ^[0-9]{1,3}$ ]] || [ "$loss" -gt 100 ]; then
		die "elect: --loss $loss: want a percentage 0..100"
	fi
	[ "$idle" = 0 ] || is_duration "$idle" || die "elect: --idle $idle: want a duration such as 10m (0 skips the idle phase)"
	is_duration "$traffic" || die "elect: --traffic $traffic: want a duration such as 30s"
	is_duration "$settle" || die "elect: --settle $settle: want a duration such as 1s"
	[ "$partition" = 0 ] || is_duration "$partition" || die "elect: --partition $partition: want a duration such as 5s (0 skips it)"
	if ! [[ $big =~ ^[0-9]{1,2}$ ]] || { [ "$big" -ne 0 ] && [ "$big" -lt 6 ]; } || [ "$big" -gt 64 ]; then
		die "elect: --big $big: want a number of hosts 6..64 (0 skips it)"
	fi
	[[ $algorithm =~ ^[a-z0-9-]{1,40}$ ]] || die "elect: --algorithm $algorithm: want an algorithm name (electd run --help lists them) or all"

	# Outside the run's temporary directory, which is removed at its end;
	# made only when a trial is kept.
	keep=$(realpath -m "${keep:-${TMPDIR:-/tmp}/synclab-elect-traces-$(date -u +%Y%m%d-%H%M%S)}")

	need_root elect "${argv[@]}"
	need_packages iproute2 nftables etcd-server etcd-client
	setup
	build ./cmd/electd
	log "bench elect: algorithm $algorithm, $trials trials, idle $idle with $loss% loss, lab prefix $PREFIX${tuned[*]:+, tuned electd: ${tuned[*]}}"
	local args=(-elect -elect.bin "$WORK/bin" -elect.prefix "$PREFIX" -elect.trials "$trials"
		-elect.algorithm "$algorithm" -elect.partition "$partition" -elect.big "$big" -elect.big.trials "$bigtrials"
		-elect.idle "$idle" -elect.loss "$loss" -elect.traffic "$traffic" -elect.settle "$settle"
		-elect.traces="$traces" -elect.keep "$keep")
	local t
	for t in "${tuned[@]}"; do
		args+=(-elect.tuned "$t")
	done
	run_go_bench Elect "${args[@]}"
}

bench_mutex() {
	local samples=2000 window=5s clients=8 trials=5 traffic=10s flags="" algorithm=all counthosts=16 faults=true recovery=false argv=("$@")
	while [ $# -gt 0 ]; do
		case $1 in
		--samples) samples=${2:?--samples needs a number} && shift ;;
		--window) window=${2:?--window needs a duration} && shift ;;
		--clients) clients=${2:?--clients needs a number} && shift ;;
		--trials) trials=${2:?--trials needs a number} && shift ;;
		--traffic) traffic=${2:?--traffic needs a duration} && shift ;;
		--flags) flags=${2?--flags needs mutexd flags} && shift ;;
		--algorithm) algorithm=${2:?--algorithm needs a name or all} && shift ;;
		--count-hosts) counthosts=${2:?--count-hosts needs a number} && shift ;;
		--no-faults) faults=false ;;
		--recovery-only) recovery=true ;;
		-h | --help) usage ;;
		*) echo "$prog mutex: unknown argument '$1'" >&2 && usage ;;
		esac
		shift
	done
	local n
	for n in "$samples" "$trials"; do
		{ [[ $n =~ ^[0-9]{1,6}$ ]] && [ "$n" -ge 1 ]; } || die "mutex: $n: want a whole number >= 1"
	done
	{ [[ $clients =~ ^[0-9]{1,3}$ ]] && [ "$clients" -ge 2 ]; } || die "mutex: --clients $clients: want a whole number 2..999"
	is_duration "$window" || die "mutex: --window $window: want a duration such as 5s"
	is_duration "$traffic" || die "mutex: --traffic $traffic: want a duration such as 10s"
	[[ $algorithm =~ ^[a-z0-9-]{1,32}(,[a-z0-9-]{1,32}){0,15}$ ]] || die "mutex: --algorithm $algorithm: want an algorithm's name (mutexd run --help lists them), several separated by commas, or all"
	{ [[ $counthosts =~ ^[0-9]{1,3}$ ]] && [ "$counthosts" -le 250 ]; } || die "mutex: --count-hosts $counthosts: want 0 (skip) to 250"
	[ "$faults $recovery" != "false true" ] || die "mutex: --no-faults skips the recovery trials that --recovery-only asks for: give one of them"

	need_root mutex "${argv[@]}"
	need_packages iproute2 nftables etcd-server etcd-client
	setup
	build ./cmd/mutexd
	log "bench mutex: algorithm $algorithm, $samples samples, $clients clients for $window, $([ $faults = true ] && echo "$trials recovery trials" || echo "no fault trials")$([ $recovery = true ] && echo " (recovery only)"), counts on $counthosts hosts, lab prefix $PREFIX${flags:+, mutexd flags: $flags}"
	run_go_bench Mutex -mutex -mutex.bin "$WORK/bin" -mutex.prefix "$PREFIX" -mutex.samples "$samples" \
		-mutex.window "$window" -mutex.clients "$clients" -mutex.trials "$trials" -mutex.traffic "$traffic" -mutex.flags "$flags" \
		-mutex.algorithm "$algorithm" -mutex.count-hosts "$counthosts" -mutex.faults="$faults" -mutex.recovery-only="$recovery"
}

bench_mutex-profile() {
	local samples=200 algorithm=ricartagrawala,lamport argv=("$@")
	while [ $# -gt 0 ]; do
		case $1 in
		--samples) samples=${2:?--samples needs a number} && shift ;;
		--algorithm) algorithm=${2:?--algorithm needs a name} && shift ;;
		-h | --help) usage ;;
		*) echo "$prog mutex-profile: unknown argument '$1'" >&2 && usage ;;
		esac
		shift
	done
	{ [[ $samples =~ ^[0-9]{1,6}$ ]] && [ "$samples" -ge 1 ]; } || die "mutex-profile: --samples $samples: want a whole number >= 1"
	[[ $algorithm =~ ^[a-z0-9-]{1,32}(,[a-z0-9-]{1,32}){0,15}$ ]] || die "mutex-profile: --algorithm $algorithm: want names separated by commas"
	need_root mutex-profile "${argv[@]}"
	need_packages iproute2 nftables
	setup
	build ./cmd/mutexd
	log "bench mutex-profile: $algorithm, $samples entries each, lab prefix $PREFIX"
	run_go_bench MutexProfile -mutex.profile -mutex.bin "$WORK/bin" -mutex.prefix "$PREFIX" \
		-mutex.profile.samples "$samples" -mutex.algorithm "$algorithm"
}

bench_order() {
	local samples=200 burst=200 trials=5 argv=("$@")
	while [ $# -gt 0 ]; do
		case $1 in
		--samples) samples=${2:?--samples needs a number} && shift ;;
		--burst) burst=${2:?--burst needs a number} && shift ;;
		--trials) trials=${2:?--trials needs a number} && shift ;;
		-h | --help) usage ;;
		*) echo "$prog order: unknown argument '$1'" >&2 && usage ;;
		esac
		shift
	done
	local n
	for n in "$samples" "$burst" "$trials"; do
		{ [[ $n =~ ^[0-9]{1,6}$ ]] && [ "$n" -ge 1 ]; } || die "order: $n: want a whole number >= 1"
	done
	need_root order "${argv[@]}"
	need_packages iproute2 nftables etcd-server etcd-client
	setup
	build ./cmd/orderd
	log "bench order: $samples samples, $burst per host back to back, $trials recovery trials, lab prefix $PREFIX"
	run_go_bench Order -order -order.bin "$WORK/bin" -order.prefix "$PREFIX" -order.samples "$samples" \
		-order.burst "$burst" -order.trials "$trials"
}

bench_timesync() {
	local warmup=1m window=2m load=5s conns=8 impair=false jitter=250us asym=400us serveab=true argv=("$@")
	while [ $# -gt 0 ]; do
		case $1 in
		--warmup) warmup=${2:?--warmup needs a duration} && shift ;;
		--window) window=${2:?--window needs a duration} && shift ;;
		--load) load=${2:?--load needs a duration} && shift ;;
		--conns) conns=${2:?--conns needs a number} && shift ;;
		--impair) impair=true ;;
		--jitter) jitter=${2:?--jitter needs a duration} && shift ;;
		--asym) asym=${2:?--asym needs a duration} && shift ;;
		--no-serve-ab) serveab=false ;;
		-h | --help) usage ;;
		*) echo "$prog timesync: unknown argument '$1'" >&2 && usage ;;
		esac
		shift
	done
	local d
	for d in "$warmup" "$window" "$load" "$jitter" "$asym"; do
		is_duration "$d" || die "timesync: $d: want a duration such as 30s, 2m or 250us"
	done
	if ! [[ $conns =~ ^[0-9]{1,3}$ ]] || [ "$conns" -lt 1 ]; then
		die "timesync: --conns $conns: want a whole number 1..999"
	fi

	need_root timesync "${argv[@]}"
	need_packages iproute2 nftables chrony
	setup
	build ./cmd/timed
	local what="clean LAN"
	[ "$impair" = false ] || what="clean LAN, then the switch lab (jitter $jitter, asymmetry $asym)"
	log "bench timesync: $what; warm-up $warmup, window $window, throughput $conns loops for $load, lab prefix $PREFIX"
	# The impaired lab reuses the prefix: the clean one is gone by then.
	run_go_bench Timesync -timesync -timesync.bin "$WORK/bin" -timesync.prefix "$PREFIX" \
		-timesync.warmup "$warmup" -timesync.window "$window" -timesync.load "$load" -timesync.conns "$conns" \
		-timesync.impair="$impair" -timesync.jitter "$jitter" -timesync.asym "$asym"
	if [ "$serveab" = true ]; then
		# The server's throughput against chronyd's, A/B with the same rate
		# limit (the closed loops above measure timed alone). Same prefix:
		# the accuracy labs are gone by now.
		log "bench timesync: the NTP server A/B against chronyd (bench.sh ntpserve's defaults)"
		run_go_bench NTPServe -ntpserve -ntpserve.bin "$WORK/bin" -ntpserve.prefix "$PREFIX"
	fi
}

bench_ntpserve() {
	local load=3s rounds=5 clients=1,8,32 floor=true argv=("$@")
	while [ $# -gt 0 ]; do
		case $1 in
		--load) load=${2:?--load needs a duration} && shift ;;
		--no-floor) floor=false ;;
		--rounds) rounds=${2:?--rounds needs a number} && shift ;;
		--clients) clients=${2:?--clients needs a list such as 1,8,32} && shift ;;
		-h | --help) usage ;;
		*) echo "$prog ntpserve: unknown argument '$1'" >&2 && usage ;;
		esac
		shift
	done
	is_duration "$load" || die "ntpserve: --load $load: want a duration such as 5s"
	{ [[ $rounds =~ ^[0-9]{1,3}$ ]] && [ "$rounds" -ge 1 ]; } || die "ntpserve: --rounds $rounds: want a whole number 1..999"
	[[ $clients =~ ^[0-9]{1,2}(,[0-9]{1,2})*$ ]] || die "ntpserve: --clients $clients: want a list such as 1,8,32 (each 1..64)"

	need_root ntpserve "${argv[@]}"
	need_packages iproute2 chrony
	setup
	build ./cmd/timed
	if [ "$floor" = true ] && ! command -v cc >/dev/null; then
		log "bench ntpserve: no C compiler (cc): the floor server is left out (install gcc to measure it)"
		floor=false
	fi
	log "bench ntpserve: clients $clients, $rounds runs of $load per server and concurrency, floor $floor, lab prefix $PREFIX"
	run_go_bench NTPServe -ntpserve -ntpserve.bin "$WORK/bin" -ntpserve.prefix "$PREFIX" \
		-ntpserve.load "$load" -ntpserve.rounds "$rounds" -ntpserve.clients "$clients" -ntpserve.floor="$floor"
}

bench_idle() {
	local window=30s scale=0 settle=5s
	while [ $# -gt 0 ]; do
		case $1 in
		--window) window=${2:?--window needs a duration} && shift ;;
		--scale) scale=${2:?--scale needs a number of members} && shift ;;
		--settle) settle=${2:?--settle needs a duration} && shift ;;
		-h | --help) usage ;;
		*) echo "$prog idle: unknown argument '$1'" >&2 && usage ;;
		esac
		shift
	done
	is_duration "$window" || die "idle: --window $window: want a duration such as 30s"
	is_duration "$settle" || die "idle: --settle $settle: want a duration such as 75s"
	if ! [[ $scale =~ ^[0-9]{1,2}$ ]] || { [ "$scale" -ne 0 ] && [ "$scale" -lt 4 ]; } || [ "$scale" -gt 64 ]; then
		die "idle: --scale $scale: want a number of members 4..64 (0 skips it)"
	fi
	setup
	build ./cmd/timed ./cmd/electd ./cmd/mutexd ./cmd/orderd
	if [ "$scale" -gt 0 ]; then
		log "bench idle: 6 setups, then electd's omega and bully at $scale members, $window each"
	else
		log "bench idle: 6 setups, $window each"
	fi
	run_go_bench IdleCPU -idle.bin "$WORK/bin" -idle.window "$window" -idle.scale "$scale" -idle.settle "$settle"
}

bench_berkeley() {
	local warmup=1m window=2m trials=10 seed=0 unicast=true argv=("$@")
	while [ $# -gt 0 ]; do
		case $1 in
		--warmup) warmup=${2:?--warmup needs a duration} && shift ;;
		--window) window=${2:?--window needs a duration} && shift ;;
		--trials) trials=${2:?--trials needs a number} && shift ;;
		--seed) seed=${2:?--seed needs a number} && shift ;;
		--no-unicast) unicast=false ;;
		-h | --help) usage ;;
		*) echo "$prog berkeley: unknown argument '$1'" >&2 && usage ;;
		esac
		shift
	done
	local d
	for d in "$warmup" "$window"; do
		is_duration "$d" || die "berkeley: $d: want a duration such as 30s or 2m"
	done
	if ! [[ $trials =~ ^[0-9]{1,4}$ ]] || [ "$trials" -lt 1 ]; then
		die "berkeley: --trials $trials: want a whole number 1..9999"
	fi
	[[ $seed =~ ^[0-9]{1,19}$ ]] || die "berkeley: --seed $seed: want a whole number (0: random)"

	need_root berkeley "${argv[@]}"
	need_packages iproute2 nftables
	setup
	build ./cmd/timed
	log "bench berkeley: warm-up $warmup, window $window, $trials kills per configuration, lab prefix $PREFIX"
	run_go_bench Berkeley -berkeley -berkeley.bin "$WORK/bin" -berkeley.prefix "$PREFIX" \
		-berkeley.warmup "$warmup" -berkeley.window "$window" -berkeley.trials "$trials" \
		-berkeley.seed "$seed" -berkeley.unicast="$unicast"
}

BENCH_NAME=""

main() {
	[ $# -gt 0 ] || usage
	local record=0
	case $1 in
	--record) record=1 RECORD_DIR=$REPO/docs/benchmarks && shift ;;
	--record=*) record=1 RECORD_DIR=${1#--record=} && shift ;;
	esac
	[ -n "$RECORD_DIR" ] || [ "$record" = 0 ] || die "--record=: want a directory"
	[ $# -gt 0 ] || usage
	local name=$1
	shift
	case $name in
	help | -h | --help) usage ;;
	list)
		benchmarks
		exit 0
		;;
	esac
	declare -F "bench_$name" >/dev/null || {
		echo "$prog: no benchmark '$name' (have: $(benchmarks | tr '\n' ' '))" >&2
		usage
	}
	BENCH_NAME=$name
	trap cleanup EXIT
	trap on_signal INT TERM HUP
	if [ "$record" = 1 ]; then
		case $RECORD_DIR in /*) ;; *) RECORD_DIR=$PWD/$RECORD_DIR ;; esac
		start_record "$name" "$@"
	fi
	"bench_$name" "$@"
}

# shellcheck source=scripts/bench-pv.sh
source "$REPO/scripts/bench-pv.sh"

main "$@"
