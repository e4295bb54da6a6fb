package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/mutex"
)

// Exit codes of `mutexd lock` besides the child's own.
const (
	// exitTimeout: --timeout passed before the lock was granted
	// (EX_TEMPFAIL, as flock(1) -w and many tools use it).
	exitTimeout = 75
	// exitLost: the lock was lost (or could not be renewed in time) while
	// the command ran; the command was terminated.
	exitLost = 76
)

// killMargin is how long before the client's deadline the child's group
// has been sent SIGKILL: the kernel needs a moment to end it. The
// deadline itself already falls before the daemon's end of the lease.
const killMargin = 50 * time.Millisecond

// forwarded are the signals `mutexd lock` passes on to its child's group.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

func lockCommand() *cli.Command {
	return &cli.Command{
		Name:      "lock",
		Usage:     "run a command while holding a lock, like flock(1) across the cluster",
		ArgsUsage: "NAME -- CMD [ARGS...]",
		Description: "Acquires lock NAME, runs CMD with MUTEXD_LOCK=NAME and MUTEXD_FENCE=FENCE in its environment,\n" +
			"renews the lease every third of it while CMD runs, releases the lock when CMD exits and\n" +
			"exits with CMD's status (128+N if it died of signal N). If the lock is lost, or cannot be\n" +
			"renewed before the lease runs out, CMD's process group gets SIGTERM, then SIGKILL after\n" +
			"--grace (always before the lease ends), and mutexd lock exits 76. --timeout expiry exits 75.\n" +
			"SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are forwarded to CMD's process group.\n" +
			"With --algorithm tokenask, CMD also gets MUTEXD_VECTOR, its request's vector timestamp: a program\n" +
			"message CMD sends carries it, and the receiver's `mutexd lock --after \"$VECTOR\"` is granted only\n" +
			"after this request (and every request it followed).",
		Flags: []cli.Flag{
			app.ControlFlag(name),
			&cli.DurationFlag{Name: "timeout", Usage: "give up (exit 75) if not granted within `D` (0: wait as long as it takes)"},
			&cli.DurationFlag{Name: "lease", Usage: "lease to ask for, `D` (0: the cluster's --lease); renewed every third of it"},
			&cli.BoolFlag{Name: "shared", Usage: "take the lock shared (readers together, never beside a writer), where the algorithm offers it"},
			&cli.DurationFlag{Name: "grace", Value: defaultGrace, Usage: "time `D` between SIGTERM and SIGKILL when the lock is lost (cut short by the lease's end)"},
			&cli.StringFlag{Name: "after", Usage: "(tokenask) the `VECTOR` of a program message this client received (MUTEXD_VECTOR of its sender's command, or `mutexd vector` on the sender's host): the lock is granted only after every request it names"},
		},
		Action: lockAction,
	}
}

func vectorCommand() *cli.Command {
	return &cli.Command{
		Name:  "vector",
		Usage: "(tokenask) print this member's vector clock: its latest request's stamp, what a program message sent now carries",
		Description: "Prints MEMBER:INCARNATION.SEQ entries joined by commas (empty before this member's first request),\n" +
			"as `mutexd lock --after` takes them: a client that sends a program message to another machine\n" +
			"after its own request was made stamps the message with this, and the receiver passes it on, so that\n" +
			"its request is never granted before the sender's. Only with --algorithm tokenask (else exit 1).\n" +
			"Refused (exit 1, 503) while this member's incarnation is not on disk yet (its first state write\n" +
			"pending or failing): a crash would make the next run's requests carry the same stamps; ask again.",
		Flags: []cli.Flag{app.ControlFlag(name)},
		Action: func(c *cli.Context) error {
			client := app.Client(c)
			defer client.Close()
			var v vectorView
			if err := client.Get(c.Context, "/v1/vector", &v); err != nil {
				return err
			}
			fmt.Fprintln(c.App.Writer, v.Vector)
			return nil
		},
	}
}

// lockRun is one `mutexd lock`: the grant, the child, the deadline.
type lockRun struct {
	client  *ctl.Client
	name    string
	path    string // /v1/locks/NAME/
	grace   time.Duration
	stderr  io.Writer
	request string
	fence   uint64
	vector  string        // the request's vector timestamp (tokenask)
	lease   time.Duration // as granted
	// deadline is this client's own end of the lease: the monotonic time
	// just before the request that granted or renewed it was sent, plus
	// the lease_left_ms the daemon answered. The daemon's lease ends
	// later than that.
	deadline time.Time
}

