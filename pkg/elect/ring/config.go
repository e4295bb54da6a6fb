package ring

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/internal/electcount"
	"github.com/synclab/synclab/pkg/liveness"
)

// Variant is which ring election a core runs.
type Variant uint8

const (
	// Naive is the notes' "ring 1": a member that suspects the
	// leader becomes a candidate and sends a vote around the ring; the
	// vote coming back elects it. Only candidates compete: a member that
	// merely relays a vote never runs.
	Naive Variant = iota + 1
	// IDList is the notes' "ring 2": every member that suspects the
	// leader sends a list around the ring, each member adds its ID, and a
	// member that finds itself in a list picks the highest ID in it.
	IDList
	// ChangRoberts: a member sends its ID around; a member forwards only
	// higher IDs (and, not yet taking part, sends its own in place of a
	// lower one); the ID that comes back to its owner has won.
	ChangRoberts
	// Franklin: bidirectional, in rounds; an active member sends its ID
	// both ways, stays active only if it beats both active neighbours, and
	// relays once passive. Each round deactivates at least half.
	Franklin
	// FredricksonLynch is the notes' last ring: the member that notices the
	// failure sends an ELECTION collecting every live member's ID around
	// the ring, picks the highest and sends a COORDINATOR around: 2N
	// messages. A member that has already seen an election does not start
	// another one.
	FredricksonLynch

	variantEnd
)

var variantNames = [...]string{
	Naive:            "ring-naive",
	IDList:           "ring-idlist",
	ChangRoberts:     "chang-roberts",
	Franklin:         "franklin",
	FredricksonLynch: "fredrickson-lynch",
}

// String is the variant's algorithm name (`electd run --algorithm NAME`).
func (v Variant) String() string {
	if v > 0 && v < variantEnd {
		return variantNames[v]
	}
	return fmt.Sprintf("variant(%d)", uint8(v))
}

// Config configures a ring core. Every timeout is a time.Duration of the
// local clock, used as given and checked by liveness.CheckTimeout; zero
// fields take their defaults (DefaultLANConfig). This member's ID, the
// members, the start time, the random source and the persisted term come
// from core.Env.
type Config struct {
	// Variant is the algorithm. Required.
	Variant Variant
	// Ring is the logical ring: each member's successor is the next one in
	// this list, the last one's the first. Empty: the Env's members by
	// ascending ID. Every member must be listed once, and every member
	// must use the same order (it decides which member hears whom).
	Ring []uint32
	// Textbook runs the naive ring exactly as the notes give it: a
	// candidate that receives any vote, its own or another's, is elected,
	// and an elected member takes any announcement for its own. Two
	// members that suspect the leader at once both end up leading: the
	// duplicate-leader problem the notes ask about. For scenarios only;
	// the real mode (false) elects a candidate only on its own vote's
	// return, and a candidate withdraws for a higher one's vote.
	Textbook bool

	// Heartbeat is the elected leader's heartbeat interval. Default 50 ms.
	Heartbeat time.Duration
	// LeaderTimeout is how long a follower waits without hearing the
	// leader before it suspects it. It must exceed Heartbeat. Default
	// 400 ms: eight heartbeats, so that 5% loss does not make a live
	// leader suspected (bully's reasoning, see bully.Config).
	LeaderTimeout time.Duration
	// Stagger is added to LeaderTimeout once for every member between
	// this one and the leader along the ring: the leader's predecessor (on
	// the default ring, the next highest ID) notices a dead leader first,
	// skips it, and its election reaches the others before they time out,
	// so that one election runs instead of N, started by the member that
	// wins it where the variant lets the initiator's ID count (the naive
	// ring, Chang-Roberts: the notes' best case). Default 20 ms.
	Stagger time.Duration
	// HopTimeout is how long a member waits for its successor to
	// acknowledge an election hop before it sends it again (HopTries in
	// all) and then skips that successor for the next one. It must cover
	// a round trip. Default 30 ms.
	HopTimeout time.Duration
	// HopTries is how many times a hop is sent to one successor before it
	// is skipped as dead. Default 3: with 5% loss each way a send or its
	// ack is lost with p = 0.0975, so a live successor is skipped about
	// once in a thousand hops (and then still hears the election again,
	// or takes over by preempting the leader it finds below itself).
	HopTries int
	// ElectionTimeout is how long a member that takes part in an election
	// waits for its COORDINATOR before it starts a new attempt. It must
	// cover a whole election: Franklin's rounds, and a skip (HopTimeout x
	// HopTries) per dead member. Default 1 s.
	ElectionTimeout time.Duration
	// SkipFor is how long a successor that did not acknowledge stays
	// skipped unless it is heard from. Default: LeaderTimeout.
	SkipFor time.Duration
}

