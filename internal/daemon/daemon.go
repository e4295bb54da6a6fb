package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/truetime"
	"github.com/synclab/synclab/pkg/wire"
)

// Config is what every daemon needs; each binary fills it from its flags.
// Zero values take the documented defaults.
type Config struct {
	// Name is the daemon's name ("timed", "mutexd", "electd"). It prefixes
	// hook environment variables (ELECTD_LEADER) and names the daemon in
	// status and logs. Required.
	Name string
	// Version is reported by status.
	Version string
	// Commit is the source revision of the build, reported by status and
	// the synclab_build_info metric.
	Commit string
	// ConfigSource says where the configuration came from beyond flags
	// and environment ("lab file /etc/synclab/lab.toml, host 2 (address
	// 10.0.0.2 on eth0)"), for status; "" for none.
	ConfigSource string
	// Warnings are settings the binary found legal but likely wrong (an
	// even member count for an algorithm that needs a majority): each is
	// logged at WARN at start and shown by status, so that the operator
	// sees it and need not take it for a fault later.
	Warnings []string
	// ID is this node's member ID (> 0). Required, unless the daemon runs
	// outside any cluster (see Standalone).
	ID uint32
	// Members maps every member ID to its address; this node's entry is its
	// listen address (UDP and TCP). Required, identical on every node,
	// unless the daemon runs outside any cluster (see Standalone).
	Members map[uint32]netip.AddrPort
	// Cluster names the cluster; frames of other clusters are dropped.
	// Default "synclab".
	Cluster string
	// Keys authenticate frames (HMAC-SHA256). A node with other members
	// needs them, unless Insecure.
	Keys []wire.Key
	// Insecure allows a cluster without keys: any host on the LAN can then
	// forge and replay its frames. The daemon warns at start and status
	// says so. It is a permission, not a mode: with Keys it changes
	// nothing (validate clears it, and the daemon says it ignored it).
	Insecure bool
	// Multicast, when set, carries broadcasts as one multicast datagram.
	Multicast *transport.MulticastConfig
	// Stream configures the TCP links to peers (transport defaults).
	Stream transport.StreamConfig
	// Datagrams opens a socket for the core's foreign protocol (NTP): its
	// packets go to the core's StepDatagram, and Ready.Datagrams leave
	// through it.
	Datagrams bool
	// DatagramAddr is that socket's address (timed --serve, e.g.
	// 0.0.0.0:123). Zero: an ephemeral port on every interface, enough for
	// a client.
	DatagramAddr netip.AddrPort
	// DatagramGroups, if set, lets that socket send to a broadcast
	// address or multicast group and hear a group (timed's NTP broadcast
	// mode).
	DatagramGroups *transport.GroupOptions

	// ControlPath is the control socket. Default /run/<Name>/control.sock.
	ControlPath string
	// ControlGroup, if set, may use the control socket besides root.
	ControlGroup string
	// StateDir holds durable state. Default /var/lib/<Name>.
	StateDir string
	// MetricsAddr, if set, serves Prometheus text metrics on /metrics.
	MetricsAddr string
	// TraceFile, if set, records a trace (internal/trace) from the start:
	// a file already there is set aside as TraceFile.old. The control API
	// starts and stops traces at run time.
	TraceFile string
	// TraceMaxBytes bounds TraceFile. Default trace.DefaultMaxBytes.
	TraceMaxBytes int64

	// TickInterval is the period of the core's Tick when the core does not
	// say when it needs one (core.Scheduler), and the delay of the first
	// Tick of every core. Default 10 ms.
	TickInterval time.Duration
	// Clock is the node's clock (system or simulated). Required.
	Clock clock.Clock
	// ClockName says which clock it is, for status ("system", "sim").
	ClockName string
	// SkipAdjust counts the core's clock adjustments instead of applying
	// them (timed --no-adjust: measure and report only).
	SkipAdjust bool
	// Hooks binds event names to shell commands, run in order, one at a
	// time, off the loop.
	Hooks map[string][]string
	// HookTimeout bounds each hook. Default 10 s.
	HookTimeout time.Duration
	// OnEvent, if set, is called with every event the core reports,
	// holding the loop's lock (on the loop, the datagram reader, or a
	// control handler's Do), before watchers and hooks see it: how a
	// daemon's control handlers learn the outcome of what they asked the
	// core (mutexd's grants), which a watcher may miss. It must not block
	// and must not call Do.
	OnEvent func(e core.Event)
	// HookEnv, if set, adds environment variables to an event's hooks,
	// computed on the loop from the core's state when the event is emitted
	// (electd adds ELECTD_ROLE).
	HookEnv func(c core.Core, e core.Event) []string
	// Seed seeds the core's randomness; 0 picks a random seed.
	Seed uint64
	// Logger receives the daemon's log. Default slog.Default().
	Logger *slog.Logger
	// Network opens the node's endpoint. Default transport.Open (real
	// sockets); tests pass an in-memory network's Open.
	Network func(transport.Config) (transport.Endpoint, error)
	// Agreement, when set, turns configuration agreement on for a node
	// with other members (internal/node): the binary names its algorithm
	// and the parameters that must be the same on every member; the
	// daemon adds the multicast group. nil: off.
	Agreement *node.Agreement
	// StepBackEvents, if set, is asked, when the node steps back, for the
	// events its stopped core's role ends with (electd: demoted, leader
	// lost), reported with EventSteppedBack so that hooks run.
	StepBackEvents func(c core.Core) []core.Event
	// EventLevel, if set, is the log level of a core's event (mutexd logs
	// a lost lock at WARN); default INFO.
	EventLevel func(e core.Event) slog.Level
	// ClusterFacts, if set, gives the daemon's role and numbers for its
	// row of the lab's table (`status --cluster`, cluster.go): electd's
	// leader and term, mutexd's locks, orderd's sequencer, timed's
	// offset.
	ClusterFacts ClusterFactsFunc
	// SyncWarnAfter, if set, is how long the clock may stay unsynchronised
	// (since the start, or since it last was) before the daemon says so at
	// WARN, then every SyncWarnAfter while it lasts (timed, when it
	// disciplines the clock).
	SyncWarnAfter time.Duration
	// TrueTime, if set, publishes the core's bound on the true time to
	// applications in a shared page (timed; pkg/truetime, truetime.go).
	TrueTime *TrueTime

	insecureIgnored bool // Insecure was given with Keys
}

