// Package delivery is reliable acknowledged delivery for sans-IO cores: an
// Outbox that resends a message until its destination acknowledges it or
// the tries run out, and a Filter that lets a receiver act on each message
// once however often it arrives.
//
// # Sender: Outbox
//
// A core keys each message it wants delivered by (destination, ID), hands
// it to Outbox.Send (and sends it now), and tells the outbox about every
// acknowledgement with Outbox.Ack. Outbox.Deadline says when the next
// resend or give-up is due, so the core can fold it into its own
// core.Scheduler deadline; Outbox.Tick returns what is due then: the
// entries to send again, and a Result for each one given up. Nothing is
// dropped silently: a message ends Acked, GaveUp or Cancelled, and the
// core learns which.
//
//	first send ──Retry──> resend ──Retry──> ... (Tries sends in all) ──Retry──> GaveUp
//	     └─────────────── Ack at any point ───────────────────────────────────> Acked
//
// Tries = 1 is "send once, and tell me if no acknowledgement came within
// Retry": the token ring's token handoff, whose silent successor is skipped
// rather than asked again. Berkeley's clock adjustments are resent.
//
// The payload type is the core's own (a core.Message, or a struct the core
// turns into one): the outbox never encodes anything.
//
// # Receiver: Filter
//
// A retransmission and a duplicated datagram look the same to a receiver:
// it must acknowledge every copy (its first acknowledgement may have been
// lost) but act on only one. Filter.Check classifies an ID from a sender as
// New, Duplicate or TooOld, with bounded memory: per sender, a window of the
// highest ID seen and the Window IDs below it (the anti-replay window of
// IPsec, RFC 4303 section 3.4.3). It needs IDs that increase per sender
// (a counter, a round, incarnation<<32|counter); an ID below the window is
// refused as TooOld rather than taken for new, so that an old frame replayed
// much later is never acted on twice. An ID can be forged, though (without
// a key anyone can send a message in a member's name), and one far ahead
// would make every real ID of its sender too old for good: so Check also
// takes the message's Lamport stamp as first sent (the same in every
// copy), and an ID below the window stamped after every message taken in
// it starts the window again there. The sender's first message stamped
// after the forged one (its clock passes the forged stamp a round trip
// after the receiver merged it) is taken, and a late copy of a real old
// message, stamped before, is not. At most MaxSenders senders are
// tracked (a core's senders are its members, so the default is plenty); a
// new sender beyond that is Refused, never taken for new: forgetting a
// sender would let its old frames be acted on again. Forget drops a sender
// that is known to have restarted with lower IDs, or left.
package delivery
