package core

// Durable is the bookkeeping of a core's durable state between the core and
// its driver, the contract of etcd raft's Ready and Advance: a change stays
// pending until the driver confirms that it was written, and until then
// every Ready hands the (current) state over again. A driver that cannot
// write a promise withholds that Ready's messages, so a message that depends
// on unsaved state (a term, a promised generation) can never leave: not in
// the Ready where the state changed, nor in any later one.
//
// A core embeds a Durable, calls Change whenever its durable state changes,
// fills its Ready with Durable.Ready, and gets Advance (core.Advancer) for
// free. The zero value has nothing pending.
type Durable struct {
	version uint64 // counts changes
	handed  uint64 // the version the last Ready carried
	saved   uint64 // the version last confirmed on disk
	promise uint64 // the version of the last change that was a promise
	offered bool   // the last Ready carried State, and Advance has not come
}

// Change records that the durable state changed. promise says that what the
// core sends from now on depends on it (a term, a promised generation), as
// opposed to state that is only worth keeping (a frequency estimate).
func (d *Durable) Change(promise bool) {
	d.version++
	if promise {
		d.promise = d.version
	}
}

// Pending reports whether a change is not yet confirmed on disk.
func (d *Durable) Pending() bool { return d.saved < d.version }

// PromisePending reports whether a promise is not yet confirmed on disk:
// what the core sends now leaves only if the next write succeeds.
func (d *Durable) PromisePending() bool { return d.saved < d.promise }

// Ready puts the state into rd while a change is pending: encode is called
// for the current state (a Ready always carries the whole state, so a retry
// writes the newest), and rd.Promise is set while a promise is unsaved.
func (d *Durable) Ready(rd *Ready, encode func() []byte) {
	if !d.Pending() {
		return
	}
	rd.State = encode()
	rd.Promise = d.PromisePending()
	d.handed, d.offered = d.version, true
}

// Advance is the driver's report on the last Ready (core.Advancer): saved
// says that its State, if any, was written. On a failed write the change
// stays pending and the next Ready carries the state again.
func (d *Durable) Advance(saved bool) {
	if d.offered && saved {
		d.saved = max(d.saved, d.handed)
	}
	d.offered = false
}