// Standalone reports whether the daemon runs outside any cluster: no ID
// and no Members. It then opens no member socket (no cluster traffic at
// all) and speaks only its foreign protocol on the datagram socket, which
// it must have: timed keeping time over NTP alone.
func (c *Config) Standalone() bool { return c.ID == 0 && len(c.Members) == 0 }

// Check applies New's checks of the operator's configuration to a copy
// of it, without opening anything: `X run --check` refuses what the start
// would (its defaults are filled in the copy only). The clock is the
// binary's wiring, not the operator's: a missing one is New's to refuse.
func (c Config) Check() error {
	if c.Clock == nil {
		c.Clock = clock.NewSteady()
	}
	return c.validate()
}

func (c *Config) validate() error {
	if c.Name == "" {
		return errors.New("daemon: Name is required")
	}
	if c.Standalone() {
		if !c.Datagrams && !c.DatagramAddr.IsValid() {
			return errors.New("--id and --members are required (e.g. --id 1 --members 1=10.0.0.1:7100,2=10.0.0.2:7100)")
		}
		if c.Multicast != nil {
			return errors.New("multicast is for a cluster: it needs --id and --members")
		}
	}
	if c.ID == 0 && !c.Standalone() {
		return errors.New("--id must be a member ID > 0")
	}
	if len(c.Members) == 0 && !c.Standalone() {
		return errors.New("--members is required (e.g. 1=10.0.0.1:7100,2=10.0.0.2:7100)")
	}
	if _, ok := c.Members[c.ID]; !ok && !c.Standalone() {
		return fmt.Errorf("--id %d is not in --members: add this node's own entry (its listen address)", c.ID)
	}
	seen := map[netip.AddrPort]uint32{}
	for id, a := range c.Members {
		if !a.IsValid() || a.Port() == 0 {
			return fmt.Errorf("member %d has no valid address and port", id)
		}
		if other, dup := seen[a]; dup {
			return fmt.Errorf("members %d and %d share the address %s", min(id, other), max(id, other), a)
		}
		seen[a] = id
	}
	if err := CheckKey(*c); err != nil {
		return err
	}
	c.insecureIgnored = c.Insecure && len(c.Keys) > 0
	c.Insecure = c.Insecure && len(c.Keys) == 0
	if c.Cluster == "" {
		c.Cluster = "synclab"
	}
	if c.ControlPath == "" {
		c.ControlPath = "/run/" + c.Name + "/control.sock"
	}
	if c.StateDir == "" {
		c.StateDir = "/var/lib/" + c.Name
	}
	if c.TickInterval == 0 {
		c.TickInterval = 10 * time.Millisecond
	}
	if c.TickInterval < time.Millisecond || c.TickInterval > time.Second {
		return fmt.Errorf("tick interval %v out of range 1ms..1s", c.TickInterval)
	}
	if c.Clock == nil {
		return errors.New("daemon: Clock is required")
	}
	if c.ClockName == "" {
		c.ClockName = "system"
	}
	if c.HookTimeout == 0 {
		c.HookTimeout = 10 * time.Second
	}
	if c.Seed == 0 {
		c.Seed = rand.Uint64()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Network == nil {
		c.Network = transport.Open
	}
	if c.DatagramAddr.IsValid() {
		c.Datagrams = true
	} else if c.Datagrams {
		c.DatagramAddr = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	}
	if c.TrueTime != nil {
		if err := c.TrueTime.validate(); err != nil {
			return err
		}
	}
	return nil
}

// ErrNoKey: the node has other members (a cluster) but neither keys nor
// Insecure. The binaries turn it into a usage error that says what to run.
var ErrNoKey = errors.New("a cluster (--members names other members) needs a shared key (--key-file), or --insecure")

// CheckKey applies the rule "a cluster needs a key or --insecure": a node
// whose member list names other members must have Keys, or Insecure said
// explicitly. A node alone (timed serving or following NTP) needs
// neither: nothing it receives on its member socket comes from a member.
func CheckKey(c Config) error {
	if len(c.Keys) == 0 && !c.Insecure && hasOthers(c.Members, c.ID) {
		return ErrNoKey
	}
	return nil
}

// hasOthers says whether members names anyone but self.
func hasOthers(members map[uint32]netip.AddrPort, self uint32) bool {
	for id := range members {
		if id != self {
			return true
		}
	}
	return false
}

// CoreFactory builds the daemon's core from the environment the daemon
// hands it (core.Env): its ID and members, the clock's reading, a seeded
// source of randomness, the node's Lamport clock and the persisted state
// (nil on a first start). An error wrapping core.ErrState names the state
// file when the daemon reports it.
type CoreFactory func(env core.Env) (core.Core, error)

// ErrStopped is returned by Do once the daemon's loop has ended.
var ErrStopped = errors.New("daemon is stopping")

// Daemon runs one core on real sockets and a real (or simulated) clock.
type Daemon struct {
	cfg     Config
	log     *slog.Logger
	state   *stateDir
	clog    *coreLog // the core's log after its snapshot (core.Ready.Entries)
	node    *node.Node
	ep      transport.Endpoint
	dgram   *transport.UDPConn // nil unless Config.Datagrams
	ctl     *ctl.Server
	hooks   *hookRunner
	started time.Time

	doCh    chan func()
	stopped chan struct{}
	pending []route // control routes registered before Run

	subMu sync.Mutex
	subs  map[*subscriber]struct{}

	// mu is held by whoever steps the core: the loop, or the datagram
	// socket's reader (serveDatagrams), which serves NTP without waking
	// the loop. looping is closed when the loop starts (before it, the
	// reader waits), and notServing when it ends or Run gives up.
	mu         sync.Mutex
	looping    chan struct{}
	notServing chan struct{}
	endOnce    sync.Once

	// Owned by the holder of mu.
	events           map[string]uint64
	errs             map[string]uint64
	metricsErrLogged bool                      // the core's invalid metrics were reported
	stampWarned      map[uint32]time.Time      // last WARN about a member's refused stamps (warnStamp)
	rxUnstamped      map[string]bool           // causes of datagrams without a kernel receive stamp said (warnUnstamped)
	supersedeChecked time.Time                 // the tick's last look at superseded connections (checkSuperseded)
	supersedeSeen    map[netip.AddrPort]uint64 // per member IP, its superseded connections when last looked at

	// metricsRefused counts the metrics endpoint's connections refused
	// beyond metricsMaxConns; metricsWarned is when that was last said
	// (UnixNano). Atomic: the endpoint's accept loop updates them.
	metricsRefused atomic.Uint64
	metricsWarned  atomic.Int64
	persistLog     persistLog // which failed-write lines are logged
	persist        PersistStatus
	highestTerm    uint64 // the highest "term" the core's events carried (noteTerm)
	served         bool   // the loop has ended: the reader steps nothing more
	answers        answerBatch
	plan           slewPlan // the last tick's, for its Ready's slews
	ticks          uint64   // the core's Ticks, for the loop's timer (tickIfDue may have ticked it)

	// slowBefore is the last slow write that ended before the Ready being
	// processed (noteTerm's: a Ready's own write does not explain its
	// terms); wall, if set, is a test's clock for the write bookkeeping.
	slowBefore *PersistWrite
	wall       func() time.Time

	// appends: the core has handed log records (core.Ready.Entries). The
	// loop then steps it with every frame and call already queued before
	// it acts on the Ready: one fdatasync covers them all (group commit).
	appends bool
	// unsaved are an appending core's events whose write failed, held
	// for the next write that succeeds (afterWrite).
	unsaved []core.Event
	// acted are the Do calls whose fn ran: they return once the loop
	// acted on the core's Ready (persisted, sent), told whether its write
	// succeeded.
	acted []chan writeResult
	// wrote says how the write of the Ready being acted on went.
	wrote writeResult
	// wake is when the core next needs Tick, on its clock (schedule);
	// wakeSet is false while the loop ticks at the fixed interval.
	wake    time.Time
	wakeSet bool
	rearm   chan struct{} // the loop re-arms its timer (cap 1)
	tr      *tracing      // the running trace; nil: off

	newCore CoreFactory    // to rebuild the core after a step back
	lamport *clock.Lamport // the node's and the core's
	alerts  *alerts        // rate-limited WARN/ERROR lines (owned by the holder of mu)
	// eventLog limits the events' lines below WARN (owned by the holder of mu).
	eventLog *eventLog
	// standing is the node's, as last acted on (agreementStep); gate
	// is closed once the node no longer waits for the members'
	// announcements at its start.
	standing node.Standing
	gate     chan struct{}
	// fatal, once set, ends the loop: the core could not be rebuilt.
	fatal error
	// syncedAt is when a tick last found the clock synchronised.
	syncedAt time.Time
	// clusterWait are the callers of ClusterStatus waiting for their
	// query's answers, by query ID (owned by the holder of mu).
	clusterWait map[uint64]chan struct{}
	// win is the trace window the members ask for (tracewin.go); nil:
	// off. traceWait are the callers of MemberTrace waiting for a chunk,
	// by query ID. Both owned by the holder of mu.
	win       *traceWin
	winCount  uint32
	traceWait map[uint64]chan struct{}
	// asks are the last asks for each member's window (MemberTrace),
	// askedAt when.
	asks    map[uint32]TraceAsk
	askedAt map[uint32]time.Time
	// newTimer makes the loop's timer: newLoopTimer, or a test's (set
	// before Run).
	newTimer func(time.Duration) loopTimer
	// tt publishes the core's bound (Config.TrueTime); ttBound says the
	// last publication held one, ttHalf its larger side, ttMiss the
	// largest gap seen between the clock's slew left and the core's
	// (owned by the holder of mu).
	tt      *truetime.Publisher
	ttBound bool
	ttHalf  time.Duration
	ttMiss  time.Duration
}

// New validates cfg, locks the state directory, raises the incarnation and
// builds the core. Sockets are opened by Run.
func New(cfg Config, newCore CoreFactory) (*Daemon, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	st, err := openStateDir(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	mark, err := st.claim(cfg.Name)
	if err != nil {
		st.close()
		return nil, err
	}
	d, err := build(cfg, st, newCore)
	if err != nil {
		st.close()
		if st.unmarked && errors.Is(err, core.ErrState) {
			// Its refusal may tell the administrator to remove the file.
			err = fmt.Errorf("%w (the directory %s carries no daemon mark (directories made before the mark have none): the state may be another daemon's, electd's, orderd's, timed's or mutexd's; find out whose before removing anything, and give each daemon its own --state-dir)", err, st.path)
		}
		return nil, err
	}
	// Marked only once the core has accepted what the directory holds.
	if err := mark(); err != nil {
		st.close()
		return nil, err
	}
	return d, nil
}

func build(cfg Config, st *stateDir, newCore CoreFactory) (*Daemon, error) {
	inc, err := st.nextIncarnation(time.Now())
	if err != nil {
		return nil, err
	}
	epochs, err := st.readEpochs()
	if err != nil {
		return nil, err
	}
	stamps, err := st.readStamps()
	if err != nil {
		return nil, err
	}
	saved := &durable{st: st, inc: inc, epochs: epochs, stamps: stamps}
	persisted, records, clog, recovered, err := st.loadCore(inc)
	if err != nil {
		return nil, err
	}
	lamport := new(clock.Lamport)
	// The clock resumes above every stamp of the last run before the core
	// reads it (node.Stamps).
	lamport.Restore(stamps.Floor)
	// The node asks the daemon for its part of a status report; the
	// daemon is made last.
	var d *Daemon
	report := func(r *wire.StatusReport) {
		if d != nil {
			d.statusReport(r)
		}
	}
	traceWindow := func(from uint32, q *wire.TraceQuery, now time.Time) (wire.TraceChunk, bool) {
		if d == nil {
			return wire.TraceChunk{}, false
		}
		return d.traceWindow(from, q)
	}
	c, err := newCore(core.Env{
		ID:      cfg.ID,
		Members: slices.Sorted(maps.Keys(cfg.Members)),
		Now:     cfg.Clock.Now(),
		// The incarnation too, as rebuildCore's: with --seed every run
		// drew the same numbers, so a restarted Maekawa member's first
		// attempt was its last run's, taken by the voters for a refresh
		// of the request they had voted for (review-stream).
		Rand:    rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.ID)|uint64(inc)<<32)),
		Lamport: lamport,
		State:   persisted,
		Log:     records,
	})
	if err != nil {
		clog.close()
		if file := st.file(coreStateFile); errors.Is(err, core.ErrState) && !strings.Contains(err.Error(), file) {
			// The operator must know which file the core refused.
			if len(records) > 0 {
				file += " (with the records of " + st.file(coreLogFile) + ")"
			}
			err = fmt.Errorf("%s: %w", file, err)
		}
		return nil, err
	}
	n, err := node.New(node.Config{
		ID:          cfg.ID,
		Members:     cfg.Members,
		Cluster:     cfg.Cluster,
		Service:     cfg.Name,
		Keys:        cfg.Keys,
		Incarnation: inc,
		Epochs:      epochs,
		Stamps:      stamps,
		Save:        saved.save,
		Multicast:   cfg.Multicast != nil,
		Lamport:     lamport,
		Agreement:   nodeAgreement(&cfg),
		Report:      report,
		TraceWindow: traceWindow,
	}, c)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger.With("daemon", cfg.Name, "id", cfg.ID)
	errs := map[string]uint64{}
	switch {
	case recovered.CutBytes > 0:
		// A crash in the middle of an append (or a damaged disk): the
		// records before the damage are whole and were handed over; none
		// after it was confirmed to the core.
		errs["core_log_tail_cut"]++
		log.Warn("the core's log ended in a torn or corrupt record: cut", "file", st.file(coreLogFile),
			"bytes_cut", recovered.CutBytes, "records_kept", recovered.Records)
	case recovered.Stale:
		errs["core_log_stale"]++
		log.Info("dropped a log older than the core's snapshot (a crash while the snapshot was written)", "file", st.file(coreLogFile))
	}
	if recovered.Upgraded {
		log.Info("rewrote the core's log in the current format (preallocated, records carry the incarnation)", "file", st.file(coreLogFile),
			"records", recovered.Records)
	}
	gate := make(chan struct{})
	if n.Standing() != node.StandingStarting {
		close(gate)
	}
	d = &Daemon{
		newCore:     newCore,
		lamport:     lamport,
		alerts:      newAlerts(log),
		eventLog:    newEventLog(log),
		standing:    n.Standing(),
		gate:        gate,
		cfg:         cfg,
		log:         log,
		state:       st,
		clog:        clog,
		node:        n,
		doCh:        make(chan func()),
		rearm:       make(chan struct{}, 1),
		newTimer:    newLoopTimer,
		stopped:     make(chan struct{}),
		looping:     make(chan struct{}),
		notServing:  make(chan struct{}),
		subs:        map[*subscriber]struct{}{},
		events:      map[string]uint64{},
		errs:        errs,
		clusterWait: map[uint64]chan struct{}{},
		traceWait:   map[uint64]chan struct{}{},
		asks:        map[uint32]TraceAsk{},
		askedAt:     map[uint32]time.Time{},
	}
	return d, nil
}

