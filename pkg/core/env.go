package core

import (
	"math/rand/v2"
	"time"

	"github.com/synclab/synclab/pkg/clock"
)

// Env is everything a driver (the daemon, or the simulator) hands a core it
// builds, so that every core is constructed the same way under both.
type Env struct {
	// ID is this member's ID; Members are every member's IDs, ID included.
	ID      uint32
	Members []uint32
	// Now is the local clock's reading at construction.
	Now time.Time
	// Rand is seeded by the driver (from the simulator's seed under
	// simulation), so that a run is reproducible.
	Rand *rand.Rand
	// Lamport is the node's Lamport clock: the one every frame is stamped
	// with. A core that orders requests by Lamport time (Lamport's mutex,
	// Ricart-Agrawala, totally ordered multicast) takes its stamp with
	// Lamport.Send and sets it as Message.Lamport, so that its own queue
	// holds the stamp the others see.
	Lamport *clock.Lamport
	// State is the core's persisted state as it last handed it over in
	// Ready.State and the driver confirmed it (nil at first start). The core
	// decodes it itself and refuses an absurd one with an error.
	State []byte
	// Log is what the core appended after that State (Ready.Entries), in
	// order, as the driver confirmed it; nil for a core that never
	// appends. The driver cut a torn or corrupt tail (a crash in the
	// middle of a write) before handing it over: every record here is
	// whole, and it ends with the last record the core was told was
	// saved, or one written later whose Advance a crash prevented.
	Log [][]byte
}

// Scheduler is implemented by a core that knows when it next needs Tick.
// The driver sleeps until the earliest deadline instead of ticking at a
// fixed interval, so an idle daemon wakes only for its own heartbeats and
// timeouts.
type Scheduler interface {
	// Deadline is the earliest local time at which the core needs Tick; the
	// zero time means nothing is scheduled. It is read after every Step,
	// Tick and Ready, so a core returns a fresh value whenever its timers
	// change.
	Deadline() time.Time
}

// Earliest returns the earliest non-zero time of ts, or the zero time when
// all are zero: the deadline of a core made of parts.
func Earliest(ts ...time.Time) time.Time {
	var min time.Time
	for _, t := range ts {
		if !t.IsZero() && (min.IsZero() || t.Before(min)) {
			min = t
		}
	}
	return min
}
