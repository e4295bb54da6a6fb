// Package ricartagrawala is mutexd's Ricart-Agrawala algorithm (the course
// notes'): a member that wants a lock sends a request stamped with its
// Lamport time to every other member and enters once every one of them
// replied; a member replies at once unless it holds the lock or asked for
// it first by (Lamport time, ID), in which case it keeps the request in
// its queue for that lock (one queue per resource, as the notes say) and
// replies when it leaves. 2(N-1) messages per entry, a synchronisation
// delay of one message.
//
// The core is pkg/mutex/permission's, run as permission.RicartAgrawala; its
// package doc says how it survives what the notes leave out (a crashed
// member no longer waited for after a failure detector's timeout, a
// majority to grant, leases that end before a member is given up,
// incarnations and rejoining), what that costs in safety and what protects
// the resource then (the fence, (Lamport time, requester), and the lease).
// This package is the algorithm's line in pkg/mutex/algorithms: Factory.
package ricartagrawala
