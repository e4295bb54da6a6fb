package liveness

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Detector is the failure detector a core embeds: it learns when each member
// was last heard, says which members it believes alive, and when it next
// needs to look again. It sends nothing: the embedding protocol decides what
// counts as a sign of life (a heartbeat, a leader's claim, a token) and calls
// Heard; its timers call Check. The heartbeat core of this package (Core) is
// one such protocol; bully and the token ring are others.
//
// Time is the embedding core's local clock. Timeouts are durations, and
// Check may be called at any time. Early, nothing happens. A little late (a
// fixed-interval driver, scheduling jitter), members whose timeout passed
// are suspected, dated by when it passed, not by when Check ran. Much later
// than Deadline asked for (more than a quarter of the timeout: the process
// was stopped, swapped out, or its loop stalled), the silence is this
// member's own: the frames that would have kept the others alive may be
// waiting unread in its socket. So after such a stall nobody is suspected
// before half of its timeout more has passed with this member listening,
// just as a tick-counting detector's clock stops while its process does.
//
// A member's state moves as the package doc draws it: Unknown until heard or
// until its timeout passes from the detector's start; Alive while heard
// within its timeout; Suspect after that, until heard again (a flap). Each
// change is reported once as a Transition, drained with Transitions.
//
// A Detector is not safe for concurrent use; its core serialises it.
type Detector struct {
	self    uint32
	start   time.Time
	timeout time.Duration
	peers   []*member // ascending ID, self excluded
	byID    map[uint32]*member
	changes []Transition
	// checked is the time of the last Check: a deadline moved earlier than
	// that (SetTimeout) is not overslept.
	checked time.Time
}

type member struct {
	id        uint32
	state     State
	timeout   time.Duration // 0: the detector's
	lastHeard time.Time     // local time of the last sign of life; zero: never
	// listened is when this member's silence started to count, when that is
	// later than lastHeard: the end of a stall of our own (see Check).
	listened time.Time
	since    time.Time // local time of the last state change
	heard    uint64    // signs of life accepted
	flaps    uint64    // Suspect -> Alive recoveries
}

// Transition is one change of a member's state, in the order they happened.
type Transition struct {
	ID       uint32
	From, To State
	// At is when it happened on the local clock: the arrival that made the
	// member alive, or the instant its timeout passed.
	At time.Time
	// LastHeard is the member's last sign of life before At (zero: never
	// heard since the detector started).
	LastHeard time.Time
	// Silent is how long the member had been silent at At (since the start
	// if never heard), stalls of this member included; zero for a
	// transition to Alive.
	Silent time.Duration
	Heard  uint64 // signs of life accepted so far
	Flaps  uint64 // recoveries so far, this one included
}

// Up reports whether the transition is a member coming alive.
func (t Transition) Up() bool { return t.To == Alive }

// MemberView is what a Detector knows about one member.
type MemberView struct {
	ID        uint32
	State     State
	Timeout   time.Duration // silence after which it is suspected
	LastHeard time.Time     // zero: never heard
	Since     time.Time     // last state change; zero: none yet
	Heard     uint64
	Flaps     uint64
}

// NewDetector returns a detector on member self of members (self may be
// among them; it is always Alive) that suspects a member silent for
// timeout, counted from now for members not heard yet. timeout must be
// valid (CheckTimeout); NewDetector panics otherwise, as it is the caller's
// validated configuration.
func NewDetector(self uint32, members []uint32, timeout time.Duration, now time.Time) *Detector {
	if err := CheckTimeout("timeout", timeout); err != nil {
		panic("liveness: NewDetector: " + err.Error())
	}
	d := &Detector{
		self:    self,
		start:   now,
		timeout: timeout,
		byID:    make(map[uint32]*member, len(members)),
	}
	ids := slices.Clone(members)
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		if id == self || id == 0 {
			continue
		}
		p := &member{id: id}
		d.peers = append(d.peers, p)
		d.byID[id] = p
	}
	return d
}

