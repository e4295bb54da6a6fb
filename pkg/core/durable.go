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

	// For a core that appends (ReadyLog): a record may only follow a
	// saved snapshot or record, so after a failed write (a record lost or
	// torn) the whole state goes again.
	whole     bool // the last Ready carried the whole state
	needWhole bool // the next Ready must carry the whole state
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

// ReadyLog is Ready for a core that keeps its state as a snapshot and a
// log of records after it (Ready.Entries): while a change is pending it
// puts into rd one record, record(), that brings the state written last
// up to date, or the whole state, encode(), when whole says the core wants
// a new snapshot (its log grew long, or a change is easier to write whole
// than as a record) and after any failed write: a record builds on the
// one before it, and the one that failed may be lost or torn. record is
// only called when a record is wanted: a core that builds records by
// difference moves its mark there (and in encode), when it hands them.
func (d *Durable) ReadyLog(rd *Ready, whole bool, encode, record func() []byte) {
	if !d.Pending() && !d.needWhole {
		return
	}
	if whole || d.needWhole {
		rd.State = encode()
		d.whole = true
	} else {
		rd.Entries = append(rd.Entries, record())
		d.whole = false
	}
	rd.Promise = d.PromisePending()
	d.handed, d.offered = d.version, true
}

// Advance is the driver's report on the last Ready (core.Advancer): saved
// says that its State (or Entries), if any, was written. On a failed write
// the change stays pending and the next Ready carries the state again
// (whole, for a core that appends).
func (d *Durable) Advance(saved bool) {
	if d.offered {
		if saved {
			d.saved = max(d.saved, d.handed)
			if d.whole {
				d.needWhole = false
			}
		} else {
			d.needWhole = true
		}
	}
	d.offered = false
}
