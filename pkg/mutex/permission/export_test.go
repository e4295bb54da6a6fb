package permission

// MoveLamport moves this member's Lamport clock up to v (never down): a
// scenario that replays the notes' example starts its clocks where the
// notes do.
func (c *Core) MoveLamport(v uint64) { c.lamport.Restore(v) }
