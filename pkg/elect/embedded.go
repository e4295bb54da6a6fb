package elect

import "github.com/synclab/synclab/pkg/core"

// Embedded is an elector run inside another core that acts on what the
// election decides (central's coordinator, Berkeley's master, orderd's
// sequencer). The outer core steps it with the frames it does not handle
// itself, ticks it and asks its Deadline through the Elector, and takes
// its output with Drain and Advance here, in one way for every such core:
// the election's state is saved inside the outer core's own (State), never
// on its own.
type Embedded struct {
	Elector
	// State is the election's state as it last handed it over (restored:
	// as the outer core saved it), for the outer core's saved state.
	State []byte
}

// Drain is the elector's Ready, its typed changes drained (its events,
// in the Ready, carry the same). A new state is kept in State: changed
// reports it, and promise that the elector asked for it to be saved before
// the Ready's messages leave. The Ready returned carries no State or
// Promise: the outer core saves State inside its own and merges the rest.
func (e *Embedded) Drain() (rd core.Ready, changed, promise bool) {
	rd = e.Elector.Ready()
	e.Elector.Changes()
	if rd.State != nil {
		e.State, changed, promise = rd.State, true, rd.Promise
	}
	rd.State, rd.Promise = nil, false
	return rd, changed, promise
}

// Advance hands the driver's report on the last Ready to the elector, if
// it takes one (core.Advancer).
func (e *Embedded) Advance(saved bool) {
	if a, ok := e.Elector.(core.Advancer); ok {
		a.Advance(saved)
	}
}

// Hint hands the elector a hint that a member's port closed, if it acts
// on hints (core.Hinter); otherwise it is dropped here.
func (e *Embedded) Hint(h core.Hint) {
	if hr, ok := e.Elector.(core.Hinter); ok {
		hr.Hint(h)
	}
}