// Config returns the validated configuration.
func (d *Daemon) Config() Config { return d.cfg }

// Do runs fn with the core, serialised with every Step and Tick (and with
// the datagram reader), and then acts on whatever fn made the core want.
// It is how control-API handlers reach the core (which is not safe for
// concurrent use). It returns once that is done: what fn made the core
// persist has been written, unless the disk failed (the core keeps it
// pending and the loop writes it with a later Ready). A handler that
// answers "kept" must use DoSaved, which reports that failure.
//
// fn runs holding the lock the loop holds for everything it does, on the
// caller's goroutine, as the datagram reader steps the core: handing fn
// to the loop's goroutine and the answer back cost two goroutine
// switches and a thread wake-up each way. A core that appends to its log
// (core.Ready.Entries) is the exception: its calls go through the loop,
// which takes every call and frame already waiting into one write (group
// commit, see batch).
func (d *Daemon) Do(ctx context.Context, fn func(n *node.Node)) error {
	_, err := d.do(ctx, fn)
	return err
}

// ErrNotSaved is returned by DoSaved when what fn changed could not be
// written: it is not kept yet, and a crash before a later write succeeds
// loses it; a later write that succeeds keeps it (and sends what depends
// on it). The caller cannot tell which will come first.
var ErrNotSaved = errors.New("not on disk: the state write failed (see the daemon's log); it is kept only once a later write succeeds")

