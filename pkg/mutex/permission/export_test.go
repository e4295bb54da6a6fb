package permission

import "time"

// MoveLamport moves this member's Lamport clock up to v (never down): a
// scenario that replays the notes' example starts its clocks where the
// notes do.
func (c *Core) MoveLamport(v uint64) { c.lamport.Restore(v) }

// OnDisk decodes a persisted state: the incarnation and the Lamport floor.
func OnDisk(b []byte) (inc uint32, floor uint64, err error) {
	s, err := decodeState(b)
	return s.incarnation, s.floor, err
}

// MajorityHeard is the instant this member last heard a majority, as
// leaseFrom counts it (countFor's count of each member's frames).
func (c *Core) MajorityHeard() time.Time { return c.majorityHeard() }
