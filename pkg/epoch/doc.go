// Package epoch is owned epochs, the numbering bully terms and token-ring
// generations share, and the rule that decides whether an epoch read from
// the wire is plausible.
//
// # Owned epochs
//
// An epoch is a 64-bit number whose low 32 bits name the only member that
// may create it and whose high 32 bits count rounds:
//
//	 63                              32 31                               0
//	+----------------------------------+----------------------------------+
//	|              round               |        owner (member ID)         |
//	+----------------------------------+----------------------------------+
//
// Two members that cannot hear each other can both create an epoch "above
// every one I have seen" without ever creating the same one, and epochs
// still compare as plain integers. Epoch 0 belongs to nobody (member IDs are
// > 0). A protocol may use fewer than 32 bits of round (the token ring puts
// the round in the high bits of its fences): Limit.Last says where its space
// ends, and Next never goes past it.
//
// # Plausibility
//
// Any member, or anyone on the LAN when the cluster runs without a key, can
// put any number in a frame. An epoch only moves forwards, so one frame
// carrying the last round of the space would end the protocol for good: no
// member could ever create an epoch again, and the number is persisted. The
// rule is therefore about jumps, and it is tied to time:
//
//   - A round beyond Limit.Last is absurd (ErrAbsurd), whatever came before.
//     Last leaves the final Burst rounds of the space unused, so a member
//     that restores its highest epoch always has room to make progress.
//   - A round above the local one costs credit (ErrTooFast when there is
//     not enough). A Guard holds up to Burst rounds of credit and regains it
//     at Limit.Rate, the fastest the protocol itself creates rounds (a bully
//     claim needs an answer timeout; a token regeneration a loss timeout).
//     A member that is legitimately ahead (it went on electing while this
//     one was down or cut off) is ahead by what the protocol could do in that
//     time, which Burst covers many times over for any real outage; a forger
//     gets Burst once and then only the protocol's own pace, so exhausting a
//     32-bit round space takes years of frames, not one.
//
// A protocol refuses a frame whose epoch is not admitted, counts it under
// the error's Reason, and carries on: nothing read from the wire can end it.
// A member's own claims go through Next, which reports ErrExhausted instead
// of wrapping; the protocol then stops claiming and says so.
//
// Restored state goes through Limit.CheckRestored: an epoch beyond Last on
// disk was put there by a frame this rule would refuse (or by an older
// build that had no rule); the daemon refuses to start on it and names the
// file, rather than run a member that can never make progress.
//
// # Incarnations
//
// A member's incarnation (its restarts) is another member's number: only
// the member raises it, nobody adopts it, so a forged one above the real
// one would, if believed for good, make the member's every later frame
// look like a late frame of an earlier life. Life judges an incarnation
// read from a frame with the frame's Lamport stamp: the member's lives
// only ever raise its stamps, so a lower incarnation stamped after every
// frame of the one believed is the member itself, back from a forged
// claim (Back), and a late frame of a real earlier life stays Stale. The
// permission-based mutexes, the central coordinator and the eventual
// leader (Ω) judge incarnations with it.
package epoch
