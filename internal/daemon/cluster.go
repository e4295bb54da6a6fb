package daemon

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// The whole lab in one table (`X status --cluster`, GET /v1/cluster): the
// node asks every member for its row over the cluster's own protocol
// (internal/node: KindStatusQuery, KindStatusReport, authenticated like
// every frame), the daemon waits for the answers until a deadline, then
// makes one row per member: from its answer, or, for a member that did not
// answer, from what configuration agreement knows of it.

// ClusterStatus is GET /v1/cluster: the lab as this member sees it.
type ClusterStatus struct {
	Daemon  string `json:"daemon"`
	Cluster string `json:"cluster"`
	// From is this member, the one that asked.
	From uint32 `json:"from"`
	// AskedAt is when it asked (this host's wall clock); TimeoutNs how
	// long it waited for the answers.
	AskedAt   time.Time `json:"asked_at"`
	TimeoutNs int64     `json:"timeout_ns"`
	// Members counts the member list, Answered the members that answered
	// (this one included).
	Members  int `json:"members"`
	Answered int `json:"answered"`
	// Complete: every member answered and no configuration differs.
	Complete bool         `json:"complete"`
	Rows     []ClusterRow `json:"rows"`
}

// ClusterRow is one member of the lab's table.
type ClusterRow struct {
	ID      uint32 `json:"id"`
	Address string `json:"address"`
	Self    bool   `json:"self,omitempty"`
	// Reachable: the member answered within the deadline (always so of
	// this member). RTTNs is the answer's round trip, less the member's
	// own time in between.
	Reachable bool  `json:"reachable"`
	RTTNs     int64 `json:"rtt_ns,omitempty"`
	// HeardAgoNs is how long ago an authenticated frame of the member was
	// last accepted here (nil: never since this member started, or this
	// member itself).
	HeardAgoNs *int64 `json:"heard_ago_ns,omitempty"`

	// Config is configuration agreement's view of the member: "agrees",
	// "differs", "unknown" (heard, configuration not announced yet),
	// "unverified" (an older build that announces none), "silent" (not
	// heard lately); "self" for this member; "off" when this member runs
	// no agreement (timed outside Berkeley mode). Agrees says the
	// configurations agree; Differs what differs, in words;
	// Authenticated that Differs comes from a frame that authenticated
	// (false: from frames whose MAC fails here, only their key believed).
	Config        string   `json:"config"`
	Agrees        bool     `json:"agrees"`
	Differs       []string `json:"differs,omitempty"`
	Authenticated bool     `json:"authenticated,omitempty"`
	// Timing says how the member's heartbeat and leader timeout, as it
	// told them, do not fit this member's (empty: they fit, or were not
	// told).
	Timing []string `json:"timing,omitempty"`
	// Fingerprint is the configuration digest the member announces or
	// answers with (hex), KeyID its key's fingerprint ("none": no key).
	Fingerprint  string `json:"fingerprint,omitempty"`
	KeyID        string `json:"key_id,omitempty"`
	AuthFailures uint64 `json:"auth_failures,omitempty"`

	// From its answer (this member's: its own view).
	Standing      string `json:"standing,omitempty"` // "agreed", "starting", "stepped_back"
	SteppedBack   bool   `json:"stepped_back,omitempty"`
	Version       string `json:"version,omitempty"`
	Commit        string `json:"commit,omitempty"`
	UptimeSeconds uint32 `json:"uptime_seconds,omitempty"`
	Incarnation   uint32 `json:"incarnation,omitempty"`
	Algorithm     string `json:"algorithm,omitempty"`
	// Role and Facts are the daemon's own: electd's role, leader and
	// term; mutexd's locks held and requests waiting; orderd's
	// sequencer and delivered index; timed's offset and error bound
	// (wire.StatusFactTag names the facts).
	Role  string                 `json:"role,omitempty"`
	Facts map[string]json.Number `json:"facts,omitempty"`
	Clock *RowClock              `json:"clock,omitempty"`

	// Why says, of a member that did not answer, what is known of why.
	Why string `json:"why,omitempty"`
}

