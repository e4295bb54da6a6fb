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
	"github.com/synclab/synclab/pkg/mutex/tokenring"
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
// in onEvent, which the loop calls with every event of the core.
type lockAPI struct {
	d     *daemon.Daemon
	clock clock.Clock
	min   time.Duration // the core's MinLease
	max   time.Duration // the core's MaxLease (--lease)

	waiters     map[uint64][]chan core.Event // by request ID; one-shot
	incarnation uint32                       // this run's, set on the loop at first use

	stats apiStats
}

func newAPI(rc tokenring.Config) *lockAPI {
	return &lockAPI{min: rc.MinLease, max: rc.MaxLease, waiters: map[uint64][]chan core.Event{}}
}

// onEvent hands the core's answer about a request to whoever waits for
// it. It runs on the loop and must not block: every waiter's channel has
// room for the one event it will ever be sent.
func (a *lockAPI) onEvent(e core.Event) {
	switch e.Name {
	case tokenring.EventGranted, tokenring.EventRenewed, tokenring.EventLost, tokenring.EventReleased:
	default:
		return
	}
	id, ok := eventArg[uint64](e, "request")
	if !ok {
		return
	}
	for _, ch := range a.waiters[id] {
		select {
		case ch <- e:
		default:
		}
	}
	delete(a.waiters, id)
}

// wait registers a one-shot waiter for request id (on the loop).
func (a *lockAPI) wait(id uint64) chan core.Event {
	ch := make(chan core.Event, 1)
	a.waiters[id] = append(a.waiters[id], ch)
	return ch
}

// forget drops a waiter that gave up (on the loop).
func (a *lockAPI) forget(id uint64, ch chan core.Event) {
	a.waiters[id] = slices.DeleteFunc(a.waiters[id], func(c chan core.Event) bool { return c == ch })
	if len(a.waiters[id]) == 0 {
		delete(a.waiters, id)
	}
}

func eventArg[T any](e core.Event, key string) (T, bool) {
	for i := 0; i+1 < len(e.Args); i += 2 {
		if k, _ := e.Args[i].(string); k == key {
			v, ok := e.Args[i+1].(T)
			return v, ok
		}
	}
	var zero T
	return zero, false
}

func (a *lockAPI) attach(d *daemon.Daemon) {
	a.d = d
	a.clock = d.Config().Clock
	d.Handle(http.MethodPost, "/v1/locks/{name}/acquire", a.acquire)
	d.Handle(http.MethodPost, "/v1/locks/{name}/renew", a.renew)
	d.Handle(http.MethodPost, "/v1/locks/{name}/release", a.release)
	d.Handle(http.MethodGet, "/v1/locks", a.locks)
}

