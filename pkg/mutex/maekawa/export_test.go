package maekawa

// DiskLock reads lock's fence and outstanding flag from a core's persisted
// state (ok false if the state does not name it).
func DiskLock(disk []byte, lock string) (fence, floor uint64, outstanding, ok bool) {
	st, err := decodeState(disk, 65535)
	if err != nil {
		return 0, 0, false, false
	}
	l, ok := st.locks[lock]
	return l.fence, st.floor, l.outstanding, ok
}

// VoterLocks is how many locks the voter's table holds.
func (c *Core) VoterLocks() int { return len(c.votes) }

// AttemptOf is the attempt number of this member's request for lock.
func AttemptOf(c *Core, lock string) uint32 {
	if a := c.asks[lock]; a != nil {
		return a.attempt
	}
	return 0
}
