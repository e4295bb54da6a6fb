package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/pkg/core"
)

// Events the daemon itself reports (logged, counted, shown to watchers,
// and hooks may be bound to them) when configuration agreement moves the
// node (internal/node, Standing).
const (
	// EventSteppedBack: this member's configuration is in the minority
	// of the members it hears; its core was stopped (and rebuilt from its
	// saved state, as after a crash) and is held until they agree.
	EventSteppedBack = "stepped_back"
	// EventAgreementRestored: the configurations agree again; the core
	// runs.
	EventAgreementRestored = "agreement_restored"
)

// nodeAgreement is the node.Agreement a daemon's node runs with: the
// binary's algorithm and must-agree parameters, and the multicast group
// (a member without it misses every broadcast); nil when there is nobody
// to agree with.
func nodeAgreement(cfg *Config) *node.Agreement {
	if cfg.Agreement == nil || !hasOthers(cfg.Members, cfg.ID) {
		return nil
	}
	a := *cfg.Agreement
	a.Params = maps.Clone(a.Params)
	if a.Params == nil {
		a.Params = map[string]string{}
	}
	group := "none"
	if cfg.Multicast != nil {
		group = cfg.Multicast.Group.String()
	}
	a.Params["multicast"] = group
	return &a
}

// agreementStep acts, after a step (holding d.mu), on what configuration
// agreement decided: its notices to the log, rate-limited; a move of the
// node's standing.
func (d *Daemon) agreementStep() {
	now := time.Now()
	for _, nt := range d.node.Notices() {
		level := slog.LevelInfo
		if nt.Warn {
			level = slog.LevelWarn
		}
		every := time.Duration(0)
		if nt.Key == "unreachable" {
			every = time.Minute
		}
		d.alerts.report(now, level, nt.Key, nt.Member, every, nt.Msg)
	}
	st := d.node.Standing()
	if st == d.standing {
		return
	}
	prev := d.standing
	d.standing = st
	if prev == node.StandingStarting {
		close(d.gate)
	}
	reason := d.node.StandingReason()
	switch {
	case st == node.StandingSteppedBack:
		d.errs["stepped_back"]++
		d.log.Warn("stepping back: "+reason+"; this member does not lead, grant, vote or sequence until the configurations agree "+
			"(make the members named in the lines above share one member list, key, cluster name and algorithm, and restart the daemons that differ)",
			"agree", d.agreeList(true), "differ", d.agreeList(false))
		old := d.node.Core()
		var extra []core.Event
		if d.cfg.StepBackEvents != nil {
			extra = d.cfg.StepBackEvents(old)
		}
		if d.node.CoreRan() {
			// Stopped as a crash would stop it, and built again from
			// what it saved, held until the configurations agree: no
			// belief of the old run (a leadership, a grant, a
			// sequencer's place) survives the step back.
			if err := d.rebuildCore(); err != nil {
				d.fatal = fmt.Errorf("restarting the core from %s after stepping back: %w", d.cfg.StateDir, err)
				return
			}
			if d.wrote == writeHeld {
				// This turn's calls acted on the old core, which was
				// never drained: gone with it.
				d.wrote = writeDropped
			}
		}
		d.emit(core.Event{Name: EventSteppedBack, Msg: "stepped back: configuration in the minority", Args: []any{"reason", reason}})
		for _, e := range extra {
			d.emit(e)
		}
	case prev == node.StandingSteppedBack:
		d.log.Warn("configurations agree again: this member's core runs again", "agree", d.agreeList(true))
		d.emit(core.Event{Name: EventAgreementRestored, Msg: "configuration agreement restored"})
	default:
		d.log.Info("members' configurations heard: the core runs", "agree", d.agreeList(true), "differ", d.agreeList(false))
	}
}

// agreeList is the members agreement counts as agreeing (or differing).
func (d *Daemon) agreeList(agree bool) []uint32 {
	st := d.node.Status().Agreement
	if st == nil {
		return nil
	}
	if agree {
		return st.Agree
	}
	return st.Differ
}

// rebuildCore stops the node's core and builds it again from the state
// directory, as a restart of the daemon would: its snapshot and log
// read back, under a new incarnation (node.ReplaceCore).
func (d *Daemon) rebuildCore() error {
	inc := d.node.Incarnation() + 1
	d.clog.close()
	persisted, records, clog, _, err := d.state.loadCore(inc)
	if err != nil {
		return err
	}
	c, err := d.newCore(core.Env{
		ID:      d.cfg.ID,
		Members: slices.Sorted(maps.Keys(d.cfg.Members)),
		Now:     d.cfg.Clock.Now(),
		Rand:    rand.New(rand.NewPCG(d.cfg.Seed, uint64(d.cfg.ID)|uint64(inc)<<32)),
		Lamport: d.lamport,
		State:   persisted,
		Log:     records,
	})
	if err != nil {
		clog.close()
		return err
	}
	if err := d.node.ReplaceCore(c); err != nil {
		clog.close()
		return err
	}
	d.clog, d.appends, d.unsaved = clog, false, nil
	d.errs["core_restarted"]++
	return nil
}

// SteppedBackError is what DoActive returns while the member stands back.
type SteppedBackError struct{ Reason string }

func (e *SteppedBackError) Error() string {
	return "this member stepped back: " + e.Reason + "; it does not lead, grant, vote or sequence until the members' configurations agree (see `status`)"
}

// DoActive is Do for a control call that makes the core act (a lock
// request, a send, a resignation): while the node waits, at the start,
// for the members' announcements it waits too (StartGrace at most);
// while the node stands back it refuses with 503 (code "stepped_back",
// a *ctl.Error wrapping nothing, the reason in its message).
func (d *Daemon) DoActive(ctx context.Context, fn func(n *node.Node)) error {
	return d.doActive(ctx, fn, false)
}

// DoActiveSaved is DoActive for a handler that promises what fn changed,
// as DoSaved: ErrNotSaved when the write of the Ready that followed fn
// failed, ErrWithdrawn when the core also took back what fn did. One turn of the loop, as DoActive's: a caller that checked the
// standing with DoActive, then acted with DoSaved, waited for two.
func (d *Daemon) DoActiveSaved(ctx context.Context, fn func(n *node.Node)) error {
	return d.doActive(ctx, fn, true)
}

func (d *Daemon) doActive(ctx context.Context, fn func(n *node.Node), promise bool) error {
	select {
	case <-d.gate:
	case <-d.stopped:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	var refused *SteppedBackError
	wrote, err := d.do(ctx, func(n *node.Node) {
		if n.Standing() == node.StandingSteppedBack {
			refused = &SteppedBackError{Reason: n.StandingReason()}
			return
		}
		fn(n)
	})
	switch {
	case err != nil:
		return err
	case refused != nil:
		return ctl.Errorf(http.StatusServiceUnavailable, "stepped_back", "%s", refused.Error())
	case promise:
		return wrote.err()
	}
	return nil
}

// SteppedBack reports, for a control handler inside Do, whether the node
// stands back, and why.
func SteppedBack(n *node.Node) (string, bool) {
	if n.Standing() == node.StandingSteppedBack {
		return n.StandingReason(), true
	}
	return "", false
}