// ErrWithdrawn is returned by DoSaved when what fn changed could not be
// written and the core took it back (core.Withdrawer): nothing of the
// failed write can be read back, nothing that depends on it left, and
// nothing of it ever will. The call had no effect and may be made again.
var ErrWithdrawn = errors.New("not on disk: the state write failed (see the daemon's log), and what the call did was taken back: nothing of it was sent or kept, nor will be")

// HeldError is returned by DoSaved when the node stepped back from
// configuration agreement in the call's own turn of the loop (a frame
// taken in the same batch, or the tick that followed it: node.Output.Held),
// so the core, held back, was not drained: nothing of what fn did was
// written or sent. Dropped says the core was then restarted from its disk
// (a core that ran is, at a step back) without it: nothing of it will
// ever be done (errors.Is ErrWithdrawn). Otherwise the held core keeps it
// pending, written and sent once the configurations agree again and a
// write succeeds, or lost if the daemon stops first (errors.Is
// ErrNotSaved). Either way the call was not done: answered as done, it
// could be lost with the restarted core, or taken back by the first
// write after the agreement if that failed (core.Withdrawer), after the
// caller was told it was kept.
type HeldError struct{ Dropped bool }

func (e *HeldError) Error() string {
	if e.Dropped {
		return "not done: this member stepped back from configuration agreement in the same turn (see the daemon's log and `status`), " +
			"and its core was restarted from its disk without what the call did: nothing of it was sent or kept, nor will be; " +
			"the call may be made again once the configurations agree"
	}
	return "not on disk: this member stepped back from configuration agreement in the same turn (see the daemon's log and `status`), " +
		"and its core, held back, did not write what the call did: it is kept only once the configurations agree again and a write succeeds, " +
		"and lost if the daemon stops first"
}

