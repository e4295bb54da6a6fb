package permission

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/wire"
)

// ParamRetry is the setting (mutexd run --retry) of RetryInterval.
const ParamRetry = "retry"

// Params are the settings both algorithms share (mutexd run flags).
var Params = []mutex.Param{
	{Name: ParamRetry, Default: DefaultLANConfig().RetryInterval,
		Usage: "how long a waiting member goes without a member's answer before it asks again (repairs lost frames)"},
}

// ConfigFor maps a driver's options to a core's configuration: the
// cluster's lease, the heartbeat, the retry; DeadAfter follows from them
// (MinDeadAfter). The result is validated by New.
func ConfigFor(v Variant, env core.Env, opt mutex.Options) (Config, error) {
	cfg := DefaultLANConfig()
	cfg.Variant, cfg.ID, cfg.Members = v, env.ID, env.Members
	cfg.Persisted, cfg.Lamport = env.State, env.Lamport
	cfg.Authenticated = opt.Authenticated
	opt.Leases(&cfg.MaxLease, &cfg.MinLease)
	if opt.Heartbeat != 0 {
		cfg.HeartbeatInterval = opt.Heartbeat
	}
	cfg.RetryInterval = opt.Param(ParamRetry, cfg.RetryInterval)
	for _, f := range []struct {
		flag string
		v    time.Duration
	}{{"lease", cfg.MaxLease}, {"heartbeat", cfg.HeartbeatInterval}, {ParamRetry, cfg.RetryInterval}} {
		if f.v <= 0 {
			return cfg, fmt.Errorf("%w: --%s %v: must be positive", ErrConfig, f.flag, f.v)
		}
	}
	return cfg, nil
}

// NewFromEnv builds a member's core of variant v from a driver's
// environment and options (Factory.New).
func NewFromEnv(v Variant, env core.Env, opt mutex.Options) (*Core, error) {
	cfg, err := ConfigFor(v, env, opt)
	if err != nil {
		return nil, err
	}
	return New(cfg)
}

// StatusLines are the lines of `mutexd status` after the common summary.
func StatusLines(st mutex.Status, raw json.RawMessage) ([]string, error) {
	var d Detail
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("unexpected %s detail: %w", st.Algorithm, err)
	}
	alive := 0
	for _, m := range st.Members {
		if m.Alive {
			alive++
		}
	}
	c := st.Counters
	lines := []string{
		fmt.Sprintf("Members  : %d of %d alive, majority %d, incarnation %d, Lamport %d, down after %v (%v if it may hold by our leave: %v)",
			alive, len(st.Members), d.Majority, d.Incarnation, d.Lamport, time.Duration(d.SuspectAfterMS)*time.Millisecond,
			time.Duration(d.DeadAfterMS)*time.Millisecond, d.Lent),
		fmt.Sprintf("Requests : %d sent, %d resent, %d reissued; %d rejoins seen, %d stalls",
			c["requests_sent"], c["requests_resent"], c["requests_reissued"], c["rejoins"], c["stalls"]),
	}
	for _, r := range d.Relayed {
		lines = append(lines, fmt.Sprintf("Link     : no frame directly from %d for %v (heard %v ago): frames to it also go through %s; if this lasts, the link between this host and %d is broken",
			r.Member, ms(r.DirectAgoMS), ms(r.HeardAgoMS), idList(r.Via), r.Member))
	}
	for _, s := range d.Silent {
		why := "too few members answered whether they hear it"
		if len(s.HeardBy) > 0 {
			why = fmt.Sprintf("members %s still hear it (a broken link?)", idList(s.HeardBy))
		}
		lines = append(lines, fmt.Sprintf("Silent   : %d silent here for %v but not given up: %s; still waited for", s.Member, ms(s.HeardAgoMS), why))
	}
	if d.CutOff {
		lines = append(lines, "Cut off  : this member hears no majority it can count on: it grants and renews nothing, and rejoins once it hears one again")
	}
	if d.LoopLateMS > 0 {
		lines = append(lines, fmt.Sprintf("Loop late: this host's loop last sent a heartbeat %v late, %v ago (%d times in all): frames read meanwhile counted as no majority heard; check the host's load, swap, a paused VM or process",
			ms(d.LoopLateMS), ms(d.LoopLateAgoMS), c["loop_late"]))
	}
	if len(d.Older) > 0 {
		cost := "heartbeats sent short; their frames count by beats alone; renewals may wait for their heartbeats: upgrade them"
		if len(d.Older) > len(st.Members)-d.Majority {
			cost = "heartbeats sent short; their frames count by beats alone; a majority of the others: renewals wait for their heartbeats " +
				"(a lease under three heartbeats may run out): upgrade them"
		}
		lines = append(lines, fmt.Sprintf("Older    : members %s taken for an older mutexd: %s", idList(d.Older), cost))
	}
	if d.RestartHoldMS > 0 {
		lines = append(lines, fmt.Sprintf("Restarted: answering nobody for %v more (a lease granted before the restart may run)",
			time.Duration(d.RestartHoldMS)*time.Millisecond))
	}
	return lines, nil
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// idList shows member IDs as 3,4 ("none" for none).
func idList(ids []uint32) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Trim(strings.ReplaceAll(fmt.Sprint(ids), " ", ","), "[]")
}