func lockAction(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) == 0 {
		return app.Usagef("lock needs a lock NAME and a command: mutexd lock NAME -- CMD [ARGS...]")
	}
	lockName, argv := args[0], args[1:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return app.Usagef("lock %s: no command to run: mutexd lock NAME -- CMD [ARGS...]", lockName)
	}
	timeout, lease, grace := c.Duration("timeout"), c.Duration("lease"), c.Duration("grace")
	switch {
	case timeout < 0:
		return app.Usagef("--timeout %v: must be 0 (wait as long as it takes) or positive", timeout)
	case lease < 0 || lease > 0 && lease < time.Millisecond:
		return app.Usagef("--lease %v: must be 0 (the cluster's) or at least 1ms", lease)
	case grace < 0:
		return app.Usagef("--grace %v: must not be negative", grace)
	}
	r := &lockRun{
		client: app.Client(c),
		name:   lockName,
		path:   "/v1/locks/" + lockName + "/",
		grace:  grace,
		stderr: c.App.ErrWriter,
	}
	defer r.client.Close()

	// Signals are caught from the start: one that arrives while waiting
	// for the lock ends the wait (the daemon withdraws the request when
	// the connection closes), one that arrives later goes to the child.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	mode := mutex.Exclusive
	if c.Bool("shared") {
		mode = mutex.Shared
	}
	if err := r.acquire(c.Context, sigs, timeout, lease, mode, c.String("after"), strings.Join(argv, " ")); err != nil {
		return err
	}
	return r.run(argv, sigs)
}

type grantAnswer struct {
	Request     string `json:"request"`
	Fence       uint64 `json:"fence"`
	Vector      string `json:"vector"`
	LeaseMS     int64  `json:"lease_ms"`
	LeaseLeftMS int64  `json:"lease_left_ms"`
}

func (r *lockRun) acquire(ctx context.Context, sigs <-chan os.Signal, timeout, lease time.Duration, mode mutex.Mode, after, what string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A signal while waiting ends the wait: the connection closes and the
	// daemon withdraws the request (or releases a grant that raced it).
	caught := make(chan os.Signal, 1)
	watcher := make(chan struct{})
	go func() {
		defer close(watcher)
		select {
		case s := <-sigs:
			caught <- s
			cancel()
		case <-ctx.Done():
		}
	}()
	client := fmt.Sprintf("mutexd lock pid %d: %s", os.Getpid(), what)
	if len(client) > maxClientLen {
		client = strings.ToValidUTF8(client[:maxClientLen-3], "") + "..."
	}
	req := acquireRequest{LeaseMS: lease.Milliseconds(), TimeoutMS: timeout.Milliseconds(), Client: client, Mode: mode, After: after}
	if timeout > 0 && req.TimeoutMS == 0 {
		req.TimeoutMS = 1
	}
	var g grantAnswer
	sent := now()
	slow := make(chan struct{})
	// Ends the slow grant's status query when the grant came (or a
	// signal): only a refusal (a timeout) waits for its cause.
	quiet, hush := context.WithCancel(context.WithoutCancel(ctx))
	defer hush()
	go func() {
		defer close(slow)
		r.watchSlow(ctx, quiet, client)
	}()
	err := r.client.Post(ctx, r.path+"acquire", req, &g)
	if err == nil || len(caught) > 0 {
		hush()
	}
	cancel()
	<-watcher
	<-slow
	select {
	case s := <-caught:
		if err == nil { // granted as the signal came: nothing will run under it
			r.request = g.Request
			r.release()
		}
		return app.ExitError{Code: 128 + int(s.(syscall.Signal)), Msg: fmt.Sprintf("lock %s: %v while waiting for the lock: gave up", r.name, s)}
	default:
	}
	var ce *ctl.Error
	switch {
	case err == nil:
	case errors.As(err, &ce) && ce.Code == ctl.CodeTimeout:
		return app.ExitError{Code: exitTimeout, Msg: fmt.Sprintf("lock %s: not granted within %v", r.name, timeout)}
	default:
		return fmt.Errorf("lock %s: %w", r.name, err)
	}
	r.request, r.fence, r.vector = g.Request, g.Fence, g.Vector
	r.lease = time.Duration(g.LeaseMS) * time.Millisecond
	r.deadline = sent.Add(time.Duration(g.LeaseLeftMS) * time.Millisecond)
	if needsAnchor(r.lease, until(r.deadline), r.grace) {
		// The request waited in the queue: the deadline counted from
		// before it was sent has mostly (or wholly) passed, though the
		// daemon's lease has just begun, or so far that the keeper would
		// warn the command before its first renewal. A renewal counts it
		// again from now.
		return r.anchor()
	}
	return nil
}