// Is makes a dropped call ErrWithdrawn and a held one ErrNotSaved: what
// a caller may rely on is the same.
func (e *HeldError) Is(target error) bool {
	return e.Dropped && target == ErrWithdrawn || !e.Dropped && target == ErrNotSaved
}

// writeResult is how the write of the Ready that followed a Do call went.
type writeResult uint8

const (
	writeOK        writeResult = iota // written, or nothing to write
	writeFailed                       // failed: kept pending (ErrNotSaved)
	writeWithdrawn                    // failed, and taken back (ErrWithdrawn)
	writeHeld                         // the core was held back, not drained (HeldError)
	writeDropped                      // held back, then restarted from its disk (HeldError, Dropped)
)

// err is the error DoSaved answers for r.
func (r writeResult) err() error {
	switch r {
	case writeFailed:
		return ErrNotSaved
	case writeWithdrawn:
		return ErrWithdrawn
	case writeHeld:
		return &HeldError{}
	case writeDropped:
		return &HeldError{Dropped: true}
	}
	return nil
}

// DoSaved is Do for a handler that promises what fn changed: it returns
// ErrNotSaved when the write of the Ready that followed fn failed, or
// ErrWithdrawn when it failed and the core took back what fn did.
func (d *Daemon) DoSaved(ctx context.Context, fn func(n *node.Node)) error {
	wrote, err := d.do(ctx, fn)
	if err == nil {
		err = wrote.err()
	}
	return err
}