// DefaultLANConfig returns the timeouts for a LAN (Variant left zero).
func DefaultLANConfig() Config {
	return Config{
		Heartbeat:       50 * time.Millisecond,
		LeaderTimeout:   400 * time.Millisecond,
		Stagger:         20 * time.Millisecond,
		HopTimeout:      30 * time.Millisecond,
		HopTries:        3,
		ElectionTimeout: time.Second,
	}
}

// FromOptions is the configuration of variant v for the operator's
// elect.Options: the heartbeat and leader timeout as given, the answer
// timeout as the hop timeout, the others in their default proportions.
// Ring elections compare IDs: Options.Priorities are not used.
func FromOptions(v Variant, o elect.Options) Config {
	c := DefaultLANConfig()
	c.Variant = v
	if o.Heartbeat != 0 {
		c.Heartbeat = o.Heartbeat
	}
	if o.LeaderTimeout != 0 {
		c.LeaderTimeout = o.LeaderTimeout
	}
	if o.AnswerTimeout != 0 {
		c.HopTimeout = o.AnswerTimeout
		c.Stagger = max(liveness.MinTimeout, o.AnswerTimeout/2)
		c.ElectionTimeout = max(c.ElectionTimeout, 30*o.AnswerTimeout)
	}
	return c
}

// validate fills defaults in and rejects contradictions; self is this
// member's ID and members the Env's list.
func (c *Config) validate(self uint32, members []uint32) error {
	if c.Variant == 0 || c.Variant >= variantEnd {
		return fmt.Errorf("ring: unknown variant %d", c.Variant)
	}
	if c.Textbook && c.Variant != Naive {
		return errors.New("ring: Textbook is the naive ring's notes mode only")
	}
	if self == 0 {
		return errors.New("ring: ID must be > 0")
	}
	if len(c.Ring) == 0 {
		c.Ring = slices.Clone(members)
		slices.Sort(c.Ring)
	}
	if len(c.Ring) > maxMembers {
		return fmt.Errorf("ring: %d members, at most %d", len(c.Ring), maxMembers)
	}
	if err := electcount.Roster("ring", "in the ring", self, c.Ring, members); err != nil {
		return err
	}
	def := DefaultLANConfig()
	if c.HopTries == 0 {
		c.HopTries = def.HopTries
	}
	if c.HopTries < 1 || c.HopTries > 16 {
		return fmt.Errorf("ring: HopTries %d: want 1..16", c.HopTries)
	}
	if c.SkipFor == 0 {
		c.SkipFor = c.LeaderTimeout
		if c.SkipFor == 0 {
			c.SkipFor = def.LeaderTimeout
		}
	}
	if err := electcount.Durations("ring",
		liveness.Duration{Name: "Heartbeat", Value: &c.Heartbeat, Default: def.Heartbeat},
		liveness.Duration{Name: "LeaderTimeout", Value: &c.LeaderTimeout, Default: def.LeaderTimeout},
		liveness.Duration{Name: "Stagger", Value: &c.Stagger, Default: def.Stagger},
		liveness.Duration{Name: "HopTimeout", Value: &c.HopTimeout, Default: def.HopTimeout},
		liveness.Duration{Name: "ElectionTimeout", Value: &c.ElectionTimeout, Default: def.ElectionTimeout},
		liveness.Duration{Name: "SkipFor", Value: &c.SkipFor, Default: def.LeaderTimeout}); err != nil {
		return err
	}
	if c.LeaderTimeout <= c.Heartbeat {
		return fmt.Errorf("ring: LeaderTimeout (%v) must exceed Heartbeat (%v), or every follower suspects a live leader between two heartbeats",
			c.LeaderTimeout, c.Heartbeat)
	}
	if min := time.Duration(c.HopTries) * c.HopTimeout * 2; c.ElectionTimeout <= min {
		return fmt.Errorf("ring: ElectionTimeout (%v) must exceed two skipped hops (2 x HopTries x HopTimeout = %v): an election that skips a dead member must be able to finish",
			c.ElectionTimeout, min)
	}
	c.Ring = slices.Clone(c.Ring)
	return nil
}

// maxMembers is the largest ring: a list of every member must fit one
// RingElection.
const maxMembers = 1024
