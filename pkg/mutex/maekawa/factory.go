package maekawa

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/wire"
)

// ParamAttemptTimeout is the voting cores' own setting (a mutexd run
// flag).
const ParamAttemptTimeout = "attempt-timeout"

// Factory builds Maekawa cores for a driver (pkg/mutex/algorithms).
var Factory = mutex.Factory{
	Name:       Name,
	Summary:    "Maekawa's voting sets on a sqrt(N) grid, deadlock-free with Sanders' inquire/relinquish/failed, fences proposed with the request (from the clock) and recorded at the cross as it votes",
	Guarantees: maekawaGuarantees,
	// The notes' comparison table: 3 sqrt(N) per entry (2 sqrt(N) to
	// enter, sqrt(N) to leave), a synchronisation delay of 2. The notes'
	// K is sqrt(N) (projective planes); a grid's cross has K up to
	// 2 sqrt(N) - 1. Each of the K-1 other voters costs 3 frames when it
	// recorded the fence the request holds on as it voted (request,
	// locked, release), 5 when it recorded less (the commit and its ack),
	// and up to 7 under contention (failed or inquire, relinquish).
	Cost: core.Cost{Text: "3 sqrt(N)", Delay: "2",
		Messages: func(n int) (float64, float64) {
			return 3 * math.Sqrt(float64(n)), 7 * float64(maxCross(n)-1)
		}},
	Kinds:       []wire.Kind{wire.KindHeartbeat, wire.KindMaekawa},
	Params:      params,
	New:         func(env core.Env, opt mutex.Options) (mutex.Algorithm, error) { return NewFromEnv(env, opt, 0) },
	StatusLines: StatusLines,
	LockColumns: []string{"Voted for", "Queue", "Request"},
	LockCells:   LockCells,
}

var params = []mutex.Param{
	{Name: ParamAttemptTimeout, Default: DefaultLANConfig().AttemptTimeout,
		Usage: "how long a request's round of votes and fence commit may take before it gives back what it got and retries; a queued request asks again this often"},
}

// maxCross is the largest cross of a grid of n members.
func maxCross(n int) int {
	if n <= 0 {
		return 0
	}
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = uint32(i + 1)
	}
	g, k := NewGrid(ids), 0
	for _, id := range ids {
		k = max(k, len(g.VotingSet(id)))
	}
	return k
}

// ConfigFor maps a driver's options to a core's configuration: the
// cluster's lease, the heartbeat h, the attempt timeout; quorum > 0
// selects the majority quorum. The result is validated by New.
//
// Maekawa takes a member silent for 3 h for down (a requester whose
// cross has a dead member waits that long before it asks a live cross),
// and beats every 1.25 h: one heartbeat lost, and the next half a
// heartbeat late, still arrive in time ((3 h - 0.5 h) / 2). The wait
// for a dead holder's own voter, which is in the cross of every member
// of its row and column, ends 3 h after the holder's last frame (a
// renewal, a heartbeat), at most DeadAfter after the crash. Its votes
// end a stretched lease after its grant or last renewal: with the
// default lease (3 h) and no frame of the holder's since then, the
// detection ends first and overlaps the lease instead of outlasting it
// (it was 3.5 h, half a second past the lease's end); a heartbeat since
// delays it past the votes by as much as that heartbeat came after the
// grant or the last renewal, at most DeadAfter after the crash (doc.go,
// "Recovery after a holder's crash"). The price: heartbeats every 1.25 h instead of 1.5 h,
// a fifth more idle frames. A member beating slower (an older mutexd beat
// every 1.5 h) is given two of its own heartbeats and the same 0.5 h
// (heartbeatFrom, TestMixedHeartbeats). The majority quorum's requests
// never wait for the detector (any Quorum of the coordinators answers;
// it only drops dead members' queued requests), so it beats every 2 h
// and takes a member for down after 4.5 h, the same tolerance.
func ConfigFor(env core.Env, opt mutex.Options, quorum int) (Config, error) {
	cfg := DefaultLANConfig()
	cfg.ID, cfg.Members, cfg.Quorum = env.ID, env.Members, quorum
	cfg.Persisted, cfg.Rand, cfg.Lamport = env.State, env.Rand, env.Lamport
	opt.Leases(&cfg.MaxLease, &cfg.MinLease)
	h := cmp.Or(opt.Heartbeat, time.Second)
	cfg.HeartbeatInterval, cfg.DeadAfter = h*5/4, h*3
	if quorum > 0 {
		cfg.HeartbeatInterval, cfg.DeadAfter = h*2, h*9/2
	}
	cfg.AttemptTimeout = opt.Param(ParamAttemptTimeout, cfg.AttemptTimeout)
	if cfg.AttemptTimeout <= 0 {
		return cfg, fmt.Errorf("%w: --%s %v: must be positive", ErrConfig, ParamAttemptTimeout, cfg.AttemptTimeout)
	}
	return cfg, nil
}