func (d *Daemon) do(ctx context.Context, fn func(n *node.Node)) (wrote writeResult, err error) {
	select {
	case <-d.looping:
	case <-d.notServing:
		return writeOK, ErrStopped
	case <-d.stopped:
		return writeOK, ErrStopped
	case <-ctx.Done():
		return writeOK, ctx.Err()
	}
	if wrote, ok := d.doHere(fn); ok {
		return wrote, nil
	}
	done := make(chan writeResult, 1)
	select {
	case d.doCh <- func() { fn(d.node); d.acted = append(d.acted, done) }:
	case <-d.stopped:
		return writeOK, ErrStopped
	case <-ctx.Done():
		return writeOK, ctx.Err()
	}
	// Once accepted, fn runs promptly: the loop executes it right away.
	return <-done, nil
}

// doHere runs fn on the caller's goroutine, as the loop would (locked),
// unless the core appends to its log (ok false: the loop must batch it).
// wrote says how the Ready's write went.
func (d *Daemon) doHere(fn func(n *node.Node)) (wrote writeResult, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.served:
		// The loop has ended: the core is stepped no more. The caller's
		// select on d.stopped answers ErrStopped.
		return writeOK, false
	case d.appends:
		return writeOK, false
	}
	return d.step(func() { fn(d.node) }), true
}

// Handle registers a control-API handler (before Run).
func (d *Daemon) Handle(method, pattern string, h ctl.HandlerFunc) {
	d.pending = append(d.pending, route{method: method, pattern: pattern, h: h})
}

// HandleStream registers a streaming control-API handler (before Run).
func (d *Daemon) HandleStream(method, pattern string, h ctl.StreamFunc) {
	d.pending = append(d.pending, route{method: method, pattern: pattern, stream: h})
}

type route struct {
	method, pattern string
	h               ctl.HandlerFunc
	stream          ctl.StreamFunc
}
