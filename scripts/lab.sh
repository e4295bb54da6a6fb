#!/usr/bin/env bash
# lab.sh: an emulated LAN of N hosts in network namespaces, for humans and for
# the bench and demo scripts. The same layout as the Go test harness
# (internal/testkit/labnet), so a lab built here behaves like the one lab tests use:
#
#   namespace P-h1 .. P-hN   host i: eth0 10.77.0.i/24, lo up, IPv6 off on eth0,
#                            IGMPv2 forced, route 224.0.0.0/4 dev eth0
#   namespace P-br           bridge br0 (multicast snooping off) with ports
#                            p1..pN, and nftables table "bridge synclab" whose
#                            forward chain applies partitions and loss;
#                            with --switch: no bridge, the user-space switch
#                            internal/testkit/labnet/labswitch forwards between p1..pN
#                            with per-link delay, jitter, loss, duplication
#
# The root namespace is never touched: no address, route or rule changes there.
#
# Usage (as root):
#   lab.sh up N [--prefix P] [--switch]
#                                 build a lab of N hosts, print hosts and addresses
#   lab.sh down [--prefix P]      kill its processes, delete its namespaces (idempotent)
#   lab.sh exec HOST CMD...       run CMD in host HOST (h3 or 3; "br" is the bridge)
#   lab.sh partition A B          cut the link between hosts A and B (both ways)
#   lab.sh heal [A B]             restore that link, or every link
#   lab.sh loss HOST PCT          drop PCT% of UDP to and from HOST (0 removes)
#   lab.sh delay A B DELAY [JITTER]   (--switch labs) delay both ways, e.g. 2ms 100us
#   lab.sh link A B KEY=VALUE...  (--switch labs) one direction A->B: delay=, jitter=,
#                                 loss=, dup= (percent), down=, reorder= (true|false)
#   lab.sh status                 list labs (also those of running Go tests), with
#                                 hosts, partitions and loss rules of the selected one
#
# The prefix (lower-case letter, then 1-15 letters or digits) selects the lab:
# --prefix, else $SYNCLAB_LAB_PREFIX, else the only lab that is up, else
# "sllab". The lab records itself in /run/synclab-lab-<prefix>/state, so down
# removes exactly what up made; Go test labs record themselves there too, so
# `lab.sh down --prefix slXXXXXX` cleans up after a test binary that was killed
# before its cleanup ran. --switch builds labswitch with `go build` (or uses
# $LABSWITCH, a prebuilt binary) and runs it inside P-br; its log is
# /run/synclab-lab-P/switch.log.
set -Eeuo pipefail

readonly STATE_ROOT=/run
readonly STATE_PREFIX=synclab-lab-
readonly SUBNET=10.77.0
readonly HOSTIF=eth0
readonly MAX_HOSTS=250
REPO=$(cd "$(dirname "$0")/.." && pwd)
readonly REPO

prog=$(basename "$0")

die() {
	echo "$prog: $*" >&2
	exit 1
}

usage() {
	sed -n '/^# Usage/,/^# The prefix/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

need_root() {
	if [ "$(id -u)" != 0 ]; then
		die "must run as root (network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN): sudo $0 ${ARGV[*]}"
	fi
	local tool
	for tool in ip nft; do
		command -v "$tool" >/dev/null || die "$tool not found: install iproute2 and nftables (scripts/install-test-deps.sh)"
	done
}

# in_range V LO HI: V is a decimal integer in [LO, HI].
in_range() { [[ $1 =~ ^[0-9]{1,4}$ ]] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }

state_dir() { echo "$STATE_ROOT/$STATE_PREFIX$1"; }

# labs prints the prefix of every lab that has a state file.
labs() {
	local d
	for d in "$STATE_ROOT/$STATE_PREFIX"*; do
		[ -f "$d/state" ] || continue
		echo "${d#"$STATE_ROOT/$STATE_PREFIX"}"
	done
}

# pick_prefix sets PREFIX from --prefix, the environment, or the only lab up.
pick_prefix() {
	if [ -n "${PREFIX:-}" ]; then
		:
	elif [ -n "${SYNCLAB_LAB_PREFIX:-}" ]; then
		PREFIX=$SYNCLAB_LAB_PREFIX
	else
		local up
		mapfile -t up < <(labs)
		case ${#up[@]} in
		0) PREFIX=sllab ;;
		1) PREFIX=${up[0]} ;;
		*) die "several labs are up (${up[*]}): choose one with --prefix" ;;
		esac
	fi
	[[ $PREFIX =~ ^[a-z][a-z0-9]{1,15}$ ]] || die "bad prefix '$PREFIX': want a lower-case letter then 1-15 letters or digits"
}