// slowGrant is how long `mutexd lock` waits for its grant before it asks
// the daemon whether the grant waits for its state write, and then a
// fifth of how often it asks again until it has said so once (a listing
// of every lock, for as long as a busy lock keeps it waiting).
const slowGrant = 2 * time.Second

// watchSlow says on stderr, once, that the grant waits for the member's
// state to be written when the daemon shows this client's request (by its
// client string) granted and waiting for the write (mutex.UnsavedGrant)
// while the request waits (until ctx ends): a grant's fence is built on
// numbers the member must have on disk first, so the client would
// otherwise wait without a word while the daemon logs ERRORs. A slow
// grant for any other reason (a busy lock, a member cut off) says
// nothing, even while a write the grant does not wait for fails (a
// review: the disk was blamed for a busy lock's queue).
func (r *lockRun) watchSlow(ctx, quiet context.Context, client string) {
	t := time.NewTimer(slowGrant)
	defer t.Stop()
	start := now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if r.grantUnsaved(ctx, client) {
			var st struct {
				Persist daemon.PersistStatus `json:"persist"`
			}
			cause := "its state write has not completed (a slow disk)"
			// Not cut short by the request's end: the acquire answered
			// (a timeout) while this asked, and the cause, already
			// shown waiting, was said as a slow disk where the disk
			// failed (TestLockSaysDiskFailing under CI's load).
			sctx, scancel := context.WithTimeout(quiet, time.Second)
			err := r.client.Get(sctx, "/v1/status", &st)
			scancel()
			if quiet.Err() != nil {
				return // granted meanwhile (or a signal): nothing to say
			}
			if err == nil && st.Persist.Failing != nil {
				f := st.Persist.Failing
				cause = fmt.Sprintf("this member cannot write its state (%s: %s; failing since %s, %d failed writes)",
					f.File, f.Err, f.Since.Format("15:04:05"), f.Failed)
			}
			fmt.Fprintf(r.stderr, "%s: lock %s: still waiting after %v: granted, but %s, "+
				"and a grant reaches its client only once what its fence is built on is on disk; free space or fix permissions under its --state-dir (mutexd status: Persist)\n",
				name, r.name, now().Sub(start).Round(time.Second), cause)
			return
		}
		t.Reset(5 * slowGrant)
	}
}

// grantUnsaved says whether the daemon shows the request of client for
// this lock granted and waiting for the state write.
func (r *lockRun) grantUnsaved(ctx context.Context, client string) bool {
	var v locksView
	if err := r.client.Get(ctx, "/v1/locks", &v); err != nil {
		return false
	}
	for _, l := range v.Locks {
		if l.Name != r.name {
			continue
		}
		for _, h := range l.Holders {
			if h.Client == client && h.Unsaved == mutex.UnsavedGrant {
				return true
			}
		}
	}
	return false
}

// anchor renews a fresh grant to set the deadline from a request sent
// now; a lease it cannot confirm is given back.
func (r *lockRun) anchor() error {
	var err error
	for try := 0; try < 3; try++ {
		res := make(chan renewResult, 1)
		r.deadline = now().Add(r.lease / 2) // bounds each try's wait
		r.renew(res)
		v := <-res
		if err = v.err; err == nil {
			r.deadline = v.sent.Add(v.left)
			return nil
		}
		var ce *ctl.Error
		if errors.As(err, &ce) && (ce.Status == http.StatusGone || ce.Status == http.StatusNotFound) {
			return app.ExitError{Code: exitLost, Msg: fmt.Sprintf("lock %s: lost right after the grant: %s", r.name, ce.Msg)}
		}
	}
	r.release()
	return fmt.Errorf("lock %s: granted, but the lease could not be confirmed (%w); released it", r.name, err)
}

// renewResult is one renewal's outcome, sent by its goroutine.
type renewResult struct {
	sent time.Time
	left time.Duration
	err  error
}

