// Package lamport is mutexd's Lamport distributed mutex (the course notes'): every
// member keeps a queue of requests ordered by (Lamport time, ID); a member
// that wants a lock sends a request to every other member, which queues it
// and acknowledges it; the member enters when its request heads its queue
// and it has heard from every other member a message stamped after its
// request; it leaves by sending a release to every member. 3(N-1) messages
// per entry, a synchronisation delay of one message.
//
// The notes require FIFO channels; the core gets their effect over UDP
// without holding frames back: every frame about a lock carries the
// sender's current request, and a frame older (by Lamport time) than the
// newest taken from its sender is dropped, the newer one having said where
// the sender stands (pkg/mutex/permission's package doc argues it). Lost
// frames are repaired by asking again. A member whose client takes the
// lock again within 5 ms of its release, nobody else asking, sends the
// release and the new request in one frame to each member (a requeue): the
// notes' 3(N-1) messages in 2(N-1) frames.
//
// The core is pkg/mutex/permission's, run as permission.Lamport; its
// package doc says how it survives crashes, pauses and loss, what that
// costs in safety and what protects the resource then. This package is the
// algorithm's line in pkg/mutex/algorithms: Factory.
package lamport
