package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/sdnotify"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
)

// Run opens the sockets, serves the control API and runs the loop until ctx
// is cancelled (SIGTERM/SIGINT in the binaries), then shuts down in order:
// stop the loop, close the control socket and the network, let running hooks
// finish, release the state directory.
func (d *Daemon) Run(ctx context.Context) (err error) {
	defer d.state.close()
	defer d.clog.close()
	// A clock with work in progress (the system clock's fast slew phase)
	// must end it, or the clock keeps running fast after the daemon exits.
	if c, ok := d.cfg.Clock.(io.Closer); ok {
		defer func() {
			if cerr := c.Close(); cerr != nil {
				d.log.Error("closing the clock", "err", cerr)
			}
		}()
	}
	self := d.cfg.Members[d.cfg.ID]
	if !d.cfg.Standalone() {
		peers := []netip.AddrPort{} // only members connect: none, if we are alone
		for id, a := range d.cfg.Members {
			if id != d.cfg.ID {
				peers = append(peers, a)
			}
		}
		d.ep, err = d.cfg.Network(transport.Config{
			Listen:     self,
			Multicast:  d.cfg.Multicast,
			Stream:     d.cfg.Stream,
			Peers:      peers,
			Seed:       d.cfg.Seed,
			Supersedes: d.memberFrame(),
		})
		if err != nil {
			return &MemberListenError{Addr: self, Err: err}
		}
		defer d.ep.Close()
	}
	if d.cfg.Datagrams {
		if d.dgram, err = transport.ServeUDP(d.cfg.DatagramAddr, d.serveDatagrams); err != nil {
			return fmt.Errorf("listening on %s: %w", d.cfg.DatagramAddr, err)
		}
		defer func() {
			d.endServing()
			d.dgram.Close()
		}()
		if g := d.cfg.DatagramGroups; g != nil {
			if err := d.dgram.ConfigureGroups(*g); err != nil {
				return fmt.Errorf("the socket on %s: %w", d.cfg.DatagramAddr, err)
			}
		}
	}

	d.ctl, err = ctl.Listen(d.cfg.ControlPath, ctl.ListenOptions{Group: d.cfg.ControlGroup})
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	d.routes()
	if d.cfg.TrueTime != nil {
		// Beside the control socket by default: its directory exists now.
		d.mu.Lock()
		err := d.openTrueTime()
		d.mu.Unlock()
		if err != nil {
			return err
		}
		// A clean stop says so in the page: readers refuse it at once.
		defer d.locked(func() {
			if err := d.tt.Close(); err != nil {
				d.log.Warn("closing the truetime page", "err", err)
			}
		})
	}
	ctlErr := make(chan error, 1)
	go func() { ctlErr <- d.ctl.Serve() }()
	defer d.ctl.Close()

	if d.cfg.MetricsAddr != "" {
		stop, err := d.serveMetrics(d.cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("metrics endpoint %s: %w", d.cfg.MetricsAddr, err)
		}
		defer stop()
	}

	d.hooks = newHookRunner(envPrefix(d.cfg.Name), d.cfg.ID, d.cfg.HookTimeout, d.log)
	defer d.hooks.stop()

	d.started = time.Now()
	listen := self.String()
	if d.cfg.Standalone() {
		listen = "none (no cluster)"
	}
	d.log.Info("started",
		"listen", listen,
		"members", len(d.cfg.Members),
		"cluster", d.cfg.Cluster,
		"clock", d.cfg.ClockName,
		"control", d.cfg.ControlPath,
		"state_dir", d.cfg.StateDir,
		"multicast", d.cfg.Multicast != nil,
		"auth", len(d.cfg.Keys) > 0)
	if d.cfg.insecureIgnored {
		d.log.Info("--insecure ignored: a key is configured, frames are authenticated")
	}
	if d.cfg.Insecure {
		d.log.Warn("running without authentication (--insecure): any host on the LAN can forge and replay this cluster's frames; create a key with `" +
			d.cfg.Name + " keygen` and give every member --key-file")
	}
	for _, w := range d.cfg.Warnings {
		d.log.Warn(w)
	}
	if _, err := sdnotify.Ready(); err != nil {
		d.log.Warn("sd_notify READY failed", "err", err)
	}

	// Start-up is over: flag parsing, help templates, key files, every
	// package's initialisation ran once and never runs again. Their code
	// and tables stay mapped, and resident, until unmapped: the resident
	// set would be mostly start-up. So the executable's read-only pages
	// are unmapped here (they stay in the page cache, shared; a page used
	// again comes back on a minor fault), and what stays resident is what
	// the daemon uses.
	if err := releasePages(); err != nil {
		d.log.Debug("releasing start-up pages", "err", err)
	}
	relCtx, endRelease := context.WithCancel(ctx)
	defer endRelease()
	go releaseLater(relCtx, releasePages, residentTotal, releaseAfter, d.log)
	if d.cfg.TraceFile != "" {
		d.mu.Lock()
		_, err = d.startTrace(d.cfg.TraceFile, d.cfg.TraceMaxBytes, true)
		d.mu.Unlock()
		if err != nil {
			return fmt.Errorf("--trace %s: %w", d.cfg.TraceFile, err)
		}
	}
	close(d.looping) // the datagram reader may step the core from now on
	err = d.loop(ctx, ctlErr)
	if w, ok := d.node.Core().(deferredWriter); ok {
		// A clean stop writes what the core let wait for a later write.
		d.locked(w.WriteDeferred)
	}
	d.mu.Lock()
	d.node.SaveStamps(d.cfg.Clock.Now()) // the members' last stamps, as of now
	d.mu.Unlock()
	d.endServing()
	d.mu.Lock()
	if d.tr != nil {
		d.stopTrace() // the file ends cleanly (SIGTERM included)
	}
	// What the rate limits held back is written before "stopped", with
	// its count, windows over or not.
	wall := time.Now()
	d.alerts.flushAll(wall)
	d.eventLog.close(wall)
	d.mu.Unlock()
	close(d.stopped)
	sdnotify.Stopping()
	d.closeSubscribers()
	if err != nil {
		d.log.Error("stopped", "err", err)
	} else {
		d.log.Info("stopped")
	}
	return err
}

