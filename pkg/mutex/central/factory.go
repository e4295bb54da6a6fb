package central

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/wire"
)

// Factory builds central coordinator cores for a driver (mutexd's table).
var Factory = mutex.Factory{
	Name:       Name,
	Summary:    "one elected coordinator with a FIFO queue per lock, shared and exclusive, fences from its term",
	Guarantees: guarantees,
	// The notes' comparison table: 3 messages per entry, a delay of 2.
	Cost: core.Cost{Text: "3", Delay: "2",
		Messages: func(n int) (float64, float64) { return 3, 3 }},
	// Its own and its coordinator election's (bully).
	Kinds: append([]wire.Kind{wire.KindCentralRequest, wire.KindCentralGrant, wire.KindCentralRelease, wire.KindCentralRenew,
		wire.KindCentralRenewed, wire.KindCentralRefuse, wire.KindCentralBeat, wire.KindCentralSync}, bully.Algorithm.Kinds...),
	New:         func(env core.Env, opt mutex.Options) (mutex.Algorithm, error) { return NewFromEnv(env, opt) },
	Renewal:     renewalRule,
	StatusLines: statusLines,
	LockColumns: []string{"Coordinator queue"},
	LockCells:   lockCells,
	FenceText:   FenceText,
}

// ConfigFor maps a driver's options to the configuration: the cluster's
// lease, the minimum lease, and the heartbeat, which is the coordinator's
// beat and its election's heartbeat (at most a third of the lease: a
// lease granted on a beat's support is cut by the beat's age). The other
// timers follow from them (Config). The result is validated by New.
func ConfigFor(opt mutex.Options) (Config, error) {
	cfg := DefaultLANConfig()
	opt.Leases(&cfg.MaxLease, &cfg.MinLease)
	switch {
	case cfg.MaxLease <= 0 || opt.Heartbeat < 0:
		return cfg, fmt.Errorf("%w: --lease %v and --heartbeat %v must be positive", ErrConfig, cfg.MaxLease, opt.Heartbeat)
	case cfg.MaxLease < cfg.MinLease:
		return cfg, fmt.Errorf("%w: --lease %v: must be at least %v (a shorter lease could not be renewed in time)", ErrConfig, cfg.MaxLease, cfg.MinLease)
	case cfg.MaxLease > time.Hour:
		return cfg, fmt.Errorf("%w: --lease %v: at most 1h (a new coordinator waits one lease before granting)", ErrConfig, cfg.MaxLease)
	}
	if opt.Heartbeat != 0 {
		cfg.BeatInterval = min(opt.Heartbeat, cfg.MaxLease/3)
	}
	// MaxPeerLease stays zero: this member's --lease bounds only the
	// holds of members whose configuration agreement compared and matched
	// (it refuses the frames of a member whose --lease differs); a member
	// admitted unchecked, an older build, may run a longer one.
	cfg.Authenticated = opt.Authenticated
	return cfg, nil
}

// renewalRule: a lease granted or renewed on support of age a is cut by
// a - LeaseSlack (half a beat). The coordinator calls for support every
// beat, so with frames that take no time the support is at most a beat
// old (a cut of half a beat); late answers age it up to the confirm
// window (5/4 of a beat: a cut of 3/4), past which it calls for support
// at once.
func renewalRule(opt mutex.Options) mutex.Renewal {
	cfg, err := ConfigFor(opt)
	if err != nil {
		return mutex.Renewal{}
	}
	if cfg.BeatInterval == 0 {
		cfg.BeatInterval = DefaultBeat(cfg.MaxLease)
	}
	b := cfg.BeatInterval
	return mutex.Renewal{Cut: b / 2, CutMax: b * 3 / 4, Cause: "its support's age past half a beat", Flags: []string{fmt.Sprintf("--heartbeat %v (a beat every %v, at most a third of --lease)", opt.Heartbeat, b.Round(time.Millisecond))}, Knob: "heartbeat"}
}

// NewFromEnv builds a member's core from a driver's environment and
// options (Factory.New).
func NewFromEnv(env core.Env, opt mutex.Options) (*Core, error) {
	cfg, err := ConfigFor(opt)
	if err != nil {
		return nil, err
	}
	return New(env, cfg)
}