// run starts the child and keeps the lock until it exits.
func (r *lockRun) run(argv []string, sigs <-chan os.Signal) error {
	if until(r.deadline) <= killMargin {
		r.release()
		return app.ExitError{Code: exitLost, Msg: fmt.Sprintf("lock %s: the lease was over before %s could start", r.name, argv[0])}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "MUTEXD_LOCK="+r.name, "MUTEXD_FENCE="+strconv.FormatUint(r.fence, 10))
	if r.vector != "" {
		cmd.Env = append(cmd.Env, "MUTEXD_VECTOR="+r.vector)
	}
	// Its own process group, so that SIGKILL reaches whatever it started;
	// on a terminal, the foreground group, so that it can read the
	// terminal and Ctrl-C reaches it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	tty := app.IsTerminal(0)
	if tty {
		cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, 0
	}
	if err := cmd.Start(); err != nil {
		r.release()
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = 127 // as a shell says it
		}
		return app.ExitError{Code: code, Msg: fmt.Sprintf("lock %s: %v", r.name, err)}
	}
	if tty {
		defer takeTerminal()
	}
	pgid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// The real-time shell around the keeper: it feeds the keeper the
	// steady clock, renewal results and the child's exit, and does what
	// the keeper says.
	k := newKeeper(now(), r.deadline, r.lease, r.grace, argv[0])
	renewed := make(chan renewResult, 1)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	act := func(a keeperAction) {
		if a.Warn != "" {
			fmt.Fprintf(r.stderr, "%s: lock %s: %s\n", name, r.name, a.Warn)
		}
		if a.Term {
			syscall.Kill(-pgid, syscall.SIGTERM)
		}
		if a.Kill {
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
		if a.Renew {
			r.deadline = k.deadline // bounds the renewal's wait
			go r.renew(renewed)
		}
		if !a.Wake.IsZero() {
			timer.Reset(timerFor(a.Wake.Sub(now())))
		}
	}
	act(k.Tick(now()))
	for {
		select {
		case err := <-exited:
			return r.finish(cmd, err, k.Lost())
		case s := <-sigs:
			syscall.Kill(-pgid, s.(syscall.Signal))
		case <-timer.C:
			act(k.Tick(now()))
		case res := <-renewed:
			out := renewOutcome{Sent: res.sent, Left: res.left, Err: res.err}
			var ce *ctl.Error
			if errors.As(res.err, &ce) && (ce.Status == http.StatusGone || ce.Status == http.StatusNotFound || ce.Status == http.StatusConflict) {
				out.Gone, out.Err = true, errors.New(ce.Msg)
			}
			act(k.Renewed(now(), out))
		}
	}
}

// renew asks the daemon once, bounded so that a stuck daemon cannot hold
// the answer past the deadline.
func (r *lockRun) renew(out chan<- renewResult) {
	wait := max(min(until(r.deadline), 2*renewWait), 10*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var v struct {
		LeaseLeftMS int64 `json:"lease_left_ms"`
	}
	sent := now()
	err := r.client.Post(ctx, r.path+"renew", renewRequest{Request: r.request, LeaseMS: r.lease.Milliseconds()}, &v)
	out <- renewResult{sent: sent, left: time.Duration(v.LeaseLeftMS) * time.Millisecond, err: err}
}

// release gives the lock back; it reports a failure on stderr and returns
// false.
func (r *lockRun) release() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := r.client.Post(ctx, r.path+"release", releaseRequest{Request: r.request}, nil)
	if err != nil {
		fmt.Fprintf(r.stderr, "%s: warning: lock %s (fence %d): release failed: %v (the lease ends on its own)\n", name, r.name, r.fence, err)
		return false
	}
	return true
}

func (r *lockRun) finish(cmd *exec.Cmd, waitErr error, lost string) error {
	if lost == "" {
		r.release()
	} else {
		// Best effort: if the daemon still counts the lease (it was only
		// unreachable), the next client need not wait for it to run out.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		r.client.Post(ctx, r.path+"release", releaseRequest{Request: r.request}, nil)
		cancel()
	}
	code := 0
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Signaled():
			code = 128 + int(ws.Signal())
		case ws.Exited():
			code = ws.ExitStatus()
		}
	} else if waitErr != nil {
		code = 1
	}
	if lost != "" {
		return app.ExitError{Code: exitLost, Msg: fmt.Sprintf("lock %s (fence %d) lost while %s ran: %s; %s was terminated (status %d)",
			r.name, r.fence, cmd.Args[0], lost, cmd.Args[0], code)}
	}
	if code != 0 {
		return app.ExitError{Code: code}
	}
	return nil
}

// The client's deadlines are on the daemon's time scale: the raw
// oscillator (clock.Steady), which no adjustment of the system clock
// moves. Go's timers run on CLOCK_MONOTONIC, which timed's slews speed up
// or slow down by up to 8%; so a timer is armed for 90% of what is left
// and the step that fires re-reads the steady clock and arms it again.
var steady = clock.NewSteady()

func now() time.Time                         { return steady.Now() }
func until(t time.Time) time.Duration        { return t.Sub(steady.Now()) }
func timerFor(d time.Duration) time.Duration { return max(d*9/10, 0) }

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// takeTerminal makes this process's group the terminal's foreground group
// again once the child (which had it) is gone. A background group asking
// for that gets SIGTTOU unless it ignores it.
func takeTerminal() {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, unix.Getpgrp())
}