func (d *Daemon) loop(ctx context.Context, ctlErr <-chan error) error {
	// One timer wakes the loop for the core's next Tick: at the core's own
	// deadline when it schedules its ticks (core.Scheduler, see
	// node.NextTick), so that an idle daemon sleeps until its next
	// heartbeat or timeout; else every TickInterval, as a ticker would
	// (missed ticks skipped). The first Tick is one TickInterval after the
	// start either way.
	//
	// The truetime page is published on the same timer, at least every
	// TrueTimeInterval (wall time): a Go timer or ticker beside it would
	// wake the runtime's monitor thread twice per firing (timer_linux.go),
	// two of an idle timed's dozen wake-ups a second.
	fixed := time.Now().Add(d.cfg.TickInterval)
	timer := d.newTimer(d.cfg.TickInterval)
	defer timer.Stop()
	var publishAt time.Time // the truetime page's next publication; zero: no page
	if d.tt != nil {
		publishAt = time.Now().Add(TrueTimeInterval)
	}
	publishOnly := false // the timer is armed for the page, before the core's deadline
	rearm := func() {
		d.mu.Lock()
		wake, scheduled := d.wake, d.wakeSet
		d.mu.Unlock()
		var wait time.Duration
		if scheduled {
			wait = wake.Sub(d.cfg.Clock.Now())
		} else {
			wait = time.Until(fixed)
		}
		publishOnly = false
		if !publishAt.IsZero() {
			if p := time.Until(publishAt); p < wait {
				wait, publishOnly = p, true
			}
		}
		timer.Reset(min(max(wait, 0), node.MaxSleep))
	}
	var watchdog <-chan time.Time
	if iv, ok := sdnotify.WatchdogInterval(); ok {
		t := time.NewTicker(iv / 2)
		defer t.Stop()
		watchdog = t.C
	}
	var packets <-chan transport.Packet // nil (never ready) outside a cluster
	var hints <-chan transport.Hint
	if d.ep != nil {
		packets = d.ep.Packets()
		hints = d.ep.Hints()
	}
	// Datagrams do not come this way: the datagram socket's reader steps
	// the core itself, under d.mu (serveDatagrams). Everything else is
	// done here, under d.mu too.
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-ctlErr:
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("control API: %w", err)
			}
			ctlErr = nil
		case p, ok := <-packets:
			if !ok {
				return errors.New("network endpoint closed")
			}
			if !d.batch(func() { d.receive(p, false) }, packets) {
				return errors.New("network endpoint closed")
			}
		case h, ok := <-hints:
			if !ok {
				hints = nil // closing: packets says so
				continue
			}
			if !d.batch(func() { d.hint(h) }, packets) {
				return errors.New("network endpoint closed")
			}
		case <-timer.Chan():
			if !publishAt.IsZero() && !time.Now().Before(publishAt) {
				d.mu.Lock()
				d.publishTrueTime()
				d.mu.Unlock()
				if publishAt = publishAt.Add(TrueTimeInterval); !publishAt.After(time.Now()) {
					publishAt = time.Now().Add(TrueTimeInterval)
				}
			}
			if publishOnly {
				rearm()
				break
			}
			// Frames that arrived before the deadline count before it: a
			// loop that was not running (a busy host) must not time a peer
			// out while the peer's frames wait in the queue (a core credits
			// them with their receive stamps).
			ticks := d.tickCount()
			if !d.drain(packets) {
				return errors.New("network endpoint closed")
			}
			// The last frame's step may have ticked the core, the deadline
			// due (tickIfDue): that was this tick.
			if d.tickCount() == ticks && !d.batch(d.tick, packets) {
				return errors.New("network endpoint closed")
			}
			if fixed = fixed.Add(d.cfg.TickInterval); !fixed.After(time.Now()) {
				fixed = time.Now().Add(d.cfg.TickInterval)
			}
			// The tick moved the core's deadline (schedule signalled
			// d.rearm): this re-arming reads the newest, so the signal
			// is spent. Left pending, it would arm the timer a second
			// time for the same moment on every tick.
			select {
			case <-d.rearm:
			default:
			}
			rearm()
		case <-d.rearm:
			rearm()
		case fn := <-d.doCh:
			if !d.batch(fn, packets) {
				return errors.New("network endpoint closed")
			}
		case <-watchdog:
			sdnotify.Watchdog()
		}
		d.mu.Lock()
		fatal := d.fatal
		d.mu.Unlock()
		if fatal != nil {
			return fatal
		}
	}
}