// ring runs fn on the loop with the core, and this run's incarnation.
func (a *lockAPI) ring(ctx context.Context, fn func(ring *ringCore, inc uint32)) error {
	err := a.d.Do(ctx, func(n *node.Node) {
		if a.incarnation == 0 {
			a.incarnation = n.Status().Incarnation
		}
		fn(n.Core().(*ringCore), a.incarnation)
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
func formatHandle(inc uint32, id uint64) string {
	return strconv.FormatUint(uint64(inc), 10) + "-" + strconv.FormatUint(id, 10)
}

func parseHandle(s string) (inc uint32, id uint64, err error) {
	a, b, ok := strings.Cut(s, "-")
	i, err1 := strconv.ParseUint(a, 10, 32)
	n, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || i == 0 || n == 0 {
		return 0, 0, fmt.Errorf("request %q: want the handle acquire returned, INCARNATION-ID (e.g. \"412-7\")", s)
	}
	return uint32(i), n, nil
}

// Requests and answers of the lock calls.
type (
	acquireRequest struct {
		LeaseMS   int64  `json:"lease_ms"`   // 0: the cluster's --lease
		TimeoutMS int64  `json:"timeout_ms"` // 0: wait until granted or the client leaves
		Client    string `json:"client"`     // who asks, for status; default "pid N uid U"
	}
	grantView struct {
		Request     string `json:"request"`
		Lock        string `json:"lock"`
		Fence       uint64 `json:"fence"`
		LeaseMS     int64  `json:"lease_ms"`
		LeaseLeftMS int64  `json:"lease_left_ms"`
		Generation  uint64 `json:"generation"`
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
		Incarnation uint32                 `json:"incarnation"`
		Locks       []tokenring.LockStatus `json:"locks"`
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
	if !wire.ValidLockName(name) {
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

// coreError maps the core's refusals to answers.
func coreError(err error, handle string) error {
	switch {
	case errors.Is(err, tokenring.ErrBadLockName), errors.Is(err, tokenring.ErrBadLease):
		return ctl.BadRequest(strings.TrimPrefix(err.Error(), "tokenring: "))
	case errors.Is(err, tokenring.ErrTooManyLocks), errors.Is(err, tokenring.ErrQueueFull):
		return ctl.Unavailable(strings.TrimPrefix(err.Error(), "tokenring: ") + ": try again later, or use fewer lock names")
	case errors.Is(err, tokenring.ErrExpired):
		return gone(fmt.Sprintf("request %s: the lease had already expired: the lock is lost", handle), "expired")
	case errors.Is(err, tokenring.ErrNotHolder):
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
		id   uint64
		inc  uint32
		ch   chan core.Event
		aerr error
	)
	if err := a.ring(r.Context(), func(ring *ringCore, i uint32) {
		inc = i
		if id, aerr = ring.Acquire(a.clock.Now(), name, lease, client); aerr == nil {
			ch = a.wait(id)
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
	case e := <-ch:
		if e.Name != tokenring.EventGranted {
			return nil, ctl.Internal(fmt.Sprintf("request %d: %s before any grant", id, e.Name))
		}
		if r.Context().Err() != nil {
			// The client left as the grant came: nobody will use it.
			a.cancel(id)
			return nil, r.Context().Err()
		}
		return a.grantView(e, inc, id), nil
	case <-expired:
		a.cancel(id)
		return nil, ctl.Timeout(fmt.Sprintf("lock %q was not granted within %v", name, time.Duration(req.TimeoutMS)*time.Millisecond))
	case <-r.Context().Done():
		a.cancel(id)
		return nil, r.Context().Err()
	}
}

func (a *lockAPI) grantView(e core.Event, inc uint32, id uint64) grantView {
	v := grantView{Request: formatHandle(inc, id)}
	v.Lock, _ = eventArg[string](e, "lock")
	v.Fence, _ = eventArg[uint64](e, "fence")
	v.Generation, _ = eventArg[uint64](e, "generation")
	lease, _ := eventArg[time.Duration](e, "lease")
	v.LeaseMS = lease.Milliseconds()
	v.LeaseLeftMS = a.leftMS(e)
	return v
}

// leftMS is what remains of the lease an event announced, in whole
// milliseconds rounded down, read now: the client counts it from before
// its request, so its own deadline falls before the daemon's.
func (a *lockAPI) leftMS(e core.Event) int64 {
	exp, _ := eventArg[time.Time](e, "expires")
	return max(exp.Sub(a.clock.Now()), 0).Milliseconds()
}

// cancel withdraws request id, waiting or granted (a grant that raced the
// cancellation is released), whatever the caller's context says.
func (a *lockAPI) cancel(id uint64) {
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	a.ring(ctx, func(ring *ringCore, _ uint32) {
		delete(a.waiters, id)
		if _, ok := ring.Request(id); ok {
			ring.Release(a.clock.Now(), id)
		}
	})
}

// request finds the request a handle names, checking that it is this
// run's and belongs to lock name.
func (a *lockAPI) request(ring *ringCore, inc uint32, handle, name string) (uint64, error) {
	hinc, id, err := parseHandle(handle)
	if err != nil {
		return 0, ctl.BadRequest(err.Error())
	}
	if hinc != inc {
		return 0, gone(fmt.Sprintf("request %s was granted by an earlier run of this daemon (now run %d): the lock was lost when it stopped", handle, inc), "restarted")
	}
	if st, ok := ring.Request(id); ok && st.Lock != name {
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
		id   uint64
		ch   chan core.Event
		rerr error
	)
	if err := a.ring(r.Context(), func(ring *ringCore, inc uint32) {
		if id, rerr = a.request(ring, inc, req.Request, name); rerr != nil {
			return
		}
		if rerr = ring.Renew(a.clock.Now(), id, lease); rerr == nil {
			ch = a.wait(id)
		}
	}); err != nil {
		return nil, err
	}
	if errors.Is(rerr, tokenring.ErrUnknownRequest) {
		return nil, gone(fmt.Sprintf("request %s does not hold lock %q: it was released, or lost (lease expired, token superseded)", req.Request, name), "unknown")
	}
	if rerr != nil {
		return nil, coreError(rerr, req.Request)
	}
	t := time.NewTimer(renewWait)
	defer t.Stop()
	select {
	case e := <-ch:
		fence, _ := eventArg[uint64](e, "fence")
		switch e.Name {
		case tokenring.EventRenewed:
			return renewView{Request: req.Request, Lock: name, Fence: fence, LeaseLeftMS: a.leftMS(e)}, nil
		case tokenring.EventLost:
			why, _ := eventArg[string](e, "reason")
			return nil, gone(fmt.Sprintf("lock %q (fence %d) is lost: %s", name, fence, lossText(why)), why)
		}
		return nil, gone(fmt.Sprintf("lock %q (fence %d) was released", name, fence), "released")
	case <-t.C:
	case <-r.Context().Done():
	}
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	a.ring(ctx, func(*ringCore, uint32) { a.forget(id, ch) })
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	return nil, ctl.Unavailable(fmt.Sprintf("renewal of %s not confirmed within %v: a majority of the ring did not answer; "+
		"the lease runs on, try again", req.Request, renewWait))
}

func lossText(reason string) string {
	switch reason {
	case "expired":
		return "its lease expired before a renewal"
	case "superseded":
		return "a newer token replaced the one it was granted on"
	case "renew_refused":
		return "a majority refused to confirm its token (a newer one exists)"
	}
	return reason
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
	if err := a.ring(r.Context(), func(ring *ringCore, inc uint32) {
		var id uint64
		if id, rerr = a.request(ring, inc, req.Request, name); rerr != nil {
			return
		}
		st, ok := ring.Request(id)
		if !ok {
			rerr = ctl.NotFound(fmt.Sprintf("request %s does not hold or wait for lock %q: released already, lost, or never made", req.Request, name))
			return
		}
		v.Was, v.Fence = "waiting", st.Fence
		if st.Granted {
			v.Was = "held"
		}
		rerr = ring.Release(a.clock.Now(), id)
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
	err := a.ring(r.Context(), func(ring *ringCore, inc uint32) {
		v = locksView{Incarnation: inc, Locks: ring.Report().Locks}
	})
	if v.Locks == nil {
		v.Locks = []tokenring.LockStatus{}
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

// ringCore is the token ring as the daemon runs it: the core, plus the
// control API's counters in its status and metrics.
type ringCore struct {
	*tokenring.Core
	stats *apiStats
}

// ringStatus is the core's part of `mutexd status --json`.
type ringStatus struct {
	tokenring.Status
	// API counts the control API's lock calls by "call/outcome".
	API map[string]uint64 `json:"api,omitempty"`
}

func (r *ringCore) Status() any { return ringStatus{Status: r.Report(), API: r.stats.snapshot()} }

func (r *ringCore) Metrics(m *core.MetricSet) {
	r.Core.Metrics(m)
	snap := r.stats.snapshot()
	for _, k := range slices.Sorted(maps.Keys(snap)) {
		call, outcome, _ := strings.Cut(k, "/")
		m.Counter("synclab_mutex_api_calls_total", "Control API lock calls, by call and outcome.", float64(snap[k]),
			core.Label{Name: "call", Value: call}, core.Label{Name: "outcome", Value: outcome})
	}
}
