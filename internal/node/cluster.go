package node

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// Status queries: the whole lab in one table (`X status --cluster`). A
// node asks every other member for its row (KindStatusQuery) and gathers
// the answers (KindStatusReport) under the query's ID; the driver ends the
// query at its deadline and shows the members that did not answer from
// what configuration agreement knows of them. See the package
// documentation ("The whole lab in one table").

// ClusterAnswer is one member's answer to a status query.
type ClusterAnswer struct {
	Member uint32
	Report wire.StatusReport
	// At is the answer's arrival, on the local clock.
	At time.Time
	// Timed says that the query's and the answer's four times are known:
	// Delay is then the round trip less the member's own time between
	// the query's arrival and the answer's departure, and Offset the
	// member's clock minus this node's at mid-exchange, within
	// ±Delay/2 (NTP's on-wire arithmetic). Meaningful only when both
	// clocks are wall clocks (wire.StatusWallClock).
	Timed         bool
	Delay, Offset time.Duration
}

// Limits of status queries.
const (
	// MaxClusterQueries bounds the queries of one node waiting for their
	// answers; QueryCluster refuses more (ErrClusterBusy).
	MaxClusterQueries = 8
	// clusterQueryTTL drops a query its driver never ended.
	clusterQueryTTL = 30 * time.Second
	// statusAnswerBurst and statusAnswerEvery bound the answers to one
	// member: a burst, then one per interval. An operator's `status
	// --cluster` asks once per member; a member that asks faster is
	// refused ("status_limited"), not answered.
	statusAnswerBurst = 4
	statusAnswerEvery = 250 * time.Millisecond
)

// ErrClusterBusy: MaxClusterQueries are already waiting for answers, or
// this node asks faster than members answer.
var ErrClusterBusy = errors.New("node: too many status queries; try again in a moment")

// ErrNoMembers: the node has no other member to ask.
var ErrNoMembers = errors.New("node: no other member to ask: this node is alone in its member list")

// Errors of status frames refused (drop reasons in reasonOf).
var (
	// ErrStatusLimited: a member asked for status faster than
	// statusAnswerEvery ("status_limited").
	ErrStatusLimited = errors.New("node: status query refused: the member asks too often")
	// ErrStatusUnsolicited: an answer to no query of this node to that
	// member, or a second answer ("status_unsolicited").
	ErrStatusUnsolicited = errors.New("node: status report that answers no query of this node")
)

// clusterQueries is the node's status queries: its own, waiting for
// answers, and the budget of answers per member.
type clusterQueries struct {
	counter uint32
	pending map[uint64]*clusterQuery
	budget  map[uint32]*answerBudget
	// asking is this node's own pace of queries.
	asking answerBudget
	// news are queries that got an answer since the driver last looked.
	news []uint64
}

type clusterQuery struct {
	at      time.Time
	asked   []uint32
	answers map[uint32]ClusterAnswer
}

// answerBudget is a token bucket: tokens answers left at at.
type answerBudget struct {
	tokens float64
	at     time.Time
}

func (b *answerBudget) take(now time.Time) bool {
	return b.takePaced(now, statusAnswerBurst, statusAnswerEvery)
}