// drain steps the core with every frame already queued, without waiting
// for more; false when the endpoint closed. With none queued (an idle
// daemon's every tick) it does nothing: a batch would still act on the
// core's Ready, check agreement and schedule, a whole pass of the loop.
func (d *Daemon) drain(packets <-chan transport.Packet) bool {
	if len(packets) == 0 {
		return true
	}
	if d.appends {
		return d.batch(func() {}, packets)
	}
	for range cap(packets) {
		select {
		case p, ok := <-packets:
			if !ok {
				return false
			}
			d.locked(func() { d.receive(p, false) })
		default:
			return true
		}
	}
	return true
}

// batch runs fn and acts on the core's Ready, as locked does. For a core
// that appends to its log (core.Ready.Entries) it first steps the core
// with every frame and control call already waiting, so that one append,
// and one fdatasync, makes all their records durable before any of their
// messages leaves: group commit. Under load a batch grows with the time
// a write takes; idle, it is one frame. false when the endpoint closed.
func (d *Daemon) batch(fn func(), packets <-chan transport.Packet) bool {
	if !d.appends {
		d.locked(fn)
		return true
	}
	open := true
	d.locked(func() {
		fn()
		for n := 0; n < maxBatch; n++ {
			select {
			case p, ok := <-packets:
				if !ok {
					open = false
					return
				}
				d.receive(p, false)
				continue
			case f := <-d.doCh:
				f()
				continue
			default:
			}
			return
		}
	})
	return open
}

// loopTimer is the run loop's one timer: a time.Timer, or a test's that
// records what it is armed for and fires when the test says
// (Daemon.newTimer).
type loopTimer interface {
	Chan() <-chan time.Time
	Reset(time.Duration) bool
	Stop() bool
}

type realTimer struct{ *time.Timer }

func (t realTimer) Chan() <-chan time.Time { return t.C }

func newRealTimer(d time.Duration) loopTimer { return realTimer{time.NewTimer(d)} }

// maxBatch bounds the frames and calls one group commit takes, so that a
// flood cannot hold the messages of the first of them back for long.
const maxBatch = 256

// schedule reads when the core next needs Tick (node.NextTick), holding
// d.mu after the core ran, and wakes the loop to re-arm its timer when
// that moved.
func (d *Daemon) schedule() {
	next, ok := d.node.NextTick(d.cfg.Clock.Now())
	if !ok || d.wakeSet && next.Equal(d.wake) {
		return
	}
	d.wake, d.wakeSet = next, true
	select {
	case d.rearm <- struct{}{}:
	default: // a re-arm is already pending; it reads the newest wake
	}
}

// tick advances the core to the clock's reading, noting what was left of
// the clock's slew at that reading: a slew the core decides on this tick is
// planned from then (see slewPlan).
func (d *Daemon) tick() {
	d.ticks++
	now := d.cfg.Clock.Now()
	d.plan = slewPlan{}
	if st, err := d.cfg.Clock.State(); err == nil {
		d.plan = slewPlan{valid: true, left: st.SlewLeft}
	}
	d.node.Tick(now)
	wall := time.Now()
	d.checkSuperseded(wall)
	d.alerts.flush(wall)
	d.eventLog.flush(wall)
	d.checkSync()
}

// checkSync says at WARN, every SyncWarnAfter, that the clock has not been
// synchronised for that long.
func (d *Daemon) checkSync() {
	if d.cfg.SyncWarnAfter <= 0 {
		return
	}
	wall := time.Now()
	st, err := d.cfg.Clock.State()
	if err == nil && st.Synchronized {
		d.syncedAt = wall
		return
	}
	since := d.started
	if d.syncedAt.After(since) {
		since = d.syncedAt
	}
	if since.IsZero() || wall.Sub(since) < d.cfg.SyncWarnAfter {
		return
	}
	what := "since the daemon started"
	if !d.syncedAt.IsZero() {
		what = "since " + d.syncedAt.Format(time.RFC3339)
	}
	d.alerts.report(wall, slog.LevelWarn, "unsynchronised", 0, d.cfg.SyncWarnAfter,
		fmt.Sprintf("the clock has not been synchronised for %v (%s): see `%s status` for its sources or master", wall.Sub(since).Round(time.Second), what, d.cfg.Name))
}

// slewPlan is the clock's remaining slew when the core's last tick read the
// clock. A servo decides a slew as of that reading: "from now, absorb
// what is left of the slew in progress and this much more". The slew
// replaces the one in progress when the daemon applies it, a little later,
// or much later when the host is busy and the loop was not running, and
// the old slew went on meanwhile: applied as decided, it would absorb that
// part twice (at 83 ms/s, 83 us per millisecond late). So what the clock
// absorbed since the tick's reading is taken off the new slew: the clock
// then ends where the servo planned, and its model of the slew holds.
type slewPlan struct {
	valid    bool
	left     time.Duration // the clock's SlewLeft at the tick's reading
	absorbed time.Duration // since then, once read (done)
	done     bool
}

