package mutex

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// Options are the settings a driver hands every algorithm it builds.
type Options struct {
	// Lease is the cluster's longest lease, and the default one (the same
	// on every member).
	Lease time.Duration
	// Heartbeat is how often a member says it is alive, where the
	// algorithm has heartbeats.
	Heartbeat time.Duration
	// MinLease is the shortest lease a request may ask for (0: the
	// algorithm's own minimum).
	MinLease time.Duration
	// Authenticated says that frames carry a MAC of the cluster key: a
	// frame in a member's name comes from a holder of the key.
	Authenticated bool
	// Params are the algorithm's own settings, by Param.Name (absent:
	// the Param's default).
	Params map[string]time.Duration
}

// Leases sets a Config's MaxLease and MinLease from Lease and MinLease,
// where they are set (0 keeps the Config's).
func (o Options) Leases(maxLease, minLease *time.Duration) {
	if o.Lease != 0 {
		*maxLease = o.Lease
	}
	if o.MinLease != 0 {
		*minLease = o.MinLease
	}
}

// Renewal is how an algorithm counts a lease it grants or renews, as far
// as a client renewing it on a schedule needs to know: a lease the client
// cannot renew before its own deadline is lost however healthy the
// cluster (mutexd's lease floor). The zero value is a lease counted from
// the asking, confirmed after a round trip.
type Renewal struct {
	// Reuse: a renewal asked within Reuse of the instant the lease was
	// last counted from is confirmed at once, counted from that instant
	// again (the token ring's check, fresh for its confirm window): it
	// does not move the lease's end. A grant, too, may be counted from
	// an instant up to Reuse before it was asked (the ring grants the
	// next client of the member that holds the token on the check it
	// has): its lease is shorter by that age.
	Reuse time.Duration
	// Cut is how much shorter than asked a lease may be when frames take
	// no time (the age of the support it rests on, past the algorithm's
	// slack); CutMax how long that grows to when they are late (the
	// support is then older).
	Cut, CutMax time.Duration
	// Cause says what cuts the lease, for the operator's message ("its
	// support's age past half a beat").
	Cause string
	// Flags name the settings besides --lease the rule depends on, with
	// their values, for the operator's message ("--confirm-window 250ms");
	// Knob is the one (a Param's name, or "heartbeat") whose lower value
	// lets a shorter lease be kept.
	Flags []string
	Knob  string
}

// Param returns the algorithm's own setting name, or def.
func (o Options) Param(name string, def time.Duration) time.Duration {
	if v, ok := o.Params[name]; ok {
		return v
	}
	return def
}

// Param is a setting of one algorithm (a duration: a timeout), shown as a
// flag of `mutexd run`.
type Param struct {
	Name    string // flag name, e.g. "loss-timeout"
	Default time.Duration
	Usage   string
}

// Factory builds one algorithm: the line a driver's table holds for it.
type Factory struct {
	Name    string // --algorithm NAME
	Summary string // one line: what it is, where in the notes
	// Guarantees are the ones every core New builds declares.
	Guarantees Guarantees
	// Cost is the notes' price of one entry to the critical section
	// (messages, synchronisation delay), printed beside the measured one.
	Cost core.Cost
	// Kinds are the frame kinds its members send each other (its
	// elector's included), from wire's registry: the docs' tables and the
	// test that a core sends no other read them.
	Kinds  []wire.Kind
	Params []Param
	// New builds a member's core. An error wrapping core.ErrState refuses
	// the persisted state (env.State).
	New func(env core.Env, opt Options) (Algorithm, error)
	// Renewal says how a renewed lease is counted under opt (nil: from the
	// renewal's asking, after a round trip): what a driver needs to tell
	// whether its client can keep a lease of opt.Lease at all.
	Renewal func(opt Options) Renewal

	// The human status (optional): lines after the common summary, from
	// the status and its Detail as JSON; and columns added to the lock
	// table, from each lock's Detail.
	StatusLines func(st Status, detail json.RawMessage) ([]string, error)
	LockColumns []string
	LockCells   func(detail json.RawMessage) ([]string, error)
	// FenceText shows a fence the algorithm's way (the ring's round:grant);
	// nil: the number alone.
	FenceText func(fence uint64) string
}

// Registry is a driver's table of factories, by name.
type Registry []Factory

// Lookup returns the factory called name, or an error naming the ones
// there are.
func (r Registry) Lookup(name string) (Factory, error) {
	for _, f := range r {
		if f.Name == name {
			return f, nil
		}
	}
	return Factory{}, fmt.Errorf("mutex: unknown algorithm %q: want one of %s", name, strings.Join(r.Names(), ", "))
}

// Names returns the factories' names, sorted.
func (r Registry) Names() []string {
	var out []string
	for _, f := range r {
		out = append(out, f.Name)
	}
	slices.Sort(out)
	return out
}
