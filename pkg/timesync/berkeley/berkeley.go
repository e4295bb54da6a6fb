package berkeley

import (
	"cmp"
	"encoding"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/delivery"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/timesync/servo"
	"github.com/synclab/synclab/pkg/wire"
)

// Defaults of Config.
const (
	DefaultRoundInterval  = time.Second
	DefaultCollectTimeout = 200 * time.Millisecond
	DefaultMaxRTT         = 20 * time.Millisecond
	DefaultThreshold      = 500 * time.Microsecond
	DefaultAdjustRetry    = 100 * time.Millisecond
	DefaultAdjustTries    = 4
	// DefaultBurst polls per round, DefaultBurstGap apart: of a worker's
	// answers the one with the smallest round trip is kept, as NTP's
	// clock filter does. A reading delayed anywhere (a descheduled
	// sender, a queue) has a longer round trip and a skewed offset.
	DefaultBurst    = 3
	DefaultBurstGap = 10 * time.Millisecond
	// DefaultFrequencyPull steers out a twentieth of the group's median
	// frequency correction per round: slow next to the servos' own
	// loops (their regressions follow it without disturbing precision),
	// fast enough to undo a disturbance within a minute or two.
	DefaultFrequencyPull = 0.05
	// DefaultStateInterval and DefaultStateMinChangePPM: the frequency is
	// saved when it moved by 0.1 ppm, at most once a minute (like the NTP
	// client's).
	DefaultStateInterval     = time.Minute
	DefaultStateMinChangePPM = 0.1
	// DefaultSyncInterval is how often the clock's error fields (the
	// kernel's maxerror and esterror) are refreshed between corrections.
	DefaultSyncInterval = time.Second
	// DefaultStepoutRounds: a correction this worker's error bound rules
	// out is applied only once the master has kept asking for it, the
	// same, for this many round intervals (see Config.Stepout).
	DefaultStepoutRounds = 10
)

// Config configures a Berkeley core. The member's ID, the members, the clock
// at start, the random source and the persisted state come from core.Env.
type Config struct {
	// Election builds the master election from the Env Berkeley hands it:
	// this member's, with State the election's own persisted state (see
	// Saved). The elected leader is the master. Nil: bully with its LAN
	// defaults (bully.DefaultLANConfig), reserving (MasterElection).
	Election func(env core.Env) (elect.Elector, error)
	// RoundInterval is the time between the master's rounds.
	RoundInterval time.Duration
	// CollectTimeout is how long after a round's first poll the master
	// waits for the readings before it computes the round (sooner if every
	// worker answered every poll).
	CollectTimeout time.Duration
	// Burst is how many polls a round sends, BurstGap apart.
	Burst    int
	BurstGap time.Duration
	// MaxRTT excludes readings whose round trip is longer: their offset is
	// too uncertain.
	MaxRTT time.Duration
	// Threshold is how far two clocks may differ and still agree, beyond
	// what their readings cannot tell apart: each reading is uncertain by
	// half its round trip, so clocks i and j agree when their offsets
	// differ by at most Threshold + (RTT_i + RTT_j)/2. The largest set of
	// clocks that all agree with each other is averaged.
	Threshold time.Duration
	// AdjustRetry and AdjustTries: an unacknowledged adjustment is sent
	// again every AdjustRetry, at most AdjustTries times in all.
	AdjustRetry time.Duration
	AdjustTries int
	// FrequencyPull is the fraction of the group's median frequency
	// correction that each round steers back out, in [0, 1): it keeps the
	// group running at the mean natural rate of its clocks. Every member
	// learns its frequency relative to the group, so nothing else pins the
	// group's own rate: without the pull, each disturbance (a falseticker
	// master, a restart) would leave it wherever the corrections took it,
	// hundreds of ppm from real time. Zero takes DefaultFrequencyPull; a
	// negative value turns the pull off.
	FrequencyPull float64
	// Servo configures each member's discipline (MaxSlewPPM...). Its
	// Frequency and FrequencyError restore what Restore read.
	Servo servo.Config
	// StateInterval and StateMinChangePPM: the frequency is put in
	// Ready.State when it moved by StateMinChangePPM since the last save,
	// at most once per StateInterval (and with every new term).
	StateInterval     time.Duration
	StateMinChangePPM float64
	// SyncInterval is how often the clock's error fields are refreshed
	// between corrections.
	SyncInterval time.Duration
	// Stepout is how long a worker holds back a correction that its own
	// error bound rules out, as ntpd holds back a spike: once its servo is
	// synchronised, the group's time is known to lie within the bound, and a
	// correction further out than the bound plus what a master cannot
	// measure (MaxRTT and Threshold) is either a forged or buggy frame or a
	// sign that this clock was disturbed. Only the second persists: the
	// correction is applied when the master has asked for the same one
	// (within that margin) for Stepout. Default DefaultStepoutRounds round
	// intervals.
	Stepout time.Duration
}