// planned returns the slew a to apply now, less what the clock absorbed
// since the tick it was decided on.
func (d *Daemon) planned(a time.Duration) time.Duration {
	p := &d.plan
	if !p.valid {
		return a
	}
	if !p.done {
		p.done = true
		if st, err := d.cfg.Clock.State(); err == nil {
			p.absorbed = p.left - st.SlewLeft
		}
	}
	return a - p.absorbed
}

// locked runs fn and then acts on what the core wants done, holding d.mu:
// the core, the node and the daemon's counters belong to whoever holds it
// (the loop, or the datagram socket's reader).
func (d *Daemon) locked(fn func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.step(fn)
}

// step is locked's work, for a caller holding d.mu: run fn, act on the
// Ready, answer the Do calls fn ran. wrote says how the Ready's write
// went.
func (d *Daemon) step(fn func()) (wrote writeResult) {
	d.wrote = writeOK
	fn()
	d.tickIfDue()
	d.process()
	d.agreementStep()
	d.clusterStep()
	d.traceStep()
	d.schedule()
	for _, done := range d.acted {
		done <- d.wrote
	}
	d.acted = d.acted[:0]
	return d.wrote
}

// tickCount is how many times the core was ticked (d.ticks, under d.mu).
func (d *Daemon) tickCount() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ticks
}

// tickIfDue ticks the core at once, in the step that made its deadline
// due (node.TickDue), when no frame waits for the loop: frames that
// arrived before a deadline count before it, as the timer's path drains
// them first. Without it a grant a frame completed (judged at the next
// reading of the clock) waited for the loop's timer and a second pass,
// its state written twice: 23-27% fewer handoffs a second.
func (d *Daemon) tickIfDue() {
	if d.served || d.ep != nil && len(d.ep.Packets()) > 0 {
		// served: the loop has ended, and what runs locked now is the
		// stop's (the truetime page's close): a Tick's Ready would write
		// to the page being unmapped and emit events to stopped hooks.
		return
	}
	if d.node.TickDue(d.cfg.Clock.Now()) {
		d.tick()
	}
}

func (d *Daemon) receive(p transport.Packet, datagram bool) {
	if !p.Kernel && p.Unstamped != "" {
		d.warnUnstamped(p)
	}
	err := d.node.Receive(node.Inbound{
		From:     p.From,
		Data:     p.Data,
		Time:     d.cfg.Clock.FromKernel(p.Time),
		Stream:   p.Via == transport.ViaStream,
		Datagram: datagram,
	})
	if err != nil {
		// Counted by the node; a flood of bad packets must not flood the
		// journal, so individual drops are debug-level, but a member
		// whose frames are refused is said at WARN, once in a while.
		var se *node.StampError
		if errors.As(err, &se) {
			d.warnStamp(se)
		}
		if errors.Is(err, node.ErrUnkeyedRefusal) {
			d.alerts.report(time.Now(), slog.LevelWarn, "unkeyed_refusal", 0, 0,
				"refusing epoch refusals: this cluster runs without a key, where no member refuses an epoch, so they are forged (each would move this node to a new series, and its incarnations would run out)",
				"from", p.From.String(), "err", err.Error(),
				"hint", "someone on the LAN sends frames in the members' names: run the cluster with --key-file; `status` counts them (dropped unkeyed_refusal)")
		}
		d.log.Debug("dropped packet", "from", p.From.String(), "via", p.Via.String(), "err", err)
	}
}

// warnUnstamped says at WARN, once per cause, that datagrams arrive
// without the kernel's receive stamp: their receive time is the reader's
// clock after the read, later than their arrival by however long the
// reader took, and the cores that count a frame at its arrival (the
// permission mutexes' majority: pkg/mutex/permission, "Links") count it
// then. The transport counts every one (status: user_stamps).
func (d *Daemon) warnUnstamped(p transport.Packet) {
	if d.rxUnstamped[p.Unstamped] {
		return
	}
	if d.rxUnstamped == nil {
		d.rxUnstamped = map[string]bool{}
	}
	d.rxUnstamped[p.Unstamped] = true
	d.errs["rx_unstamped"]++
	d.log.Warn("rx_stamps_missing: datagrams arrive without the kernel's receive stamp; their receive time is this daemon's clock after the read, "+
		"late by however long the reader took (a loaded host: milliseconds), so time estimates are noisier and the permission mutexes count a frame's arrival that late",
		"cause", p.Unstamped, "from", p.From.String(), "via", p.Via.String(),
		"hint", "run on Linux with SO_TIMESTAMPNS allowed on the socket; status shows kernel_stamps and user_stamps")
}

// hint hands the node a transport's hint that a member's port closed
// (its link closed or reset, a connection to it refused or unanswered),
// and says so at INFO (sayHint): a member that died shows here first,
// before any timeout; a live one whose link closed (or a forged reset)
// answers the probe the core sends, and nothing follows.
func (d *Daemon) hint(h transport.Hint) {
	at := d.cfg.Clock.FromKernel(h.Time)
	member, err := d.node.Hint(h.Peer, h.Cause, at)
	if err != nil {
		d.log.Debug("hint about a non-member", "peer", h.Peer.String(), "cause", h.Cause.String())
		return
	}
	d.sayHint(time.Now(), member, h)
}