// NewFromEnv builds a member's core from a driver's environment.
func NewFromEnv(env core.Env, opt mutex.Options, quorum int) (*Core, error) {
	cfg, err := ConfigFor(env, opt, quorum)
	if err != nil {
		return nil, err
	}
	cfg.Shared = quorum > 0
	return New(cfg)
}

// StatusLines are the voting cores' lines of `mutexd status`.
func StatusLines(st mutex.Status, raw json.RawMessage) ([]string, error) {
	var d Detail
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("unexpected voting detail: %w", err)
	}
	alive := 0
	for _, m := range st.Members {
		if m.Alive {
			alive++
		}
	}
	c := st.Counters
	disk := "in " + d.Votes
	if d.Votes == VotesPersist {
		disk = d.Votes
	}
	if d.HoldLeftMS > 0 {
		disk += fmt.Sprintf(" (restarted: votes again in %d ms)", d.HoldLeftMS)
	}
	var first string
	if d.Quorum > 0 {
		first = fmt.Sprintf("Quorum   : %d of %d coordinators, %d alive; votes %s", d.Quorum, len(st.Members), alive, disk)
	} else {
		set := "none wholly alive"
		if len(d.VotingSet) > 0 {
			set = strings.Trim(strings.ReplaceAll(fmt.Sprint(d.VotingSet), " ", ","), "[]")
		}
		first = fmt.Sprintf("Grid     : %s, voting set %s, %d of %d alive; votes %s", d.Grid, set, alive, len(st.Members), disk)
	}
	lines := []string{first,
		fmt.Sprintf("Voting   : %d locked, %d failed, %d inquire, %d denied, %d commits; %d retries",
			c["sent_locked"], c["sent_failed"], c["sent_inquire"], c["sent_deny"], c["sent_commit"],
			c["retries_timeout"]+c["retries_denied"]+c["retries_commit_refused"]+c["retries_member_down"]+c["retries_lease_spent"]),
	}
	for _, b := range d.SlowBeats {
		lines = append(lines, fmt.Sprintf("Heartbeat: member %d beats every %d ms, slower than this one: down after %d ms of silence; run the same mutexd and --heartbeat everywhere",
			b.ID, b.IntervalMS, b.DownAfterMS))
	}
	return lines, nil
}

// LockCells are a lock's columns in `mutexd status`.
func LockCells(raw json.RawMessage) ([]string, error) {
	var d LockDetail
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("unexpected voting lock detail: %w", err)
		}
	}
	list := func(ids []uint32) string {
		if len(ids) == 0 {
			return "-"
		}
		return strings.Trim(strings.ReplaceAll(fmt.Sprint(ids), " ", ","), "[]")
	}
	req := "-"
	if d.Phase != "" {
		req = fmt.Sprintf("%s %d/%d", d.Phase, d.Votes, d.Need)
		if d.Tries > 0 {
			req += fmt.Sprintf(" (retry %d)", d.Tries)
		}
	}
	return []string{list(d.VotedFor), list(d.Queue), req}, nil
}
