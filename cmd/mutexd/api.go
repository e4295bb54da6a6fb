package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/wire"
)

// renewWait bounds how long a renewal waits for the majority check that
// confirms it. A check answers within a millisecond on a LAN; one that
// does not within this time will not (its probe has timed out), and the
// client had better hear so and try again while its lease still runs.
const renewWait = time.Second

// maxClientLen bounds the "client" a request names (shown in status).
const maxClientLen = 128

// lockAPI serves the lock calls of the control API. Its waiters are owned
// by the daemon's loop: they are touched only inside d.Do functions and
// in deliver, which the core's wrapper calls on the loop with every
// outcome the algorithm reports.
type lockAPI struct {
	d     *daemon.Daemon
	clock clock.Clock
	alg   mutex.Factory // the algorithm run
	min   time.Duration // the shortest lease a request may ask for
	max   time.Duration // the cluster's longest lease (--lease)

	waiters map[mutex.RequestID][]chan mutex.Outcome // one-shot

	stats apiStats
}

func newAPI(f mutex.Factory, opt mutex.Options) *lockAPI {
	return &lockAPI{alg: f, min: opt.MinLease, max: opt.Lease, waiters: map[mutex.RequestID][]chan mutex.Outcome{}}
}

// deliver hands the algorithm's answer about a request to whoever waits
// for it. It runs on the loop and must not block: every waiter's channel
// has room for the one outcome it will ever be sent.
func (a *lockAPI) deliver(o mutex.Outcome) {
	id := o.Request()
	for _, ch := range a.waiters[id] {
		select {
		case ch <- o:
		default:
		}
	}
	delete(a.waiters, id)
}

// wait registers a one-shot waiter for request id (on the loop).
func (a *lockAPI) wait(id mutex.RequestID) chan mutex.Outcome {
	ch := make(chan mutex.Outcome, 1)
	a.waiters[id] = append(a.waiters[id], ch)
	return ch
}

// forget drops a waiter that gave up (on the loop).
func (a *lockAPI) forget(id mutex.RequestID, ch chan mutex.Outcome) {
	a.waiters[id] = slices.DeleteFunc(a.waiters[id], func(c chan mutex.Outcome) bool { return c == ch })
	if len(a.waiters[id]) == 0 {
		delete(a.waiters, id)
	}
}

func (a *lockAPI) attach(d *daemon.Daemon) {
	a.d = d
	a.clock = d.Config().Clock
	d.Handle(http.MethodPost, "/v1/locks/{name}/acquire", a.acquire)
	d.Handle(http.MethodPost, "/v1/locks/{name}/renew", a.renew)
	d.Handle(http.MethodPost, "/v1/locks/{name}/release", a.release)
	d.Handle(http.MethodGet, "/v1/locks", a.locks)
	d.Handle(http.MethodGet, "/v1/algorithm", a.algorithm)
	d.Handle(http.MethodGet, "/v1/vector", a.vector)
}

// vectorView is what GET /v1/vector answers (an algorithm that orders
// grants by vector timestamps: tokenask): the stamp of this member's
// latest request, what a program message sent now carries (empty before
// the first request), as `mutexd lock --after` takes it.
type vectorView struct {
	Vector string `json:"vector"`
}

func (a *lockAPI) vector(r *http.Request) (any, error) {
	var v vectorView
	var verr error
	if err := a.algo(r.Context(), func(alg mutex.Algorithm, _ uint32) {
		causal, ok := alg.(mutex.Causal)
		if !ok {
			verr = notCausal(a.alg.Name)
			return
		}
		vec, err := causal.Vector()
		switch {
		case errors.Is(err, mutex.ErrBadVector):
			verr = ctl.BadRequest(err.Error())
			return
		case err != nil:
			verr = ctl.Unavailable(err.Error()) // not yet: its state write pending
			return
		}
		v.Vector = causal.VectorText(vec)
	}); err != nil {
		return nil, err
	}
	return v, verr
}

// notCausal refuses a vector asked of an algorithm that keeps none.
func notCausal(algorithm string) error {
	return ctl.BadRequest(fmt.Sprintf("%v: --algorithm %s does not order requests by vector timestamps (tokenask does)", mutex.ErrBadVector, algorithm))
}

// algorithmView is what GET /v1/algorithm answers: the algorithm this
// daemon runs, and what it promises.
type algorithmView struct {
	Name       string           `json:"name"`
	Summary    string           `json:"summary"`
	Guarantees mutex.Guarantees `json:"guarantees"`
}