// portHintEvery spaces the INFO lines about one member's hints. A host
// that is down is dialled again and again, each dial a dial_timeout hint:
// at the alerts' 10 s a member down for an hour was 360 lines; now the
// first is said at once and then one line every 10 minutes with how many
// were not (repeated=N), 7 in that hour. Status (Port hint) and the
// metrics count every hint.
const portHintEvery = 10 * time.Minute

// sayHint says member's hint h at INFO, rate-limited per member
// (portHintEvery), in words that match what was seen: a dial that timed
// out is no answer within the dial timeout, not a closed port.
func (d *Daemon) sayHint(now time.Time, member uint32, h transport.Hint) {
	seen, what := h.Cause.Seen(), "its process died or restarted, or its link was reset"
	if h.Cause == core.HintDialTimeout {
		dt := d.cfg.Stream.DialTimeout
		if dt <= 0 {
			dt = transport.DefaultDialTimeout
		}
		seen = fmt.Sprintf("%s within %v", seen, dt)
		what = "its host is down or cut off, or a firewall drops connections to its port"
	}
	d.alerts.report(now, slog.LevelInfo, "port_hint", member, portHintEvery,
		fmt.Sprintf("member %d: %s (%s)", member, seen, h.Cause),
		"peer", h.Peer.String(), "cause", h.Cause.String(),
		"hint", what+"; a core that acts on it probes the member, and a live member's answer cancels it (status: Port hint)")
}

// stampWarnEvery spaces the warnings about one member's refused stamps.
const stampWarnEvery = 30 * time.Second

// warnStamp says at WARN, at most once per stampWarnEvery per member, that
// a member's frames are refused for a Lamport stamp beyond what any member
// can have reached (node.LamportRate), and what to do.
func (d *Daemon) warnStamp(se *node.StampError) {
	if d.stampWarned == nil {
		d.stampWarned = map[uint32]time.Time{}
	}
	now := time.Now()
	if last, ok := d.stampWarned[se.Member]; ok && now.Sub(last) < stampWarnEvery {
		return
	}
	d.stampWarned[se.Member] = now
	d.log.Warn(fmt.Sprintf("refusing frames of member %d: Lamport stamp beyond what any member can have reached", se.Member),
		"member", se.Member, "sender", se.Sender, "stamp", se.Stamp, "ceiling", se.Ceiling, "err", se.Error(),
		"hint", "frames forged in the member's name (without a key anyone on the LAN can: run the cluster with --key-file), "+
			"or a member whose clock was pushed ahead by a version without this bound (restart it on a fresh state directory); "+
			"the refusals end by themselves once the stamps are back in range; `status` counts them per member")
}

// deferredWriter is a core that lets some changes wait for a later write
// (orderd's delivery records): WriteDeferred makes them due at the next
// Ready, which the daemon writes before it stops.
type deferredWriter interface{ WriteDeferred() }

