package elect

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// Elector is a leader election core.
type Elector interface {
	core.Core
	core.Scheduler
	// Leader returns the leader this member knows and its term; ok is
	// false while none is known (id is then 0, term the highest seen).
	Leader() (id uint32, term uint64, ok bool)
	// Role returns what this member does in the election.
	Role() Role
	// Resign makes a leader step down at local time now; ErrNotLeader
	// (wrapped or not) on a member that does not lead, ErrCannotResign
	// from an algorithm that has no way to (an eventual leader, chosen by
	// a rule every member applies, cannot hand over).
	Resign(now time.Time) error
	// Changes drains the leadership changes since the last call, oldest
	// first. The driver drains them after each Ready; a core keeps at most
	// MaxPendingChanges undrained (the oldest are dropped and counted in
	// Status.ChangesDropped), so one nobody drains cannot grow.
	Changes() []Change
	// Report returns this member's view of the election.
	Report() Status
}

// Errors of Resign.
var (
	// ErrNotLeader: this member does not lead.
	ErrNotLeader = errors.New("elect: not the leader")
	// ErrCannotResign: the algorithm has no resignation.
	ErrCannotResign = errors.New("elect: this algorithm's leader cannot resign")
)

// Role is what a member does in the election.
type Role uint8

const (
	// RoleFollower follows a leader, or waits for one to be announced.
	RoleFollower Role = iota + 1
	// RoleCandidate runs an election.
	RoleCandidate
	// RoleLeader leads the current term.
	RoleLeader
)

var roleNames = [...]string{RoleFollower: "follower", RoleCandidate: "candidate", RoleLeader: "leader"}

func (r Role) String() string {
	if int(r) < len(roleNames) && roleNames[r] != "" {
		return roleNames[r]
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// MarshalText makes a Role read as its name in JSON status.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a Role's name, so that a CLI can decode the status.
func (r *Role) UnmarshalText(b []byte) error {
	for i, n := range roleNames {
		if n != "" && string(b) == n {
			*r = Role(i)
			return nil
		}
	}
	return fmt.Errorf("elect: unknown role %q", b)
}

// Options are what the operator sets for an election, whatever the
// algorithm; zero fields take the algorithm's defaults. Every duration is
// used as given (never rounded to a tick) and validated by
// liveness.CheckTimeout in the algorithm's constructor.
type Options struct {
	// Heartbeat is the leader's heartbeat interval.
	Heartbeat time.Duration
	// LeaderTimeout is the silence after which a follower suspects the
	// leader. It must exceed Heartbeat.
	LeaderTimeout time.Duration
	// AnswerTimeout is how long a candidate waits for the answer of a
	// member it asked (a round trip and some).
	AnswerTimeout time.Duration
	// Probe is how often a follower that missed its leader's heartbeat
	// asks the leader for one until its leader timeout, for an algorithm
	// that probes (bully: bully.Config.Probe); 0: no probes.
	Probe time.Duration
	// HintProbe is how often a follower probes its leader after a hint
	// that the leader's port closed, for an algorithm that acts on such
	// hints (bully: bully.Config.HintProbe, with the follower's watch that
	// keeps its TCP link to the leader open, bully.Config.Watch); 0:
	// hints ignored.
	HintProbe time.Duration
	// Priorities rank the members where the algorithm ranks them (bully:
	// higher leads first, ties broken by ID); absent members have 0. They
	// must be the same on every member.
	Priorities map[uint32]uint32
	// Topology is the graph of who may talk to whom, as undirected edges,
	// for an algorithm that runs on one (Yo-Yo); nil: the algorithm's
	// default. Only Yo-Yo reads it (electd refuses --topology for the
	// others).
	Topology [][2]uint32
}

// Algorithm is one entry of an election factory table: a name the operator
// picks (`electd run --algorithm NAME`), a one-line summary for --help, and
// the constructor. New builds the core from the driver's environment: its
// persisted state is env.State (nil at the first start), which the core
// decodes itself, refusing an absurd one with an error wrapping
// core.ErrState.
type Algorithm struct {
	Name    string
	Summary string
	// Cost is the notes' price of one election in messages, best to
	// worst case, printed beside the measured one.
	Cost core.Cost
	// Kinds are the frame kinds its members send each other, from wire's
	// registry: the docs' tables and the test that a core sends no other
	// read them.
	Kinds []wire.Kind
	// Guarantees are what it promises under faults, in docs/electd.md's
	// table.
	Guarantees Guarantees
	// Rightful is who the algorithm elects once the network is quiet, for
	// the shared oracles (pkg/elect/internal/electtest): the leader among the
	// running members, or 0 when any one of them will do as long as all
	// agree (the majority election's first winner; the eventual leader's
	// lowest incarnation, which depends on the history of restarts). Nil:
	// the highest running ID (bully without priorities, the rings).
	Rightful func(running []uint32) uint32
	// Quorum says the algorithm elects only while a majority of the
	// members runs (the majority election): the minority has no leader.
	Quorum bool
	New    func(env core.Env, opts Options) (Elector, error)
}

// Guarantees is what an election promises when the network or members
// fail, one line each, as docs/electd.md's table shows them.
type Guarantees struct {
	// TwoLeaders: whether two members can believe they lead at once, and
	// when.
	TwoLeaders string
	// Minority: what the members on the minority side of a partition do.
	Minority string
	// CutOff: what a leader cut off from the others does.
	CutOff string
}

// WithoutQuorum are the guarantees of an election without a quorum or a
// lease (bully, the rings).
var WithoutQuorum = Guarantees{
	TwoLeaders: "possible under a partition, one per side, in different terms (never two in one term); the lower term yields when the sides meet",
	Minority:   "elects its own leader",
	CutOff:     "believes it leads until it hears from the others (no lease)",
}

// AnyAgreed is the Rightful of an algorithm with no one rightful leader:
// any running member, as long as every one agrees on it.
func AnyAgreed([]uint32) uint32 { return 0 }

// Lookup returns the algorithm called name in table, or an error that
// lists the names there are.
func Lookup(table []Algorithm, name string) (Algorithm, error) {
	names := make([]string, 0, len(table))
	for _, a := range table {
		if a.Name == name {
			return a, nil
		}
		names = append(names, a.Name)
	}
	return Algorithm{}, fmt.Errorf("unknown election algorithm %q (known: %s)", name, strings.Join(names, ", "))
}