// LockColumns are the columns LockCells adds to the lock table.
var LockColumns = []string{"Request", "Answered", "Waiting here"}

// LockCells are a lock's columns in `mutexd status`: this member's request
// (its stamp, or held), who answered it, and the other members' requests
// it knows (deferred or queued).
func LockCells(raw json.RawMessage) ([]string, error) {
	var d LockDetail
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("unexpected lock detail: %w", err)
		}
	}
	req := "-"
	switch {
	case d.Granted:
		req = fmt.Sprintf("held (%d)", d.Stamp)
	case d.Phase == "doorway":
		req = fmt.Sprintf("doorway at %d", d.Stamp)
	case d.Phase != "":
		req = fmt.Sprintf("ticket %d, reading %s", d.Stamp, d.Phase)
	case d.Stamp != 0:
		req = fmt.Sprintf("asked at %d", d.Stamp)
	}
	answered := "-"
	if len(d.Answered) > 0 {
		answered = strings.Trim(strings.ReplaceAll(fmt.Sprint(d.Answered), " ", ","), "[]")
	}
	var others []string
	for _, e := range append(d.Deferred, d.Queue...) {
		others = append(others, fmt.Sprintf("%d@%d", e.Member, e.Stamp))
	}
	waiting := "-"
	if len(others) > 0 {
		waiting = strings.Join(others, ",")
	}
	return []string{req, answered, waiting}, nil
}

// FenceText shows a fence as stamp.member-index.
func FenceText(f uint64) string { return fmt.Sprintf("%d (%d.%d)", f, f>>16, f&0xffff) }

// Kinds are the frame kinds the members of variant v send each other.
func Kinds(v Variant) []wire.Kind {
	switch v {
	case RicartAgrawala:
		return []wire.Kind{wire.KindRARequest, wire.KindRAReply, wire.KindPermHeartbeat, wire.KindPermRelay, wire.KindPermProbe, wire.KindPermProbeReply}
	case Bakery:
		return []wire.Kind{wire.KindBakeryDoorway, wire.KindBakeryNumber, wire.KindBakeryChoosing, wire.KindBakeryChosen,
			wire.KindBakeryTicket, wire.KindBakeryTicketReply, wire.KindPermHeartbeat, wire.KindPermRelay, wire.KindPermProbe, wire.KindPermProbeReply}
	}
	return []wire.Kind{wire.KindLamportRequest, wire.KindLamportAck, wire.KindLamportRelease, wire.KindPermHeartbeat, wire.KindLamportRequeue, wire.KindPermRelay, wire.KindPermProbe, wire.KindPermProbeReply}
}

// RicartAgrawalaFactory builds Ricart-Agrawala cores for a driver
// (mutexd run --algorithm ricartagrawala; pkg/mutex/algorithms). The
// notes' comparison table: 2(N-1) messages per entry, and as many before
// the entry; a synchronisation delay of one message (the holder's deferred
// reply).
var RicartAgrawalaFactory = factory(RicartAgrawala,
	"Ricart-Agrawala: request with (Lamport time, ID) to all, replies deferred by the holder and by earlier requests", "2(N-1)", 2)

// LamportFactory builds cores of Lamport's distributed mutex for a driver
// (mutexd run --algorithm lamport; pkg/mutex/algorithms). The notes:
// 3(N-1) messages per entry (N-1 requests, N-1 acks, N-1 releases); the
// next holder enters one message (the release) after the last one left.
var LamportFactory = factory(Lamport,
	"Lamport's distributed mutex: a queue ordered by (Lamport time, ID) at every member, request, ack and release to all", "3(N-1)", 3)

// BakeryFactory builds cores of the distributed bakery for a driver
// (mutexd run --algorithm bakery; pkg/mutex/algorithms). The notes: 6N
// messages per entry, three reads of 2N messages each (a member reads its
// own variables without a message here: 6(N-1)); the next holder enters
// one message (the deferred reply to its ticket read) after the last one
// left.
var BakeryFactory = factory(Bakery,
	"the distributed bakery: each member serves its own num and choosing, read by the others in the doorway and the bakery (the notes reject it for its cost)", "6(N-1)", 6)

// factory is variant v's line for a driver: its entry costs k(N-1)
// messages (text) and one message of synchronisation delay.
func factory(v Variant, summary, text string, k int) mutex.Factory {
	return mutex.Factory{
		Name:       v.String(),
		Summary:    summary,
		Guarantees: Guarantees(v),
		Cost: core.Cost{Text: text, Delay: "1",
			Messages: func(n int) (float64, float64) { return float64(k * (n - 1)), float64(k * (n - 1)) }},
		Kinds:  Kinds(v),
		Params: Params,
		New: func(env core.Env, opt mutex.Options) (mutex.Algorithm, error) {
			return NewFromEnv(v, env, opt)
		},
		StatusLines: StatusLines,
		LockColumns: LockColumns,
		LockCells:   LockCells,
		FenceText:   FenceText,
	}
}