func statusLines(st mutex.Status, raw json.RawMessage) ([]string, error) {
	var d Detail
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("unexpected central detail: %w", err)
	}
	role := fmt.Sprintf("following coordinator %d", d.Coordinator)
	switch {
	case d.Unsaved != 0:
		role = fmt.Sprintf("COORDINATING TERM %s WAITS FOR ITS STATE WRITE (it failed: every frame of this member waits; see Persist)", epoch.Format(d.Unsaved))
	case d.Coordinates:
		role = fmt.Sprintf("coordinator (%d of %d members synced, %d supporting, majority %d)", d.Joined, len(st.Members), d.Supporters, d.Majority)
	case d.Coordinator == 0:
		role = "no coordinator known (election running)"
	}
	ready := "granting"
	until := func(left time.Duration) string {
		if d.GrantsFrom.IsZero() {
			return fmt.Sprintf("for %s more", left)
		}
		return fmt.Sprintf("until %s (%s more)", clockText(d.GrantsFrom), left)
	}
	hold, frozen := time.Duration(d.HoldLeftMS)*time.Millisecond, time.Duration(d.FrozenLeftMS)*time.Millisecond
	switch {
	case d.Coordinates && frozen > 0:
		why := "until the longest of them would end"
		if !d.Ready {
			why += fmt.Sprintf(", and its hold (%s more) is waited out whole", hold)
		}
		ready = fmt.Sprintf("GRANTING NOTHING %s: a member re-announced more holds than it can have, not kept: no lock is granted %s (the WARN central_holds_over_cap names the member)",
			until(max(hold, frozen)), why)
	case d.Coordinates && !d.Ready:
		ready = fmt.Sprintf("holding %s (waiting out the leases of an older coordinator)", hold)
	case !d.Ready:
		// A follower knows only the beat's word, which counts both.
		ready = fmt.Sprintf("coordinator grants nothing %s, its last beat said (waiting out an older coordinator's leases, or, if its log says central_holds_over_cap, holds it did not keep; its status says which)",
			until(hold))
	}
	c := st.Counters
	lines := []string{
		fmt.Sprintf("Central  : member %d, incarnation %d, %s, term %s, %s", st.ID, d.Incarnation, role, epoch.Format(d.Term), ready),
		fmt.Sprintf("Frames   : %d requests, %d grants, %d releases sent; %d refused", c["sent_central_request"]+c["sent_tokenask_request"],
			c["sent_central_grant"], c["sent_central_release"], rejectedTotal(c)),
	}
	if line := hintLine(d.Election.Detail); line != "" {
		lines = append(lines, line)
	}
	if n := d.RenewalsUnanswered; n > 0 {
		lines = append(lines, fmt.Sprintf("Renewals : %d of this member's leases have a renewal unconfirmed for a beat or more (%d so far): each ends unless one is confirmed; the WARN central_renewal_unanswered in the log says why (the link to the coordinator, or a new coordinator's hold)",
			n, c["renewals_unanswered"]))
	}
	if d.Variant == TokenAskName {
		vec := d.Vector
		switch {
		case d.VectorUnsaved:
			vec = "withheld until this run's incarnation is on disk (mutexd vector answers 503; the log's ERROR on the state write says why)"
		case vec == "":
			vec = "none yet"
		}
		line := fmt.Sprintf("Causal   : latest request's vector %s (mutexd vector); %d requests granted without a predecessor never heard of, never made or dropped when its member fell silent, %d without one granted and never confirmed",
			vec, c["tokenask_unknown_predecessors"], c["tokenask_unconfirmed_predecessors"])
		if n := c["tokenask_unknown_predecessors"] + c["tokenask_unconfirmed_predecessors"]; n > 0 && d.LastSkip != "" {
			line += fmt.Sprintf("; the latest at %s: %s (the log's tokenask_unknown_predecessor at that time says what this coordinator knew)", clockText(d.LastSkipAt), d.LastSkip)
		} else if n > 0 {
			line += " (the log's tokenask_unknown_predecessor says each: which request, and what this coordinator knew of its predecessor's member)"
		}
		lines = append(lines, line)
	}
	return lines, nil
}

// hintLine says what the election made of hints that the coordinator's
// port closed (bully.Detail's hint counters, read through JSON as the CLI
// reads them), "" when it had none.
func hintLine(detail any) string {
	m, _ := detail.(map[string]any)
	n := func(k string) uint64 { v, _ := m[k].(float64); return uint64(v) }
	if n("hints") == 0 && n("hints_ignored") == 0 {
		return ""
	}
	return fmt.Sprintf("Hints    : the coordinator's port closed %d times: %d answered a probe (alive: a link reset, or a forged one), %d given up after %d unanswered probes; %d hints ignored",
		n("hints"), n("hints_cancelled"), n("hint_timeouts"), bully.HintProbes, n("hints_ignored"))
}

func rejectedTotal(c map[string]uint64) uint64 {
	var n uint64
	for k, v := range c {
		if strings.HasPrefix(k, "rejected_") {
			n += v
		}
	}
	return n
}

func lockCells(raw json.RawMessage) ([]string, error) {
	var d LockDetail
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("unexpected central lock detail: %w", err)
		}
	}
	if d.Holders == nil && d.Waiting == nil {
		return []string{"-"}, nil
	}
	cell := fmt.Sprintf("held by %v, waiting %v", d.Holders, d.Waiting)
	if len(d.WaitingFor) > 0 {
		cell += fmt.Sprintf("; not yet eligible (member:request<predecessor) %s", strings.Join(d.WaitingFor, " "))
	}
	return []string{cell}, nil
}
