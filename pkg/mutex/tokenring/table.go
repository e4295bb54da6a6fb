package tokenring

import (
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/mutex"
)

// The lock table. Names are chosen by clients and by members' frames, so
// nobody may fill it on their own:
//
//   - Only a local request, a token or a prepare (a promise to keep) makes
//     an entry. Wants, locates, checks and vouches about a lock this member
//     does not know are answered from the floor (below) without one.
//   - Entries made by another member's frames count against that member's
//     share: MaxLocks/2 split among the other members. Half the table is
//     always there for this member's own clients.
//   - An idle entry (no token, no request, nothing in progress, no lease
//     that may still run) is reclaimed when room is needed: one with no
//     promise at once, any after idleAfter. Its promise is not lost: the
//     table's floor rises to it, and a lock missing from the table is
//     treated as promised up to the floor. Generations are numbers
//     comparable across locks, so refusing everything below the floor
//     refuses every generation the entry refused; what the floor costs is
//     liveness (a token of an older generation that comes back must be
//     regenerated above it), never a second holder.
//
// Every generation a frame moves the table to is admitted by one
// pkg/epoch guard for the whole table: a forger cannot raise the floor, or
// any lock, faster than the protocol's own pace.
type table struct {
	locks   map[string]*lock
	floor   uint64         // promised for every lock not in locks (persisted)
	made    map[uint32]int // entries per creator member
	share   int            // entries another member's frames may make
	limit   epoch.Limit
	guard   epoch.Guard
	durable core.Durable // the promises: persisted before anything that depends on them leaves
}

// idleAfter is how long an entry with a promise stays after its last use
// before another member's frame may reclaim it (a local request may
// always): long enough that a lock in use does not lose its promises to a
// burst of new names.
const idleAfter = 10 * time.Minute

func (t *table) restore(cfg Config, s savedState) error {
	t.limit = generationLimit(cfg)
	t.locks = map[string]*lock{}
	t.made = map[uint32]int{}
	t.share = max(1, cfg.MaxLocks/2/max(1, len(cfg.Members)-1))
	if err := t.limit.CheckRestored(s.floor); err != nil {
		return fmt.Errorf("%w: floor: %w", ErrState, err)
	}
	t.floor = s.floor
	for name, g := range s.promised {
		if err := t.limit.CheckRestored(g); err != nil {
			return fmt.Errorf("%w: lock %q: %w", ErrState, name, err)
		}
		l := newLock(name, g, cfg.AckTimeout)
		l.creator = restored
		t.locks[name] = l
	}
	return nil
}

// restored is the creator of entries read from disk: reclaimable by
// anyone once idle.
const restored = 0

// promisedFor is what this member promised for lock name: its entry's, or
// the floor.
func (t *table) promisedFor(name string) uint64 {
	if l, ok := t.locks[name]; ok {
		return l.promised
	}
	return t.floor
}

// admit decides whether generation g, read from a frame about lock name,
// is plausible (pkg/epoch): at most the last usable round, and no more
// rounds above what this member knows than the table's credit allows.
func (c *Core) admit(name string, g uint64) error {
	cur := c.promisedFor(name)
	if err := c.guard.Admit(c.limit, c.nanos(), cur, g); err != nil {
		return fmt.Errorf("tokenring: lock %q: %w", name, err)
	}
	return nil
}

// lockFor returns lock name's entry, making it for creator (this member's
// ID for a local request, else the member whose frame it is) if there is
// room, reclaiming an idle entry if need be.
func (c *Core) lockFor(name string, creator uint32) (*lock, error) {
	if l, ok := c.locks[name]; ok {
		l.used = c.now
		return l, nil
	}
	peer := creator != c.self
	if peer && c.made[creator] >= c.share && !c.reclaimOne(creator) {
		c.count("share_full")
		return nil, fmt.Errorf("%w: member %d has %d entries, its share", ErrNoLock, creator, c.made[creator])
	}
	if len(c.locks) >= c.cfg.MaxLocks && !c.reclaimOne(creator) {
		if peer {
			return nil, fmt.Errorf("%w: the table is full", ErrNoLock)
		}
		return nil, mutex.ErrTooManyLocks
	}
	l := newLock(name, c.floor, c.cfg.AckTimeout)
	l.creator, l.used = creator, c.now
	l.answeredOK = c.confirmedFloor
	c.locks[name] = l
	c.made[creator]++
	return l, nil
}

// idle says whether l holds nothing but its promise.
func (c *Core) idle(l *lock) bool { return c.quiet(l) && !l.outstanding.After(c.now) }

// quiet says whether l has nothing in progress: idle once no lease it
// granted may still run.
func (c *Core) quiet(l *lock) bool {
	return l.tok == nil && l.handoff.Len() == 0 && !c.reqs.Held(l.name) && c.reqs.Waiting(l.name) == 0 &&
		l.locate == nil && l.prepare == nil && l.prepareAt.IsZero() && l.check == nil && l.vouch == nil
}

// reclaimOne frees room for an entry made by creator: the least recently
// used idle entry it may take (its own or a restored one; a local request
// may take any, and entries with a promise only after idleAfter unless it
// is a local request). It reports whether it freed one.
func (c *Core) reclaimOne(creator uint32) bool {
	var victim *lock
	for _, l := range c.locks {
		switch {
		case !c.idle(l):
		case creator != c.self && l.creator != creator && l.creator != restored:
		case creator != c.self && l.promised > c.floor && c.now.Sub(l.used) < idleAfter:
		case victim == nil || l.used.Before(victim.used) || l.used.Equal(victim.used) && l.name < victim.name:
			victim = l
		}
	}
	if victim == nil {
		return false
	}
	c.forget(victim)
	return true
}

// reclaim drops the idle entries that hold no promise above the floor:
// nothing is lost with them. Called on every tick.
func (c *Core) reclaim() {
	for _, l := range c.locks {
		if l.promised <= c.floor && c.idle(l) && c.now.Sub(l.used) >= c.cfg.LossTimeout {
			c.forget(l)
		}
	}
}

// forget removes l, keeping its promise in the floor.
func (c *Core) forget(l *lock) {
	delete(c.locks, l.name)
	c.confirmedFloor = later(c.confirmedFloor, l.answeredOK)
	if c.made[l.creator]--; c.made[l.creator] <= 0 {
		delete(c.made, l.creator)
	}
	if l.promised > c.floor {
		// The floor takes the promise over: the written state changes
		// (one entry fewer, a higher floor), and what is sent from now on
		// depends on it.
		c.floor = l.promised
		c.durable.Change(true)
	}
	c.count("locks_reclaimed")
}