func (c *Config) validate() error {
	def := map[*time.Duration]time.Duration{
		&c.RoundInterval: DefaultRoundInterval, &c.CollectTimeout: DefaultCollectTimeout,
		&c.MaxRTT: DefaultMaxRTT, &c.Threshold: DefaultThreshold, &c.AdjustRetry: DefaultAdjustRetry,
		&c.StateInterval: DefaultStateInterval, &c.SyncInterval: DefaultSyncInterval,
		&c.BurstGap: DefaultBurstGap,
	}
	for p, d := range def {
		if *p == 0 {
			*p = d
		}
		if *p < 0 {
			return fmt.Errorf("%w: negative duration %v", ErrConfig, *p)
		}
	}
	if c.AdjustTries == 0 {
		c.AdjustTries = DefaultAdjustTries
	}
	if c.Stepout == 0 {
		c.Stepout = DefaultStepoutRounds * c.RoundInterval
	}
	// The protocol's timers get the one validation of every core's
	// timeouts; MaxRTT and Threshold are bounds on measurements, not
	// timers, and only must not be negative.
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"RoundInterval", c.RoundInterval}, {"CollectTimeout", c.CollectTimeout}, {"BurstGap", c.BurstGap},
		{"AdjustRetry", c.AdjustRetry}, {"StateInterval", c.StateInterval}, {"SyncInterval", c.SyncInterval},
		{"Stepout", c.Stepout},
	} {
		if err := liveness.CheckTimeout(f.name, f.v); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	if c.Burst == 0 {
		c.Burst = DefaultBurst
	}
	switch {
	case c.FrequencyPull == 0:
		c.FrequencyPull = DefaultFrequencyPull
	case c.FrequencyPull < 0:
		c.FrequencyPull = 0
	}
	if c.StateMinChangePPM == 0 {
		c.StateMinChangePPM = DefaultStateMinChangePPM
	}
	switch {
	case math.IsNaN(c.FrequencyPull) || c.FrequencyPull >= 1:
		return fmt.Errorf("%w: frequency pull %g: want a fraction below 1", ErrConfig, c.FrequencyPull)
	case math.IsNaN(c.StateMinChangePPM) || c.StateMinChangePPM < 0:
		return fmt.Errorf("%w: state min change %g ppm must not be negative", ErrConfig, c.StateMinChangePPM)
	case c.AdjustTries < 1:
		return fmt.Errorf("%w: adjust tries %d: want at least 1", ErrConfig, c.AdjustTries)
	case c.CollectTimeout >= c.RoundInterval:
		return fmt.Errorf("%w: collect timeout %v must be shorter than the round interval %v", ErrConfig, c.CollectTimeout, c.RoundInterval)
	case c.MaxRTT > c.CollectTimeout:
		return fmt.Errorf("%w: max RTT %v must not exceed the collect timeout %v", ErrConfig, c.MaxRTT, c.CollectTimeout)
	case c.Burst < 1 || c.Burst > 16:
		return fmt.Errorf("%w: burst %d: want 1 to 16 polls a round", ErrConfig, c.Burst)
	case time.Duration(c.Burst-1)*c.BurstGap+c.MaxRTT > c.CollectTimeout:
		return fmt.Errorf("%w: a burst of %d polls %v apart, answered within the max RTT %v, does not fit the collect timeout %v",
			ErrConfig, c.Burst, c.BurstGap, c.MaxRTT, c.CollectTimeout)
	}
	return nil
}

// Errors.
var (
	ErrConfig = errors.New("berkeley: invalid config")
	// ErrNotMaster: a poll or adjustment from a member that is not the
	// leader of the term this node knows (or of an older term).
	ErrNotMaster = errors.New("berkeley: not from the current master")
	// ErrStaleRound: a reading or acknowledgement of another round.
	ErrStaleRound = errors.New("berkeley: not of the current round")
	// ErrNoTimestamp: a frame without the transmit timestamp the exchange
	// needs.
	ErrNoTimestamp = errors.New("berkeley: frame without its transmit timestamp")
	// ErrImplausible: a reading or adjustment whose values no member sends
	// (a pending slew or a correction of more than a day, a frequency
	// beyond what a clock can be corrected by).
	ErrImplausible = errors.New("berkeley: implausible reading")
	// ErrState: the persisted state is corrupt.
	ErrState = fmt.Errorf("berkeley: corrupt state: %w", core.ErrState)
)

// reading is one worker's answer in the current round: the one with the
// smallest round trip of the burst.
type reading struct {
	sample uint8
	offset time.Duration // worker - master, both as if their slews were done
	rtt    time.Duration
	// slew bounds how much the clocks' slews in progress moved them
	// during the exchange (see stepReading): offset is uncertain by
	// rtt/2 + slew.
	slew    time.Duration
	freq    float64 // the worker's frequency correction, ppm
	answers int     // polls of the burst it answered
}

// width is the reading's uncertainty as a round trip: its offset is off
// by at most width/2.
func (r reading) width() time.Duration { return r.rtt + 2*r.slew }

// pollKey names one poll of the current round: a sample, to one worker
// (or to all, Broadcast, when the poll was one multicast frame).
type pollKey struct {
	sample uint8
	to     uint32
}

// pollRecord is what a worker remembers of the last round it answered.
type pollRecord struct {
	term    uint64
	round   uint32
	at      map[uint8]time.Time // each poll's arrival, local clock: a measurement's time
	applied bool
}

// txLags is how many recent transmit lags a worker keeps: their minimum is
// what it reports.
const txLags = 8

// MasterElection is bully's configuration c as the master election runs
// it: reserving (bully.Config.Reserve), so that a member is elected, says
// so and runs rounds only in a term a write of its state covers. Without
// it a member whose disk failed took the master's role and reported
// elected in a term on no disk, and after a restart it read the older
// term and claimed the same one again: one term mastered in two lives.
func MasterElection(c bully.Config) bully.Config {
	c.Reserve = true
	return c
}

// Core is the Berkeley core. Not safe for concurrent use.
type Core struct {
	cfg Config
	id  uint32
	// elect is the election, its state saved inside this core's, with
	// the frequency.
	elect elect.Embedded
	servo *servo.Servo
	peers []uint32 // every member but this one

	now time.Time

	// Master.
	leading   uint64 // the term this node leads rounds in; 0 when not master
	round     uint32
	roundAt   time.Time // the current round's first poll
	nextRound time.Time
	samples   int                   // polls of the current round sent
	pollTx    map[pollKey]time.Time // when they really left (transmit reports)
	collect   bool                  // readings of the current round are still awaited
	readings  map[uint32]reading
	missed    map[uint32]int // rounds in a row without a reading, per worker
	// adjusts holds the round's adjustments until each worker acknowledges
	// its own (keyed by worker and round), resent every AdjustRetry, given
	// up after AdjustTries sends.
	adjusts *delivery.Outbox[[]byte]
	last    *RoundReport

	// corrections wait for the next Tick (see correct).
	corrections []correction

	// Worker.
	poll        pollRecord
	lags        []time.Duration // recent transmit lags of its readings
	lastAdjust  *AdjustReport
	lastMeasure time.Time // time of the last servo update
	lastSync    time.Time // last refresh of the clock's error fields

	// spike is a correction held back because the error bound rules it
	// out (see Config.Stepout): since when the master asks for it.
	spike struct {
		since time.Time
		corr  time.Duration
	}

	// Persistence: what the state holds (saveState), kept pending by
	// durable until the driver confirms the write.
	saved     bool
	savedFreq float64
	savedErr  float64
	savedAt   time.Time
	durable   core.Durable

	counters map[string]uint64
	msgs     []core.Message
	adj      []clock.Adjustment
	events   []core.Event
	bugs     core.Bugs // our own encodings that failed (counters "bug_*")
}

