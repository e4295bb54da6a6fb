package mutex

// The events every algorithm reports (core.Ready.Events), for logs and
// hooks; the typed Outcomes are the API. Args are slog-style: "request"
// (uint64), "lock" (string), "fence" (uint64) and the ones named. A
// member's liveness is liveness.EventMemberDown and EventMemberUp
// ("member"); an algorithm's own events are declared in its package.
const (
	// EventGranted: a request holds its lock ("mode" where the algorithm
	// has shared locks, "lease", "expires", and the grant's epoch under
	// the algorithm's name for it: "generation", "term", "incarnation").
	EventGranted = "lock_granted"
	// EventRenewed: a renewal succeeded ("expires").
	EventRenewed = "lock_renewed"
	// EventLost: a request lost its lock or will never get it ("reason":
	// a LossReason).
	EventLost = "lock_lost"
	// EventReleased: the holder released its lock.
	EventReleased = "lock_released"
	// EventGrantLate: a grant was not made, though the answers it needed
	// came in time: this member's loop read the last of them after the
	// lease they gave had ended (a process paused and continued, a host
	// too busy to run it), so it would have held nothing; the request
	// goes on the algorithm's way (asks again, or waits) ("late": how
	// long past the lease's end). WARN at most once a minute, INFO between
	// (mutexcount.LateGrants).
	EventGrantLate = "lock_grant_late"
	// EventRenewalLate: a renewal was refused at a reading of the clock
	// (after the lease had ended, or with the check too old and the lease
	// over), or, in tokenring, its lease ended before its answers came;
	// the lease ends as it was ("late": how long past the lease's
	// end). "cause" says why, by the last needed answer's receive stamp
	// against the lease's end: "loop_late" (the answers came in time,
	// this member's loop read them late) or "answers_late" (they came
	// after the end, or had not come by then: a slow or lossy link, a busy
	// member); "members" names the member(s) whose answer came last (or
	// that had not answered). WARN at most once a minute
	// together with EventGrantLate, INFO between (mutexcount.LateGrants).
	EventRenewalLate = "lock_renewal_late"
	// EventGrantUnsaved: a grant or a renewal the core made while a
	// promise of its durable state (the incarnation, era, generation or
	// term its fence is built on) was not on disk waited for the write
	// (mutexcount.Hold) and was dropped: its lease ended before a write
	// succeeded, so its client never heard of it ("what": "grant" or
	// "renewal", "late": how long past the lease's end the write came).
	// WARN at most once a minute, INFO between.
	EventGrantUnsaved = "lock_grant_unsaved"
	// EventGrantHeld: a grant or a renewal the core made while a promise
	// of its durable state was not on disk waits for a write that failed
	// ("what": "grant" or "renewal"): its client hears of it, and the log
	// says EventGranted or EventRenewed, once a write succeeds
	// (mutexcount.Hold). INFO, once per grant or renewal (the daemon's
	// ERROR says the failing write).
	EventGrantHeld = "lock_grant_held"
)