func (a *lockAPI) algorithm(*http.Request) (any, error) {
	return algorithmView{Name: a.alg.Name, Summary: a.alg.Summary, Guarantees: a.alg.Guarantees}, nil
}

// lockLostEvent is the event every algorithm reports when a request loses
// its lock (pkg/mutex's cores: "lock_lost").
const lockLostEvent = "lock_lost"

// steppedBack answers every waiting request, on the loop, when the member
// steps back: its core was stopped and rebuilt, and none of its requests
// will ever be granted (a granted one learns it at its next renewal).
func (a *lockAPI) steppedBack() {
	for id := range a.waiters {
		a.deliver(mutex.Lost{ID: id, Reason: mutex.LossReason(daemon.EventSteppedBack)})
	}
}

// algo runs fn on the loop with the algorithm, and this run's incarnation
// (the node's: raised when the core is rebuilt after a step back, so that
// a handle of the old core's is never taken for one of the new's). While
// the member stands back it refuses (daemon.DoActive): 503 stepped_back.
func (a *lockAPI) algo(ctx context.Context, fn func(alg mutex.Algorithm, inc uint32)) error {
	err := a.d.DoActive(ctx, func(n *node.Node) {
		fn(n.Core().(*algoCore).Algorithm, n.Incarnation())
	})
	if errors.Is(err, daemon.ErrStopped) {
		return ctl.Unavailable("the daemon is shutting down")
	}
	return err
}

// A request handle is "INCARNATION-ID": the core's request ID, which
// restarts at 1 with every run of the daemon, qualified by the run. A
// client whose daemon restarted must hear that its grant is gone, never
// renew someone else's request that happens to have the same ID.
func formatHandle(inc uint32, id mutex.RequestID) string {
	return strconv.FormatUint(uint64(inc), 10) + "-" + strconv.FormatUint(uint64(id), 10)
}

func parseHandle(s string) (inc uint32, id mutex.RequestID, err error) {
	a, b, ok := strings.Cut(s, "-")
	i, err1 := strconv.ParseUint(a, 10, 32)
	n, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || i == 0 || n == 0 {
		return 0, 0, fmt.Errorf("request %q: want the handle acquire returned, INCARNATION-ID (e.g. \"412-7\")", s)
	}
	return uint32(i), mutex.RequestID(n), nil
}

// Requests and answers of the lock calls.
type (
	acquireRequest struct {
		LeaseMS   int64  `json:"lease_ms"`   // 0: the cluster's --lease
		TimeoutMS int64  `json:"timeout_ms"` // 0: wait until granted or the client leaves
		Client    string `json:"client"`     // who asks, for status; default "pid N uid U"
		// Mode is "exclusive" (the default) or "shared", where the
		// algorithm offers it (else 400).
		Mode mutex.Mode `json:"mode"`
		// After is the vector of what the client has seen, as GET
		// /v1/vector and a grant's "vector" give it (MEMBER:INC.SEQ,...):
		// the request is granted only after every request it names. Only
		// an algorithm that orders by vectors takes it (tokenask; else
		// 400).
		After string `json:"after,omitempty"`
	}
	grantView struct {
		Request     string `json:"request"`
		Lock        string `json:"lock"`
		Fence       uint64 `json:"fence"`
		LeaseMS     int64  `json:"lease_ms"`
		LeaseLeftMS int64  `json:"lease_left_ms"`
		// Generation is the algorithm's epoch the grant was made in (the
		// token ring's generation).
		Generation uint64 `json:"generation"`
		// Vector is the request's vector timestamp (tokenask): a program
		// message the client sends under the lock carries it, and the
		// receiver's request passes it as "after".
		Vector string `json:"vector,omitempty"`
	}
	renewRequest struct {
		Request string `json:"request"`
		LeaseMS int64  `json:"lease_ms"` // 0: the lease the grant had
	}
	renewView struct {
		Request     string `json:"request"`
		Lock        string `json:"lock"`
		Fence       uint64 `json:"fence"`
		LeaseLeftMS int64  `json:"lease_left_ms"`
	}
	releaseRequest struct {
		Request string `json:"request"`
	}
	releaseView struct {
		Request string `json:"request"`
		Lock    string `json:"lock"`
		// Was is "held" (a lease ended) or "waiting" (a request withdrawn).
		Was   string `json:"was"`
		Fence uint64 `json:"fence,omitempty"`
	}
	locksView struct {
		// Incarnation qualifies the request IDs below: a handle is
		// INCARNATION-ID.
		Incarnation uint32             `json:"incarnation"`
		Locks       []mutex.LockStatus `json:"locks"`
	}
)

