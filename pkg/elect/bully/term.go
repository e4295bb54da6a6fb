package bully

// Terms are owned. A term is a 64-bit number whose low 32 bits name the only
// member allowed to lead it and whose high 32 bits count rounds:
//
//	 63                              32 31                               0
//	+----------------------------------+----------------------------------+
//	|              round               |        owner (member ID)         |
//	+----------------------------------+----------------------------------+
//
// Bully has no quorum: two nodes that cannot hear each other both win their
// elections. If both could pick "the highest term I have seen, plus one",
// they would pick the same number and two leaders would claim one term. With
// owned terms they cannot: a node only ever claims terms whose low bits are
// its own ID, and never the same one twice (the claim is persisted before it
// is announced). Terms still compare as plain integers, so "terms only grow"
// and "ignore older terms" need no special ordering, and a term is a fence
// token that downstream resources can compare.
//
// Term 0 belongs to nobody (member IDs are > 0): it means "no term yet".

// TermOwner returns the member that may lead term t (0 for term 0).
func TermOwner(t uint64) uint32 { return uint32(t) }

// TermRound returns t's round: how many times the cluster's terms have
// wrapped through the member IDs. It is what an operator reads as "the
// election count" when the raw term is an unwieldy number.
func TermRound(t uint64) uint32 { return uint32(t >> 32) }

// MakeTerm builds the term of round round owned by id.
func MakeTerm(round, id uint32) uint64 { return uint64(round)<<32 | uint64(id) }

// nextTerm returns the smallest term above after that id owns. It panics if
// the term space is exhausted: 2^32 rounds is more than a century of one
// election per second, so reaching it means a bug, not wear.
func nextTerm(after uint64, id uint32) uint64 {
	round := TermRound(after)
	if TermOwner(after) < id {
		return MakeTerm(round, id)
	}
	if round == 1<<32-1 {
		panic("bully: term space exhausted")
	}
	return MakeTerm(round+1, id)
}