// RowClock is a member's clock as its answer tells it.
type RowClock struct {
	// Wall: a wall clock (system or simulated); false: the oscillator
	// (mutexd's, the majority election's), whose readings only measure
	// durations.
	Wall         bool  `json:"wall"`
	Synchronized bool  `json:"synchronized"`
	MaxErrorNs   int64 `json:"max_error_ns,omitempty"`
	// OffsetNs is the member's clock minus this member's, measured with
	// the query and its answer (NTP's arithmetic over kernel receive
	// stamps), within ±OffsetBoundNs; nil for this member, or when either
	// clock is not a wall clock.
	OffsetNs      *int64 `json:"offset_ns,omitempty"`
	OffsetBoundNs int64  `json:"offset_bound_ns,omitempty"`
}

// Bounds of the deadline of GET /v1/cluster.
const (
	DefaultClusterTimeout = time.Second
	MinClusterTimeout     = 10 * time.Millisecond
	MaxClusterTimeout     = 30 * time.Second
)

var standingText = [...]string{node.StandingAgreed: "agreed", node.StandingStarting: "starting", node.StandingSteppedBack: "stepped_back"}

// ClusterStatus asks every member for its row and waits for the answers
// until they are all in or timeout has passed, then returns the table.
func (d *Daemon) ClusterStatus(ctx context.Context, timeout time.Duration) (ClusterStatus, error) {
	if d.cfg.Standalone() {
		return ClusterStatus{}, ctl.Errorf(http.StatusConflict, "no_cluster",
			"%s runs outside any cluster (no --id and --members): there is no lab to show", d.cfg.Name)
	}
	asked := time.Now()
	done := make(chan struct{}, 1)
	var id uint64
	var qerr error
	var askedClock time.Time // on the node's clock
	if err := d.Do(ctx, func(n *node.Node) {
		askedClock = d.cfg.Clock.Now()
		if id, qerr = n.QueryCluster(askedClock); qerr == nil {
			d.clusterWait[id] = done
		}
	}); err != nil {
		return ClusterStatus{}, err
	}
	switch {
	case errors.Is(qerr, node.ErrClusterBusy):
		return ClusterStatus{}, ctl.Errorf(http.StatusTooManyRequests, "busy", "%v", qerr)
	case qerr != nil && !errors.Is(qerr, node.ErrNoMembers):
		return ClusterStatus{}, qerr
	case qerr == nil:
		t := time.NewTimer(timeout)
		select {
		case <-done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	var st ClusterStatus
	// Ended even when the caller left: the query must not wait for its
	// answers until the node forgets it.
	err := d.Do(context.WithoutCancel(ctx), func(n *node.Node) {
		var answers []node.ClusterAnswer
		if qerr == nil {
			answers = n.EndClusterQuery(id)
			delete(d.clusterWait, id)
		}
		st = d.clusterTable(n, answers, asked, askedClock, timeout)
	})
	if err == nil {
		err = ctx.Err()
	}
	return st, err
}

// clusterStep wakes, after a step (holding d.mu), the callers whose
// query every member has answered.
func (d *Daemon) clusterStep() {
	for _, id := range d.node.ClusterNews() {
		if ch := d.clusterWait[id]; ch != nil && d.node.ClusterQueryDone(id) {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// statusReport fills the daemon's part of this member's row (the node's
// Config.Report): build, uptime, clock, and the binary's facts. It runs
// holding d.mu (inside a Receive, or SelfReport).
func (d *Daemon) statusReport(r *wire.StatusReport) {
	r.Version, r.Commit = clip(d.cfg.Version), clip(d.cfg.Commit)
	if !d.started.IsZero() {
		r.Uptime = uint32(min(time.Since(d.started)/time.Second, 1<<32-1))
	}
	if d.cfg.ClockName != "steady" {
		r.Flags |= wire.StatusWallClock
	}
	if cs, err := d.cfg.Clock.State(); err == nil {
		if cs.Synchronized {
			r.Flags |= wire.StatusSynchronized
		}
		r.MaxError = uint64(max(cs.MaxError, 0))
	}
	if d.cfg.Agreement != nil {
		r.Algorithm = clip(d.cfg.Agreement.Algorithm)
	}
	if d.cfg.ClusterFacts != nil && d.node != nil {
		role, facts := d.cfg.ClusterFacts(d.node.Core())
		r.Role = clip(role)
		facts = slices.Clone(facts)
		slices.SortFunc(facts, func(a, b wire.StatusFact) int { return int(a.Tag) - int(b.Tag) })
		facts = slices.CompactFunc(facts, func(a, b wire.StatusFact) bool { return a.Tag == b.Tag })
		r.Facts = facts[:min(len(facts), wire.MaxStatusFacts)]
	}
}

// clip keeps s within what a status report carries: at most
// wire.MaxStatusString bytes, whole runes, no control characters.
func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	for len(s) > wire.MaxStatusString {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// clusterTable makes the table from the answers to a query asked at
// asked (askedClock on the node's clock), waited for timeout (holding
// d.mu).
func (d *Daemon) clusterTable(n *node.Node, answers []node.ClusterAnswer, asked, askedClock time.Time, timeout time.Duration) ClusterStatus {
	st := ClusterStatus{Daemon: d.cfg.Name, Cluster: d.cfg.Cluster, From: d.cfg.ID, AskedAt: asked,
		TimeoutNs: int64(timeout), Members: len(d.cfg.Members), Complete: true}
	nst := n.Status()
	views := map[uint32]node.MemberAgreement{}
	if a := nst.Agreement; a != nil {
		for _, m := range a.Members {
			views[m.ID] = m
		}
	}
	byMember := map[uint32]node.ClusterAnswer{}
	for _, a := range answers {
		byMember[a.Member] = a
	}
	self := n.SelfReport()
	now := d.cfg.Clock.Now()
	for _, id := range slices.Sorted(maps.Keys(d.cfg.Members)) {
		row := ClusterRow{ID: id, Address: d.cfg.Members[id].String()}
		switch a, answered := byMember[id]; {
		case id == d.cfg.ID:
			row.Self, row.Reachable, row.Config, row.Agrees = true, true, "self", true
			fillFromReport(&row, &self)
			if nst.Agreement != nil {
				row.Fingerprint, row.KeyID = nst.Agreement.Fingerprint, nst.Agreement.KeyID
			}
		case answered:
			row.Reachable = true
			fillFromReport(&row, &a.Report)
			d.agreementOf(&row, views, nst.Agreement != nil, &self, &a.Report)
			if a.Timed {
				row.RTTNs = int64(a.Delay)
				if row.Clock.Wall && self.Flags&wire.StatusWallClock != 0 {
					off := int64(a.Offset)
					row.Clock.OffsetNs, row.Clock.OffsetBoundNs = &off, int64(a.Delay/2)
				}
			}
		default:
			d.agreementOf(&row, views, nst.Agreement != nil, &self, nil)
			row.Why = d.whyNoAnswer(row, views[id], n.LastHeard(id), askedClock, now, timeout)
		}
		if !row.Self {
			if h := n.LastHeard(id); !h.IsZero() {
				ago := int64(max(now.Sub(h), 0))
				row.HeardAgoNs = &ago
			}
		}
		if row.Reachable {
			st.Answered++
		}
		st.Complete = st.Complete && row.Reachable && (row.Agrees || row.Config == "off")
		st.Rows = append(st.Rows, row)
	}
	return st
}

// fillFromReport copies what a status report says into row.
func fillFromReport(row *ClusterRow, r *wire.StatusReport) {
	row.Standing = standingText[min(int(r.Standing), len(standingText)-1)]
	row.SteppedBack = node.Standing(r.Standing) == node.StandingSteppedBack
	row.Version, row.Commit, row.UptimeSeconds, row.Incarnation = r.Version, r.Commit, r.Uptime, r.Incarnation
	row.Algorithm, row.Role = r.Algorithm, r.Role
	if len(r.Facts) > 0 {
		row.Facts = map[string]json.Number{}
		for _, f := range r.Facts {
			v := strconv.FormatUint(f.Value, 10)
			if f.Tag.Signed() {
				v = strconv.FormatInt(int64(f.Value), 10)
			}
			row.Facts[f.Tag.String()] = json.Number(v)
		}
	}
	row.Clock = &RowClock{Wall: r.Flags&wire.StatusWallClock != 0, Synchronized: r.Flags&wire.StatusSynchronized != 0,
		MaxErrorNs: int64(min(r.MaxError, 1<<63-1))}
	if r.Flags&wire.StatusAgreement != 0 {
		row.Fingerprint = hex.EncodeToString(r.Digest[:])
		row.KeyID = wire.FingerprintText(r.KeyFingerprint)
	}
}

// agreementOf fills row's configuration columns from agreement's view of
// the member and, when it answered (rep), from the fingerprint its
// answer carries, which authenticated: it is the member's configuration
// now, whatever its last announcement said.
func (d *Daemon) agreementOf(row *ClusterRow, views map[uint32]node.MemberAgreement, on bool, self, rep *wire.StatusReport) {
	if !on {
		row.Config = "off"
		return
	}
	v, ok := views[row.ID]
	if !ok {
		row.Config = "silent"
		return
	}
	row.Config, row.Agrees, row.Differs, row.Authenticated, row.AuthFailures = v.State, v.Agrees, v.Differs, v.Authenticated, v.AuthFailures
	row.Timing = v.Timing
	if rep == nil {
		if row.Fingerprint == "" {
			row.Fingerprint = v.Fingerprint
		}
		if row.KeyID == "" {
			row.KeyID = v.KeyID
		}
		row.SteppedBack = row.SteppedBack || v.SteppedBack
		return
	}
	switch {
	case rep.Flags&wire.StatusAgreement == 0:
		row.Config, row.Agrees = "unverified", false
		row.Differs = []string{fmt.Sprintf("member %d runs no configuration agreement: its configuration cannot be compared", row.ID)}
	case rep.Digest == self.Digest:
		row.Config, row.Agrees, row.Differs = "agrees", true, nil
	case !slices.ContainsFunc(row.Differs, func(s string) bool { return s != "" }):
		row.Config, row.Agrees = "differs", false
		row.Differs = []string{fmt.Sprintf("member %d's configuration fingerprint %s is not this member's (%s): it changed since it last announced it; its next announcement says what differs",
			row.ID, hex.EncodeToString(rep.Digest[:4]), hex.EncodeToString(self.Digest[:4]))}
	default:
		row.Config, row.Agrees = "differs", false
	}
}

// whyNoAnswer says what is known of why member row.ID, asked at
// askedClock (the node's clock, as heard and now), did not answer.
func (d *Daemon) whyNoAnswer(row ClusterRow, v node.MemberAgreement, heard, askedClock, now time.Time, timeout time.Duration) string {
	if row.Config == "differs" && !row.Authenticated && v.AuthFailures > 0 {
		return fmt.Sprintf("no authenticated answer is possible: its frames fail authentication here (%d so far), and it cannot verify this member's query", v.AuthFailures)
	}
	why := fmt.Sprintf("no answer within %v", timeout)
	switch {
	case row.Config == "differs" && heard.IsZero():
		return why + ": its configuration differs, and a member whose cluster name differs, or whose member list lacks this member, refuses this member's frames"
	case heard.IsZero():
		why += fmt.Sprintf("; never heard since this member started: down, unreachable, not running %s, or refusing this member's frames (see its `%s status`)", d.cfg.Name, d.cfg.Name)
	case !heard.Before(askedClock):
		// It spoke after it was asked, and did not answer.
		what := "an older synclab without `status --cluster`, or its answer was lost; ask again"
		if row.Config == "unverified" {
			what = "an older synclab without `status --cluster` (it announces no configuration either): upgrade it"
		}
		why += fmt.Sprintf("; yet heard %v ago, after it was asked: %s", agoText(now.Sub(heard)), what)
	default:
		why += fmt.Sprintf("; last heard %v ago: down or unreachable (or its answer was lost)", agoText(now.Sub(heard)))
	}
	if row.Config == "differs" {
		why += "; its configuration differs, and a member that differs may refuse this member's frames"
	}
	return why
}

// agoText shows how long ago, to a human's precision.
func agoText(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// clusterRoute serves GET /v1/cluster?timeout=D.
func (d *Daemon) clusterRoute(r *http.Request) (any, error) {
	timeout := DefaultClusterTimeout
	if s := r.URL.Query().Get("timeout"); s != "" {
		t, err := time.ParseDuration(s)
		if err != nil || t < MinClusterTimeout || t > MaxClusterTimeout {
			return nil, ctl.BadRequest(fmt.Sprintf("timeout %q: want a duration from %v to %v", s, MinClusterTimeout, MaxClusterTimeout))
		}
		timeout = t
	}
	st, err := d.ClusterStatus(r.Context(), timeout)
	var ce *ctl.Error
	switch {
	case errors.As(err, &ce):
		return nil, err
	case err != nil:
		return nil, ctl.Unavailable(err.Error())
	}
	return st, nil
}

// ClusterFactsFunc is Config.ClusterFacts: a daemon's role and numbers for
// its row of the lab's table, read from its core (holding the loop's
// lock).
type ClusterFactsFunc func(c core.Core) (role string, facts []wire.StatusFact)
