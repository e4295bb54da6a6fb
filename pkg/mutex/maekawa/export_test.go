package maekawa

// DiskState reads a core's persisted state: its era, and the locks it
// wrote down as having a vote outstanding (PersistVotes).
func DiskState(disk []byte) (era uint32, outstanding map[string]bool, err error) {
	st, err := decodeState(disk, 65535)
	return st.era, st.outstanding, err
}

// EraOf is the era of fence f.
func EraOf(f uint64) uint32 { return eraOf(f) }

// VoterLocks is how many locks the voter's table holds.
func (c *Core) VoterLocks() int { return len(c.votes) }

// AttemptOf is the attempt number of this member's request for lock.
func AttemptOf(c *Core, lock string) uint32 {
	if a := c.asks[lock]; a != nil {
		return a.attempt
	}
	return 0
}

// Counter is one of the core's counters.
func (c *Core) Counter(name string) uint64 { return c.counters[name] }