# load_state sets N from the selected lab's state file, or fails.
load_state() {
	local f
	f="$(state_dir "$PREFIX")/state"
	[ -f "$f" ] || die "no lab '$PREFIX' is up (lab.sh up N --prefix $PREFIX)"
	N=$(sed -n 's/^N=//p' "$f")
	[[ $N =~ ^[0-9]+$ ]] || die "corrupt state file $f"
	SWITCH=$(sed -n 's/^SWITCH=//p' "$f")
	SWITCH=${SWITCH:-0}
}

# swctl sends one request to the lab's switch.
swctl() {
	local dir
	dir=$(state_dir "$PREFIX")
	[ "$SWITCH" = 1 ] || die "lab $PREFIX has no switch: delay and link need a lab built with --switch"
	"$dir/labswitch" ctl -control "$dir/switch.sock" "$@"
}

# host_index turns "h3" or "3" into 3, checked against N.
host_index() {
	local h=${1#h}
	in_range "$h" 1 "$N" || die "no host '$1' in lab $PREFIX (hosts h1..h$N)"
	echo "$h"
}

nft_br() { ip netns exec "$PREFIX-br" nft "$@"; }

cmd_up() {
	[ $# -eq 1 ] || usage
	N=$1
	in_range "$N" 1 $MAX_HOSTS || die "N must be 1..$MAX_HOSTS, not '$N'"
	need_root
	local dir i
	local pids=()
	dir=$(state_dir "$PREFIX")
	[ ! -e "$dir" ] || die "lab '$PREFIX' is already up (lab.sh down --prefix $PREFIX first)"
	if grep -Eq "^$PREFIX-(br|h[0-9]+)( |$)" <<<"$(ip netns list)"; then
		die "namespaces named $PREFIX-* already exist: choose another --prefix"
	fi

	# Record first: a failure halfway leaves a state that down understands.
	mkdir -p "$dir"
	printf 'PREFIX=%s\nN=%d\nOWNER=lab.sh\nPID=%d\nSWITCH=%d\n' "$PREFIX" "$N" $$ "$SWITCH" >"$dir/state"
	trap 'echo "$prog: up failed; cleaning up" >&2; cmd_down >/dev/null 2>&1 || true' ERR

	{
		echo "netns add $PREFIX-br"
		for ((i = 1; i <= N; i++)); do echo "netns add $PREFIX-h$i"; done
	} | ip -batch -

	# Defaults before the devices exist, so that they inherit them.
	ip netns exec "$PREFIX-br" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	for ((i = 1; i <= N; i++)); do
		ip netns exec "$PREFIX-h$i" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 \
			net.ipv4.conf.all.force_igmp_version=2 net.ipv4.conf.default.force_igmp_version=2 &
		pids+=($!)
	done
	wait_all "${pids[@]}"

	local master="master br0"
	[ "$SWITCH" = 0 ] || master=""
	{
		if [ "$SWITCH" = 0 ]; then
			echo "link add name br0 type bridge mcast_snooping 0"
			echo "link set br0 up"
		fi
		for ((i = 1; i <= N; i++)); do
			echo "link add name p$i type veth peer name $HOSTIF netns $PREFIX-h$i"
			echo "link set p$i $master up"
		done
	} | ip -n "$PREFIX-br" -batch -

	for ((i = 1; i <= N; i++)); do
		printf '%s\n' "link set lo up" "addr add $SUBNET.$i/24 dev $HOSTIF" \
			"link set $HOSTIF up" "route add 224.0.0.0/4 dev $HOSTIF" |
			ip -n "$PREFIX-h$i" -batch - &
		pids+=($!)
	done
	wait_all "${pids[@]}"

	if [ "$SWITCH" = 1 ]; then
		start_switch "$dir"
	else
		nft_br -f - <<-EOF
		table bridge synclab {
			set partitions {
				type ifname . ifname
			}
			chain forward {
				type filter hook forward priority filter; policy accept;
				iifname . oifname @partitions drop
				jump loss
			}
			chain loss {
			}
		}
		EOF
	fi
	trap - ERR

	echo "lab $PREFIX: $N hosts on $SUBNET.0/24"
	for ((i = 1; i <= N; i++)); do
		echo "h$i $SUBNET.$i $PREFIX-h$i $HOSTIF"
	done
}

# start_switch builds (or takes $LABSWITCH) and starts the user-space switch
# in the bridge namespace, detached from this script, and waits for its
# control socket.
start_switch() {
	local dir=$1 ports i
	if [ -n "${LABSWITCH:-}" ]; then
		cp "$LABSWITCH" "$dir/labswitch"
	else
		command -v go >/dev/null || die "--switch needs Go to build labswitch (or LABSWITCH=/path/to/labswitch)"
		(cd "$REPO" && go build -o "$dir/labswitch" ./internal/testkit/labnet/labswitch)
	fi
	ports=p1
	for ((i = 2; i <= N; i++)); do ports+=",p$i"; done
	setsid ip netns exec "$PREFIX-br" "$dir/labswitch" run -ports "$ports" -control "$dir/switch.sock" \
		</dev/null >"$dir/switch.log" 2>&1 &
	for ((i = 0; i < 100; i++)); do
		[ -S "$dir/switch.sock" ] && return 0
		sleep 0.05
	done
	cat "$dir/switch.log" >&2
	die "the switch did not start"
}

# wait_all waits for the given background jobs and fails if any failed.
wait_all() {
	local pid rc=0
	for pid in "$@"; do
		wait "$pid" || rc=1
	done
	return $rc
}

cmd_down() {
	[ $# -eq 0 ] || usage
	need_root
	local dir ns pid n=0
	dir=$(state_dir "$PREFIX")
	local names=()
	if [ -f "$dir/state" ]; then
		N=$(sed -n 's/^N=//p' "$dir/state")
		names=("$PREFIX-br")
		for ((i = 1; i <= N; i++)); do names+=("$PREFIX-h$i"); done
	else
		# No record (removed by hand, or a very old run): the namespaces
		# named exactly like a lab's, and nothing else.
		mapfile -t names < <(ip netns list | awk '{print $1}' | grep -E "^$PREFIX-(br|h[0-9]+)$" || true)
	fi
	for ns in "${names[@]}"; do
		[ -e "/run/netns/$ns" ] || continue
		# Every process in the namespace was started in the lab: daemons,
		# shells from `lab.sh exec`. Killed by PID, nothing else is touched.
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null || true
		done
		n=$((n + 1))
	done
	# SIGKILL is delivered asynchronously: give the processes a moment to
	# go, so that a following `up` finds their ports free.
	for ((i = 0; i < 40; i++)); do
		local left=""
		for ns in "${names[@]}"; do
			[ -e "/run/netns/$ns" ] && left+=$(ip netns pids "$ns" 2>/dev/null)
		done
		[ -z "$left" ] && break
		sleep 0.05
	done
	for ns in "${names[@]}"; do
		[ -e "/run/netns/$ns" ] && ip netns del "$ns"
	done
	rm -rf "$dir"
	echo "lab $PREFIX: down ($n namespaces deleted)"
}

cmd_exec() {
	[ $# -ge 2 ] || usage
	need_root
	load_state
	local ns
	if [ "$1" = br ]; then
		ns=$PREFIX-br
	else
		ns=$PREFIX-h$(host_index "$1")
	fi
	shift
	exec ip netns exec "$ns" "$@"
}

cmd_partition() {
	[ $# -eq 2 ] || usage
	need_root
	load_state
	local a b
	a=$(host_index "$1")
	b=$(host_index "$2")
	[ "$a" != "$b" ] || die "partition: two different hosts, please"
	if [ "$SWITCH" = 1 ]; then
		swctl link "$a" "$b" down=true
		swctl link "$b" "$a" down=true
		return
	fi
	nft_br add element bridge synclab partitions "{ \"p$a\" . \"p$b\", \"p$b\" . \"p$a\" }"
}

cmd_heal() {
	need_root
	load_state
	case $# in
	0)
		if [ "$SWITCH" = 1 ]; then
			swctl heal
		else
			nft_br flush set bridge synclab partitions
		fi
		;;
	2)
		local a b e
		a=$(host_index "$1")
		b=$(host_index "$2")
		if [ "$SWITCH" = 1 ]; then
			swctl link "$a" "$b" down=false
			swctl link "$b" "$a" down=false
			return
		fi
		# Deleting an absent element is an error in nft; heal is idempotent.
		for e in "\"p$a\" . \"p$b\"" "\"p$b\" . \"p$a\""; do
			nft_br delete element bridge synclab partitions "{ $e }" 2>/dev/null || true
		done
		;;
	*) usage ;;
	esac
}

cmd_loss() {
	[ $# -eq 2 ] || usage
	need_root
	load_state
	local h pct dir
	h=$(host_index "$1")
	pct=$2
	in_range "$pct" 0 100 || die "loss: percentage 0..100, not '$pct'"
	if [ "$SWITCH" = 1 ]; then
		swctl portloss "$h" "$pct"
		return
	fi
	# Replace the host's rules in one transaction: delete its old ones by
	# handle, add the new ones. numgen's range is 0-99, so 100% is a plain drop.
	local script="" handle draw=" numgen random mod 100 < $pct"
	[ "$pct" != 100 ] || draw=""
	while read -r handle; do
		script+="delete rule bridge synclab loss handle $handle"$'\n'
	done < <(nft_br -a list chain bridge synclab loss | sed -nE "s/.*(iif|oif)name \"p$h\" .* # handle ([0-9]+)$/\2/p")
	if [ "$pct" != 0 ]; then
		for dir in iifname oifname; do
			script+="add rule bridge synclab loss $dir \"p$h\" meta l4proto udp$draw drop"$'\n'
		done
	fi
	[ -z "$script" ] || nft_br -f - <<<"$script"
}

cmd_delay() {
	[ $# -eq 3 ] || [ $# -eq 4 ] || usage
	need_root
	load_state
	local a b
	a=$(host_index "$1")
	b=$(host_index "$2")
	swctl link "$a" "$b" "delay=$3" "jitter=${4:-0}"
	swctl link "$b" "$a" "delay=$3" "jitter=${4:-0}"
}

cmd_link() {
	[ $# -ge 3 ] || usage
	need_root
	load_state
	local a b
	a=$(host_index "$1")
	b=$(host_index "$2")
	shift 2
	swctl link "$a" "$b" "$@"
}

cmd_status() {
	[ $# -eq 0 ] || usage
	local p f
	local up=()
	mapfile -t up < <(labs)
	if [ ${#up[@]} -eq 0 ]; then
		echo "no lab is up"
		return 0
	fi
	echo "LAB        HOSTS  OWNER   PID"
	local pid note
	local state
	for p in "${up[@]}"; do
		# Read once: a lab taken down since the listing (another test's
		# cleanup) is simply no longer up.
		state=$(cat "$(state_dir "$p")/state" 2>/dev/null) || continue
		pid=$(sed -n 's/^PID=//p' <<<"$state")
		note=""
		# A Go lab outlives its test binary only if the binary was killed
		# before its cleanup ran: say so, and how to remove it.
		if [ "$(sed -n 's/^OWNER=//p' <<<"$state")" = labnet ] && ! kill -0 "$pid" 2>/dev/null; then
			note="  (test binary gone: lab.sh down --prefix $p)"
		fi
		printf '%-10s %5s  %-7s %s%s\n' "$p" "$(sed -n 's/^N=//p' <<<"$state")" \
			"$(sed -n 's/^OWNER=//p' <<<"$state")" "$pid" "$note"
	done
	if [ -z "${PREFIX:-}" ] && [ ${#up[@]} -gt 1 ]; then
		echo "(details of one lab: lab.sh status --prefix P)"
	elif [ "$(id -u)" != 0 ]; then
		echo "(details need root)"
	else
		pick_prefix
		load_state
		echo
		echo "lab $PREFIX:"
		local i
		for ((i = 1; i <= N; i++)); do
			printf '  h%-3d %-12s %s\n' "$i" "$SUBNET.$i" \
				"$(ip -n "$PREFIX-h$i" -br link show dev "$HOSTIF" 2>/dev/null | awk '{print $2}')"
		done
		if [ "$SWITCH" = 1 ]; then
			echo "  switch links (impaired or used):"
			swctl show | sed 's/^/    /'
			return
		fi
		echo "  partitions (directed):"
		local cut
		cut=$(nft_br list set bridge synclab partitions | tr -d ' \t\n' |
			grep -oE '"p[0-9]+"\."p[0-9]+"' | sed -E 's/"p([0-9]+)"\."p([0-9]+)"/h\1 -> h\2/' || true)
		printf '    %s\n' "${cut:-none}" | sed '2,$s/^/    /'
		echo "  loss rules:"
		nft_br list chain bridge synclab loss | grep -E 'drop$' | sed 's/^[[:space:]]*/    /' || echo "    none"
	fi
}

main() {
	local args=()
	PREFIX=
	SWITCH=0
	while [ $# -gt 0 ]; do
		case $1 in
		--switch)
			SWITCH=1
			shift
			;;
		--prefix)
			[ $# -ge 2 ] || usage
			PREFIX=$2
			shift 2
			;;
		--prefix=*)
			PREFIX=${1#--prefix=}
			shift
			;;
		-h | --help) usage ;;
		exec)
			# Everything after HOST belongs to the command.
			args+=("$@")
			break
			;;
		*)
			args+=("$1")
			shift
			;;
		esac
	done
	[ ${#args[@]} -ge 1 ] || usage
	local cmd=${args[0]}
	args=("${args[@]:1}")
	if [ "$cmd" != status ]; then
		pick_prefix
	fi
	case $cmd in
	up) cmd_up "${args[@]}" ;;
	down) cmd_down "${args[@]}" ;;
	exec) cmd_exec "${args[@]}" ;;
	partition) cmd_partition "${args[@]}" ;;
	heal) cmd_heal "${args[@]}" ;;
	loss) cmd_loss "${args[@]}" ;;
	delay) cmd_delay "${args[@]}" ;;
	link) cmd_link "${args[@]}" ;;
	status) cmd_status "${args[@]}" ;;
	*) usage ;;
	esac
}

ARGV=("$@")
main "$@"