// decode reads a JSON object into v, refusing unknown fields (a misspelt
// "lease" must not silently become the default lease). An empty body is
// allowed only when optional.
func decode(r *http.Request, v any, optional bool) error {
	b, err := io.ReadAll(r.Body)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return ctl.Errorf(http.StatusRequestEntityTooLarge, ctl.CodeTooLarge, "request body is larger than the %d bytes allowed", mbe.Limit)
	case err != nil:
		return ctl.BadRequest("reading the request body: " + err.Error())
	case len(bytes.TrimSpace(b)) == 0 && optional:
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return ctl.BadRequest("request body is empty: want a JSON object")
		}
		return ctl.BadRequest("request body is not valid: " + strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return ctl.BadRequest("request body has data after its JSON value")
	}
	return nil
}

// call reads a lock call: the lock's name from the path and the JSON body
// into v.
func call(r *http.Request, v any, optional bool) (string, error) {
	name := r.PathValue("name")
	if err := decode(r, v, optional); err != nil {
		return "", err
	}
	return name, checkName(name)
}

func checkName(name string) error {
	if !wire.ValidLockName(name) { // the same rule as mutex.ErrBadLockName, said with the name
		return ctl.BadRequest(fmt.Sprintf("lock name %q: want 1-64 bytes of letters, digits and ._:/@+-", name))
	}
	return nil
}

// lease turns a request's lease_ms into a lease (0: the default).
func (a *lockAPI) lease(ms int64) (time.Duration, error) {
	if ms == 0 {
		return 0, nil
	}
	d := time.Duration(ms) * time.Millisecond
	if ms < 0 || ms > int64(a.max/time.Millisecond) || d < a.min {
		return 0, ctl.BadRequest(fmt.Sprintf("lease_ms %d: want %d to %d (the cluster's --lease), or 0 for the longest",
			ms, a.min.Milliseconds(), a.max.Milliseconds()))
	}
	return d, nil
}

// coreError maps the algorithm's refusals (pkg/mutex's errors, the same
// for every algorithm) to answers.
func coreError(err error, handle string) error {
	switch {
	case errors.Is(err, mutex.ErrBadLockName), errors.Is(err, mutex.ErrBadLease), errors.Is(err, mutex.ErrSharedUnsupported), errors.Is(err, mutex.ErrBadVector):
		return ctl.BadRequest(err.Error())
	case errors.Is(err, mutex.ErrTooManyLocks), errors.Is(err, mutex.ErrQueueFull):
		return ctl.Unavailable(err.Error() + ": try again later, or use fewer lock names")
	case errors.Is(err, mutex.ErrExpired):
		return gone(fmt.Sprintf("request %s: the lease had already expired: the lock is lost", handle), "expired")
	case errors.Is(err, mutex.ErrNotHolder):
		return ctl.Conflict(fmt.Sprintf("request %s is still waiting for its lock: nothing to renew", handle))
	}
	return err
}

// gone is 410: the grant the client speaks of is over.
func gone(msg, reason string) *ctl.Error {
	return ctl.Errorf(http.StatusGone, "lost_"+reason, "%s", msg)
}

func (a *lockAPI) acquire(r *http.Request) (any, error) {
	v, err := a.doAcquire(r)
	a.stats.count("acquire", err)
	return v, err
}