// process acts on the core's Ready in the order pkg/core prescribes.
func (d *Daemon) process() {
	out := d.node.Ready()
	if out.Held {
		// What this turn's calls did waits in the core, unwritten: none
		// of them is done (HeldError).
		d.wrote = writeHeld
	}
	if out.Empty() {
		return
	}
	d.slowBefore = d.persist.LastSlow
	saved := true
	var err error  // the write's
	withheld := 0  // frames a failed write kept home
	withdrawn := 0 // calls whose promises a failed write's core took back
	// The clock first, before the write, promise or not: a discipline
	// counts its slew and frequency from the tick that decided them, so
	// left waiting for a slow fdatasync the clock would run the old plan
	// while the core's bound counts the new one (Adjusted re-anchors a
	// slew afterwards, not a frequency). Nothing of an adjustment depends
	// on the write: a failed write's were always applied.
	d.adjust(out.Adjustments)
	if (d.appends || out.State != nil) && !out.Promise && len(out.Sends) > 0 {
		// Nothing these messages say depends on the write (core.Ready):
		// they leave now, and the fdatasync runs while they travel. For
		// a core that appends, a write is on nearly every step's path;
		// for one that writes its state, a write that need not hold
		// anything back (bully's claim, its term reserved on disk
		// beforehand, brings the state up to the claim after it; timed's
		// polls beside its frequency). After the Ready's clock
		// adjustments: its frames are stamped by the clock they leave.
		for _, s := range out.Sends {
			d.send(s)
		}
		out.Sends = nil
	}
	if out.State != nil || len(out.Entries) > 0 {
		// Events that do not depend on the write (core.Event.BeforeSave)
		// are reported now, while it runs: only the leading run of them,
		// so that every watcher and hook sees the events in order.
		early := 0
		for len(d.unsaved) == 0 && early < len(out.Events) && out.Events[early].BeforeSave {
			d.emit(out.Events[early])
			early++
		}
		out.Events = out.Events[early:]
		if early > 0 {
			// emit readied the events streams' goroutines on this P; the
			// write below blocks it in a syscall, where they would wait
			// for another thread to steal them (on a busy host, for as
			// long as the fdatasync takes): let them run first.
			runtime.Gosched()
		}
		start := d.wallNow()
		if out.State != nil {
			err = d.state.snapshot(d.clog, out.State)
			if err == nil {
				d.persisted(CoreStateFile, len(out.State), out.Promise, d.state.took, d.wallNow().Sub(start))
			}
		} else {
			d.appends = true
			err = d.clog.appendRecords(out.Entries)
			if err == nil {
				d.persisted(CoreLogFile, len(out.Entries), out.Promise, d.clog.took, d.wallNow().Sub(start))
			}
		}
		if err != nil {
			saved = false
			d.wrote = writeFailed
			d.errs["persist_failed"]++
			if out.Promise {
				// The core's promise (a term, a generation) is not
				// durable: nothing that depends on it may leave this host.
				// The core keeps it pending and hands it over again with
				// every Ready until a write succeeds.
				withheld = len(out.Sends)
				d.errs["sends_withheld"] += uint64(withheld)
				out.Sends = nil
			}
		} else if ended, said := d.persistLog.saved(); ended {
			if said {
				d.log.Info("persisting state works again", "failed_writes", d.errs["persist_failed"])
			}
			d.persist.Failing = nil
		}
	}
	d.node.Advance(saved)
	if err != nil {
		if out.Promise && unwritten(err) {
			// Nothing of the write can be read back and nothing that
			// depends on it left: the core may take back what it
			// promised the calls of this Ready (orderd's sends), and
			// they are answered that nothing was done.
			if kept, taken, all, ok := d.node.Withdraw(out.Events); ok {
				out.Events = kept
				if all && taken > 0 {
					d.wrote = writeWithdrawn
				}
				d.errs["calls_withdrawn"] += uint64(taken)
				withdrawn = taken
			}
		}
		file := d.state.file(coreStateFile)
		if out.State == nil {
			file = d.state.file(coreLogFile)
		}
		d.persistFailing(file, err, withheld, withdrawn)
	}
	for _, s := range out.Sends {
		d.send(s)
	}
	for _, e := range d.afterWrite(out.Events, saved, out.State != nil || len(out.Entries) > 0) {
		d.emit(e)
	}
}

// adjust applies a Ready's clock adjustments (a tick's slew less what the
// clock absorbed since the tick, slewPlan), tells the core when the clock
// took them and republishes the truetime page.
func (d *Daemon) adjust(adjs []clock.Adjustment) {
	d.adjusting(adjs)
	applied := false
	for _, a := range adjs {
		if d.cfg.SkipAdjust {
			d.errs["adjustments_skipped"]++
			continue
		}
		if a.Kind == clock.AdjustSlew {
			a.Offset = d.planned(a.Offset)
		}
		if err := clock.Apply(d.cfg.Clock, a); err != nil {
			d.errs["adjust_failed"]++
			d.log.Error("clock adjustment failed", "kind", a.Kind.String(), "offset", a.Offset, "ppm", a.PPM, "err", err)
			continue
		}
		applied = applied || a.Kind != clock.AdjustSync
	}
	d.plan = slewPlan{} // a tick's plan is for its own Ready
	if applied {
		// When the clock took them: a slew runs from now, not from the
		// tick that decided it (core.Adjuster).
		d.node.Adjusted(d.cfg.Clock.Now())
	}
	if len(adjs) > 0 {
		// Every clock update: the bound moved (and a write begun by
		// adjusting ends).
		d.publishTrueTime()
	}
}

// afterWrite returns the events to report after a Ready's write. A core
// that appends to its log (orderd's) reports with an event what its write
// holds (a delivery and its index), so after a failed write its events
// wait, in order, for the next write that succeeds; a crash meanwhile
// loses them with the write, and the restarted core does it again.
// Other cores' events are reported as they always were. At most
// maxUnsaved wait: beyond, the oldest are reported anyway (counted).
func (d *Daemon) afterWrite(events []core.Event, saved, wrote bool) []core.Event {
	if !d.appends {
		return events
	}
	if !saved || !wrote && len(d.unsaved) > 0 {
		d.unsaved = append(d.unsaved, events...)
		if over := len(d.unsaved) - maxUnsaved; over > 0 {
			d.errs["events_reported_unsaved"] += uint64(over)
			events, d.unsaved = d.unsaved[:over], d.unsaved[over:]
			return events
		}
		return nil
	}
	if len(d.unsaved) > 0 {
		events = append(d.unsaved, events...)
		d.unsaved = nil
	}
	return events
}

// maxUnsaved bounds the events held for a write that keeps failing.
const maxUnsaved = 4096

// SlowPersist is how long a write of the core's state (or an append to
// its log) may take before the daemon warns: everything the core sent
// with a promise (a term, a vote) waited for it, so an election or a
// grant is that much later. A healthy local disk takes a millisecond or
// less; a busy one, tens to hundreds.
const SlowPersist = 100 * time.Millisecond