// takePaced takes one token of a bucket of burst tokens, one more every
// every.
func (b *answerBudget) takePaced(now time.Time, burst float64, every time.Duration) bool {
	if b.at.IsZero() || now.Before(b.at) {
		b.tokens, b.at = burst, now
	}
	b.tokens = min(burst, b.tokens+float64(now.Sub(b.at))/float64(every))
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// QueryCluster asks, at local time now, every other member for its row of
// the lab's table; the queries leave with the next Ready. It returns the
// query's ID, under which the answers gather (ClusterQueryDone,
// EndClusterQuery). A node asks at the pace the members answer
// (statusAnswerBurst, then one per statusAnswerEvery), so that an answer
// is never missing only because the member refused to answer so often:
// faster, or with MaxClusterQueries waiting, it refuses (ErrClusterBusy).
func (n *Node) QueryCluster(now time.Time) (uint64, error) {
	if len(n.others) == 0 {
		return 0, ErrNoMembers
	}
	q := &n.queries
	if len(q.pending) >= MaxClusterQueries {
		return 0, ErrClusterBusy
	}
	if !q.asking.take(now) {
		return 0, fmt.Errorf("%w (at most %d at once, then one per %v: the members answer no faster)", ErrClusterBusy, statusAnswerBurst, statusAnswerEvery)
	}
	if q.pending == nil {
		q.pending = map[uint64]*clusterQuery{}
	}
	q.counter++
	// The incarnation makes an ID unique across this node's restarts.
	id := uint64(n.inc)<<32 | uint64(q.counter)
	payload, _ := wire.StatusQuery{ID: id}.AppendBinary(nil)
	for _, to := range n.others {
		n.own = append(n.own, core.Message{To: to, Kind: wire.KindStatusQuery, Payload: payload})
	}
	q.pending[id] = &clusterQuery{at: now, asked: slices.Clone(n.others), answers: map[uint32]ClusterAnswer{}}
	return id, nil
}

// ClusterQueryDone reports whether every member asked by query id has
// answered (false for a query this node does not know).
func (n *Node) ClusterQueryDone(id uint64) bool {
	q := n.queries.pending[id]
	return q != nil && len(q.answers) == len(q.asked)
}

// ClusterNews drains the IDs of the queries that got an answer since the
// last call.
func (n *Node) ClusterNews() []uint64 {
	out := n.queries.news
	n.queries.news = nil
	return out
}

// EndClusterQuery ends query id: it returns the answers that came, by
// member ID ascending, and forgets the query (a later answer is refused).
func (n *Node) EndClusterQuery(id uint64) []ClusterAnswer {
	q := n.queries.pending[id]
	if q == nil {
		return nil
	}
	delete(n.queries.pending, id)
	out := make([]ClusterAnswer, 0, len(q.answers))
	for _, m := range slices.Sorted(maps.Keys(q.answers)) {
		out = append(out, q.answers[m])
	}
	return out
}

// expireClusterQueries drops the queries no driver ended in time.
func (n *Node) expireClusterQueries(now time.Time) {
	for id, q := range n.queries.pending {
		if now.Sub(q.at) > clusterQueryTTL || q.at.After(now.Add(clusterQueryTTL)) {
			delete(n.queries.pending, id)
		}
	}
}

// SelfReport is this node's own row, as it would answer a query (without
// the query's ID and times).
func (n *Node) SelfReport() wire.StatusReport {
	var r wire.StatusReport
	n.fillReport(&r)
	return r
}

// fillReport fills r with what the driver says (Config.Report) and then
// what the node knows.
func (n *Node) fillReport(r *wire.StatusReport) {
	if n.cfg.Report != nil {
		n.cfg.Report(r)
	}
	r.Flags &^= wire.StatusAgreement
	r.Standing = uint8(n.Standing())
	r.Incarnation = n.inc
	r.Digest, r.KeyFingerprint = [wire.ConfigDigestLen]byte{}, [wire.KeyFingerprintLen]byte{}
	if a := n.agree; a != nil {
		r.Flags |= wire.StatusAgreement
		r.Digest, r.KeyFingerprint = a.own.Digest, a.own.KeyFingerprint
		if r.Algorithm == "" {
			r.Algorithm = a.own.Algorithm
		}
	}
}

// budgetOf returns member id's bucket in *m, made at its first use.
func budgetOf(m *map[uint32]*answerBudget, id uint32) *answerBudget {
	b := (*m)[id]
	if b == nil {
		if *m == nil {
			*m = map[uint32]*answerBudget{}
		}
		b = &answerBudget{}
		(*m)[id] = b
	}
	return b
}

// statusQueried answers member f.Sender's status query q, which arrived
// at now, unless it has asked too often.
func (n *Node) statusQueried(f *wire.Frame, q *wire.StatusQuery, now time.Time) error {
	if !budgetOf(&n.queries.budget, f.Sender).take(now) {
		return fmt.Errorf("%w: member %d", ErrStatusLimited, f.Sender)
	}
	r := wire.StatusReport{QueryID: q.ID, Origin: f.Xmt, Received: wire.NTPTimeFromTime(now)}
	n.fillReport(&r)
	payload, err := r.AppendBinary(nil)
	if err != nil {
		// The driver's strings cannot be carried (too long, control
		// characters): the node's own parts still can.
		r.Version, r.Commit, r.Role, r.Algorithm, r.Facts = "", "", "", "", nil
		if payload, err = r.AppendBinary(nil); err != nil {
			n.stats.drop("unsent_status_report")
			return nil
		}
		n.stats.drop("status_report_trimmed")
	}
	n.own = append(n.own, core.Message{To: f.Sender, Kind: wire.KindStatusReport, Payload: payload})
	return nil
}

// statusReported takes member f.Sender's answer r, which arrived at now.
func (n *Node) statusReported(f *wire.Frame, r *wire.StatusReport, now time.Time) error {
	q := n.queries.pending[r.QueryID]
	if q == nil || !slices.Contains(q.asked, f.Sender) {
		return fmt.Errorf("%w: member %d, query %#x", ErrStatusUnsolicited, f.Sender, r.QueryID)
	}
	if _, dup := q.answers[f.Sender]; dup {
		return fmt.Errorf("%w: member %d answered query %#x twice", ErrStatusUnsolicited, f.Sender, r.QueryID)
	}
	a := ClusterAnswer{Member: f.Sender, Report: *r, At: now}
	if !r.Origin.IsZero() && !r.Received.IsZero() && f.Xmt != 0 {
		// The times are the member's word (it holds the key): only an
		// exchange that can have happened is measured, and halves are
		// added, so that no value can overflow.
		t1, t2, t3, t4 := r.Origin.Time(), r.Received.Time(), f.Xmt.Time(), now
		rtt, held := t4.Sub(t1), t3.Sub(t2)
		if rtt >= 0 && rtt <= clusterQueryTTL && held >= 0 && held <= rtt {
			a.Timed, a.Delay = true, rtt-held
			a.Offset = t2.Sub(t1)/2 + t3.Sub(t4)/2
		}
	}
	q.answers[f.Sender] = a
	if !slices.Contains(n.queries.news, r.QueryID) {
		n.queries.news = append(n.queries.news, r.QueryID)
	}
	return nil
}

// LastHeard is when a frame of member id was last accepted (its
// authentication and sequence number passed), on the local clock; zero:
// never since this node started.
func (n *Node) LastHeard(id uint32) time.Time {
	if p := n.peers[id]; p != nil && p.seen {
		return p.at
	}
	return time.Time{}
}
