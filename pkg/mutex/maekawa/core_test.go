package maekawa_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/maekawa"
	"github.com/synclab/synclab/pkg/wire"
)

// t0 is an instant whose clock reading in milliseconds is a multiple of
// 2^32 (2026-01-27 15:08:45.952 UTC): a request's clock hint (propose)
// reads the milliseconds since t0, so the fences of these tests stay small.
var t0 = time.UnixMilli(412 << 32).UTC()

func newCore(t *testing.T, f func(*maekawa.Config)) *maekawa.Core {
	t.Helper()
	cfg := maekawa.DefaultLANConfig()
	cfg.ID, cfg.Members = 1, []uint32{1, 2, 3, 4, 5}
	if f != nil {
		f(&cfg)
	}
	c, err := maekawa.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Tick(t0)
	c.Ready()
	c.Advance(true) // its era written, as a driver does: outcomes wait for that (mutexcount.Hold)
	return c
}

func frame(from uint32, kind wire.Kind, v wire.Vote) core.Message {
	b, err := v.AppendBinary(nil)
	if err != nil {
		panic(err)
	}
	return core.Message{From: from, To: 1, Kind: kind, Payload: b, Time: t0}
}

// sent returns the vote frames of a Ready, as "to op fence [recorded]".
func sent(rd core.Ready) []string {
	var out []string
	for _, m := range rd.Messages {
		var v wire.Vote
		if v.UnmarshalBinary(m.Payload) == nil {
			rec := ""
			if v.Recorded {
				rec = " recorded"
			}
			out = append(out, fmt.Sprintf("%d %v %d%s", m.To, v.Op, v.Fence, rec))
		}
	}
	return out
}