// persisted records a write of the core's state that succeeded: n is its
// bytes (State) or records (Entries), promise whether the Ready's
// messages waited for it. The trace gets its parts; status the counts,
// the last and the slowest; a write over SlowPersist is a warning,
// rate-limited, naming the file and how long its syncs took.
func (d *Daemon) persisted(file string, n int, promise bool, took writeTimes, total time.Duration) {
	w := &PersistWrite{At: d.wallNow(), File: file, Promise: promise,
		WriteUs: took.wrote.Microseconds(), SyncUs: took.synced.Microseconds(), TotalUs: total.Microseconds()}
	if file == CoreLogFile {
		w.Records = n
	} else {
		w.Bytes = n
	}
	p := &d.persist
	p.Writes++
	p.Last = w
	if p.Slowest == nil || w.TotalUs > p.Slowest.TotalUs {
		p.Slowest = w
	}
	if d.tr != nil {
		ev := core.Event{Name: TraceStateWrite, Args: []any{"bytes", n}}
		if file == CoreLogFile {
			ev = core.Event{Name: TraceLogWrite, Args: []any{"records", n}}
		}
		ev.Args = append(ev.Args, "write_us", w.WriteUs, "sync_us", w.SyncUs, "total_us", w.TotalUs, "promise", promise)
		d.tr.log.Local(ev, 0, clock.Vector{}, d.cfg.Clock.Now())
	}
	if total < SlowPersist {
		return
	}
	p.Slow++
	p.LastSlow = w
	waited := "nothing waited for it"
	if promise {
		waited = "the messages that depend on it (a term, a vote, a grant) waited for it"
	}
	d.alerts.report(w.At, slog.LevelWarn, "slow_persist", 0, 0,
		fmt.Sprintf("writing %s took %d ms (%d ms of it syncing to disk): %s", d.state.file(file), total.Milliseconds(), took.synced.Milliseconds(), waited),
		"file", d.state.file(file), "total_ms", total.Milliseconds(), "write_ms", took.wrote.Milliseconds(), "sync_ms", took.synced.Milliseconds(),
		"slow_writes", p.Slow,
		"hint", fmt.Sprintf("the state directory's disk is slow or busy (other processes' writes, a saturated device): put --state-dir on a less busy disk; status: Persist (writes over %v)", SlowPersist))
}

// persistFailing logs a failed state write (persistLog: at once the first
// time, then at most every persistLogEvery) and puts it in the status.
func (d *Daemon) persistFailing(file string, err error, withheld, withdrawn int) {
	now := time.Now()
	logIt := d.persistLog.failed(now)
	d.persist.Failing = &PersistFailure{Since: d.persistLog.failedAt, Last: now, File: file, Err: err.Error(),
		Failed: d.errs["persist_failed"]}
	if !logIt {
		return
	}
	msg := "persisting state failed: nothing that depends on it is sent (and electd leads no term or round it wins) until a write succeeds"
	if withdrawn > 0 {
		msg += "; what the write promised to its calls was taken back (orderd: the sends are answered not_sent, never delivered, safe to send again)"
	}
	d.log.Error(msg,
		"file", file, "err", err, "withheld", withheld, "withdrawn", withdrawn,
		"failing_since", d.persistLog.failedAt, "failed_writes", d.errs["persist_failed"],
		"hint", "free space on the disk of --state-dir, or make it writable; the write is retried with every step")
}

// persistLogEvery spaces the log lines of a state directory that keeps
// failing.
const persistLogEvery = 10 * time.Second

// persistLog decides which lines a failing state directory logs: the
// core retries a failed write with every Ready, up to a hundred times a
// second, and a disk may fail every few writes.
type persistLog struct {
	failedAt time.Time // first failure of the current run; zero: writes work
	loggedAt time.Time // last ERROR
}

// failed records a failed write at now and reports whether to log its
// ERROR: at most every persistLogEvery, across runs of failures too (a
// disk failing one write in three, a run of one then a success, logged
// an ERROR and an INFO for each: found by review; failed_writes counts
// them all).
func (p *persistLog) failed(now time.Time) bool {
	if p.failedAt.IsZero() {
		p.failedAt = now
	}
	if !p.loggedAt.IsZero() && now.Sub(p.loggedAt) < persistLogEvery {
		return false
	}
	p.loggedAt = now
	return true
}

// saved records a successful write: ended reports that it ends a run of
// failures, said that the run was logged (its "works again" line is
// logged only then: a run that said nothing says nothing at its end).
func (p *persistLog) saved() (ended, said bool) {
	if p.failedAt.IsZero() {
		return false, false
	}
	said = !p.loggedAt.Before(p.failedAt)
	p.failedAt = time.Time{}
	return true, said
}

