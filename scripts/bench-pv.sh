# shellcheck shell=bash
# bench-pv.sh: `bench.sh pv`, the course notes' P_v experiment (sourced by
# bench.sh, which defines die, log and the dispatcher).

# bench_pv runs pkg/mutex/maekawa's TestPvExperiment (the majority quorum) on the simulator:
# the majority quorum with coordinators restarted at a rate, in three
# arms (votes forgotten; forgotten but a lease's wait after a restart;
# on disk), the measured violation rate beside the notes' formula. No root, no lab: the simulator is the ground truth.
bench_pv() {
	local n=5 m=3 rate=0.5 hold=200ms acquisitions=1000 seed=1
	while [ $# -gt 0 ]; do
		case $1 in
		--n) n=${2?--n needs a number} && shift ;;
		--m) m=${2?--m needs a number} && shift ;;
		--rate) rate=${2?--rate needs restarts per second} && shift ;;
		--hold) hold=${2?--hold needs a duration} && shift ;;
		--acquisitions) acquisitions=${2?--acquisitions needs a number} && shift ;;
		--seed) seed=${2?--seed needs a number} && shift ;;
		*) echo "$prog pv: unknown argument '$1'" >&2 && usage ;;
		esac
		shift
	done
	local v
	for v in "$n" "$m" "$acquisitions" "$seed"; do
		[[ $v =~ ^[0-9]{1,7}$ ]] || die "pv: $v: want a whole number"
	done
	[[ $rate =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "pv: --rate $rate: want restarts per second, such as 0.5"
	is_duration "$hold" || die "pv: --hold $hold: want a duration such as 200ms"
	command -v go >/dev/null || die "go not found in PATH"
	log "bench pv: n=$n m=$m, $rate restarts/s per coordinator, holds of $hold, $acquisitions acquisitions, seed $seed"
	(cd "$REPO" && go test ./pkg/mutex/maekawa -run '^TestPvExperiment$' -count=1 -v -timeout 30m \
		-pv.n "$n" -pv.m "$m" -pv.rate "$rate" -pv.hold "$hold" -pv.acquisitions "$acquisitions" -pv.seed "$seed") |
		grep -v -e '^=== RUN' -e '^--- PASS' -e '^PASS' -e '^ok '
}
