package node

import (
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// Agreement turns configuration agreement on (Config.Agreement): the node
// announces what must be the same on every member (KindConfig), compares
// what the members announce, refuses the frames of a member whose
// configuration differs, and holds its own core back while its
// configuration is in the minority of the members it hears. See the
// package documentation ("Configuration agreement").
type Agreement struct {
	// Algorithm names what the core runs, as the operator chose it
	// ("bully", "tokenring", "sequencer", "berkeley").
	Algorithm string
	// Params are the parameters that must be the same on every member,
	// by name (a per-host timing is not one: a difference there must
	// not split a cluster).
	Params map[string]string
	// Interval is how often the node announces itself to every member
	// while anything is unsettled (at the start, a member that differs or
	// has not announced its incarnation, this node stepped back). Default
	// DefaultAnnounceInterval.
	Interval time.Duration
	// QuietInterval is the longest spacing of the announcements while
	// every member heard agrees: the spacing doubles from Interval up to
	// it, and falls back to Interval at the first difference. Default
	// DefaultQuietInterval (never below Interval). To a member that
	// refreshes (wire.ConfigRefresh: a build that knows the kind) and
	// agrees, the node sends instead a refresh every RefreshSpacing.
	QuietInterval time.Duration
	// RefreshPace is how often, at most, a node at rest sends a refresh
	// to some member, whatever the number of members: each member that
	// refreshes and agrees is refreshed every RefreshSpacing, that is
	// every QuietInterval or, with more members than QuietInterval /
	// RefreshPace, every (members - 1) x RefreshPace. Default
	// DefaultRefreshPace.
	RefreshPace time.Duration
	// StartGrace bounds how long, at the start, the node holds its core
	// back waiting for the members' announcements (it asks each for one
	// at once, and goes on as soon as every member or a majority agreed).
	// Default DefaultStartGrace.
	StartGrace time.Duration
	// Heartbeat and LeaderTimeout are this node's own failure-detector
	// timing, which need not be the same on every member but must fit
	// the others' (zero: nothing to tell): how often it beats while it
	// leads, how long it waits for its leader's word before giving it
	// up. The node tells the members (KindConfigTimings) and warns of a
	// member whose heartbeat is not below its leader timeout, or whose
	// leader timeout is not above its heartbeat (notice
	// "timing_mismatch", MemberAgreement.Timing): the follower gives
	// the leader up between two heartbeats, and elects again, over and
	// over. HeartbeatFlag and TimeoutFlag are the flags that set them, as
	// the warnings name them (default "--heartbeat",
	// "--leader-timeout").
	Heartbeat, LeaderTimeout   time.Duration
	HeartbeatFlag, TimeoutFlag string
}

// Defaults of Agreement.
const (
	DefaultAnnounceInterval = time.Second
	DefaultQuietInterval    = 8 * time.Second
	DefaultStartGrace       = 500 * time.Millisecond
	DefaultRefreshPace      = time.Second
)

// Standing is whether the node's core runs, as configuration agreement
// decides it.
type Standing uint8

const (
	// StandingAgreed: the node's configuration is not in the minority of
	// the members it hears: its core runs. Always so without agreement.
	StandingAgreed Standing = iota
	// StandingStarting: at the start, the node waits (StartGrace at most)
	// for the members' announcements before its core runs.
	StandingStarting
	// StandingSteppedBack: the node's configuration is in the minority of
	// the members it hears (or tied with them): its core neither hears
	// nor sends member frames, nor is it ticked: it does not lead,
	// grant, vote or sequence until the configurations agree.
	StandingSteppedBack
)

var standingNames = [...]string{StandingAgreed: "agreed", StandingStarting: "starting", StandingSteppedBack: "stepped_back"}

func (s Standing) String() string {
	if int(s) < len(standingNames) {
		return standingNames[s]
	}
	return fmt.Sprintf("standing(%d)", uint8(s))
}

// Errors of frames refused by agreement (drop reasons in reasonOf).
var (
	// ErrConfigDiffers: the sender's announced configuration differs from
	// this node's ("config_differs").
	ErrConfigDiffers = errors.New("node: the sender's configuration differs from this node's")
	// ErrConfigUnverified: no announcement yet of the sender's incarnation
	// ("config_unverified"); the node has asked it for one.
	ErrConfigUnverified = errors.New("node: no configuration announced yet by this incarnation of the sender")
	// ErrSteppedBack: this node has stepped back ("stepped_back").
	ErrSteppedBack = errors.New("node: this node stepped back: its configuration is in the minority of the members it hears")
	// ErrStarting: this node waits for the members' announcements
	// ("starting").
	ErrStarting = errors.New("node: starting: waiting for the members' configuration announcements")
)

// Notice is something configuration agreement wants an operator to see:
// the driver logs it (WARN when Warn), rate-limited by Key and Member, so
// that a condition repeated every packet or every second is one line per
// interval with a count.
type Notice struct {
	Key    string // the condition: "config_differs", "timing_mismatch", "timing_fits", "auth_failed", "forged", "unverified", "unreachable"
	Member uint32
	Warn   bool
	Msg    string
}

// maxNotices bounds the notices waiting for the driver.
const maxNotices = 256

// unreachableAfter is how long a member may go unheard before the node
// says so (a notice every unreachableAfter while it lasts).
const unreachableAfter = 30 * time.Second

// askInterval spaces the announcements a node sends one member asking for
// its own (ConfigAnswer), and its answers to one member's requests.
const askInterval = 200 * time.Millisecond

// agreement is the node's configuration agreement state.
type agreement struct {
	cfg    Agreement
	own    wire.ConfigAnnounce // this node's, flags clear
	ownFPs [][wire.KeyFingerprintLen]byte
	keyed  bool
	window time.Duration // how long a member counts as heard after its last frame
	// quietWindow is how long a member that agrees counts as heard:
	// three of its quiet spacings, as window is three Intervals (three of
	// its refresh spacings for a member that refreshes: heldFor).
	quietWindow time.Duration
	// spacing is the node's RefreshSpacing: the longest it stays silent
	// towards a member that refreshes and agrees.
	spacing time.Duration
	// refreshAt is when the next refresh falls due (zero: none; the
	// rounds look again): agreeTick sends those whose slot has come
	// (refreshSlots), so that a node's refreshes go one by one through
	// its spacing, not all in one round.
	refreshAt time.Time
	// inFull: the next round announces in full to every member (this
	// node no longer stands back, which refreshes cannot say).
	inFull    bool
	started   time.Time     // first Tick or Receive; zero before
	next      time.Time     // next announcement to every member
	every     time.Duration // the spacing after it: Interval, doubling to QuietInterval while settled
	announced time.Time     // the last announcement to every member
	standing  Standing
	since     time.Time
	members   map[uint32]*memberAgreement
	byAddr    map[netip.AddrPort]uint32
	notices   []Notice
	lost      uint64 // notices dropped beyond maxNotices
	// disagreements counts the announcements (and the refused frames
	// with a fingerprint) found to differ, every member together.
	disagreements uint64
}

// memberAgreement is what the node knows of one member's configuration.
type memberAgreement struct {
	id uint32
	// The member's last authenticated announcement and its incarnation.
	cfgInc      uint32
	cfg         *wire.ConfigAnnounce
	diffs       []string
	announcedAt time.Time
	// heardAt: the last authenticated frame accepted from the member
	// (an announcement, or a core frame once admitted).
	heardAt time.Time
	// An incarnation heard without an announcement of it.
	unknownInc   uint32
	unknownSince time.Time
	unknownAt    time.Time
	legacyInc    uint32 // admitted without an announcement (an older build)
	// refusing: the member's last frame that came to agreeAdmit was
	// refused (incarnation refusedInc not announced yet, or a
	// configuration that differs): the core's frames to it are withheld
	// (withholds) until one is admitted (a checked frame of an earlier
	// incarnation too), an announcement of that incarnation agrees, or,
	// for an unannounced run, the older-build window passes, so that the
	// cut is two-way.
	refusing   bool
	refusedInc uint32
	// refusedSince: when the refusal of incarnation refusedInc began;
	// unannounced: it was refused for not announcing itself (not for a
	// configuration that differs): withholding then ends after the same
	// window that admits it as an older build (withholds), heard again or
	// not (review-twoway: a member refused once and silent was cut off
	// for good; a ring never resends a refused election frame).
	refusedSince time.Time
	unannounced  bool
	// Evidence from frames refused before delivery (another cluster's
	// ID, a MAC that fails): a member with another cluster name or key.
	evAt        time.Time
	evDiffs     []string
	evAuthentic bool
	evFP        [wire.KeyFingerprintLen]byte
	// evAskedAt: when evidence against a member that refreshes last made
	// this node ask it for its announcement, evAsks how many times since
	// it was last heard (at most evidenceAsks, an Interval apart).
	evAskedAt time.Time
	evAsks    int
	// Authentication failures from the member's address.
	authFails     uint64
	disagreements uint64
	// Rate limits of the node's own sends to it and notices about it.
	askedAt, answeredAt, unreachableAt time.Time
	// owed: the member asked while its last answer was less than
	// askInterval old; it is answered once that has passed (agreeTick),
	// not left to wait for this node's next announcement, which may be
	// a QuietInterval away.
	owed bool
	// steppedBack: its last announcement said it stepped back.
	steppedBack bool
	// answeredInc is the incarnation whose request was answered last.
	answeredInc uint32
	// timings is the member's last ConfigTimings (nil: none heard: an
	// older build, or a daemon without them), from its incarnation
	// timingsInc; timingIssues how they do not fit this node's, in
	// words. timingsToldInc and timingsToldOwn are the incarnations of
	// the member and of this node when this node last sent it its own,
	// timingsTold how many times in that pair, timingsRetryAt when it
	// may tell a member that never sent any again (timingsTells times,
	// then backing off: an older build drops each as unknown_kind).
	timings      *wire.ConfigTimings
	timingsInc   uint32
	timingIssues []string
	// timingWarned: a mismatch with the member was said, and not yet
	// that it fits again (kept across its incarnations: a restart with
	// fixed flags ends it).
	timingWarned bool
	// warnedIssues: the mismatch last warned of, kept when the timings
	// expire (expireTimings), so that the same heard again is not
	// warned of again; cleared when they fit or the member restarts.
	warnedIssues   string
	timingsToldInc uint32
	timingsToldOwn uint32
	timingsTold    int
	timingsRetryAt time.Time
	// timingsOwed: the member's timings came as news (the first of its
	// incarnation, or changed) since this node last told it its own; it
	// is told with the next announcement or refresh.
	// timingsAt: when they came last (forgotten timingsKept later).
	timingsOwed bool
	timingsAt   time.Time
	// timingsDoubt (review-timings): timings changed within an
	// incarnation; the member is asked for its own.
	timingsDoubt bool
	// refreshInc is the incarnation of the member that sent a refresh
	// matching its announcement (a build that knows KindConfigRefresh),
	// refreshSpacing the spacing it said (bounded); probedInc and
	// probedOwn the incarnations of the member and of this node when this
	// node last sent it a refresh, so that it knows this node refreshes
	// too; sentAt this node's last announcement or refresh to it.
	refreshInc     uint32
	refreshSpacing time.Duration
	probedInc      uint32
	probedOwn      uint32
	sentAt         time.Time
	// slot is the offset within this node's spacing, from the Unix
	// epoch, at which its refreshes to the member fall due (refreshDue).
	slot time.Duration
}

func newAgreement(cfg *Config) *agreement {
	a := &agreement{
		cfg:      *cfg.Agreement,
		standing: StandingStarting,
		members:  map[uint32]*memberAgreement{},
		byAddr:   map[netip.AddrPort]uint32{},
	}
	if a.cfg.Interval <= 0 {
		a.cfg.Interval = DefaultAnnounceInterval
	}
	if a.cfg.StartGrace <= 0 {
		a.cfg.StartGrace = DefaultStartGrace
	}
	if a.cfg.QuietInterval <= 0 {
		a.cfg.QuietInterval = DefaultQuietInterval
	}
	a.cfg.QuietInterval = max(a.cfg.QuietInterval, a.cfg.Interval)
	if a.cfg.RefreshPace <= 0 {
		a.cfg.RefreshPace = DefaultRefreshPace
	}
	if a.cfg.HeartbeatFlag == "" {
		a.cfg.HeartbeatFlag = "--heartbeat"
	}
	if a.cfg.TimeoutFlag == "" {
		a.cfg.TimeoutFlag = "--leader-timeout"
	}
	a.window = 3 * a.cfg.Interval
	a.quietWindow = 3 * a.cfg.QuietInterval
	a.every = a.cfg.Interval
	a.own = wire.ConfigAnnounce{Service: cfg.Service, Cluster: cfg.Cluster, Algorithm: a.cfg.Algorithm}
	for _, name := range slices.Sorted(maps.Keys(a.cfg.Params)) {
		a.own.Params = append(a.own.Params, wire.ConfigParam{Name: name, Value: a.cfg.Params[name]})
	}
	for id, addr := range cfg.Members {
		a.own.Members = append(a.own.Members, wire.ConfigMember{ID: id, Addr: addr})
		if id != cfg.ID {
			a.members[id] = &memberAgreement{id: id}
			a.byAddr[addr] = id
		}
	}
	a.own.Canonical()
	if len(cfg.Keys) > 0 {
		a.keyed = true
		a.own.KeyFingerprint = wire.KeyFingerprint(cfg.Keys[0].Secret)
		a.own.KeyID = cfg.Keys[0].ID
		for _, k := range cfg.Keys {
			a.ownFPs = append(a.ownFPs, wire.KeyFingerprint(k.Secret))
		}
	}
	a.own.Digest = wire.ConfigDigest(&a.own)
	a.spacing = refreshSpacing(a.cfg.QuietInterval, a.cfg.RefreshPace, len(a.members))
	a.placeSlots(cfg.ID, slices.Sorted(maps.Keys(cfg.Members)))
	if len(a.members) == 0 {
		a.standing = StandingAgreed // nobody to agree with
	}
	return a
}

// refreshSpacing is how long a node stays silent towards a member that
// refreshes and agrees: quiet (its QuietInterval), or others x pace when
// that is longer (so that it sends about one refresh per pace, whatever
// the number of members), in whole seconds as the wire carries it, at
// most wire.MaxRefreshSpacing.
func refreshSpacing(quiet, pace time.Duration, others int) time.Duration {
	d := max(quiet, time.Duration(others)*pace)
	return min(max(d.Round(time.Second), time.Second), wire.MaxRefreshSpacing*time.Second)
}

// placeSlots gives each member its refresh slot (memberAgreement.slot):
// the spacing cut into one slot per member, and the members in the order
// of the list (all, sorted, this node own among them) from the one after
// this node, so that in the same slot every node refreshes a different
// member (node at position p the one at p+j+1 in slot j, modulo the
// members); within its slot, each node's refreshes go at its own offset,
// p of N parts of the slot, so that nodes started together (or in phase
// by chance) do not send in the same instant. The slots are fixed in
// time (from the Unix epoch), so they stay apart across restarts, as far
// as the members' clocks agree.
func (a *agreement) placeSlots(self uint32, all []uint32) {
	pos := slices.Index(all, self)
	n := len(all)
	if pos < 0 || n < 2 {
		return
	}
	k := n - 1
	slot := a.spacing / time.Duration(k)
	for p, id := range all {
		m := a.members[id]
		if m == nil {
			continue
		}
		j := ((p-pos-1)%n + n) % n // 0..k-1
		m.slot = time.Duration(j)*slot + time.Duration(pos)*slot/time.Duration(n)
	}
}

// refreshDue is when member m's next refresh falls due: its slot's last
// instant not after a spacing since this node last sent it anything
// (m.sentAt). Never later than a spacing, as before the slots; at rest,
// one spacing apart exactly. The first after a full announcement comes
// up to a spacing sooner, at the member's slot.
func (a *agreement) refreshDue(m *memberAgreement) time.Time {
	if m.sentAt.IsZero() {
		return time.Time{}
	}
	x := m.sentAt.Add(a.spacing)
	sp := int64(a.spacing)
	past := (x.UnixNano() - int64(m.slot)) % sp
	if past < 0 {
		past += sp
	}
	return x.Add(-time.Duration(past))
}

// refreshes says whether member m sent a refresh matching the
// announcement of its incarnation that this node holds: it knows
// KindConfigRefresh, and takes refreshes in place of announcements.
func (m *memberAgreement) refreshes() bool {
	return m.cfg != nil && m.refreshInc != 0 && m.refreshInc == m.cfgInc
}

// evidenceAsks is how many times evidence against a member that refreshes
// makes this node ask it for its announcement, an Interval apart, before
// its silence ends its agreement (heldFor).
const evidenceAsks = 3

// heldFor is how long member m, agreeing, counts as heard after its
// last frame: three of its quiet spacings (three of the refresh spacings
// it said, if longer). Not after evidence against it (frames from its
// address under another key or cluster name) made this node ask it for
// its announcement evidenceAsks times and an Interval passed unanswered: a member restarted
// with another key cannot answer, and would count as agreeing for three
// refresh spacings (minutes at 64 members) while the log said it
// differs. A live member answers, which counts as heard again; a forger
// gains evidenceAsks asks per member per quiet window, and ends a live
// member's agreement only if every ask, or its answer, is lost.
func (a *agreement) heldFor(m *memberAgreement, now time.Time) time.Duration {
	if !m.refreshes() {
		return a.quietWindow
	}
	if m.evAskedAt.After(m.heardAt) && m.evAsks >= evidenceAsks && now.Sub(m.evAskedAt) >= a.cfg.Interval {
		return a.quietWindow
	}
	return max(a.quietWindow, 3*m.refreshSpacing)
}

// checkAgreement refuses an Agreement no announcement can carry.
func checkAgreement(cfg *Config) error {
	if cfg.Agreement == nil {
		return nil
	}
	a := newAgreement(cfg)
	if _, err := a.own.AppendBinary(nil); err != nil {
		return fmt.Errorf("node: configuration agreement: %w", err)
	}
	return nil
}

// Standing returns whether the node's core runs (StandingAgreed), waits
// for the members' announcements at the start, or has stepped back.
func (n *Node) Standing() Standing {
	if n.agree == nil {
		return StandingAgreed
	}
	return n.agree.standing
}

// Notices drains what configuration agreement wants an operator to see.
func (n *Node) Notices() []Notice {
	if n.agree == nil || len(n.agree.notices) == 0 {
		return nil
	}
	out := n.agree.notices
	n.agree.notices = nil
	return out
}

func (a *agreement) notice(nt Notice) {
	if len(a.notices) >= maxNotices {
		a.lost++
		return
	}
	a.notices = append(a.notices, nt)
}

// member returns the agreement state of member id (nil: not a member).
func (a *agreement) member(id uint32) *memberAgreement { return a.members[id] }

// sender finds the member a frame that came as in is from: the member at
// its address (a datagram: address and port; a stream frame: the IP,
// preferring the member the frame names).
func (a *agreement) sender(in Inbound, claimed uint32) *memberAgreement {
	if !in.Stream {
		if id, ok := a.byAddr[in.From]; ok {
			return a.members[id]
		}
		return nil
	}
	if m := a.members[claimed]; m != nil {
		for addr, id := range a.byAddr {
			if id == claimed && addr.Addr() == in.From.Addr() {
				return m
			}
		}
	}
	for addr, id := range a.byAddr {
		if addr.Addr() == in.From.Addr() {
			return a.members[id]
		}
	}
	return nil
}

// memberState is how one member counts.
type memberState uint8

const (
	stSilent     memberState = iota // not heard lately
	stAgrees                        // announced this node's configuration
	stDiffers                       // announced another, or its frames show another key or cluster
	stUnknown                       // heard, no announcement of its incarnation yet
	stUnverified                    // heard, never announced: an older build, admitted unchecked
)

var stateNames = [...]string{stSilent: "silent", stAgrees: "agrees", stDiffers: "differs", stUnknown: "unknown", stUnverified: "unverified"}

func (a *agreement) recent(t, now time.Time) bool {
	return !t.IsZero() && now.Sub(t) < a.window
}

func (a *agreement) stateOf(m *memberAgreement, now time.Time) memberState {
	announced := m.cfg != nil && m.cfgInc >= m.unknownInc
	switch {
	case announced && len(m.diffs) == 0 && !m.heardAt.IsZero() && now.Sub(m.heardAt) < a.heldFor(m, now):
		// A member that agrees may be quiet for a QuietInterval, or a
		// refresh spacing (and its core's frames may be rare: Ω's
		// followers send none).
		return stAgrees
	case announced && len(m.diffs) > 0 && a.recent(m.heardAt, now):
		return stDiffers
	case a.recent(m.evAt, now) && len(m.evDiffs) > 0:
		return stDiffers
	case m.legacyInc != 0 && m.legacyInc >= m.unknownInc && a.recent(m.heardAt, now):
		return stUnverified
	case a.recent(m.unknownAt, now):
		return stUnknown
	}
	return stSilent
}

// settled says whether announcements may space out: this node runs
// (neither starting nor stepped back), no member it hears differs or
// speaks with an incarnation it has not announced, and none said it
// stepped back (it may be waiting for this node's word: forged
// announcements in its name, or a typo being fixed). A silent member does
// not unsettle it: a member that comes back asks for the announcements it
// needs (ConfigAnswer), and is answered at once.
func (a *agreement) settled(now time.Time) bool {
	if a.standing != StandingAgreed {
		return false
	}
	for _, m := range a.members {
		if s := a.stateOf(m, now); s == stDiffers || s == stUnknown || (m.steppedBack && a.recent(m.announcedAt, now)) {
			return false
		}
	}
	return true
}

// counts returns the members whose configuration agrees with this node's
// (itself included) and those whose differs, among the members it hears.
func (a *agreement) counts(self uint32, now time.Time) (agree, differ []uint32, decided int) {
	agree = []uint32{self}
	for _, id := range slices.Sorted(maps.Keys(a.members)) {
		switch a.stateOf(a.members[id], now) {
		case stAgrees:
			agree = append(agree, id)
			decided++
		case stDiffers:
			differ = append(differ, id)
			decided++
		}
	}
	return agree, differ, decided
}

// evaluate decides the node's standing at now: starting until every
// member has been heard, or a majority of the members agrees, or
// StartGrace has passed (whatever the members heard so far say: the
// first answers may all be the wrong member's); then stepped back while
// as many members it hears differ as agree (itself included: two members
// that disagree both step back).
func (n *Node) evaluate(now time.Time) {
	a := n.agree
	if len(a.members) == 0 {
		return
	}
	if a.started.IsZero() {
		// A frame came before the first Tick: the start is now.
		a.started = now
	}
	agree, differ, decided := a.counts(n.cfg.ID, now)
	next := StandingAgreed
	switch {
	case a.standing == StandingStarting && decided < len(a.members) && 2*len(agree) <= len(n.cfg.Members) &&
		now.Sub(a.started) < a.cfg.StartGrace:
		// Members unheard at the start: a tie, or a minority, may be
		// the order the announcements came in (a member configured
		// right that heard the wrong one first used to step back, say
		// so at WARN, and agree again a moment later). The core is
		// held back as it would be stepped back, until every member or
		// a majority is heard, or StartGrace passes.
		next = StandingStarting
	case len(differ) > 0 && len(differ) >= len(agree):
		next = StandingSteppedBack
	}
	if a.every > a.cfg.Interval && !a.settled(now) {
		// Something changed: announce at the Interval again, from the
		// last announcement on.
		a.every = a.cfg.Interval
		a.next = minTime(a.next, a.announced.Add(a.every))
	}
	if next == a.standing {
		return
	}
	prev := a.standing
	a.standing, a.since = next, now
	if next == StandingSteppedBack || prev == StandingSteppedBack {
		// The members learn of it with the next announcement: at once,
		// and in full (a refresh carries no flag).
		a.next, a.inFull = now, true
	}
}

// StandingReason says in words why the node stands as it does.
func (n *Node) StandingReason() string {
	if n.agree == nil {
		return ""
	}
	a := n.agree
	agree, differ, _ := a.counts(n.cfg.ID, n.now)
	switch a.standing {
	case StandingSteppedBack:
		return fmt.Sprintf("this member's configuration is in the minority of the members it hears: %s agree%s, %s differ%s",
			idList(agree), plural(len(agree)), idList(differ), plural(len(differ)))
	case StandingStarting:
		return fmt.Sprintf("waiting for the members' configurations (at most %v)", a.cfg.StartGrace)
	}
	if len(differ) > 0 {
		return fmt.Sprintf("%s agree, %s differ (not followed or counted)", idList(agree), idList(differ))
	}
	return ""
}

func plural(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

func idList(ids []uint32) string {
	if len(ids) == 0 {
		return "none"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	if len(s) == 1 {
		return "member " + s[0]
	}
	return "members " + strings.Join(s, ", ")
}

// agreeTick runs agreement's time-driven work at local time now:
// announcements, the start's end, members heard no more.
func (n *Node) agreeTick(now time.Time) {
	a := n.agree
	if a.started.IsZero() {
		a.started = now
	}
	a.steppedBack(now)
	for _, id := range slices.Sorted(maps.Keys(a.members)) {
		if m := a.members[id]; m.owed && !now.Before(m.answeredAt.Add(askInterval)) {
			m.answeredAt, m.owed = now, false
			n.announce(id, false)
		}
	}
	if !now.Before(a.next) {
		// The first round asks every member for its announcement.
		n.announceRound(now, a.next.IsZero())
		if a.settled(now) {
			a.every = min(2*a.every, a.cfg.QuietInterval)
		} else {
			a.every = a.cfg.Interval
		}
		a.announced, a.next = now, now.Add(a.every)
		n.refreshSlots(now)
	} else if !a.refreshAt.IsZero() && !now.Before(a.refreshAt) {
		n.refreshSlots(now)
	}
	for _, id := range slices.Sorted(maps.Keys(a.members)) {
		m := a.members[id]
		if m.timings != nil && now.Sub(m.timingsAt) >= timingsKept {
			m.expireTimings()
			m.timingsDoubt = true // review-timings: ask for them again (its answer carries them)
		}
		if m.timingsDoubt && (now.Sub(m.askedAt) >= askInterval || m.askedAt.After(now)) {
			m.timingsDoubt = false
			m.askedAt = now
			n.announce(id, true)
		}
		if held := a.heldFor(m, now); a.stateOf(m, now) == stAgrees && a.standing == StandingAgreed &&
			now.Sub(m.heardAt) >= held-evidenceAsks*a.cfg.Interval &&
			(!m.askedAt.After(m.heardAt) || now.Sub(m.askedAt) >= a.cfg.Interval || m.askedAt.After(now)) {
			// An agreeing member about to lapse into silent: its
			// refresh that told this node it refreshes (or two
			// refreshes) may have been lost, and it sends nothing
			// until its next, up to a spacing away (63 s at 64
			// members, where this node held it 24 s and warned it
			// "not heard" at 30: TestFirstRefreshLost,
			// TestStartLossNotHeard; review-spread). Ask it, as the
			// evidence asks do (at most evidenceAsks per silence, an
			// Interval apart): a live member answers, which counts as
			// heard; a dead one lapses as before.
			m.askedAt = now
			n.announce(id, true)
		}
		last := m.heardAt
		if last.IsZero() {
			last = a.started
		}
		// A member that refreshes may be silent for its refresh
		// spacing: it is unreachable when it no longer counts.
		after := max(unreachableAfter, a.heldFor(m, now))
		if now.Sub(last) >= after && now.Sub(m.unreachableAt) >= after {
			m.unreachableAt = now
			what := "never heard since this node started"
			if !m.heardAt.IsZero() {
				what = fmt.Sprintf("not heard for %v", now.Sub(m.heardAt).Round(time.Second))
			}
			a.notice(Notice{Key: "unreachable", Member: id, Warn: true,
				Msg: fmt.Sprintf("member %d %s: it is down, unreachable, or its frames are refused (see status: dropped, refused)", id, what)})
		}
	}
	n.evaluate(now)
}

// steppedBack re-bases on now the times agreement stored before its clock
// stepped back past them (a Berkeley master stepping this member, date -s
// under --clock system): each is compared with now as a past time or a
// deadline, and left as it was it would hold its work off for the length
// of the step. The next round was due for S more (no announcement nor
// refresh, and the tells that ride on them, for S: measured, 0 a minute
// for 10 minutes after a 10-minute step, where the others, with quiet
// cores, warned the member unreachable and stepped back on a tie), an
// owed answer, the start's grace, a member heard no more (still counted
// for S) and its unreachable warning as long, an unannounced run refused
// and cut off S more before its older-build window admitted it. A time after now is now:
// the round, and what waits on it, is due at once; what counts from a
// time counts from the step.
func (a *agreement) steppedBack(now time.Time) {
	if a.next.Sub(now) > a.every {
		a.next = now
	}
	if a.refreshAt.Sub(now) > a.spacing {
		a.refreshAt = now
	}
	a.started, a.announced = notAfter(a.started, now), notAfter(a.announced, now)
	for _, m := range a.members {
		m.heardAt, m.answeredAt, m.unreachableAt = notAfter(m.heardAt, now), notAfter(m.answeredAt, now), notAfter(m.unreachableAt, now)
		m.timingsAt = notAfter(m.timingsAt, now)
		// When a refusal of an unannounced run began: its older-build
		// window (agreeAdmit's admission, withholds' cut) counts from
		// the step, not for the step's length more.
		m.unknownSince, m.refusedSince = notAfter(m.unknownSince, now), notAfter(m.refusedSince, now)
	}
}

// notAfter is t, or now if t is after it.
func notAfter(t, now time.Time) time.Time {
	if t.After(now) {
		return now
	}
	return t
}

// agreeDeadline is when agreement next needs a Tick.
func (n *Node) agreeDeadline(now time.Time) time.Time {
	a := n.agree
	dl := a.next
	if !a.refreshAt.IsZero() {
		dl = minTime(dl, a.refreshAt)
	}
	if a.standing == StandingStarting && !a.started.IsZero() {
		dl = minTime(dl, a.started.Add(a.cfg.StartGrace))
	}
	for _, m := range a.members {
		if m.owed {
			dl = minTime(dl, m.answeredAt.Add(askInterval))
		}
		if m.timingsDoubt {
			dl = minTime(dl, m.askedAt.Add(askInterval))
		}
	}
	if dl.IsZero() || dl.Before(now) {
		return now
	}
	return dl
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// announceRound is a periodic round of announcements, at local time now
// (first: the first, which asks every member for its own). A member that
// refreshes and agrees, while this node runs, gets a refresh (a few
// bytes) when its slot has come (refreshDue: at most its RefreshSpacing
// since this node last announced to it; the rounds between send it
// nothing, refreshSlots sends it at its slot), nothing before (unless the
// node just ceased to stand back: every member hears that in full); every
// other member the full
// announcement, as every round, and, when it agrees and was never told
// in its incarnation that this node refreshes, a refresh too (which a
// build that does not know the kind drops once, as unknown_kind).
func (n *Node) announceRound(now time.Time, first bool) {
	a := n.agree
	if first || a.standing != StandingAgreed || a.inFull {
		a.inFull = false
		n.announce(0, first)
		return
	}
	for _, id := range n.others {
		m := a.members[id]
		agrees := a.stateOf(m, now) == stAgrees && !m.steppedBack
		// Told that this node refreshes, in both incarnations: a node
		// that moved to a new one (ReplaceCore) is new to the members.
		told := m.probedInc == m.cfgInc && m.probedOwn == n.inc
		switch {
		case agrees && m.refreshes():
			if !told || !now.Before(a.refreshDue(m)) || m.sentAt.After(now) {
				n.refresh(id)
			}
		case agrees && !told:
			n.announce(id, false)
			n.refresh(id)
		default:
			n.announce(id, false)
		}
	}
}

// refreshSlots sends, at local time now, the refreshes whose slot has come
// (refreshDue) to the members that refresh, agree and were told in both
// incarnations that this node refreshes (what announceRound refreshes),
// and sets when the next falls due (a.refreshAt, a deadline of
// agreeDeadline). A node's refreshes so go one at a time, a spacing /
// (members - 1) apart (a second at the defaults from 9 members on), not
// all in the round that found them due: at 64 members that was 63
// refreshes and their timings within a few seconds every 63 s
// (docs/benchmarks/2026-12-07-omega64-check.md, point 5). Nothing while
// the rounds announce in full (this node starts, stands back, or just
// ceased to): the next round sets it again.
func (n *Node) refreshSlots(now time.Time) {
	a := n.agree
	a.refreshAt = time.Time{}
	if a.next.IsZero() || a.standing != StandingAgreed || a.inFull {
		return
	}
	for _, id := range n.others {
		m := a.members[id]
		if !m.refreshes() || m.steppedBack || m.probedInc != m.cfgInc || m.probedOwn != n.inc || a.stateOf(m, now) != stAgrees {
			continue
		}
		due := a.refreshDue(m)
		if !now.Before(due) || m.sentAt.After(now) {
			n.refresh(id)
			if due = a.refreshDue(m); !due.After(now) {
				continue // not sent (cannot happen): the rounds try again, no busy deadline
			}
		}
		if a.refreshAt.IsZero() || due.Before(a.refreshAt) {
			a.refreshAt = due
		}
	}
}

// refresh queues a refresh (wire.ConfigRefresh) to member to.
func (n *Node) refresh(to uint32) {
	a := n.agree
	r := wire.ConfigRefresh{Spacing: uint16(a.spacing / time.Second), Digest: a.own.Digest, KeyFingerprint: a.own.KeyFingerprint}
	b, err := r.AppendBinary(nil)
	if err != nil {
		n.stats.drop("unsent_config") // spacing is at least 1 s: cannot happen
		return
	}
	m := a.members[to]
	if m == nil {
		return
	}
	m.sentAt, m.probedInc, m.probedOwn = n.now, m.cfgInc, n.inc
	n.own = append(n.own, core.Message{To: to, Kind: wire.KindConfigRefresh, Payload: b})
	// Once agreed, members exchange only refreshes: the timings ride on
	// them, first and then on the retries (tellTimings), or lost
	// datagrams would leave a member blind to a mismatch for good.
	n.tellTimings(m)
}

// announce queues this node's announcement to member to, or to every
// member (to 0); ask sets ConfigAnswer.
func (n *Node) announce(to uint32, ask bool) {
	a := n.agree
	c := a.own
	if ask {
		c.Flags |= wire.ConfigAnswer
	}
	if a.standing == StandingSteppedBack {
		c.Flags |= wire.ConfigSteppedBack
	}
	b, err := c.AppendBinary(nil)
	if err != nil {
		n.stats.drop("unsent_config") // checked by New: cannot happen
		return
	}
	if to != 0 {
		if m := a.members[to]; m != nil {
			m.sentAt = n.now
			n.own = append(n.own, core.Message{To: to, Kind: wire.KindConfig, Payload: b})
			n.tellTimings(m)
		}
		return
	}
	for _, id := range n.others {
		a.members[id].sentAt = n.now
		n.own = append(n.own, core.Message{To: id, Kind: wire.KindConfig, Payload: b})
		n.tellTimings(a.members[id])
	}
}

// agreeAdmit decides, once its sequence number and stamps passed and
// before anything is recorded, whether a member's authenticated frame
// (not the node's own kinds) goes on to the core: not while this node stands back or starts, not from a member
// whose configuration differs, not from an incarnation of it that has
// not announced itself (the node asks it to), unless that lasts long
// enough to say it is an older build that never will. checked says the
// frame's incarnation announced a configuration that matches this
// member's (core.Message.Checked): an unchecked member's frame is let
// through, but nothing of this member's configuration bounds it.
func (n *Node) agreeAdmit(f *wire.Frame, now time.Time) (checked bool, err error) {
	a := n.agree
	m := a.member(f.Sender)
	if m == nil {
		return false, nil
	}
	inc, _, _ := wire.SeqParts(f.Seq)
	defer func() {
		// Only a refusal of the member itself (its incarnation, its
		// configuration) cuts it; this node starting or standing back
		// refuses every member and holds its core.
		switch {
		case errors.Is(err, ErrSteppedBack), errors.Is(err, ErrStarting):
		case m.refusing && inc < m.refusedInc && !checked:
			// A frame of an earlier incarnation (still in flight)
			// neither ends nor moves the refusal of a later one; but a
			// checked frame (of the incarnation whose configuration
			// agreed) does end it: without a key a frame naming a
			// made-up higher incarnation started the refusal, and the
			// real member's frames kept it, a one-way cut for the whole
			// window, or for good after a forged announcement
			// (review-mine2).
		default:
			if err != nil && (!m.refusing || inc != m.refusedInc) {
				m.refusedSince = now
			}
			m.refusing, m.refusedInc = err != nil, inc
			m.unannounced = errors.Is(err, ErrConfigUnverified)
		}
	}()
	switch {
	case a.standing == StandingSteppedBack:
		return false, ErrSteppedBack
	case a.standing == StandingStarting:
		return false, ErrStarting
	case m.cfg != nil && inc <= m.cfgInc:
		if len(m.diffs) > 0 {
			return false, fmt.Errorf("%w: member %d: %s", ErrConfigDiffers, f.Sender, strings.Join(m.diffs, "; "))
		}
		// Checked only for the incarnation whose configuration was
		// compared: an older one's frame (still in flight) may come from
		// a run configured otherwise (review-mutex5).
		return inc == m.cfgInc, nil
	case m.legacyInc != 0 && inc == m.legacyInc:
		return false, nil
	}
	if inc != m.unknownInc {
		m.unknownInc, m.unknownSince = inc, now
	}
	m.unknownAt = now
	if now.Sub(m.unknownSince) >= a.window {
		// Heard for a while and never announced: a build without
		// agreement. Admitted, unchecked, and said so.
		m.legacyInc = inc
		if m.timings != nil && inc != m.timingsInc {
			// A run without agreement (an older build, timed
			// outside --mode berkeley) tells no timings: those of
			// another incarnation (its last run's, or forged in its
			// name) are forgotten, as an announcement forgets them.
			m.forgetTimings()
		}
		a.notice(Notice{Key: "unverified", Member: f.Sender, Warn: true, Msg: a.unverifiedText(f.Sender)})
		return false, nil
	}
	if now.Sub(m.askedAt) >= askInterval || m.askedAt.After(now) {
		m.askedAt = now
		n.announce(f.Sender, true)
	}
	return false, fmt.Errorf("%w: member %d, incarnation %d", ErrConfigUnverified, f.Sender, inc)
}

// withholds says whether the core's frames to member id are withheld:
// this node refuses its frames (agreeAdmit: an incarnation that has not
// announced itself, or a configuration that differs). A refusal is a
// cut, and the cores argue their safety from cuts that are two-way (a
// member that hears nobody takes itself for cut off; see
// pkg/mutex/permission's "Links"): a member refused by a majority that
// still heard it would count that majority heard, and grant or hold a
// lock, while the majority gave it up on the silence it sees. With its
// frames withheld too, the refused member hears this node no more than
// this node hears it, as across a broken link. The node's own frames
// (announcements, asks, status) still go: they are how a refusal ends.
func (n *Node) withholds(id uint32) bool {
	if n.agree == nil {
		return false
	}
	m := n.agree.member(id)
	if m == nil || !m.refusing {
		return false
	}
	if m.unannounced && n.now.Sub(m.refusedSince) >= n.agree.window {
		// Long enough that its next frame is admitted unchecked (an
		// older build): the cut ends with the refusal it mirrors.
		return false
	}
	if m.cfg != nil && m.cfgInc >= m.refusedInc {
		// It announced itself since (both sides may have refused each
		// other's first frames while their announcements crossed): a
		// configuration that agrees ends the cut.
		return len(m.diffs) > 0
	}
	return true
}

// unverifiedText says that member id announces no configuration, and
// what that may mean: an older build or, in timed, a member outside
// Berkeley mode (it runs no agreement: it follows its NTP servers, and
// answers none of the master's polls).
func (a *agreement) unverifiedText(id uint32) string {
	if a.own.Service == "timed" {
		return fmt.Sprintf("member %d announces no configuration: a timed not run with --mode berkeley (it follows its own servers and answers none of the master's polls: "+
			"give every member of the group --mode berkeley, or take it out of --members), or an older synclab without configuration agreement (upgrade it); it is followed unchecked", id)
	}
	return fmt.Sprintf("member %d announces no configuration (an older synclab without configuration agreement?): it is followed unchecked; upgrade it", id)
}

// agreeHeard records an authenticated frame accepted from member id.
func (n *Node) agreeHeard(id uint32, now time.Time) {
	if m := n.agree.member(id); m != nil {
		m.heardAt = now
	}
}

// announcer is the member that sent f, an announcement or a refresh, and
// its incarnation; nil for a non-member, or (with keys) a frame of an
// older incarnation than the last announced, late.
func (a *agreement) announcer(f *wire.Frame) (*memberAgreement, uint32) {
	m := a.member(f.Sender)
	inc, _, _ := wire.SeqParts(f.Seq)
	if m == nil || (inc < m.cfgInc && a.keyed) {
		return nil, inc
	}
	return m, inc
}

// configReceived takes a member's authenticated announcement, its
// sequence number accepted.
func (n *Node) configReceived(f *wire.Frame, c *wire.ConfigAnnounce, now time.Time) {
	a := n.agree
	m, inc := a.announcer(f)
	if m == nil {
		return
	}
	// Without keys anyone can announce any incarnation in a member's
	// name, and one believed above the member's own used to hold its
	// real announcements (and frames) off for good: a node made to step
	// back by forged announcements of a higher incarnation stayed back
	// until it restarted. So the latest announcement is the member's
	// word, whatever its incarnation, as is an incarnation heard without
	// one (unknownInc): a forged announcement lasts until the member's
	// next, one Interval.
	if !a.keyed {
		m.unknownInc = 0
	}
	m.heardAt, m.announcedAt = now, now
	m.cfgInc, m.cfg = inc, c
	if m.timings != nil && inc != m.timingsInc {
		// Another run of the member: its timings are told again (none,
		// if it now runs a build or a daemon without them). Any other
		// incarnation, not only a higher one: without a key, timings
		// forged at an incarnation the member never announces would
		// otherwise stay for its whole run.
		m.forgetTimings()
	}
	m.steppedBack = c.Flags&wire.ConfigSteppedBack != 0
	differed := len(m.diffs) > 0
	m.diffs = a.differences(f.Sender, c, true)
	// A member that agreed announces another configuration: ask it for
	// its own at once. A real change is confirmed a round trip later; one
	// forged in its name (without a key, anyone can) is undone as soon,
	// not at the member's next announcement, which may be a QuietInterval
	// away.
	ask := len(m.diffs) > 0 && !differed && (now.Sub(m.askedAt) >= askInterval || m.askedAt.After(now))
	if ask {
		m.askedAt = now
	}
	if len(m.diffs) > 0 {
		m.disagreements++
		a.disagreements++
		a.notice(Notice{Key: "config_differs", Member: f.Sender, Warn: true,
			Msg: fmt.Sprintf("configuration disagreement with member %d: %s; its frames are refused (not followed, voted for or counted) until the configurations agree",
				f.Sender, strings.Join(m.diffs, "; "))})
	}
	// A member that just restarted (a newer incarnation, authenticated)
	// is answered at once, even if its last run asked a moment ago: it
	// waits for the answer to start (StartGrace).
	restarted := a.keyed && inc > m.answeredInc
	if c.Flags&wire.ConfigAnswer != 0 {
		// review-timings: an ask is answered with this node's timings
		// too (the asker may hold none, or others forged in its name).
		m.timingsOwed = true
	}
	switch {
	case c.Flags&wire.ConfigAnswer != 0 && (restarted || now.Sub(m.answeredAt) >= askInterval || m.answeredAt.After(now)):
		m.answeredAt, m.answeredInc, m.owed = now, max(m.answeredInc, inc), false
		n.announce(f.Sender, ask)
	case c.Flags&wire.ConfigAnswer != 0:
		m.owed = true
		if ask {
			n.announce(f.Sender, true)
		}
	case ask:
		n.announce(f.Sender, true)
	}
	n.evaluate(now)
}

// configRefreshed takes a member's authenticated refresh, its sequence
// number accepted. One that matches the announcement this node holds of
// the member's incarnation (digest and key) says that the member is up
// with it, and that it refreshes; anything else is believed in nothing:
// the node asks the member for its announcement (at most one request per
// askInterval), which says what it is. A refresh never makes a member
// count as differing, nor undoes a difference.
func (n *Node) configRefreshed(f *wire.Frame, r *wire.ConfigRefresh, now time.Time) {
	a := n.agree
	m, inc := a.announcer(f)
	if m == nil {
		return
	}
	if m.cfg != nil && inc == m.cfgInc && r.Digest == m.cfg.Digest && r.KeyFingerprint == m.cfg.KeyFingerprint {
		m.heardAt = now
		m.refreshInc = inc
		// The spacing it says, believed up to twice this node's own (an
		// honest member of the same list says as much, or a later build
		// a little more; without a key anyone can say 18 hours).
		m.refreshSpacing = min(time.Duration(min(r.Spacing, wire.MaxRefreshSpacing))*time.Second, 2*a.spacing)
		if m.steppedBack && (now.Sub(m.askedAt) >= askInterval || m.askedAt.After(now)) {
			// It runs (a member standing back sends no refreshes) but
			// the full announcement that said so was lost: without
			// asking, it would show stepped back for good, refreshes
			// carrying no flags.
			m.askedAt = now
			n.announce(f.Sender, true)
		}
		n.evaluate(now)
		return
	}
	if now.Sub(m.askedAt) >= askInterval || m.askedAt.After(now) {
		m.askedAt = now
		n.announce(f.Sender, true)
	}
}

// agreeRefused looks at a frame refused before delivery (err: another
// cluster's ID, or a MAC that fails) that came from a member's address:
// the evidence of a member configured with another cluster name or key,
// or of forgeries in its name.
func (n *Node) agreeRefused(f *wire.Frame, in Inbound, err error) {
	a := n.agree
	authErr := errors.Is(err, wire.ErrBadMAC) || errors.Is(err, wire.ErrUnknownKey) || errors.Is(err, wire.ErrNoMAC)
	if !authErr && !errors.Is(err, wire.ErrWrongCluster) {
		return
	}
	m := a.sender(in, f.Sender)
	if m == nil {
		return
	}
	now := in.Time
	if a.started.IsZero() {
		a.started = now
	}
	var c wire.ConfigAnnounce
	if f.Kind != wire.KindConfig || c.UnmarshalBinary(f.Payload) != nil {
		if authErr {
			m.authFails++
			n.authNotice(m, err, now)
		}
		return
	}
	authentic := n.validator.VerifyMAC(f, in.Data) == nil
	if !authentic {
		m.authFails++
	}
	if errors.Is(err, wire.ErrWrongCluster) && wire.ServiceClusterID(c.Service, c.Cluster) != f.Cluster {
		return // its parts do not make its header: not worth believing
	}
	if !authentic && slices.Contains(a.ownFPs, c.KeyFingerprint) {
		// It names a key this node holds, yet its MAC fails.
		m.evAt, m.evDiffs = time.Time{}, nil
		a.notice(Notice{Key: "forged", Member: m.id, Warn: true,
			Msg: fmt.Sprintf("frames from member %d's address fail authentication (%s) although they name this cluster's key (key id %s): forged or corrupted frames; %d refused so far",
				m.id, wire.Reason(err), short(c.KeyFingerprint), m.authFails)})
		return
	}
	m.evAt, m.evAuthentic, m.evFP = now, authentic, c.KeyFingerprint
	if m.refreshes() && now.Sub(m.heardAt) >= a.quietWindow {
		// It counts as agreeing for its refresh spacings; ask it (see
		// heldFor), again an Interval later while evidence comes and it
		// does not answer: one lost ask or answer does not end a live
		// member's agreement on a forger's word.
		if !m.evAskedAt.After(m.heardAt) {
			m.evAsks = 0
		}
		if m.evAsks < evidenceAsks && (m.evAsks == 0 || now.Sub(m.evAskedAt) >= a.cfg.Interval || m.evAskedAt.After(now)) {
			m.evAskedAt = now
			m.evAsks++
			n.announce(m.id, true)
		}
	}
	if authentic {
		m.evDiffs = a.differences(m.id, &c, true)
	} else {
		// Only the key can be believed of a frame that does not
		// authenticate: anyone could have written the rest.
		m.evDiffs = []string{a.keyDifference(m.id, c.KeyFingerprint)}
	}
	if f.Sender != m.id {
		m.evDiffs = append(m.evDiffs, fmt.Sprintf("member %d's address sends as member %d (its --id?)", m.id, f.Sender))
	}
	if c.Flags&wire.ConfigAnswer != 0 && (now.Sub(m.answeredAt) >= askInterval || m.answeredAt.After(now)) {
		// A member that just started asks: it learns of the difference
		// from the answer at once, before it runs. Answered even when
		// the request did not authenticate (another key): at most one
		// announcement per askInterval, and only to a member's address.
		m.answeredAt = now
		n.announce(m.id, false)
	}
	m.disagreements++
	a.disagreements++
	what := "its frames are refused"
	if !authentic {
		what = fmt.Sprintf("its frames fail authentication here (%d so far)", m.authFails)
	}
	a.notice(Notice{Key: "config_differs", Member: m.id, Warn: true,
		Msg: fmt.Sprintf("configuration disagreement with member %d: %s; %s until the configurations agree", m.id, strings.Join(m.evDiffs, "; "), what)})
	n.evaluate(now)
}

// authNotice says that a frame from member m's address failed
// authentication, telling apart, where an announcement allows it, a
// member with another key from forgeries.
func (n *Node) authNotice(m *memberAgreement, err error, now time.Time) {
	a := n.agree
	switch {
	case a.recent(m.evAt, now) && !m.evAuthentic && len(m.evDiffs) > 0:
		a.notice(Notice{Key: "config_differs", Member: m.id, Warn: true,
			Msg: fmt.Sprintf("configuration disagreement with member %d: %s; its frames fail authentication here (%d so far)", m.id, strings.Join(m.evDiffs, "; "), m.authFails)})
	case m.cfg != nil && a.recent(m.heardAt, now):
		a.notice(Notice{Key: "forged", Member: m.id, Warn: true,
			Msg: fmt.Sprintf("frames from member %d's address fail authentication (%s) while its own frames authenticate: forged or corrupted frames in its name; %d refused so far",
				m.id, wire.Reason(err), m.authFails)})
	default:
		a.notice(Notice{Key: "auth_failed", Member: m.id, Warn: true,
			Msg: fmt.Sprintf("frames from member %d's address fail authentication (%s): member %d has another key, or they are forged (its next announcement tells which); %d refused so far",
				m.id, wire.Reason(err), m.id, m.authFails)})
	}
}

// keyDifference says how member id's key differs from this node's.
func (a *agreement) keyDifference(id uint32, theirs [wire.KeyFingerprintLen]byte) string {
	switch {
	case theirs == [wire.KeyFingerprintLen]byte{}:
		return fmt.Sprintf("member %d runs without a key (--insecure), this member with key id %s", id, short(a.own.KeyFingerprint))
	case !a.keyed:
		return fmt.Sprintf("member %d authenticates with key id %s, this member runs without a key (--insecure)", id, short(theirs))
	}
	return fmt.Sprintf("member %d's key differs (key id %s here, %s there)", id, short(a.own.KeyFingerprint), short(theirs))
}

// short is a key fingerprint as a WARN line shows it.
func short(fp [wire.KeyFingerprintLen]byte) string {
	if fp == ([wire.KeyFingerprintLen]byte{}) {
		return "none"
	}
	return hex.EncodeToString(fp[:4]) + ".."
}

// maxMemberDiffs bounds the member-list differences named one by one.
const maxMemberDiffs = 4

// differences says, part by part, how member id's announced
// configuration c differs from this node's; authentic: c came with a
// MAC this node verified (or neither side has keys).
func (a *agreement) differences(id uint32, c *wire.ConfigAnnounce, authentic bool) []string {
	own := &a.own
	var d []string
	if c.Service != own.Service {
		d = append(d, fmt.Sprintf("member %d's address runs %s, not %s (one port given to two daemons?)", id, quote(c.Service), own.Service))
	}
	if c.Cluster != own.Cluster {
		d = append(d, fmt.Sprintf("member %d's cluster name differs (%s here, %s there)", id, quote(own.Cluster), quote(c.Cluster)))
	}
	if c.Algorithm != own.Algorithm {
		d = append(d, fmt.Sprintf("member %d's algorithm differs (%s here, %s there)", id, quote(own.Algorithm), quote(c.Algorithm)))
	}
	names := map[string]bool{}
	for _, p := range own.Params {
		names[p.Name] = true
	}
	for _, p := range c.Params {
		names[p.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		ours, okO := own.Param(name)
		theirs, okT := c.Param(name)
		if ours != theirs || okO != okT {
			d = append(d, fmt.Sprintf("member %d's %s differs (%s here, %s there)", id, name, paramText(ours, okO), paramText(theirs, okT)))
		}
	}
	ours := map[uint32]netip.AddrPort{}
	for _, m := range own.Members {
		ours[m.ID] = m.Addr
	}
	theirs := map[uint32]netip.AddrPort{}
	for _, m := range c.Members {
		theirs[m.ID] = m.Addr
	}
	var md []string
	for _, mid := range slices.Sorted(maps.Keys(ours)) {
		t, ok := theirs[mid]
		switch {
		case !ok:
			md = append(md, fmt.Sprintf("member %d's member list lacks member %d", id, mid))
		case t != ours[mid]:
			md = append(md, fmt.Sprintf("member %d's member list has member %d at %s, ours at %s", id, mid, t, ours[mid]))
		}
	}
	for _, mid := range slices.Sorted(maps.Keys(theirs)) {
		if _, ok := ours[mid]; !ok {
			md = append(md, fmt.Sprintf("member %d's member list has member %d (%s), ours does not", id, mid, theirs[mid]))
		}
	}
	if len(md) > maxMemberDiffs {
		md = append(md[:maxMemberDiffs], fmt.Sprintf("and %d more member-list differences", len(md)-maxMemberDiffs))
	}
	d = append(d, md...)
	keyedThere := c.KeyFingerprint != [wire.KeyFingerprintLen]byte{}
	if authentic && keyedThere != a.keyed {
		d = append(d, a.keyDifference(id, c.KeyFingerprint))
	}
	return d
}

func paramText(v string, ok bool) string {
	switch {
	case !ok:
		return "unset"
	case v == "":
		return "none"
	}
	return quote(v)
}

// quote shows a string from the wire (checked: no control characters)
// quoted when it could be misread.
func quote(s string) string {
	if s == "" || strings.ContainsAny(s, " \"';,()") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// AgreementStatus is configuration agreement's part of the node's
// status: this node's fingerprint and standing, and each member's.
type AgreementStatus struct {
	// Fingerprint is the digest of what must agree (hex); KeyID the
	// fingerprint of the signing key ("none": no key).
	Fingerprint string            `json:"fingerprint"`
	KeyID       string            `json:"key_id"`
	Algorithm   string            `json:"algorithm"`
	Params      map[string]string `json:"params,omitempty"`
	// Standing is "agreed", "starting" or "stepped_back", since Since
	// (local clock); Reason says why in words.
	Standing string    `json:"standing"`
	Since    time.Time `json:"since,omitzero"`
	Reason   string    `json:"reason,omitempty"`
	// Agree and Differ are the members counted on each side (Agree
	// includes this node).
	Agree  []uint32 `json:"agree"`
	Differ []uint32 `json:"differ"`
	// Disagreements counts announcements (and refused frames naming a
	// configuration) found to differ, every member together.
	Disagreements uint64 `json:"disagreements"`
	// Heartbeat and LeaderTimeout are this member's own timing
	// (Agreement: zero, not told); TimingMismatch the members whose
	// timing does not fit it (MemberAgreement.Timing says how).
	Heartbeat      time.Duration     `json:"heartbeat_ns,omitempty"`
	LeaderTimeout  time.Duration     `json:"leader_timeout_ns,omitempty"`
	TimingMismatch []uint32          `json:"timing_mismatch,omitempty"`
	Members        []MemberAgreement `json:"members"`
}

// MemberAgreement is one member's configuration as this node knows it.
type MemberAgreement struct {
	ID uint32 `json:"id"`
	// State is "agrees", "differs", "unknown" (heard, no announcement of
	// its incarnation yet), "unverified" (heard, never announced: an
	// older build, followed unchecked) or "silent" (not heard lately).
	State  string `json:"state"`
	Agrees bool   `json:"agrees"`
	// Differs says what differs, in words.
	Differs []string `json:"differs,omitempty"`
	// Authenticated: Differs comes from a frame that authenticated (with
	// keys); false: from one whose MAC failed (only its key is believed).
	Authenticated bool   `json:"authenticated,omitempty"`
	Fingerprint   string `json:"fingerprint,omitempty"`
	KeyID         string `json:"key_id,omitempty"`
	SteppedBack   bool   `json:"stepped_back,omitempty"`
	// Refreshes: the member sent a refresh (wire.ConfigRefresh) matching
	// its announcement: it is refreshed every RefreshSpacing, and counts
	// as agreeing for three of the spacings it said. False for an older
	// build, which is announced to in full every QuietInterval.
	Refreshes     bool      `json:"refreshes,omitempty"`
	LastHeard     time.Time `json:"last_heard,omitzero"`
	AuthFailures  uint64    `json:"auth_failures,omitempty"`
	Disagreements uint64    `json:"disagreements,omitempty"`
	// Heartbeat and LeaderTimeout are the member's own timing as it told
	// it (KindConfigTimings; zero: not told); Timing says how it does not
	// fit this member's, in words (empty: it fits, or was not told).
	Heartbeat     time.Duration `json:"heartbeat_ns,omitempty"`
	LeaderTimeout time.Duration `json:"leader_timeout_ns,omitempty"`
	Timing        []string      `json:"timing,omitempty"`
}

// agreementStatus reports agreement at the node's last local time.
func (n *Node) agreementStatus() *AgreementStatus {
	a := n.agree
	now := n.now
	agree, differ, _ := a.counts(n.cfg.ID, now)
	st := &AgreementStatus{
		Fingerprint:   hex.EncodeToString(a.own.Digest[:]),
		KeyID:         wire.FingerprintText(a.own.KeyFingerprint),
		Algorithm:     a.own.Algorithm,
		Params:        maps.Clone(a.cfg.Params),
		Standing:      a.standing.String(),
		Since:         a.since,
		Reason:        n.StandingReason(),
		Agree:         agree,
		Differ:        differ,
		Disagreements: a.disagreements,
		Heartbeat:     a.cfg.Heartbeat,
		LeaderTimeout: a.cfg.LeaderTimeout,
		Members:       []MemberAgreement{},
	}
	if st.Differ == nil {
		st.Differ = []uint32{}
	}
	for _, id := range slices.Sorted(maps.Keys(a.members)) {
		m := a.members[id]
		s := a.stateOf(m, now)
		v := MemberAgreement{ID: id, State: stateNames[s], Agrees: s == stAgrees, LastHeard: m.heardAt,
			Refreshes: m.refreshes(), AuthFailures: m.authFails, Disagreements: m.disagreements, Timing: m.timingIssues}
		if m.timings != nil {
			v.Heartbeat, v.LeaderTimeout = time.Duration(m.timings.Heartbeat), time.Duration(m.timings.LeaderTimeout)
		}
		if len(m.timingIssues) > 0 {
			st.TimingMismatch = append(st.TimingMismatch, id)
		}
		switch {
		case m.cfg != nil && (s == stAgrees || s == stDiffers && len(m.diffs) > 0):
			v.Differs, v.Authenticated = m.diffs, true
			v.Fingerprint = hex.EncodeToString(m.cfg.Digest[:])
			v.KeyID = wire.FingerprintText(m.cfg.KeyFingerprint)
			v.SteppedBack = m.cfg.Flags&wire.ConfigSteppedBack != 0
		case s == stDiffers:
			v.Differs, v.Authenticated = m.evDiffs, m.evAuthentic
			v.KeyID = wire.FingerprintText(m.evFP)
		case m.cfg != nil:
			v.Fingerprint = hex.EncodeToString(m.cfg.Digest[:])
			v.KeyID = wire.FingerprintText(m.cfg.KeyFingerprint)
		}
		st.Members = append(st.Members, v)
	}
	return st
}

// CoreRan reports whether the core was ticked or stepped since it was
// built (or replaced).
func (n *Node) CoreRan() bool { return n.coreRan }

// ReplaceCore puts c, a core built afresh from the persisted state, in
// place of the node's core: how a driver restarts the core of a node
// that stepped back, as a crash and a restart would, without ending the
// process. The node moves to a new incarnation first (saved: Config.Save),
// so that the new core's frames, and the handles a driver gives its
// requests, are never taken for the old one's; the members hear of it
// with an announcement at once. On a failed save nothing changes.
func (n *Node) ReplaceCore(c core.Core) error {
	if c == nil {
		return errors.New("node: nil core")
	}
	if n.inc >= MaxIncarnation {
		return fmt.Errorf("node: incarnation %d cannot be raised", n.inc)
	}
	if err := n.save(Durable{Incarnation: n.inc + 1, Epochs: n.epochs}); err != nil {
		return err
	}
	n.inc++
	n.series = 0
	n.seq = wire.Seq(n.inc, 0, 0)
	n.stats.NewSeries++
	n.core, n.coreRan = c, false
	n.SetVectors(n.rec != nil || n.cfg.Vectors)
	if n.agree != nil {
		n.announce(0, false)
	}
	return nil
}

// Incarnation is the node's incarnation now (raised while running when
// its series run out, or by ReplaceCore).
func (n *Node) Incarnation() uint32 { return n.inc }