var (
	_ core.Core      = (*Core)(nil)
	_ core.Scheduler = (*Core)(nil)
)

// New returns the Berkeley core of member env.ID. It restores what
// env.State holds (Restore): the frequency into the servo (refused, with
// ErrState, beyond what the servo may correct) and the election's state
// into the election, which starts at once.
func New(env core.Env, cfg Config) (*Core, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	saved, err := Restore(env.State)
	if err != nil {
		return nil, err
	}
	maxFreq := cfg.Servo.MaxFrequencyPPM
	if maxFreq == 0 {
		maxFreq = servo.DefaultMaxFrequencyPPM
	}
	if math.Abs(saved.FrequencyPPM) > maxFreq {
		return nil, fmt.Errorf("%w: frequency %+.3f ppm is beyond the ±%g ppm a clock can be corrected by", ErrState, saved.FrequencyPPM, maxFreq)
	}
	if env.State != nil {
		cfg.Servo.Frequency, cfg.Servo.FrequencyError = saved.FrequencyPPM, saved.ErrorPPM
	}
	newElection := cfg.Election
	if newElection == nil {
		newElection = func(env core.Env) (elect.Elector, error) {
			return bully.New(env, MasterElection(bully.DefaultLANConfig()))
		}
	}
	eenv := env
	eenv.State = saved.Election
	el, err := newElection(eenv)
	if err != nil {
		if errors.Is(err, core.ErrState) {
			return nil, fmt.Errorf("%w: election: %w", ErrState, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	sv, err := servo.New(cfg.Servo)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	adjusts, err := delivery.NewOutbox[[]byte](delivery.Config{Retry: cfg.AdjustRetry, Tries: cfg.AdjustTries})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c := &Core{cfg: cfg, id: env.ID, elect: elect.Embedded{Elector: el, State: saved.Election}, servo: sv, adjusts: adjusts, counters: map[string]uint64{}, now: env.Now}
	for _, id := range env.Members {
		if id != c.id {
			c.peers = append(c.peers, id)
		}
	}
	slices.Sort(c.peers)
	c.peers = slices.Compact(c.peers)
	if env.State != nil {
		c.saved, c.savedFreq, c.savedErr = true, saved.FrequencyPPM, saved.ErrorPPM
	}
	return c, nil
}

// Election returns the master election (for the daemon's leader view).
func (c *Core) Election() elect.Elector { return c.elect.Elector }

// Bound returns the interval holding the group's time when the local clock
// reads now (zero before the first correction).
func (c *Core) Bound(now time.Time) (earliest, latest time.Time) { return c.servo.Bound(now) }

// BoundGrowthPPM is how fast Bound moves away from a clock reading
// between corrections, the slew in progress aside (servo.Servo.GrowthPPM).
func (c *Core) BoundGrowthPPM() float64 { return c.servo.GrowthPPM() }

// Pending is the slew the servo counts on the clock still to make at
// local time now (servo.Servo.Pending).
func (c *Core) Pending(now time.Time) time.Duration { return c.servo.Pending(now) }

var _ core.Adjuster = (*Core)(nil)

// Adjusted is when the clock took the last Ready's adjustments
// (core.Adjuster): the servo counts the slew from then
// (servo.Servo.Applied).
func (c *Core) Adjusted(at time.Time) { c.servo.Applied(at) }

// Synchronized reports whether a correction was applied, and so whether
// Bound has an interval to give.
func (c *Core) Synchronized() bool { return c.servo.Synchronized() }

// StepDatagram refuses datagrams: Berkeley speaks synclab frames only.
func (c *Core) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }

// Handles reports whether k is one of Berkeley's own kinds; every other
// frame is the election's.
func Handles(k wire.Kind) bool {
	switch k {
	case wire.KindClockPoll, wire.KindClockReading, wire.KindClockAdjust, wire.KindClockAdjustAck:
		return true
	}
	return false
}

// Step feeds one frame: Berkeley's kinds here, the rest to the election.
func (c *Core) Step(m core.Message) error {
	if !m.Time.IsZero() {
		c.now = m.Time
	}
	if !Handles(m.Kind) {
		err := c.elect.Step(m)
		c.followElection()
		return err
	}
	if m.Local {
		c.stepSent(m)
		return nil
	}
	var err error
	switch m.Kind {
	case wire.KindClockPoll:
		err = c.stepPoll(m)
	case wire.KindClockReading:
		err = c.stepReading(m)
	case wire.KindClockAdjust:
		err = c.stepAdjust(m)
	case wire.KindClockAdjustAck:
		err = c.stepAck(m)
	default:
		err = core.ErrUnexpectedKind
	}
	if err != nil {
		c.counters["rejected_"+reason(err)]++
	}
	return err
}

// rejectLabels name Step's own errors for the counters ("rejected_" and
// the label); anything else is a payload's (pkg/wire).
var rejectLabels = core.ErrorLabels{
	{Err: ErrNotMaster, Label: "not_master"},
	{Err: ErrStaleRound, Label: "stale_round"},
	{Err: ErrNoTimestamp, Label: "no_timestamp"},
	{Err: ErrImplausible, Label: "implausible"},
	{Err: core.ErrUnexpectedKind, Label: "unexpected_kind"},
}

func reason(err error) string { return rejectLabels.Of(err, "payload_"+wire.Reason(err)) }

// fromMaster checks that m comes from the leader of the term we know.
func (c *Core) fromMaster(m core.Message) error {
	lead, term, _ := c.elect.Leader()
	if m.From != lead || m.Term != term || lead == c.id {
		return fmt.Errorf("%w: %d in term %#x (we know %d in %#x)", ErrNotMaster, m.From, m.Term, lead, term)
	}
	return nil
}

// stepSent takes the driver's report that one of our polls or readings
// left: when it really did (m.Time) against the stamp it carries (m.Sent).
func (c *Core) stepSent(m core.Message) {
	if m.Time.IsZero() || m.Sent.IsZero() {
		return
	}
	switch m.Kind {
	case wire.KindClockPoll:
		var p wire.ClockPoll
		if p.UnmarshalBinary(m.Payload) == nil && c.leading != 0 && m.Term == c.leading && p.Round == c.round {
			c.pollTx[pollKey{p.Sample, m.To}] = m.Time
		}
	case wire.KindClockReading:
		lag := m.Time.Sub(m.Sent)
		if lag < 0 || lag > maxTxLag {
			return // not a lag: a clock that moved, or a stamp of another datagram
		}
		c.lags = append(c.lags, lag)
		if len(c.lags) > txLags {
			c.lags = c.lags[len(c.lags)-txLags:]
		}
	}
}

// maxTxLag bounds a plausible delay between a frame's stamp and its
// departure.
const maxTxLag = 5 * time.Millisecond

// txLag is the shortest of the recent transmit lags (0 without reports):
// what the master adds to a reading's transmit stamp. A reading leaves at
// least that long after its stamp (the send path does not get faster
// than it has been), so the round trip the master computes with it still
// holds the reading's true lag, and the reading's bound holds. The median
// would be nearer the truth on a quiet host, but on a busy one, where a
// send can take milliseconds, it would make a fast send look as if it
// left later than it did: a round trip too short, even negative, and an
// offset off by half the difference with nothing to bound it.
func (c *Core) txLag() time.Duration {
	if len(c.lags) == 0 {
		return 0
	}
	return slices.Min(c.lags)
}

func (c *Core) stepPoll(m core.Message) error {
	var p wire.ClockPoll
	if err := p.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	if err := c.fromMaster(m); err != nil {
		return err
	}
	if m.Sent.IsZero() || m.Time.IsZero() {
		return ErrNoTimestamp
	}
	if c.poll.term != m.Term || c.poll.round != p.Round {
		c.poll = pollRecord{term: m.Term, round: p.Round, at: map[uint8]time.Time{}}
	}
	if _, dup := c.poll.at[p.Sample]; dup {
		c.counters["poll_duplicates"]++
		return nil
	}
	c.poll.at[p.Sample] = m.Time
	c.sendReport(m.From, m.Term, wire.KindClockReading, wire.ClockReading{
		Round:        p.Round,
		Sample:       p.Sample,
		PollSent:     wire.NTPTimeFromTime(m.Sent),
		PollReceived: wire.NTPTimeFromTime(m.Time),
		Pending:      int64(c.servo.Pending(m.Time)),
		Frequency:    int32(math.Round(c.servo.Frequency() * 1e3)),
		TxLag:        uint32(c.txLag()),
	})
	c.counters["polls_answered"]++
	return nil
}

func (c *Core) stepReading(m core.Message) error {
	var r wire.ClockReading
	if err := r.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	if c.leading == 0 || m.Term != c.leading || r.Round != c.round || !c.collect {
		return fmt.Errorf("%w: round %d of term %#x", ErrStaleRound, r.Round, m.Term)
	}
	if m.Sent.IsZero() || m.Time.IsZero() {
		return ErrNoTimestamp
	}
	// A worker's pending slew is at most what its servo commands (a
	// correction it accepted, see Stepout), and its frequency at most the
	// kernel's limit; the largest values a forger can put there would
	// otherwise overflow the arithmetic below into any offset at all.
	if r.Pending > int64(maxPending) || r.Pending < -int64(maxPending) ||
		math.Abs(float64(r.Frequency)/1e3) > c.servo.Config().MaxFrequencyPPM {
		return fmt.Errorf("%w: pending slew %v, frequency %.3f ppm", ErrImplausible, time.Duration(r.Pending), float64(r.Frequency)/1e3)
	}
	t4 := m.Time
	t1, t2, t3 := r.PollSent.TimeNear(t4), r.PollReceived.TimeNear(m.Sent), m.Sent
	// The poll must be this round's: sent at or after the round began
	// (by this clock), and before the answer came back.
	if t1.Before(c.roundAt.Add(-time.Millisecond)) || t1.After(t4) || int(r.Sample) >= c.samples {
		return fmt.Errorf("%w: poll %d at %v outside the round", ErrStaleRound, r.Sample, t1)
	}
	// When the poll and the reading really left: the kernel's stamp of
	// our poll, and the worker's stamp plus its usual lag.
	if tx, ok := c.pollTx[pollKey{r.Sample, m.From}]; ok {
		t1 = tx
	} else if tx, ok := c.pollTx[pollKey{r.Sample, core.Broadcast}]; ok {
		t1 = tx
	}
	if lag := time.Duration(r.TxLag); lag > 0 && lag <= maxTxLag {
		t3 = t3.Add(lag)
	}
	offset := (t2.Sub(t1) + t3.Sub(t4)) / 2
	rtt := t4.Sub(t1) - t3.Sub(t2)
	mid := t1.Add(t4.Sub(t1) / 2)
	// Compare as if both clocks had finished their slews.
	offset += time.Duration(r.Pending) - c.servo.Pending(mid)
	if offset > maxPending || offset < -maxPending {
		// A worker more than a day off is not slewed (maxPending), and a
		// reading that says so is broken or forged: its receive time is
		// read near its send time, anywhere in an NTP era. In the round it
		// could be the median (two clocks, no majority agreeing) and fling
		// the master's own clock by years.
		return fmt.Errorf("%w: reading puts member %d's clock %v off", ErrImplausible, m.From, offset)
	}
	// A clock that slews while the exchange runs moves by more than
	// time: the worker's between the poll's arrival and its reading's
	// departure (the hold, milliseconds when its CPU is busy), the
	// master's over the whole exchange; up to the slew in progress, at
	// the slew rate. It shows in neither the round trip nor the pending
	// slews above, so it is added to the reading's uncertainty; of a
	// burst, the reading least uncertain is kept.
	rate := c.servo.Config().MaxSlewPPM * 1e-6
	slewed := func(pending, over time.Duration) time.Duration {
		return min(pending.Abs(), time.Duration(rate*float64(max(over, 0))))
	}
	slew := slewed(time.Duration(r.Pending), t3.Sub(t2)) + slewed(c.servo.Pending(t1), t4.Sub(t1))
	best, seen := c.readings[m.From]
	next := reading{sample: r.Sample, offset: offset, rtt: max(rtt, 0), slew: slew, freq: float64(r.Frequency) / 1e3, answers: best.answers + 1}
	if !seen || next.width() < best.width() {
		c.readings[m.From] = next
	} else {
		best.answers++
		c.readings[m.From] = best
	}
	c.counters["readings"]++
	if c.samples == c.cfg.Burst && c.allAnswered() {
		c.finishRound()
	}
	return nil
}

// maxPending bounds a plausible pending slew in a reading, the offset a
// reading measures, and a correction: a day. A member's clock further off
// than that is not slewed by Berkeley.
const maxPending = 24 * time.Hour

// allAnswered says whether every worker answered every poll of the round.
func (c *Core) allAnswered() bool {
	for _, id := range c.peers {
		if c.readings[id].answers < c.cfg.Burst {
			return false
		}
	}
	return true
}

func (c *Core) stepAdjust(m core.Message) error {
	var a wire.ClockAdjust
	if err := a.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	if err := c.fromMaster(m); err != nil {
		return err
	}
	if corr := time.Duration(a.Correction); corr > maxPending || corr < -maxPending {
		// Berkeley slews: a day takes twelve days at the fastest slew. No
		// master asks for that; a clock that far off is set first.
		return fmt.Errorf("%w: correction %v", ErrImplausible, corr)
	}
	at, ok := c.poll.at[a.Sample]
	if c.poll.term != m.Term || c.poll.round != a.Round || !ok {
		return fmt.Errorf("%w: adjustment for poll %d of round %d, last round answered %d", ErrStaleRound, a.Sample, a.Round, c.poll.round)
	}
	// Acknowledge every copy: the first acknowledgement may have been lost.
	c.send(m.From, m.Term, wire.KindClockAdjustAck, wire.ClockAdjustAck{Round: a.Round})
	if c.poll.applied {
		c.counters["adjust_duplicates"]++
		return nil
	}
	c.poll.applied = true
	corr := time.Duration(a.Correction)
	errBound := time.Duration(min(a.Error, math.MaxInt64))
	if !c.plausible(at, corr, &errBound) {
		return nil
	}
	c.correct(at, corr, errBound)
	c.lastAdjust = &AdjustReport{Term: m.Term, Round: a.Round, CorrectionNS: int64(corr), ErrorNS: int64(a.Error), At: c.now}
	c.counters["adjustments_applied"]++
	return nil
}

// plausible decides on a correction for the local time at, with the error
// the master claims for it (which it may narrow): see Config.Stepout.
// Before the servo is synchronised every correction is plausible: this
// clock has nothing to compare with.
func (c *Core) plausible(at time.Time, corr time.Duration, errBound *time.Duration) bool {
	if !c.servo.Synchronized() {
		return true
	}
	// Where the bound puts the group's time, as the correction measures
	// it: as if the pending slew were done.
	lo, hi := c.servo.Bound(at)
	pred, _ := c.servo.Offset(at)
	pred -= c.servo.Pending(at)
	margin := hi.Sub(lo)/2 + c.cfg.MaxRTT + c.cfg.Threshold
	// A master's error comes from round trips (each below MaxRTT) and the
	// spread of the averaged clocks: a claim beyond the margin would widen
	// this worker's bound to let the next forged correction in.
	*errBound = min(*errBound, margin)
	dev := corr - pred
	if dev.Abs() <= margin {
		c.spike.since = time.Time{}
		return true
	}
	switch {
	case c.spike.since.IsZero() || (corr-c.spike.corr).Abs() > margin:
		c.spike.since, c.spike.corr = c.now, corr
	case c.now.Sub(c.spike.since) >= c.cfg.Stepout:
		// The master has asked for it for the whole stepout: this clock
		// moved, not the group.
		c.spike.since = time.Time{}
		c.counters["adjust_stepout"]++
		return true
	}
	c.counters["adjust_spike"]++
	c.events = append(c.events, core.Event{Name: EventSpike,
		Msg:  fmt.Sprintf("correction %v held back: the error bound allows %v±%v", corr, pred, margin),
		Args: []any{"correction", corr, "predicted", pred, "margin", margin, "since", c.spike.since}})
	return false
}

func (c *Core) stepAck(m core.Message) error {
	var a wire.ClockAdjustAck
	if err := a.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	if c.leading == 0 || m.Term != c.leading || a.Round != c.round {
		return fmt.Errorf("%w: ack of round %d", ErrStaleRound, a.Round)
	}
	if _, ok := c.adjusts.Ack(c.now, delivery.Key{To: m.From, ID: uint64(a.Round)}); ok {
		if c.last != nil {
			for i := range c.last.Members {
				if c.last.Members[i].ID == m.From {
					c.last.Members[i].Acked = true
				}
			}
		}
	}
	return nil
}

// correction is one correction waiting for the next Tick.
type correction struct {
	at             time.Time
	corr, errBound time.Duration
}

// correct queues one correction for the servo: at is the local time the
// correction refers to (as if every earlier correction had been applied).
// The servo runs it at the next Tick, whose time the daemon reads right
// before the Tick and applies the adjustment right after: the servo's
// model of the slew (it starts now, at the slew rate) is then true. Run at
// once, from Step, it would start at the last tick's time, up to a tick
// before the daemon applies it (and more when the machine is busy and the
// loop late): the bound would trust a slew by up to that much more than
// the clock has made.
func (c *Core) correct(at time.Time, corr, errBound time.Duration) {
	c.corrections = append(c.corrections, correction{at, corr, errBound})
}

// applyCorrections runs the queued corrections through the servo at now.
func (c *Core) applyCorrections(now time.Time) {
	for _, k := range c.corrections {
		if !k.at.After(c.lastMeasure) {
			c.counters["corrections_out_of_order"]++
			continue
		}
		at := now
		if at.Before(k.at) {
			at = k.at
		}
		res, err := c.servo.Update(at, servo.Measurement{Time: k.at, Offset: k.corr, RootDistance: k.errBound})
		if err != nil {
			c.counters["servo_refused"]++
			continue
		}
		c.lastMeasure = k.at
		c.adj = append(c.adj, res.Adjustments...)
	}
	c.corrections = c.corrections[:0]
}

// Tick advances the election, the master's rounds and the retries, and
// runs the corrections that came since the last one.
func (c *Core) Tick(now time.Time) {
	c.now = now
	defer c.applyCorrections(now)
	c.elect.Tick(now)
	c.followElection()
	c.syncState(now)
	if c.leading == 0 {
		return
	}
	if c.collect && c.samples < c.cfg.Burst && !now.Before(c.roundAt.Add(time.Duration(c.samples)*c.cfg.BurstGap)) {
		c.poll1()
	}
	if c.collect && !now.Before(c.roundAt.Add(c.cfg.CollectTimeout)) {
		c.finishRound()
	}
	resend, gaveUp := c.adjusts.Tick(now)
	for _, e := range resend {
		c.msgs = append(c.msgs, core.Message{To: e.To, Kind: wire.KindClockAdjust, Term: c.leading, Payload: e.Msg})
		c.counters["adjust_resent"]++
	}
	c.counters["adjust_unacked"] += uint64(len(gaveUp))
	if !now.Before(c.nextRound) {
		c.startRound(now)
	}
}

// Deadline is the earliest of the election's deadline and this core's own
// timers (core.Scheduler): queued corrections (now), the syncing of the
// clock's error fields, and for a master the next poll, the end of the
// collection, the adjustments' retries and the next round.
func (c *Core) Deadline() time.Time {
	if len(c.corrections) > 0 {
		return c.now
	}
	d := []time.Time{c.elect.Deadline()}
	if c.servo.Synchronized() {
		d = append(d, c.lastSync.Add(c.cfg.SyncInterval))
	}
	if c.leading != 0 {
		d = append(d, c.nextRound)
		if c.collect {
			if c.samples < c.cfg.Burst {
				d = append(d, c.roundAt.Add(time.Duration(c.samples)*c.cfg.BurstGap))
			}
			d = append(d, c.roundAt.Add(c.cfg.CollectTimeout))
		}
		d = append(d, c.adjusts.Deadline())
	}
	return core.Earliest(d...)
}

// syncState refreshes the clock's error fields between corrections.
func (c *Core) syncState(now time.Time) {
	if !c.servo.Synchronized() || now.Sub(c.lastSync) < c.cfg.SyncInterval {
		return
	}
	c.adj = append(c.adj, c.servo.SyncAdjustment(now))
	c.lastSync = now
}

// saveState puts the state in the next Ready when the election's state
// changed (a promise when the election asked for one: a reserving bully's
// claim its reservation on disk covers leaves before its catch-up write),
// or when the frequency moved by StateMinChangePPM, at most once per
// StateInterval. The frequency is saved only once a regression has
// produced it.
func (c *Core) saveState(now time.Time, termChanged, promise bool) {
	st := c.servo.State()
	known := st.Updates >= 2 && st.FrequencyError < c.servo.Config().MaxFrequencyPPM
	f := c.servo.Frequency()
	moved := known && math.Abs(f-c.savedFreq) >= c.cfg.StateMinChangePPM &&
		(c.savedAt.IsZero() || now.Sub(c.savedAt) >= c.cfg.StateInterval)
	if !termChanged && !moved {
		return
	}
	c.durable.Change(promise)
	s := Saved{FrequencyPPM: c.cfg.Servo.Frequency, ErrorPPM: c.cfg.Servo.FrequencyError}
	if c.saved {
		s.FrequencyPPM, s.ErrorPPM = c.savedFreq, c.savedErr
	}
	if known {
		s.FrequencyPPM, s.ErrorPPM = f, st.FrequencyError
	}
	if moved {
		c.savedAt = now
	}
	c.saved, c.savedFreq, c.savedErr = true, s.FrequencyPPM, s.ErrorPPM
}

// followElection starts or stops leading rounds as the bully core's role
// changes.
func (c *Core) followElection() {
	lead, term, _ := c.elect.Leader()
	switch {
	case lead == c.id && c.elect.Role() == elect.RoleLeader && c.leading != term:
		c.leading, c.round = term, 0
		c.nextRound = c.now // the first round at the next tick
		c.collect, c.missed = false, map[uint32]int{}
		c.adjusts.CancelIf(c.now, func(delivery.Entry[[]byte]) bool { return true })
		c.events = append(c.events, core.Event{Name: EventMaster, Msg: fmt.Sprintf("master in term %s", epoch.Format(term)), Args: []any{"term", term}})
	case c.leading != 0 && (lead != c.id || term != c.leading):
		c.leading, c.collect = 0, false
		c.adjusts.CancelIf(c.now, func(delivery.Entry[[]byte]) bool { return true })
		c.events = append(c.events, core.Event{Name: EventWorker, Msg: fmt.Sprintf("worker under %d in term %s", lead, epoch.Format(term)), Args: []any{"master", lead, "term", term}})
	}
}

// Event names.
const (
	EventMaster = "berkeley_master" // this node started leading rounds
	EventWorker = "berkeley_worker" // this node stopped leading rounds
	// EventSpike: a correction held back, its error bound rules it out
	// ("correction", "predicted", "margin", "since"; see Config.Stepout).
	EventSpike = "berkeley_spike"
)

func (c *Core) startRound(now time.Time) {
	if c.collect {
		c.finishRound()
	}
	c.round++
	c.roundAt, c.nextRound = now, now.Add(c.cfg.RoundInterval)
	c.collect, c.readings = true, map[uint32]reading{}
	c.samples, c.pollTx = 0, map[pollKey]time.Time{}
	c.counters["rounds"]++
	c.poll1()
}

// poll1 sends the round's next poll.
func (c *Core) poll1() {
	c.sendReport(core.Broadcast, c.leading, wire.KindClockPoll, wire.ClockPoll{Round: c.round, Sample: uint8(c.samples)})
	c.samples++
}

// missLimit is how many rounds in a row a worker may miss before the master
// stops counting it among the clocks a round needs a majority of: a crashed
// member must not stop the others' synchronisation for long, and a member
// that merely lost a reply or two still counts.
const missLimit = 3

// finishRound computes the fault-tolerant average and sends the
// corrections: a pipeline of pure stages (tallyReadings, quorate,
// groupTime, steer, corrections), each tested alone, and then the sends.
func (c *Core) finishRound() {
	c.collect = false
	rep := &RoundReport{Term: c.leading, Round: c.round, At: c.now}
	t := tallyReadings(c.id, c.servo.Frequency(), c.peers, c.readings, c.missed, c.cfg.MaxRTT)
	c.missed = t.missed
	rep.Members, rep.Clocks = t.members, len(t.cands)
	c.last = rep
	if !quorate(len(t.cands), t.expected) {
		// A fault-tolerant choice needs most clocks: a new master heard by
		// one worker while the rest still follow the old term cannot tell
		// which of the two is wrong, and correcting either could move a
		// good clock by the whole disagreement. The round is skipped; the
		// next one has more readings.
		rep.Skipped = fmt.Sprintf("too few clocks: %d of %d", len(t.cands), t.expected)
		c.counters["rounds_skipped"]++
		return
	}
	g := groupTime(t.cands, c.cfg.Threshold, c.id)
	rep.Method, rep.Agreeing, rep.Averaged = g.method, g.agreeing, g.averaged
	rep.AverageNS, rep.SpreadNS = int64(g.target), int64(g.spread)
	st := steer(c.cfg.FrequencyPull, g.freqs, c.cfg.RoundInterval)
	target := g.target + st
	rep.SteerNS = int64(st)
	for _, k := range corrections(rep.Members, c.readings, g, target) {
		ms := &rep.Members[k.index]
		ms.Why, ms.Excluded, ms.CorrectionNS = k.why, k.excluded, int64(k.corr)
		if k.disagrees {
			c.counters["excluded_disagrees"]++
		}
		if !k.send {
			continue
		}
		r := c.readings[ms.ID]
		p, ok := c.bugs.Encode(&c.events, wire.KindClockAdjust.String(),
			wire.ClockAdjust{Round: c.round, Sample: r.sample, Correction: int64(k.corr), Error: uint64(max(k.errBound, 0))}, nil)
		if !ok {
			continue // counted and reported: this worker waits for the next round
		}
		// This round's adjustment replaces whatever the last round's still
		// waits for.
		id := ms.ID
		c.adjusts.CancelIf(c.now, func(e delivery.Entry[[]byte]) bool { return e.To == id })
		if err := c.adjusts.Send(c.now, delivery.Key{To: id, ID: uint64(c.round)}, p); err != nil {
			panic("berkeley: " + err.Error()) // unbounded outbox: cannot fail
		}
		c.msgs = append(c.msgs, core.Message{To: ms.ID, Kind: wire.KindClockAdjust, Term: c.leading, Payload: p})
	}
	// The master's own correction: towards the target, as of the round's
	// poll (its readings are compared to the master's clock then).
	c.correct(c.roundAt, target, g.avgRTT/2+g.spread/2)
	rep.MasterCorrectionNS = int64(target)
}

// tally is what a round's readings give: the clocks that may enter the
// average, the report line of every worker, how many clocks the round
// expects, and the updated count of rounds each worker missed.
type tally struct {
	cands    []candidate
	members  []MemberReport
	expected int
	missed   map[uint32]int
}

// tallyReadings sorts the round's readings: a worker without one missed
// the round (it stops counting towards the quorum after missLimit in a
// row); one with a round trip above maxRTT is reported but too uncertain
// to enter the average; the others, and the master's own clock (offset 0),
// are candidates.
func tallyReadings(self uint32, selfFreq float64, peers []uint32, readings map[uint32]reading, missed map[uint32]int, maxRTT time.Duration) tally {
	t := tally{cands: []candidate{{id: self, freq: selfFreq}}, expected: 1, missed: maps.Clone(missed)}
	if t.missed == nil {
		t.missed = map[uint32]int{}
	}
	for _, id := range peers {
		if t.missed[id] < missLimit {
			t.expected++
		}
		r, ok := readings[id]
		ms := MemberReport{ID: id}
		switch {
		case !ok:
			ms.Why = "no reading"
			t.missed[id]++
		case r.rtt > maxRTT:
			ms.Answered, ms.RTTNS, ms.OffsetNS, ms.Why = true, int64(r.rtt), int64(r.offset), "rtt"
			t.missed[id] = 0
		default:
			ms.Answered, ms.RTTNS, ms.OffsetNS = true, int64(r.rtt), int64(r.offset)
			t.cands = append(t.cands, candidate{id: id, offset: r.offset, freq: r.freq, rtt: r.width()})
			t.missed[id] = 0
		}
		t.members = append(t.members, ms)
	}
	return t
}

// quorate says whether a round read enough clocks to choose the group's
// time: more than half of those it expects.
func quorate(clocks, expected int) bool { return 2*clocks > expected }

// group is the group's time a round chose.
type group struct {
	// method is "average" (the largest agreeing set, a majority, averaged)
	// or "median" (no majority agreed: every clock goes to the median one).
	method             string
	target             time.Duration // the group's time, relative to the master's clock
	spread             time.Duration // of the clocks it was chosen from
	avgRTT             time.Duration // the widest round trip among them
	freqs              []float64     // their frequency corrections
	in                 map[uint32]bool
	agreeing, averaged int
}

// groupTime chooses the group's time from the candidates: the
// fault-tolerant average of the largest set of clocks that agree with each
// other when a majority does, else the median clock.
func groupTime(cands []candidate, threshold time.Duration, self uint32) group {
	agree := largestAgreeing(cands, threshold, self)
	g := group{agreeing: len(agree), in: map[uint32]bool{}}
	if 2*len(agree) > len(cands) {
		// The fault-tolerant average: the largest set of clocks that agree
		// with each other, a majority, is averaged; the others
		// (falsetickers) are corrected towards it but cannot move it.
		g.method = "average"
		for _, x := range agree {
			g.in[x.id] = true
		}
		g.spread = agree[len(agree)-1].offset - agree[0].offset
		// Within the agreeing set a falseticker can still sit up to
		// Threshold from the others and drag the mean by a k-th of that
		// each round: the f highest and f lowest are dropped before averaging
		// (the fault-tolerant average of Lundelius and Lynch, which
		// tolerates f faults among 3f+1 clocks).
		f := (len(agree) - 1) / 3
		var sum time.Duration
		for _, x := range agree[f : len(agree)-f] {
			sum += x.offset
			g.freqs = append(g.freqs, x.freq)
			g.avgRTT = max(g.avgRTT, x.rtt)
		}
		g.target = sum / time.Duration(len(agree)-2*f)
		g.averaged = len(agree) - 2*f
		return g
	}
	// No majority agrees (clocks just started, or thrown apart): every
	// clock goes to the median one, which a minority of falsetickers
	// cannot choose. The next round averages.
	g.method = "median"
	mid := cands[len(cands)/2] // sorted by largestAgreeing
	g.target, g.avgRTT = mid.offset, mid.rtt
	g.in[mid.id] = true
	g.freqs = append(g.freqs, mid.freq)
	g.spread = cands[len(cands)-1].offset - cands[0].offset
	g.averaged = 1
	return g
}

// steer is what every correction gets added to hold the group's rate:
// every member learns its frequency relative to the group, so the group's
// own rate is free; pull it back towards the mean natural rate of its
// clocks by shifting the whole group a little against its median frequency
// correction (the median: a member whose time agrees may still report a
// wild frequency).
func steer(pull float64, freqs []float64, round time.Duration) time.Duration {
	return time.Duration(-pull * median(slices.Clone(freqs)) * 1e-6 * float64(round))
}

// workerCorrection is what a round decides for one worker (the index-th report
// line).
type workerCorrection struct {
	index     int
	send      bool // it answered: it gets an adjustment
	corr      time.Duration
	errBound  time.Duration
	why       string
	excluded  bool
	disagrees bool // answered, usable, outside the agreeing set
}

// corrections decides each worker's correction towards target: every
// worker that answered is corrected, the ones left out of the average too
// (with why); its error is its reading's and the group's uncertainty (half
// a round trip each, and the slews during them) plus half the spread of
// the averaged clocks.
func corrections(members []MemberReport, readings map[uint32]reading, g group, target time.Duration) []workerCorrection {
	out := make([]workerCorrection, 0, len(members))
	for i, ms := range members {
		k := workerCorrection{index: i, why: ms.Why}
		if !ms.Answered {
			k.excluded = true
			out = append(out, k)
			continue
		}
		if ms.Why == "" && !g.in[ms.ID] && g.method == "average" {
			k.why, k.disagrees = "disagrees", true
		}
		k.excluded = k.why != ""
		r := readings[ms.ID]
		k.send = true
		k.corr = target - r.offset
		k.errBound = r.width()/2 + g.avgRTT/2 + g.spread/2
		out = append(out, k)
	}
	return out
}

// candidate is a clock that may enter the average: the master's (offset 0)
// or a worker's with a usable reading.
type candidate struct {
	id     uint32
	offset time.Duration
	rtt    time.Duration
	freq   float64
}

// largestAgreeing returns the largest set of clocks that agree with each
// other, sorted by offset. Clock i stands for the interval offset_i ±
// (RTT_i + threshold)/2, and two clocks agree when their intervals meet;
// intervals that meet pairwise share a point, so the largest agreeing set
// is the largest set of intervals over one point, found by a sweep
// (Marzullo's algorithm). Among sets of equal size: the one holding the
// master (self), then the narrowest.
func largestAgreeing(cands []candidate, threshold time.Duration, self uint32) []candidate {
	slices.SortFunc(cands, func(a, b candidate) int {
		if a.offset != b.offset {
			return cmp.Compare(a.offset, b.offset)
		}
		return cmp.Compare(a.id, b.id)
	})
	half := func(x candidate) time.Duration { return (x.rtt + threshold) / 2 }
	type edge struct {
		at   time.Duration
		open bool
	}
	edges := make([]edge, 0, 2*len(cands))
	for _, x := range cands {
		edges = append(edges, edge{x.offset - half(x), true}, edge{x.offset + half(x), false})
	}
	// Opening edges first at equal points: touching intervals meet.
	slices.SortFunc(edges, func(a, b edge) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		if a.open == b.open {
			return 0
		}
		if a.open {
			return -1
		}
		return 1
	})
	var best []candidate
	var bestWidth time.Duration
	bestSelf := false
	depth := 0
	for _, e := range edges {
		if !e.open {
			depth--
			continue
		}
		depth++
		if depth < len(best) {
			continue
		}
		// The set over this point: every clock whose interval holds it.
		var set []candidate
		hasSelf := false
		for _, x := range cands {
			if x.offset-half(x) <= e.at && e.at <= x.offset+half(x) {
				set = append(set, x)
				hasSelf = hasSelf || x.id == self
			}
		}
		width := set[len(set)-1].offset - set[0].offset
		switch {
		case len(set) > len(best):
		case len(set) < len(best):
			continue
		case hasSelf != bestSelf:
			if !hasSelf {
				continue
			}
		case width >= bestWidth:
			continue
		}
		best, bestWidth, bestSelf = set, width, hasSelf
	}
	return best
}

// median of v (reordered); 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// sendReport sends a frame whose departure the driver is to report
// (core.Message.Report): polls and readings measure time.
func (c *Core) sendReport(to uint32, term uint64, k wire.Kind, p encoding.BinaryAppender) {
	n := len(c.msgs)
	c.send(to, term, k, p)
	if len(c.msgs) > n {
		c.msgs[n].Report = true
	}
}

// send queues one frame; an encoding of our own fields that fails is a
// bug, counted and reported (core.Bugs), and the frame is not sent.
func (c *Core) send(to uint32, term uint64, k wire.Kind, p encoding.BinaryAppender) {
	b, ok := c.bugs.Encode(&c.events, k.String(), p, nil)
	if !ok {
		return
	}
	c.msgs = append(c.msgs, core.Message{To: to, Kind: k, Term: term, Payload: b})
}

// Ready merges the election's output and the rounds'. The election's state
// (for bully, its term and reservation) is persisted inside this core's,
// with the frequency, and stays pending until Advance confirms it, a
// promise when the election made it one. The
// election's typed changes are drained here (its events, in the Ready,
// carry the same).
func (c *Core) Ready() core.Ready {
	rd, changed, promise := c.elect.Drain()
	c.saveState(c.now, changed, promise)
	c.durable.Ready(&rd, func() []byte {
		return encodeState(Saved{Election: c.elect.State, FrequencyPPM: c.savedFreq, ErrorPPM: c.savedErr})
	})
	rd.Messages = append(rd.Messages, c.msgs...)
	rd.Adjustments = append(rd.Adjustments, c.adj...)
	rd.Events = append(rd.Events, c.events...)
	c.msgs, c.adj, c.events = nil, nil, nil
	return rd
}

// Advance is the driver's report on the last Ready (core.Advancer), for
// this core's state and the election's inside it.
func (c *Core) Advance(saved bool) {
	c.elect.Advance(saved)
	c.durable.Advance(saved)
}