// SetTimeout gives member id its own timeout (0: the detector's again). It
// applies from now on, to the silence already running: a member whose new
// timeout has already passed is suspected at the next Check. Unknown IDs are
// ignored; an invalid timeout panics (validate it first with CheckTimeout).
func (d *Detector) SetTimeout(id uint32, timeout time.Duration) {
	if timeout != 0 {
		if err := CheckTimeout("timeout", timeout); err != nil {
			panic("liveness: SetTimeout: " + err.Error())
		}
	}
	if p, ok := d.byID[id]; ok {
		p.timeout = timeout
	}
}

// Timeout returns member id's timeout (the detector's for an unknown ID).
func (d *Detector) Timeout(id uint32) time.Duration {
	if p, ok := d.byID[id]; ok && p.timeout != 0 {
		return p.timeout
	}
	return d.timeout
}

// Heard records a sign of life of member id at local time at. It reports
// false, and changes nothing, for this member's own ID and for IDs outside
// the member list. A stamp older than the last one keeps the later one: a
// frame delivered late says nothing newer about its sender.
func (d *Detector) Heard(id uint32, at time.Time) bool {
	p, ok := d.byID[id]
	if !ok {
		return false
	}
	if p.lastHeard.IsZero() || at.After(p.lastHeard) {
		p.lastHeard = at
	}
	p.heard++
	if p.state != Alive {
		from := p.state
		if from == Suspect {
			p.flaps++
		}
		p.state = Alive
		p.since = at
		d.changes = append(d.changes, Transition{ID: id, From: from, To: Alive, At: at,
			LastHeard: p.lastHeard, Heard: p.heard, Flaps: p.flaps})
	}
	return true
}

// Check suspects every member whose timeout passed by now while this member
// was listening (see the type's doc on stalls).
func (d *Detector) Check(now time.Time) {
	due := d.Deadline()
	if d.checked.After(due) {
		due = d.checked
	}
	if now.After(d.checked) {
		d.checked = now
	}
	if !due.IsZero() && now.Sub(due) > d.timeout/4 {
		for _, p := range d.peers {
			if p.state == Suspect {
				continue
			}
			if from := now.Add(d.timeoutOf(p)/2 - d.timeoutOf(p)); from.After(d.reference(p)) {
				p.listened = from
			}
		}
	}
	for _, p := range d.peers {
		if p.state == Suspect {
			continue
		}
		due := d.expires(p)
		if now.Before(due) {
			continue
		}
		from := p.state
		p.state = Suspect
		p.since = due
		silentFrom := p.lastHeard
		if silentFrom.IsZero() {
			silentFrom = d.start
		}
		d.changes = append(d.changes, Transition{ID: p.id, From: from, To: Suspect, At: due,
			LastHeard: p.lastHeard, Silent: due.Sub(silentFrom), Heard: p.heard, Flaps: p.flaps})
	}
}

// Resume says that this member's own loop stopped and runs again at now,
// as its embedding core noticed (it may notice sooner than Check, which
// takes a stall for one only when it is called more than a quarter of the
// timeout after its Deadline; a core that raised a member's timeout on
// waking would make a long stall look short). As after a stall Check
// notices, a member not yet suspected is suspected only after half of its
// timeout more with this member listening: the frames that kept it alive
// may be waiting unread in the socket.
func (d *Detector) Resume(now time.Time) {
	for _, p := range d.peers {
		if p.state == Suspect {
			continue
		}
		if from := now.Add(-d.timeoutOf(p) / 2); from.After(d.reference(p)) {
			p.listened = from
		}
	}
}

// reference is when p's silence started to count: its last sign of life,
// the detector's start if none, or the end of a stall of our own.
func (d *Detector) reference(p *member) time.Time {
	ref := p.lastHeard
	if ref.IsZero() {
		ref = d.start
	}
	if p.listened.After(ref) {
		ref = p.listened
	}
	return ref
}

func (d *Detector) timeoutOf(p *member) time.Duration {
	if p.timeout != 0 {
		return p.timeout
	}
	return d.timeout
}

