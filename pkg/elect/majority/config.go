package majority

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/internal/electcount"
	"github.com/synclab/synclab/pkg/liveness"
)

// MaxDriftPPM is the clock-rate assumption the leases rest on: every
// member's clock runs at the true rate within 100 ppm (a PC's crystal
// is within 50 ppm; timed or chrony keep it far closer). Config.Margin
// must cover it over a lease (see Config.validate).
const MaxDriftPPM = 100

// Member is one voter: every member's list must give the same weights, or
// two sides could each count "more than half".
type Member struct {
	ID     uint32
	Weight uint32 // > 0
}

// Config configures a majority core. Every duration is a time.Duration of
// the local clock, used as given and checked by liveness.CheckTimeout;
// zero fields take DefaultLANConfig's.
type Config struct {
	// Members with their vote weights. Empty: the Env's members, weight 1.
	Members []Member
	// Renew is how often the leader asks its voters to renew its lease.
	// Default 100 ms: four tries within a lease.
	Renew time.Duration
	// Lease is how long one grant binds a voter, on the voter's clock
	// (plus Margin), and how long one majority of grants lets the leader
	// believe it leads, on its own clock, counted from when it sent the
	// request (minus Margin). A dead leader is replaced about Lease +
	// Margin after its last renewal. Default 400 ms.
	Lease time.Duration
	// Margin absorbs the clocks' rate differences (MaxDriftPPM over a
	// lease: 40 µs at the default lease) and the lateness of a loop that
	// acts on a lease's end (a busy host): the leader stops believing it
	// leads at Lease - Margin after its request left, a voter stays bound
	// until Lease + Margin after the request came. Default 25 ms.
	Margin time.Duration
	// VoteTimeout is how long a candidate waits for the votes it asked
	// for before it asks the silent members again, counted from when its
	// requests left (after its write of their term); after three tries it
	// gives up. It must cover a round trip, and a vote waits for its
	// voter's write of the candidate's term: on disks slower than three
	// VoteTimeouts no candidacy wins (docs/electd.md). Default 50 ms.
	VoteTimeout time.Duration
	// Stagger separates the candidacies of members that find themselves
	// free at once: a member waits Stagger for every member it heard from
	// that has run longer without interruption, plus a random part of one
	// Stagger, before it stands. A candidacy is heard once its term is
	// written: a write longer than Stagger lets the next member stand
	// too, and they collide. Default 30 ms.
	Stagger time.Duration
}

// DefaultLANConfig returns the durations for a LAN: renewals every 100 ms,
// a lease of 400 ms with a 25 ms margin, so a dead leader is replaced in
// about half a second.
func DefaultLANConfig() Config {
	return Config{
		Renew:       100 * time.Millisecond,
		Lease:       400 * time.Millisecond,
		Margin:      25 * time.Millisecond,
		VoteTimeout: 50 * time.Millisecond,
		Stagger:     30 * time.Millisecond,
	}
}

// FromOptions maps the operator's options: Heartbeat is the renewal
// interval, LeaderTimeout the lease, AnswerTimeout the vote timeout, and
// Priorities the vote weights (0 or absent: weight 1). The margin stays
// 25 ms unless a lease so short needs less (a sixteenth of it), and the
// stagger follows the vote timeout.
func FromOptions(members []uint32, o elect.Options) Config {
	c := DefaultLANConfig()
	if o.Heartbeat != 0 {
		c.Renew = o.Heartbeat
	}
	if o.LeaderTimeout != 0 {
		c.Lease = o.LeaderTimeout
		c.Margin = min(c.Margin, max(liveness.MinTimeout, c.Lease/16))
	}
	if o.AnswerTimeout != 0 {
		c.VoteTimeout = o.AnswerTimeout
		c.Stagger = max(liveness.MinTimeout, o.AnswerTimeout*3/5)
	}
	for _, id := range members {
		w := o.Priorities[id]
		if w == 0 {
			w = 1
		}
		c.Members = append(c.Members, Member{ID: id, Weight: w})
	}
	return c
}

// validate fills defaults in and rejects contradictions.
func (c *Config) validate(self uint32, members []uint32) error {
	if self == 0 {
		return errors.New("majority: ID must be > 0")
	}
	if len(c.Members) == 0 {
		for _, id := range members {
			c.Members = append(c.Members, Member{ID: id, Weight: 1})
		}
	}
	weighted := make([]uint32, len(c.Members))
	for i, m := range c.Members {
		if m.Weight == 0 {
			return fmt.Errorf("majority: member %d has weight 0 (every voter weighs at least 1)", m.ID)
		}
		weighted[i] = m.ID
	}
	if err := electcount.Roster("majority", "weighted", self, weighted, members); err != nil {
		return err
	}
	def := DefaultLANConfig()
	if err := electcount.Durations("majority",
		liveness.Duration{Name: "Renew", Value: &c.Renew, Default: def.Renew},
		liveness.Duration{Name: "Lease", Value: &c.Lease, Default: def.Lease},
		liveness.Duration{Name: "Margin", Value: &c.Margin, Default: def.Margin},
		liveness.Duration{Name: "VoteTimeout", Value: &c.VoteTimeout, Default: def.VoteTimeout},
		liveness.Duration{Name: "Stagger", Value: &c.Stagger, Default: def.Stagger}); err != nil {
		return err
	}
	// The leader believes until Lease-Margin after its request left (its
	// clock), a voter is bound until Lease+Margin after the request came
	// (its clock). With rates within 1±ρ the first ends, in true time, by
	// (Lease-Margin)/(1-ρ), the second no sooner than (Lease+Margin)/(1+ρ)
	// after the request left: never before the first when Margin >=
	// Lease·ρ. Twice that is required, for rounding and slack.
	if need := time.Duration(float64(c.Lease) * 2 * MaxDriftPPM / 1e6); c.Margin < need {
		return fmt.Errorf("majority: Margin (%v) must be at least %v: twice the drift of %d ppm over a lease of %v", c.Margin, need, MaxDriftPPM, c.Lease)
	}
	if c.Margin*2 >= c.Lease {
		return fmt.Errorf("majority: Margin (%v) must be under half the Lease (%v), or the leader never believes it leads", c.Margin, c.Lease)
	}
	if c.Renew*2 > c.Lease-c.Margin {
		return fmt.Errorf("majority: Renew (%v) must fit at least twice in Lease-Margin (%v), or one lost renewal costs the lease", c.Renew, c.Lease-c.Margin)
	}
	c.Members = slices.Clone(c.Members)
	return nil
}
