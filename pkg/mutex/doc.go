// Package mutex is the seam every mutual-exclusion algorithm of mutexd
// plugs into: the Algorithm interface, its typed requests and outcomes,
// the shared errors, the Table of requests every algorithm embeds, a
// statement of Guarantees, and the Factory a driver builds cores from.
//
// # An algorithm
//
// An algorithm is a sans-IO core (core.Core, core.Scheduler) with the
// request calls of Algorithm. It embeds a Table, which keeps the requests
// of this member's clients (IDs, a FIFO queue per lock, the holders, leases
// and their expiry, limits, name checks) and produces the typed Outcomes:
//
//	Acquire ──> Table.Enqueue                           (validated, queued)
//	            ... the algorithm's messages ...
//	            Table.Grantable(lock) -> Table.Grant(id, fence, epoch) ──> Granted
//	Renew   ──> Table.Renew ... confirmed: Table.ConfirmRenewals ──────> Renewed
//	Release ──> Table.Release ────────────────────────────────────────> Released
//	Tick    ──> Table.Expire; epoch replaced: Table.Lose ─────────────> Lost{Reason}
//
// So an algorithm decides only when this member may grant, with which
// fence, and when a renewal is confirmed. The driver (cmd/mutexd) drains
// Outcomes after every Ready and answers its clients from them; events
// (core.Ready.Events) stay for logs and hooks, never an API.
//
// # Fences and leases
//
// Every grant carries a fence, strictly greater than every fence granted
// before for the lock anywhere in the cluster, and a lease on this
// member's clock. A holder that stops (a pause longer than the lease) can
// outlive its lease without knowing; the fence is what protects the
// resource then, which must refuse a fence below one it has seen. Readers
// that hold a lock together (Shared) carry the same fence, so that rule
// refuses none of them; a writer's fence is above every fence before it,
// and the first reader's of a group above every fence before it. Each
// algorithm states which faults it survives, and what each entry costs, in
// its Guarantees (shown by `mutexd status` and docs/mutexd.md). A factory
// whose renewed lease does not simply count from the renewal says how it
// counts it (Factory.Renewal: a renewal on still-fresh support that keeps
// the lease's end, a lease cut by its support's age), so that mutexd can
// refuse a --lease its client could never renew in time.
//
// # Fences and the disk
//
// A fence is built on numbers the member keeps on disk (its incarnation,
// the era, the generation, the term), so that a restart starts above every
// fence it granted. No outcome leaves a core before the write of every
// such promise it may depend on is confirmed (core.Ready's rule for
// messages, applied to the outcomes: mutexcount.Hold in every core). With
// a healthy disk that costs nothing but order: the outcomes that came with
// a Ready carrying a promise are drained after its Advance, not before its
// write. When the write fails they are held, in order, until one succeeds,
// and then leave at the next Tick, where a grant or a renewal whose lease
// ended meanwhile is dropped (grants_unsaved, renewals_unsaved,
// EventGrantUnsaved) and its request ends with its lease. Without this, a
// member that grants alone (a one-member cluster; the others need an
// answer, which the withheld messages already stop) handed out fences
// built on an incarnation it had not written, and after a crash granted
// the same fences again. The events of the outcomes (EventGranted...)
// wait with them and are reported when they leave (with the Ready after
// the Advance, which the core asks for at once): the log says a request
// holds its lock when its client can know it. While they wait, the
// core's Lookup and Report show the holder's RequestStatus.Unsaved
// (UnsavedGrant, UnsavedRenewal), and a failed write says each held grant
// or renewal once (EventGrantHeld). Before, EventGranted was reported
// when the core decided: a grant held past a crash was logged as granted
// and never reached its client.
//
// # Adding an algorithm
//
// One package under pkg/mutex implementing Algorithm on a Table (its wire
// kinds appended in pkg/wire), and one Factory line in cmd/mutexd's
// registry. Nothing else in mutexd names an algorithm.
package mutex