func (a *lockAPI) doAcquire(r *http.Request) (any, error) {
	var req acquireRequest
	name, err := call(r, &req, true)
	if err != nil {
		return nil, err
	}
	lease, err := a.lease(req.LeaseMS)
	if err != nil {
		return nil, err
	}
	if req.TimeoutMS < 0 {
		return nil, ctl.BadRequest(fmt.Sprintf("timeout_ms %d: want 0 (wait until granted) or more", req.TimeoutMS))
	}
	if len(req.Client) > maxClientLen || !utf8.ValidString(req.Client) {
		return nil, ctl.BadRequest(fmt.Sprintf("client: want at most %d bytes of UTF-8", maxClientLen))
	}
	client := req.Client
	if client == "" {
		if p, ok := ctl.PeerOf(r); ok {
			client = fmt.Sprintf("pid %d uid %d", p.PID, p.UID)
		}
	}
	// The waiter is registered in the same loop turn as Acquire: the grant
	// can come in the Ready that follows it, before any other turn.
	var (
		id     mutex.RequestID
		inc    uint32
		ch     chan mutex.Outcome
		aerr   error
		vector string
	)
	if err := a.algo(r.Context(), func(alg mutex.Algorithm, i uint32) {
		inc = i
		q := mutex.Request{Lock: name, Mode: req.Mode, Lease: lease, Client: client}
		causal, ok := alg.(mutex.Causal)
		if req.After != "" {
			if !ok {
				aerr = notCausal(a.alg.Name)
				return
			}
			if q.After, aerr = causal.ParseVector(req.After); aerr != nil {
				return
			}
		}
		if id, aerr = alg.Acquire(a.clock.Now(), q); aerr == nil {
			ch = a.wait(id)
			if v, has := causalStamp(causal, id); ok && has {
				vector = v
			}
		}
	}); err != nil {
		return nil, err
	}
	if aerr != nil {
		return nil, coreError(aerr, "")
	}
	var expired <-chan time.Time
	if req.TimeoutMS > 0 {
		t := time.NewTimer(time.Duration(req.TimeoutMS) * time.Millisecond)
		defer t.Stop()
		expired = t.C
	}
	select {
	case o := <-ch:
		g, ok := o.(mutex.Granted)
		if !ok {
			if l, lost := o.(mutex.Lost); lost {
				return nil, gone(fmt.Sprintf("request for lock %q will never be granted: %s", name, l.Reason.Explain()), string(l.Reason))
			}
			return nil, ctl.Internal(fmt.Sprintf("request %d: %T before any grant", id, o))
		}
		if r.Context().Err() != nil {
			// The client left as the grant came: nobody will use it.
			a.cancel(id)
			return nil, r.Context().Err()
		}
		v := a.grantView(g, inc)
		v.Vector = vector
		return v, nil
	case <-expired:
		a.cancel(id)
		return nil, ctl.Timeout(fmt.Sprintf("lock %q was not granted within %v", name, time.Duration(req.TimeoutMS)*time.Millisecond))
	case <-r.Context().Done():
		a.cancel(id)
		return nil, r.Context().Err()
	}
}

// causalStamp is request id's vector as text, where the algorithm keeps
// one (nil causal: none).
func causalStamp(causal mutex.Causal, id mutex.RequestID) (string, bool) {
	if causal == nil {
		return "", false
	}
	v, ok := causal.RequestVector(id)
	return causal.VectorText(v), ok
}

func (a *lockAPI) grantView(g mutex.Granted, inc uint32) grantView {
	return grantView{Request: formatHandle(inc, g.ID), Lock: g.Lock, Fence: g.Fence, Generation: g.Epoch,
		LeaseMS: g.Lease.Milliseconds(), LeaseLeftMS: a.leftMS(g.Expires)}
}

// leftMS is what remains of a lease ending at exp, in whole milliseconds
// rounded down, read now: the client counts it from before its request,
// so its own deadline falls before the daemon's.
func (a *lockAPI) leftMS(exp time.Time) int64 {
	return max(exp.Sub(a.clock.Now()), 0).Milliseconds()
}

// cancel withdraws request id, waiting or granted (a grant that raced the
// cancellation is released), whatever the caller's context says.
func (a *lockAPI) cancel(id mutex.RequestID) {
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	a.algo(ctx, func(alg mutex.Algorithm, _ uint32) {
		delete(a.waiters, id)
		if _, ok := alg.Lookup(id); ok {
			alg.Release(a.clock.Now(), id)
		}
	})
}

// request finds the request a handle names, checking that it is this
// run's and belongs to lock name.
func (a *lockAPI) request(alg mutex.Algorithm, inc uint32, handle, name string) (mutex.RequestID, error) {
	hinc, id, err := parseHandle(handle)
	if err != nil {
		return 0, ctl.BadRequest(err.Error())
	}
	if hinc != inc {
		return 0, gone(fmt.Sprintf("request %s was granted by an earlier run of this daemon or its core (now run %d): the lock was lost when it stopped (or stepped back)", handle, inc), "restarted")
	}
	if st, ok := alg.Lookup(id); ok && st.Lock != name {
		return 0, ctl.BadRequest(fmt.Sprintf("request %s is for lock %q, not %q", handle, st.Lock, name))
	}
	return id, nil
}

func (a *lockAPI) renew(r *http.Request) (any, error) {
	v, err := a.doRenew(r)
	a.stats.count("renew", err)
	return v, err
}

