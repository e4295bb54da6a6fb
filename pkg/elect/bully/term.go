package bully

import "github.com/synclab/synclab/pkg/epoch"

// Terms are owned epochs (pkg/epoch): the low 32 bits of a term name the
// only member allowed to lead it, the high 32 bits count rounds:
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
func TermOwner(t uint64) uint32 { return epoch.Owner(t) }

// TermRound returns t's round: how many times the cluster's terms have
// wrapped through the member IDs. It is what an operator reads as "the
// election count" when the raw term is an unwieldy number.
func TermRound(t uint64) uint32 { return epoch.Round(t) }

// MakeTerm builds the term of round round owned by id.
func MakeTerm(round, id uint32) uint64 { return epoch.Make(round, id) }

// TermBurst is how many rounds ahead of this node's term a frame may be
// after a rest: far more than any outage opens between members (it takes
// 65,536 elections), far less than the 2^32 rounds there are.
const TermBurst = 1 << 16

// LastTermRound is the last round a term may have: the final TermBurst
// rounds are never used (see pkg/epoch), so a term restored from disk
// always leaves room to claim.
const LastTermRound = epoch.MaxRound - TermBurst

// termLimit is the plausibility rule for terms read from the wire: at most
// TermBurst rounds at once, and then the protocol's own pace. A claim
// needs a candidate's answer timeout, or a leader's reaction to another
// claim, so the cluster cannot create more than one round per member per
// answer timeout; credit comes back at that rate (per nanosecond of the
// local clock).
func termLimit(cfg Config) epoch.Limit {
	return epoch.Spaced(epoch.MaxRound, TermBurst, float64(len(cfg.Members))/float64(cfg.AnswerTimeout))
}

// CheckTerm refuses a term restored from disk that no node could have
// accepted or claimed (pkg/epoch Limit.CheckRestored).
func CheckTerm(t uint64) error {
	return epoch.Spaced(epoch.MaxRound, TermBurst, 1).CheckRestored(t)
}
