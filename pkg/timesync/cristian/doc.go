// Package cristian is Cristian's algorithm as timed runs it: the request and
// reply frames, and the client's burst that keeps the round with the
// smallest round trip.
//
//	client p                                 server S
//	  t1  ---- TimeRequest (xmt = t1) ---->
//	                                         t: its clock, read as late
//	                                            as possible (the reply's xmt)
//	  t4  <--- TimeReply (xmt = t, origin = t1) ---
//
//	estimate  = t + (t4 - t1)/2
//	accuracy  = ±((t4 - t1)/2 - min)
//
// min is the smallest one-way delay the path is known to have: a configured
// value, 0 by default. The course notes suggest the smallest round trip seen,
// halved; that is not a bound (a path can be fast one way and slow the
// other), and with it the best round would claim an accuracy of exactly 0,
// so timed only takes a configured min.
//
// Both frames travel on timed's NTP socket (core.Datagram with Frame set:
// the driver patches the transmit timestamp and seals the frame just before
// the write). A client need not be a cluster member; receivers check the
// cluster ID and, with keys, the MAC (wire.Validator.Authenticate), and the
// client accepts a reply only if it echoes the transmit timestamp of a
// request still outstanding, once: a duplicate, a replay or a forged reply
// without the key is refused. A reply is never longer than its request.
//
// A round is an NTP sample with t2 = t3 = t (ntp.MakeSample): its offset is
// exactly the estimate above and its delay the round trip, so the NTP
// client's clock filter, selection and servo take Cristian sources as they
// are (pkg/timesync/client), and the root distance they compute, at least
// half the round trip, always covers the accuracy above.
//
// The package is sans-IO and not safe for concurrent use.
package cristian