func (a *lockAPI) doRenew(r *http.Request) (any, error) {
	var req renewRequest
	name, err := call(r, &req, false)
	if err != nil {
		return nil, err
	}
	lease, err := a.lease(req.LeaseMS)
	if err != nil {
		return nil, err
	}
	var (
		id   mutex.RequestID
		ch   chan mutex.Outcome
		rerr error
	)
	if err := a.algo(r.Context(), func(alg mutex.Algorithm, inc uint32) {
		if id, rerr = a.request(alg, inc, req.Request, name); rerr != nil {
			return
		}
		if rerr = alg.Renew(a.clock.Now(), id, lease); rerr == nil {
			ch = a.wait(id)
		}
	}); err != nil {
		var ce *ctl.Error
		if errors.As(err, &ce) && ce.Code == daemon.EventSteppedBack {
			// Its core was stopped: the grant is gone, and the client
			// must stop its work now, not at its lease's end.
			return nil, gone(fmt.Sprintf("request %s lost lock %q: %s", req.Request, name, ce.Msg), daemon.EventSteppedBack)
		}
		return nil, err
	}
	if errors.Is(rerr, mutex.ErrUnknownRequest) {
		return nil, gone(fmt.Sprintf("request %s does not hold lock %q: it was released, or lost (lease expired, token superseded)", req.Request, name), "unknown")
	}
	if rerr != nil {
		return nil, coreError(rerr, req.Request)
	}
	t := time.NewTimer(renewWait)
	defer t.Stop()
	select {
	case o := <-ch:
		switch o := o.(type) {
		case mutex.Renewed:
			return renewView{Request: req.Request, Lock: name, Fence: o.Fence, LeaseLeftMS: a.leftMS(o.Expires)}, nil
		case mutex.Lost:
			return nil, gone(fmt.Sprintf("lock %q (fence %d) is lost: %s", name, o.Fence, o.Reason.Explain()), string(o.Reason))
		case mutex.Released:
			return nil, gone(fmt.Sprintf("lock %q (fence %d) was released", name, o.Fence), "released")
		}
		return nil, ctl.Internal(fmt.Sprintf("request %s: %T in answer to a renewal", req.Request, o))
	case <-t.C:
	case <-r.Context().Done():
	}
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	var unsaved string
	a.algo(ctx, func(alg mutex.Algorithm, _ uint32) {
		a.forget(id, ch)
		if st, ok := alg.Lookup(id); ok {
			unsaved = st.Unsaved
		}
	})
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	return nil, ctl.Unavailable(a.unconfirmed(ctx, req.Request, unsaved))
}

// unconfirmed says why a renewal was not answered within renewWait: the
// algorithm made it and it waits for this member's state write (unsaved
// set: mutexcount.Hold), or whoever confirms it did not answer. Either
// way the lease runs on as last confirmed.
func (a *lockAPI) unconfirmed(ctx context.Context, handle, unsaved string) string {
	const runsOn = "the lease runs on as last confirmed and ends unless a renewal is, try again"
	var failing *daemon.PersistFailure
	if st, err := a.d.Status(ctx); err == nil {
		failing = st.Persist.Failing
	}
	dir := a.d.Config().StateDir
	if unsaved != "" {
		cause := "which has not completed yet (a slow disk: mutexd status, Persist)"
		if failing != nil {
			cause = fmt.Sprintf("which fails (%s: %s; failing since %s, %d failed writes)",
				failing.File, failing.Err, failing.Since.Format(time.RFC3339), failing.Failed)
		}
		return fmt.Sprintf("renewal of %s not confirmed within %v: it is made, but waits for this member's state write, %s: "+
			"a lease is built on numbers the member must have on disk before its client may count on it. "+
			"Free space or fix permissions in the state directory %s (mutexd status: Persist); %s", handle, renewWait, cause, dir, runsOn)
	}
	msg := fmt.Sprintf("renewal of %s not confirmed within %v: whoever confirms it did not answer "+
		"(central's coordinator, or a majority of the members for the others: the log and mutexd status say which); ", handle, renewWait)
	if failing != nil {
		// Not held for the write, but what it needs may be: while a
		// promise is unsaved the member sends nothing that depends on it.
		msg += fmt.Sprintf("this member's own state writes fail too (%s: %s, %d failed writes), and nothing that depends on them is sent until one succeeds: "+
			"free space or fix permissions in the state directory %s; ", failing.File, failing.Err, failing.Failed, dir)
	}
	return msg + runsOn
}

func (a *lockAPI) release(r *http.Request) (any, error) {
	v, err := a.doRelease(r)
	a.stats.count("release", err)
	return v, err
}