func (d *Detector) expires(p *member) time.Time { return d.reference(p).Add(d.timeoutOf(p)) }

// Expires returns when member id will be suspected unless heard before: the
// zero time if it is already suspected, this member's own ID, or unknown.
func (d *Detector) Expires(id uint32) time.Time {
	p, ok := d.byID[id]
	if !ok || p.state == Suspect {
		return time.Time{}
	}
	return d.expires(p)
}

// QuietSince returns the instant member id's current silence is counted
// from, as its timeout counts it: its last sign of life, the detector's
// start if it was never heard, or the end of a stall of this member's own
// (the frames it may have sent meanwhile could be waiting unread). Zero for
// this member's own ID and for unknown IDs. A silence measured from it is
// never longer than the one the member really kept.
func (d *Detector) QuietSince(id uint32) time.Time {
	p, ok := d.byID[id]
	if !ok {
		return time.Time{}
	}
	return d.reference(p)
}

// Deadline is the earliest time at which Check has something to do (zero:
// every member is suspected already): what an embedding core folds into its
// own core.Scheduler deadline.
func (d *Detector) Deadline() time.Time {
	var min time.Time
	for _, p := range d.peers {
		if p.state == Suspect {
			continue
		}
		if t := d.expires(p); min.IsZero() || t.Before(min) {
			min = t
		}
	}
	return min
}

// Transitions drains the state changes since the last call, oldest first.
func (d *Detector) Transitions() []Transition {
	t := d.changes
	d.changes = nil
	return t
}

// State returns what the detector believes about member id: Alive for its
// own ID, Unknown for an ID outside the member list.
func (d *Detector) State(id uint32) State {
	if id == d.self {
		return Alive
	}
	if p, ok := d.byID[id]; ok {
		return p.state
	}
	return Unknown
}

// Alive reports whether member id is believed alive.
func (d *Detector) Alive(id uint32) bool { return d.State(id) == Alive }

// AliveCount is the number of members believed alive, this one included.
func (d *Detector) AliveCount() int {
	n := 1
	for _, p := range d.peers {
		if p.state == Alive {
			n++
		}
	}
	return n
}

// Member returns the view of member id; false for its own ID and unknown
// IDs.
func (d *Detector) Member(id uint32) (MemberView, bool) {
	p, ok := d.byID[id]
	if !ok {
		return MemberView{}, false
	}
	return d.view(p), true
}

// Members returns the view of every other member, by ascending ID.
func (d *Detector) Members() []MemberView {
	out := make([]MemberView, 0, len(d.peers))
	for _, p := range d.peers {
		out = append(out, d.view(p))
	}
	return out
}

func (d *Detector) view(p *member) MemberView {
	return MemberView{ID: p.id, State: p.state, Timeout: d.Timeout(p.id), LastHeard: p.lastHeard,
		Since: p.since, Heard: p.heard, Flaps: p.flaps}
}

// MinTimeout is the shortest protocol timeout a synclab core accepts: the
// daemons' timers and the heartbeat's wire field count milliseconds, and a
// shorter timeout would be below the scheduling jitter of a loaded host.
const MinTimeout = time.Millisecond

// MaxTimeout is the longest: a heartbeat announces its interval in a 32-bit
// count of milliseconds (about 49.7 days).
const MaxTimeout = (1<<32 - 1) * time.Millisecond

// CheckTimeout is the one validation of a protocol timeout or interval
// (heartbeats, leader, answer and suspicion timeouts of every core): it
// must lie in [MinTimeout, MaxTimeout]. Any duration in that range is used
// as given, never rounded to a tick. name is what the error calls it (a
// config field or a flag).
func CheckTimeout(name string, d time.Duration) error {
	if d < MinTimeout || d > MaxTimeout {
		return fmt.Errorf("%s %v: %w: it must lie in %v..%v", name, d, ErrTimeoutRange, MinTimeout, MaxTimeout)
	}
	return nil
}

// ErrTimeoutRange is wrapped by CheckTimeout's errors.
var ErrTimeoutRange = errors.New("timeout out of range")
