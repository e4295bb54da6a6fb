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
)