func (a *lockAPI) doRelease(r *http.Request) (any, error) {
	var req releaseRequest
	name, err := call(r, &req, false)
	if err != nil {
		return nil, err
	}
	var (
		v    = releaseView{Request: req.Request, Lock: name}
		rerr error
	)
	if err := a.algo(r.Context(), func(alg mutex.Algorithm, inc uint32) {
		var id mutex.RequestID
		if id, rerr = a.request(alg, inc, req.Request, name); rerr != nil {
			return
		}
		st, ok := alg.Lookup(id)
		if !ok {
			rerr = ctl.NotFound(fmt.Sprintf("request %s does not hold or wait for lock %q: released already, lost, or never made", req.Request, name))
			return
		}
		v.Was, v.Fence = "waiting", st.Fence
		if st.Granted {
			v.Was = "held"
		}
		rerr = alg.Release(a.clock.Now(), id)
	}); err != nil {
		return nil, err
	}
	if rerr != nil {
		return nil, coreError(rerr, req.Request)
	}
	return v, nil
}

func (a *lockAPI) locks(r *http.Request) (any, error) {
	var v locksView
	// A read: answered while the member stands back too (its rebuilt
	// core holds nothing).
	err := a.d.Do(r.Context(), func(n *node.Node) {
		v = locksView{Incarnation: n.Incarnation(), Locks: n.Core().(*algoCore).Algorithm.Report().Locks}
	})
	if v.Locks == nil {
		v.Locks = []mutex.LockStatus{}
	}
	return v, err
}

// apiStats counts the lock calls by outcome ("acquire/granted",
// "renew/gone"...), for status and metrics.
type apiStats struct {
	mu sync.Mutex
	n  map[string]uint64
}

func (s *apiStats) count(call string, err error) {
	outcome := "ok"
	var ce *ctl.Error
	switch {
	case err == nil:
	case errors.As(err, &ce):
		outcome = ce.Code
	case errors.Is(err, context.Canceled):
		outcome = "client_gone"
	default:
		outcome = "error"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]uint64{}
	}
	s.n[call+"/"+outcome]++
}

func (s *apiStats) snapshot() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.n)
}

// algoCore is the algorithm as the daemon runs it: the core, handing its
// outcomes to the control API's waiters after each Ready, with the API's
// counters in its status and metrics.
type algoCore struct {
	mutex.Algorithm
	api *lockAPI
}

// Ready drains the algorithm's outcomes with its Ready, on the loop, and
// answers the waiters: a grant is answered in the loop turn that made it.
// Those the core holds for the Ready's write (mutexcount.Hold: a promise
// they may depend on, an incarnation or an era, is not on disk) it hands
// over at Advance, after the write, or at a later Tick.
func (c *algoCore) Ready() core.Ready {
	rd := c.Algorithm.Ready()
	c.drain()
	return rd
}

// Advance passes the driver's report on a Ready on (core.Advancer), and
// answers the waiters whose outcomes waited for its write.
func (c *algoCore) Advance(saved bool) {
	if a, ok := c.Algorithm.(core.Advancer); ok {
		a.Advance(saved)
	}
	c.drain()
}

func (c *algoCore) drain() {
	for _, o := range c.Algorithm.Outcomes() {
		c.api.deliver(o)
	}
}

// Hint passes a hint that a member's port closed on (core.Hinter), to an
// algorithm that acts on hints (central's coordinator election).
func (c *algoCore) Hint(h core.Hint) {
	if hr, ok := c.Algorithm.(core.Hinter); ok {
		hr.Hint(h)
	}
}

// statusView is the core's part of `mutexd status --json`: the algorithm's
// mutex.Status, and the control API's counters.
type statusView struct {
	mutex.Status
	// API counts the control API's lock calls by "call/outcome".
	API map[string]uint64 `json:"api,omitempty"`
}

func (c *algoCore) Status() any { return statusView{Status: c.Report(), API: c.api.stats.snapshot()} }

func (c *algoCore) Metrics(m *core.MetricSet) {
	if mw, ok := c.Algorithm.(core.MetricsWriter); ok {
		mw.Metrics(m)
	}
	snap := c.api.stats.snapshot()
	for _, k := range slices.Sorted(maps.Keys(snap)) {
		call, outcome, _ := strings.Cut(k, "/")
		m.Counter("synclab_mutex_api_calls_total", "Control API lock calls, by call and outcome.", float64(snap[k]),
			core.Label{Name: "call", Value: call}, core.Label{Name: "outcome", Value: outcome})
	}
}