func (d *Daemon) send(s node.Send) {
	fin := func([]byte) []byte { return d.node.Finalize(s, d.cfg.Clock.Now()) }
	var err error
	switch {
	case s.Datagram:
		if d.dgram == nil {
			err = errors.New("core sent a datagram but the daemon has no datagram socket (Config.Datagrams)")
			break
		}
		// UDP writes run the finalizer on this goroutine, just before the
		// syscall: the transmit time it patches is known here afterwards
		// and goes back to the core (a client needs its exact T1).
		var sent []byte
		var at time.Time
		var stamp transport.TxStamp
		stamp, err = d.dgram.SendStamped(s.To, s.Data, func([]byte) []byte {
			at = d.cfg.Clock.Now()
			sent = d.node.Finalize(s, at)
			return sent
		})
		if err == nil && s.Reported() {
			// The kernel's transmit stamp is when the datagram really
			// left; the clock read above precedes it by the sendmsg
			// path. The bytes carry the earlier reading (it had to be
			// written before the send), and that is what a reply
			// echoes; the core matches by the bytes and measures with
			// the time reported here.
			if err := d.node.DatagramSent(s, sent, d.departure(at, stamp)); err != nil {
				d.log.Debug("core refused a sent report", "to", s.To.String(), "err", err)
			}
		}
	case d.ep == nil:
		// A core outside any cluster sent a frame to a member: a bug in
		// the core, counted rather than fatal.
		err = errNoCluster
	case s.Stream:
		// The link's writer finalizes the frame later, on its own
		// goroutine; its send is recorded here, in the order of the
		// loop's events, at the time it was queued (node.StreamQueued).
		queued := d.cfg.Clock.Now()
		if err = d.ep.SendStream(s.To, s.Data, fin); err == nil {
			d.node.StreamQueued(s, queued)
		}
	case s.Report:
		// The core measures time with this frame (Berkeley's polls and
		// readings): tell it when the frame really left.
		var patched time.Time
		var stamp transport.TxStamp
		stampFin := func([]byte) []byte {
			patched = d.cfg.Clock.Now()
			return d.node.Finalize(s, patched)
		}
		if s.Multicast {
			stamp, err = d.ep.SendMulticastStamped(s.Data, stampFin)
		} else {
			stamp, err = d.ep.SendStamped(s.To, s.Data, stampFin)
		}
		if err == nil {
			if err := d.node.FrameSent(s, patched, d.departure(patched, stamp)); err != nil {
				d.log.Debug("core refused a sent report", "kind", s.Kind.String(), "err", err)
			}
		}
	case s.Multicast:
		err = d.ep.SendMulticast(s.Data, fin)
	default:
		err = d.ep.Send(s.To, s.Data, fin)
	}
	if err != nil {
		d.errs["send_failed"]++
		d.log.Debug("send failed", "to", s.To.String(), "kind", s.Kind.String(), "err", err)
	}
}

// departure is when a datagram stamped with the clock reading patched
// really left: the kernel's transmit stamp, if it has one that is
// plausible, else patched.
//
// A stamp the socket asked for and did not get, or an implausible one,
// leaves the core with the earlier reading: a time measurement biased by
// half the send path's time (an NTP client's T1 early by L puts its clock
// L/2 ahead). Each is counted (tx_stamp_missed, tx_stamp_implausible) and
// warned about, at most every txStampLogEvery.
func (d *Daemon) departure(patched time.Time, stamp transport.TxStamp) time.Time {
	if stamp.Kernel {
		k := d.cfg.Clock.FromKernel(stamp.Time)
		if !k.Before(patched) && k.Sub(patched) < maxTxLag {
			return k
		}
		d.txStampFallback("tx_stamp_implausible", "the kernel's transmit stamp is not within "+maxTxLag.String()+" after the clock reading", k.Sub(patched))
		return patched
	}
	if stamp.Missed {
		d.txStampFallback("tx_stamp_missed", "the kernel gave no transmit stamp right after the send", 0)
	}
	return patched
}

// txStampFallback counts a departure taken from the clock reading before
// the send, and warns about it (rate-limited: alerts).
func (d *Daemon) txStampFallback(kind, why string, lag time.Duration) {
	d.errs[kind]++
	args := []any{"why", why, "missed", d.errs["tx_stamp_missed"], "implausible", d.errs["tx_stamp_implausible"]}
	if lag != 0 {
		args = append(args, "stamp_minus_reading", lag)
	}
	d.alerts.report(time.Now(), slog.LevelWarn, "tx_stamp_fallback", 0, txStampLogEvery,
		"a datagram's departure is the clock reading before the send, not the kernel's transmit stamp: "+
			"the time measured with it is early by the send path (an NTP client's offset biased by half of it); "+
			"if it persists, check the socket's transmit timestamping (SO_TIMESTAMPING, see docs/timed.md)", args...)
}

// txStampLogEvery spaces the warnings about transmit stamps not used.
const txStampLogEvery = 10 * time.Minute

// errNoCluster is why a frame to a member cannot leave a daemon that runs
// outside any cluster.
var errNoCluster = errors.New("no cluster: the daemon has no member socket")

// maxTxLag bounds how much later than the Finalizer's clock reading a
// kernel transmit stamp may be and still be used: a stamp beyond it (a
// clock adjusted in between, a stamp matched to the wrong datagram) is
// ignored rather than trusted.
const maxTxLag = 50 * time.Millisecond

func envPrefix(name string) string { return envName(name) }

// MemberListenError is a failure to open this node's own member socket,
// the address its --members entry gives: distinct from the other
// listeners (metrics, datagrams), whose addresses come from their own
// flags, so that what an operator is told to check names the right flag.
type MemberListenError struct {
	Addr netip.AddrPort
	Err  error
}

func (e *MemberListenError) Error() string {
	return fmt.Sprintf("listening on %s (this node's --members entry): %v", e.Addr, e.Err)
}

func (e *MemberListenError) Unwrap() error { return e.Err }
