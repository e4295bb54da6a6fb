package mutex

// Status is what `mutexd status --json` shows of an algorithm, the same
// for every one. Detail is the algorithm's own (the ring's tokens and
// generations), documented by the algorithm.
type Status struct {
	Algorithm  string            `json:"algorithm"`
	ID         uint32            `json:"id"`
	Members    []MemberStatus    `json:"members"`
	Locks      []LockStatus      `json:"locks"`
	Counters   map[string]uint64 `json:"counters"`
	Guarantees Guarantees        `json:"guarantees"`
	Detail     any               `json:"detail,omitempty"`
}

// Member states.
const (
	MemberSelf    = "self"
	MemberAlive   = "alive"
	MemberDown    = "down"    // silent for longer than its failure detector allows
	MemberSkipped = "skipped" // alive, but bypassed until heard again (the ring: failed to acknowledge a token, or missed a heartbeat)
	// MemberRelayed: alive, but its frames come only through other
	// members (the link between it and this member is broken).
	MemberRelayed = "relayed"
	// MemberSilent: silent here for longer than the failure detector
	// allows, but still waited for: the others do not confirm it down.
	MemberSilent = "silent"
)

// MemberStatus is one member as this member sees it.
type MemberStatus struct {
	ID    uint32 `json:"id"`
	Self  bool   `json:"self,omitempty"`
	Alive bool   `json:"alive"`
	// State is one of the Member* constants.
	State string `json:"state"`
	// HeardAgoMS is how long ago it was last heard from (0 for self).
	HeardAgoMS int64 `json:"heard_ago_ms"`
}

// LockStatus is one lock at this member.
type LockStatus struct {
	Name string `json:"name"`
	// Fence is the highest fence this member knows of for the lock.
	Fence uint64 `json:"fence"`
	// Holder is the exclusive holder at this member; Holders every holder
	// at this member (several in shared mode).
	Holder  *RequestStatus  `json:"holder,omitempty"`
	Holders []RequestStatus `json:"holders,omitempty"`
	// Queue is the requests waiting at this member, oldest first.
	Queue  []RequestStatus `json:"queue,omitempty"`
	Detail any             `json:"detail,omitempty"`
}

// RequestStatus is one request at this member.
type RequestStatus struct {
	ID          RequestID `json:"id"`
	Lock        string    `json:"lock"`
	Mode        Mode      `json:"mode"`
	Client      string    `json:"client,omitempty"`
	Granted     bool      `json:"granted"`
	Fence       uint64    `json:"fence,omitempty"`
	LeaseMS     int64     `json:"lease_ms"`
	LeaseLeftMS int64     `json:"lease_left_ms,omitempty"`
	WaitedMS    int64     `json:"waited_ms"`
	// Unsaved, on a holder, says that what the core made for it waits
	// for this member's state write before its client hears of it
	// (mutexcount.Hold): UnsavedGrant (the client does not hold the lock
	// yet, though no other request can have it) or UnsavedRenewal (the
	// client's lease is the one last renewed, not LeaseLeftMS).
	Unsaved string `json:"unsaved,omitempty"`
}

// RequestStatus.Unsaved values.
const (
	UnsavedGrant   = "grant"
	UnsavedRenewal = "renewal"
)
