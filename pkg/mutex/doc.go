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
// # Adding an algorithm
//
// One package under pkg/mutex implementing Algorithm on a Table (its wire
// kinds appended in pkg/wire), and one Factory line in cmd/mutexd's
// registry. Nothing else in mutexd names an algorithm.
package mutex