// TestHostileFrames: what a member gone wrong (or anyone, without a key)
// can send is refused and counted, and changes nothing it must not.
func TestHostileFrames(t *testing.T) {
	c := newCore(t, nil)
	// 2 asks for a vote and gets it (1's cross is 1,2,3,4; 1 votes for
	// anyone asking).
	if err := c.Step(frame(2, wire.KindMaekawa, wire.Vote{Op: wire.VoteRequest, Name: "db", Attempt: 7, Stamp: 3})); err != nil {
		t.Fatal(err)
	}
	if got := sent(c.Ready()); len(got) != 1 || got[0] != "2 locked 1 recorded" {
		t.Fatalf("answer to a request: %v", got)
	}
	for _, tc := range []struct {
		name string
		m    core.Message
		want error
	}{
		{"a commit 2^20 eras above every fence known", frame(2, wire.KindMaekawa, wire.Vote{Op: wire.VoteCommit, Name: "db", Attempt: 7, Fence: 1 << 52, LeaseMS: 1000}), maekawa.ErrFenceJump},
		{"a stranger", frame(99, wire.KindMaekawa, wire.Vote{Op: wire.VoteRequest, Name: "db"}), maekawa.ErrNotMember},
		{"itself from the network", frame(1, wire.KindMaekawa, wire.Vote{Op: wire.VoteRequest, Name: "db"}), maekawa.ErrNotMember},
		{"a deny in Maekawa", frame(3, wire.KindMaekawa, wire.Vote{Op: wire.VoteDeny, Name: "db"}), maekawa.ErrBadOp},
		{"a shared request in Maekawa", frame(3, wire.KindMaekawa, wire.Vote{Op: wire.VoteRequest, Mode: wire.VoteShared, Name: "db"}), maekawa.ErrBadOp},
		{"the majority quorum's kind", frame(3, wire.KindQuorumLock, wire.Vote{Op: wire.VoteRequest, Name: "db"}), core.ErrUnexpectedKind},
		{"a truncated vote", core.Message{From: 3, Kind: wire.KindMaekawa, Payload: []byte{1, 0, 2}, Time: t0}, wire.DecodeTruncated},
	} {
		if err := c.Step(tc.m); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	c.Ready()
	// A commit the vote's holder does make is taken.
	if err := c.Step(frame(2, wire.KindMaekawa, wire.Vote{Op: wire.VoteCommit, Name: "db", Attempt: 7, Fence: 1, LeaseMS: 1000})); err != nil {
		t.Fatal(err)
	}
	if got := sent(c.Ready()); len(got) != 1 || got[0] != "2 commit_ok 1" {
		t.Fatalf("answer to a commit: %v", got)
	}
	// A commit for an attempt that has no vote here is refused, so its
	// requester cannot hold on it.
	c.Step(frame(3, wire.KindMaekawa, wire.Vote{Op: wire.VoteCommit, Name: "db", Attempt: 1, Fence: 2, LeaseMS: 1000}))
	if got := sent(c.Ready()); len(got) != 1 || got[0] != "3 commit_refused 1" {
		t.Fatalf("commit without a vote: %v", got)
	}
	cs := c.Report().Counters
	for _, k := range []string{"rejected_fence_jump", "rejected_not_member", "rejected_bad_op", "rejected_unexpected_kind", "rejected_payload_truncated"} {
		if cs[k] == 0 {
			t.Errorf("counter %s not counted: %v", k, cs)
		}
	}
}

// TestTableFlood: a member naming ever new locks fills at most its share
// of the voter's table, and this member's clients still get theirs.
func TestTableFlood(t *testing.T) {
	c := newCore(t, func(cfg *maekawa.Config) { cfg.MaxLocks = 64 })
	refused := 0
	for i := range 1000 {
		if err := c.Step(frame(2, wire.KindMaekawa, wire.Vote{Op: wire.VoteRequest, Name: fmt.Sprintf("junk-%d", i), Attempt: uint32(i)})); errors.Is(err, maekawa.ErrNoRoom) {
			refused++
		}
	}
	c.Ready()
	if refused < 900 {
		t.Errorf("only %d of 1000 junk locks refused", refused)
	}
	if _, err := c.Acquire(t0, mutex.Request{Lock: "mine"}); err != nil {
		t.Fatalf("own client after the flood: %v", err)
	}
	if st := c.Report(); len(st.Locks) > 64 {
		t.Errorf("%d locks in the status", len(st.Locks))
	}
}

// TestConfigRefused: a majority that is not one, voting sets that do not
// meet, shared mode in Maekawa.
func TestConfigRefused(t *testing.T) {
	for name, f := range map[string]func(*maekawa.Config){
		"quorum of half": func(c *maekawa.Config) { c.Members = []uint32{1, 2, 3, 4}; c.Quorum = 2 },
		"quorum above n": func(c *maekawa.Config) { c.Members = []uint32{1, 2, 3}; c.Quorum = 4 },
		"disjoint sets": func(c *maekawa.Config) {
			c.Members = []uint32{1, 2}
			c.VotingSets = map[uint32][]uint32{1: {1}, 2: {2}}
		},
		"shared in Maekawa": func(c *maekawa.Config) { c.Shared = true },
		"not a member":      func(c *maekawa.Config) { c.ID = 9 },
		"coordinator not a member": func(c *maekawa.Config) {
			c.Quorum, c.Coordinators = 2, []uint32{1, 2, 9}
		},
	} {
		cfg := maekawa.DefaultLANConfig()
		cfg.ID, cfg.Members = 1, []uint32{1, 2, 3}
		f(&cfg)
		if _, err := maekawa.New(cfg); !errors.Is(err, maekawa.ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
}

// TestWriterWindowIgnored: the deprecated WriterWindow still loads, and
// the core says, in an event the daemon logs and a counter, that it does
// nothing; a negative one is refused as before.
func TestWriterWindowIgnored(t *testing.T) {
	cfg := maekawa.DefaultLANConfig()
	cfg.ID, cfg.Members, cfg.Quorum, cfg.Shared = 1, []uint32{1, 2, 3}, 2, true
	cfg.WriterWindow = time.Second
	c, err := maekawa.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Tick(t0)
	var said bool
	for _, e := range c.Ready().Events {
		said = said || e.Name == maekawa.EventConfigIgnored
	}
	if !said || c.Report().Counters["config_ignored"] != 1 {
		t.Errorf("WriterWindow set: event %v, counter %d; want it reported ignored", said, c.Report().Counters["config_ignored"])
	}
	cfg.WriterWindow = -time.Second
	if _, err := maekawa.New(cfg); !errors.Is(err, maekawa.ErrConfig) {
		t.Errorf("negative WriterWindow: %v, want ErrConfig", err)
	}
	cfg.WriterWindow = 0
	c, _ = maekawa.New(cfg)
	c.Tick(t0)
	for _, e := range c.Ready().Events {
		if e.Name == maekawa.EventConfigIgnored {
			t.Errorf("WriterWindow unset, yet reported: %+v", e)
		}
	}
}

// TestRestartState: a voter writes its era once per start, never per
// vote; restarted, it knows every lock above every fence of its last run,
// and gives no vote before a whole stretched lease has passed (its last
// run's votes may still hold). With PersistVotes it writes each vote
// down instead and holds off on those locks only. A corrupt state is
// refused with core.ErrState, never half-read.
func TestRestartState(t *testing.T) {
	cfg := maekawa.DefaultLANConfig()
	cfg.ID, cfg.Members = 1, []uint32{1, 2, 3, 4, 5}
	c, err := maekawa.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Tick(t0)
	rd := c.Ready()
	if era, _, err := maekawa.DiskState(rd.State); err != nil || era != 0 || rd.State == nil || !rd.Promise {
		t.Fatalf("first start: era %d promise %v (%v), want era 0 on disk before anything leaves", era, rd.Promise, err)
	}
	c.Advance(true)
	disk := rd.State
	c.Step(frame(2, wire.KindMaekawa, wire.Vote{Op: wire.VoteRequest, Name: "db", Attempt: 7}))
	c.Step(frame(2, wire.KindMaekawa, wire.Vote{Op: wire.VoteCommit, Name: "db", Attempt: 7, Fence: 41, LeaseMS: 1000}))
	if rd := c.Ready(); rd.State != nil || len(sent(rd)) != 2 {
		t.Fatalf("a vote and a commit: state %v, frames %v: want the answers and no disk write", rd.State, sent(rd))
	}

	cfg.Persisted = disk
	r, err := maekawa.New(cfg)
	if err != nil {
		t.Fatalf("restart from its own state: %v", err)
	}
	r.Tick(t0)
	rd = r.Ready()
	if era, _, _ := maekawa.DiskState(rd.State); era != 1 || !rd.Promise {
		t.Fatalf("restart: era %d promise %v, want era 1 promised", era, rd.Promise)
	}
	r.Advance(true)
	r.Step(frame(3, wire.KindMaekawa, wire.Vote{Op: wire.VoteRequest, Name: "db", Attempt: 9}))
	if got := sent(r.Ready()); len(got) != 0 {
		t.Fatalf("a request right after the restart was answered %v: the last run's vote may still hold", got)
	}
	hold := cfg.MaxLease + cfg.MaxLease*2*1000/1e6 + cfg.Margin
	// Member 3 beats meanwhile: silent since t0 it would be taken for
	// down (DeadAfter, 3 s, ends before the hold) and its request dropped.
	hb, _ := wire.Heartbeat{Interval: 1250}.AppendBinary(nil)
	r.Step(core.Message{From: 3, To: 1, Kind: wire.KindHeartbeat, Payload: hb, Time: t0.Add(2 * time.Second)})
	r.Tick(t0.Add(hold - time.Millisecond))
	if got := sent(r.Ready()); len(got) != 0 {
		t.Fatalf("vote given %v before the hold ended", got)
	}
	r.Tick(t0.Add(hold + time.Millisecond))
	want := fmt.Sprintf("3 locked %d recorded", uint64(1)<<32+1)
	if got := sent(r.Ready()); len(got) != 1 || got[0] != want {
		t.Fatalf("after the hold: %v, want %q (above fence 41 of the last run)", got, want)
	}

	for name, b := range map[string][]byte{
		"version":  append([]byte{9}, disk[1:]...),
		"short":    disk[:len(disk)-1],
		"trailing": append(append([]byte{}, disk...), 0),
		"era last": {2, 0xff, 0xff, 0xff, 0xff, 0, 0},
		"lock":     {2, 0, 0, 0, 1, 0, 1, 3, 'd'},
	} {
		cfg.Persisted = b
		if _, err := maekawa.New(cfg); !errors.Is(err, core.ErrState) {
			t.Errorf("%s: %v, want core.ErrState", name, err)
		}
	}

	cfg.Persisted, cfg.PersistVotes = nil, true
	p, err := maekawa.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.Tick(t0)
	p.Ready()
	p.Advance(true)
	p.Step(frame(2, wire.KindMaekawa, wire.Vote{Op: wire.VoteRequest, Name: "db", Attempt: 7}))
	rd = p.Ready()
	if _, out, _ := maekawa.DiskState(rd.State); !out["db"] || !rd.Promise {
		t.Fatalf("PersistVotes: a vote without a promised state naming it: %+v", rd)
	}
	cfg.Persisted = rd.State
	q, err := maekawa.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	q.Tick(t0)
	q.Ready()
	q.Step(frame(3, wire.KindMaekawa, wire.Vote{Op: wire.VoteRequest, Name: "other", Attempt: 9}))
	q.Step(frame(3, wire.KindMaekawa, wire.Vote{Op: wire.VoteRequest, Name: "db", Attempt: 10}))
	if got := sent(q.Ready()); len(got) != 1 || got[0] != fmt.Sprintf("3 locked %d recorded", uint64(1)<<32+1) {
		t.Fatalf("PersistVotes restart: %v, want a vote on the other lock only", got)
	}
}

// TestMetrics: an entry shows up in the metrics as a grant, a held lock,
// votes given and frames sent by op; every sample follows the conventions.
func TestMetrics(t *testing.T) {
	c := newCore(t, func(cfg *maekawa.Config) { cfg.Members = []uint32{1, 2, 3, 4} }) // 2x2: cross of 1 is 1,2,3
	id, err := c.Acquire(t0, mutex.Request{Lock: "db"})
	if err != nil {
		t.Fatal(err)
	}
	c.Ready()
	for _, v := range []uint32{2, 3} {
		c.Step(frame(v, wire.KindMaekawa, wire.Vote{Op: wire.VoteLocked, Name: "db", Attempt: attemptOf(t, c), Fence: 5}))
	}
	c.Ready()
	for _, v := range []uint32{2, 3} {
		c.Step(frame(v, wire.KindMaekawa, wire.Vote{Op: wire.VoteCommitOK, Name: "db", Attempt: attemptOf(t, c), Fence: 5}))
	}
	c.Tick(t0) // the grant is reported at a reading of the clock
	c.Ready()
	if st, _ := c.Lookup(id); !st.Granted || st.Fence != 5 {
		t.Fatalf("request after votes and commits: %+v", st)
	}
	var m core.MetricSet
	c.Metrics(&m)
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name  string
		label []core.Label
		want  float64
	}{
		{"synclab_mutex_grants_total", nil, 1},
		{"synclab_mutex_locks_held", nil, 1},
		{"synclab_mutex_votes_given", nil, 1}, // its own, to itself
		{"synclab_mutex_vote_frames_sent_total", []core.Label{{Name: "op", Value: "request"}}, 2},
		{"synclab_mutex_vote_frames_sent_total", []core.Label{{Name: "op", Value: "commit"}}, 2},
		{"synclab_mutex_losses_total", []core.Label{{Name: "reason", Value: "expired"}}, 0},
		{"synclab_mutex_member_alive", []core.Label{{Name: "member", Value: "4"}}, 1},
	} {
		if got, ok := m.Value(w.name, w.label...); !ok || got != w.want {
			t.Errorf("%s%v = %v (present %v), want %v", w.name, w.label, got, ok, w.want)
		}
	}
}

// attemptOf reads the attempt number of the request c sends (from its
// status: the voter entry of its own vote is not exported; the frames are).
func attemptOf(t *testing.T, c *maekawa.Core) uint32 {
	t.Helper()
	return maekawa.AttemptOf(c, "db")
}

// TestVoterBounds: a commit asking for a lease beyond the voter's
// --lease is refused, not cut short (the holder would count the longer
// one); and one member cannot pile up shared votes at a coordinator by
// committing attempt after attempt.
func TestVoterBounds(t *testing.T) {
	c := newCore(t, func(cfg *maekawa.Config) { cfg.Quorum, cfg.Shared = 3, true })
	k := wire.KindQuorumLock
	c.Step(frame(2, k, wire.Vote{Op: wire.VoteRequest, Name: "db", Attempt: 1}))
	c.Step(frame(2, k, wire.Vote{Op: wire.VoteCommit, Name: "db", Attempt: 1, Fence: 1, LeaseMS: 3_600_000}))
	if got := sent(c.Ready()); len(got) != 2 || got[1] != "2 commit_refused 1" {
		t.Fatalf("a commit for an hour with a 3 s --lease: %v", got)
	}
	c.Step(frame(2, k, wire.Vote{Op: wire.VoteRelease, Name: "db", Attempt: 1}))
	for a := uint32(10); a < 20; a++ {
		c.Step(frame(3, k, wire.Vote{Op: wire.VoteRequest, Mode: wire.VoteShared, Name: "db", Attempt: a}))
		c.Step(frame(3, k, wire.Vote{Op: wire.VoteCommit, Mode: wire.VoteShared, Name: "db", Attempt: a, Fence: uint64(a), LeaseMS: 1000}))
	}
	c.Ready()
	var m core.MetricSet
	c.Metrics(&m)
	if got, _ := m.Value("synclab_mutex_votes_given"); got != 1 {
		t.Errorf("member 3 holds %v votes after 10 committed attempts, want 1", got)
	}
	if got, _ := m.Value("synclab_mutex_vote_frames_sent_total", core.Label{Name: "op", Value: "commit_ok"}); got != 1 {
		t.Errorf("%v commits acknowledged, want the first only", got)
	}
}

// TestDirectEntry: an exclusive request proposes one above the fence its
// member knows, or its clock's reading if higher (t0 reads 0 here); when
// every vote offers the same fence and says it recorded it, the request
// holds at once, without a commit round, its lease counted from when its
// requests left plus the shortest wait a voter reports (at the slowest
// clock rate). Otherwise the highest offer is committed, only at the
// voters that did not record it.
func TestDirectEntry(t *testing.T) {
	c := newCore(t, func(cfg *maekawa.Config) { cfg.Members = []uint32{1, 2, 3, 4} }) // 2x2: cross of 1 is 1,2,3
	id, err := c.Acquire(t0, mutex.Request{Lock: "db"})
	if err != nil {
		t.Fatal(err)
	}
	if got := sent(c.Ready()); len(got) != 2 || got[0] != "2 request 1" || got[1] != "3 request 1" {
		t.Fatalf("requests: %v, want fence 1 proposed to 2 and 3", got)
	}
	at := t0.Add(2 * time.Millisecond)
	locked := func(v uint32, fence uint64, wait uint32, recorded bool, when time.Time) {
		m := frame(v, wire.KindMaekawa, wire.Vote{Op: wire.VoteLocked, Name: "db", Attempt: attemptOf(t, c), Fence: fence, LeaseMS: wait, Recorded: recorded})
		m.Time = when
		c.Step(m)
	}
	locked(2, 1, 1, true, at)
	locked(3, 1, 0, true, at)
	if got := sent(c.Ready()); len(got) != 0 {
		t.Fatalf("frames after every vote recorded the proposal: %v, want none (no commit round)", got)
	}
	c.Tick(at) // the grant is reported at a reading of the clock
	c.Ready()
	var granted mutex.Granted
	for _, o := range c.Outcomes() {
		if g, ok := o.(mutex.Granted); ok {
			granted = g
		}
	}
	// 1's own vote waited 0: the lease counts from t0.
	if granted.ID != id || granted.Fence != 1 || !granted.Expires.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("granted %+v, want fence 1 expiring at t0+3s", granted)
	}
	if st := c.Report(); st.Counters["sent_commit"] != 0 {
		t.Errorf("%d commits sent", st.Counters["sent_commit"])
	}
	c.Release(at, id)
	c.Ready()

	// Votes that offer the proposal after a long wait in queues, one of
	// them given at once: the lease would be mostly spent, so the request
	// commits its fence everywhere instead (votes and lease start afresh).
	// The clock now reads 2 ms, no more than the fence known: 1+1.
	id, _ = c.Acquire(at, mutex.Request{Lock: "db"})
	if got := sent(c.Ready()); len(got) != 2 || got[0] != "2 request 2" {
		t.Fatalf("second requests: %v, want fence 2 proposed", got)
	}
	late := at.Add(2500 * time.Millisecond)
	locked(2, 2, 2500, true, late)
	locked(3, 2, 0, true, late)
	if got := sent(c.Ready()); len(got) != 2 || got[0] != "2 commit 2" || got[1] != "3 commit 2" {
		t.Fatalf("votes after a long wait: %v, want the proposal committed", got)
	}
	c.Release(late, id)
	c.Ready()

	// A member whose own vote knows nothing of a later grant, and whose
	// clock is behind it, proposes a stale fence: the voter that knows
	// 5001 offers (and recorded) 5002; the one that recorded the
	// proposal is sent a commit of 5002, the other is not.
	id, _ = c.Acquire(late, mutex.Request{Lock: "db"})
	if got := sent(c.Ready()); len(got) != 2 || got[0] != "2 request 2502" {
		t.Fatalf("third requests: %v, want the clock's 2502 ms proposed", got)
	}
	locked(2, 2502, 0, true, late)
	locked(3, 5002, 0, true, late)
	if got := sent(c.Ready()); len(got) != 1 || got[0] != "2 commit 5002" {
		t.Fatalf("after a stale proposal: %v, want fence 5002 committed at 2 only", got)
	}
	if st, _ := c.Lookup(id); st.Granted {
		t.Fatal("granted before the commit was acknowledged")
	}
	c.Step(frame(2, wire.KindMaekawa, wire.Vote{Op: wire.VoteCommitOK, Name: "db", Attempt: attemptOf(t, c), Fence: 5002}))
	c.Tick(late)
	c.Ready()
	if st, _ := c.Lookup(id); !st.Granted || st.Fence != 5002 {
		t.Fatalf("after the commit's ack: %+v, want granted on 5002", st)
	}
	c.Release(late, id)
	c.Ready()

	// An offer equal to the highest but not recorded (a voter that
	// refused the lease, or of an older version) is committed there too.
	c.Acquire(late, mutex.Request{Lock: "db"})
	if got := sent(c.Ready()); len(got) != 2 || got[0] != "2 request 5003" {
		t.Fatalf("fourth requests: %v, want 5003 proposed", got)
	}
	locked(2, 5003, 0, true, late)
	locked(3, 5003, 0, false, late)
	if got := sent(c.Ready()); len(got) != 1 || got[0] != "3 commit 5003" {
		t.Fatalf("an offer not recorded: %v, want 5003 committed at 3", got)
	}
}

// TestProposalFromFastestClock: a member proposes from the fastest clock
// among its own and those of the live members it hears (a frame's
// transmit time against its arrival), so that a member whose clock is
// behind still proposes above a grant made earlier by one whose clock is
// ahead; a member taken for down, or a clock implausibly far ahead, does
// not count.
func TestProposalFromFastestClock(t *testing.T) {
	c := newCore(t, func(cfg *maekawa.Config) { cfg.Members = []uint32{1, 2, 3, 4} }) // 2x2: cross of 1 is 1,2,3
	beat := func(from uint32, ahead time.Duration, at time.Time) {
		b, _ := wire.Heartbeat{Interval: 1500}.AppendBinary(nil)
		c.Step(core.Message{From: from, To: 1, Kind: wire.KindHeartbeat, Payload: b, Time: at, Sent: at.Add(ahead)})
	}
	beat(2, 5*time.Second, t0)
	beat(3, -time.Second, t0)
	beat(4, 49*24*time.Hour, t0) // a wall clock set weeks ahead: not believed
	c.Ready()
	id, _ := c.Acquire(t0.Add(10*time.Millisecond), mutex.Request{Lock: "db"})
	if got := sent(c.Ready()); len(got) != 2 || got[0] != "2 request 5010" {
		t.Fatalf("requests: %v, want 5010 proposed (member 2's clock, 5 s ahead)", got)
	}
	c.Release(t0.Add(20*time.Millisecond), id)
	c.Ready()
	// 2 falls silent and is taken for down: its clock no longer counts.
	later := t0.Add(3500 * time.Millisecond) // past DeadAfter (3 s), within a quarter of it (a later tick is a stall)
	beat(3, -time.Second, later)
	beat(4, 0, later)
	c.Tick(later)
	c.Ready()
	c.Acquire(later, mutex.Request{Lock: "db"})
	rd := sent(c.Ready())
	if len(rd) != 2 || rd[0] != "3 request 5011" {
		// The own voter knows 5010 (its proposal), above this clock's 3500.
		t.Fatalf("requests with 2 down: %v, want 5011 proposed (one above the fence known; 3500 ms on the clocks left)", rd)
	}
}

// TestVoterRecordsProposal: a voter records an exclusive request's
// proposal when it is above every fence it knows, otherwise one above its
// own, and offers what it recorded, saying so. A lease it would refuse is
// never recorded. A vote given back and given again offers the same
// fence if nothing was recorded meanwhile.
func TestVoterRecordsProposal(t *testing.T) {
	c := newCore(t, nil)
	k := wire.KindMaekawa
	c.Step(frame(2, k, wire.Vote{Op: wire.VoteRequest, Name: "db", Attempt: 1, Stamp: 5, Fence: 10, LeaseMS: 1000}))
	if got := sent(c.Ready()); len(got) != 1 || got[0] != "2 locked 10 recorded" {
		t.Fatalf("a proposal above everything: %v, want it recorded and offered back", got)
	}
	c.Step(frame(2, k, wire.Vote{Op: wire.VoteRelease, Name: "db", Attempt: 1, Fence: 10}))
	c.Step(frame(3, k, wire.Vote{Op: wire.VoteRequest, Name: "db", Attempt: 2, Stamp: 6, Fence: 10, LeaseMS: 1000}))
	if got := sent(c.Ready()); len(got) != 1 || got[0] != "3 locked 11 recorded" {
		t.Fatalf("a proposal already recorded for another: %v, want 11 recorded and offered", got)
	}
	// A refresh proposes nothing: one above is recorded all the same.
	c.Step(frame(3, k, wire.Vote{Op: wire.VoteRelease, Name: "db", Attempt: 2}))
	c.Step(frame(4, k, wire.Vote{Op: wire.VoteRequest, Name: "db", Attempt: 3, Stamp: 7, LeaseMS: 1000}))
	if got := sent(c.Ready()); len(got) != 1 || got[0] != "4 locked 12 recorded" {
		t.Fatalf("a request without a proposal: %v, want 12 recorded", got)
	}
	// A request before it takes the vote back (inquire, relinquish) and
	// records 13; the vote given again offers 14, above it.
	c.Step(frame(2, k, wire.Vote{Op: wire.VoteRequest, Name: "db", Attempt: 4, Stamp: 1, LeaseMS: 1000}))
	if got := sent(c.Ready()); len(got) != 1 || got[0] != "4 inquire 0" {
		t.Fatalf("a request before the vote's: %v, want an inquire", got)
	}
	c.Step(frame(4, k, wire.Vote{Op: wire.VoteRelinquish, Name: "db", Attempt: 3}))
	if got := sent(c.Ready()); len(got) != 1 || got[0] != "2 locked 13 recorded" {
		t.Fatalf("after the relinquish: %v, want 13 recorded for 2", got)
	}
	c.Step(frame(2, k, wire.Vote{Op: wire.VoteRelease, Name: "db", Attempt: 4}))
	if got := sent(c.Ready()); len(got) != 1 || got[0] != "4 locked 14 recorded" {
		t.Fatalf("the vote given again: %v, want 14 recorded (13 went to another)", got)
	}
	// A lease beyond the voter's --lease is never recorded: that request
	// goes through a commit, which the voter refuses.
	c.Step(frame(4, k, wire.Vote{Op: wire.VoteRelease, Name: "db", Attempt: 3}))
	c.Step(frame(5, k, wire.Vote{Op: wire.VoteRequest, Name: "db", Attempt: 5, Stamp: 8, Fence: 50, LeaseMS: 3_600_000}))
	if got := sent(c.Ready()); len(got) != 1 || got[0] != "5 locked 15" {
		t.Fatalf("a proposal with an hour's lease: %v, want 15 offered (not recorded)", got)
	}
}
