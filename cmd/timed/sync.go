package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/pkg/timesync/timedcore"
)

// exitUnsynchronised is `timed status`'s exit code when the daemon answers
// but the clock is not synchronised (ntpstat's convention, moved off 1 and
// 2, which mean failure and usage error here).
const exitUnsynchronised = 3

// renderSync prints the one line that says whether the clock is
// synchronised, to what and within which bound: the only place the bound
// is printed, in the one style of every bound.
func renderSync(w io.Writer, s timedcore.Sync) error {
	_, err := fmt.Fprintf(w, "Time     : %s\n", syncLine(s))
	return err
}

func syncLine(s timedcore.Sync) string {
	switch s.State {
	case timedcore.StateSynchronised:
		line := "synchronised to " + s.Source
		if s.ErrorBoundNS != nil {
			line += ", error bound " + app.FormatBound(time.Duration(*s.ErrorBoundNS))
		}
		return line
	case timedcore.StateLocalReference:
		return "the lab's reference, serving " + s.Source + " (no error bound: nothing to compare it with); " + s.Why
	case timedcore.StateMeasuring:
		return "measuring only: " + s.Why
	}
	return "unsynchronised: " + s.Why
}

// syncOf reads the Sync out of timed's core status.
func syncOf(core []byte) (timedcore.Sync, error) {
	var v struct {
		Sync *timedcore.Sync `json:"sync"`
	}
	if err := json.Unmarshal(core, &v); err != nil || v.Sync == nil {
		return timedcore.Sync{}, fmt.Errorf("unexpected timed status: no synchronisation state (a timed older than this CLI?)")
	}
	return *v.Sync, nil
}

// statusExit is `timed status`'s exit code: 0 synchronised (or the lab's
// reference), 3 not.
func statusExit(core []byte) error {
	s, err := syncOf(core)
	if err != nil {
		return err
	}
	if s.Synchronized {
		return nil
	}
	return app.ExitError{Code: exitUnsynchronised}
}

func waitsyncCommand() *cli.Command {
	return &cli.Command{
		Name:  "waitsync",
		Usage: "wait until the clock is synchronised within --max-error (exit 0), or --timeout passes (exit 1)",
		Description: "Polls the running daemon every --interval until it holds the clock synchronised to a source\n" +
			"with an error bound of at most --max-error (0: any bound), or serves as the lab's reference\n" +
			"(--serve --stratum N, nothing to follow), like `chronyc waitsync`. A daemon not answering yet\n" +
			"(starting) is waited for too. --timeout bounds the wait, not a look: a look under way when it\n" +
			"passes is finished (a daemon that does not answer a look within 5s is said to), so that the\n" +
			"verdict is the daemon's last word even on a loaded host; the last look is at --timeout.\n" +
			"It gives up at once, exit 1, when the daemon's configuration\n" +
			"never synchronises the clock (--no-adjust, nothing to follow). timed-wait.service runs it so\n" +
			"that units ordered After=time-sync.target start on a synchronised clock.",
		Flags: []cli.Flag{app.ControlFlag(name),
			&cli.DurationFlag{Name: "max-error", Usage: "largest acceptable error bound `D` (0: any, as long as synchronised)"},
			&cli.DurationFlag{Name: "timeout", Usage: "wait at most `D` for synchronisation, then give up after the look under way (0: wait forever)"},
			&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "time `D` between two looks"},
		},
		Action: waitsync,
	}
}

func waitsync(c *cli.Context) error {
	if c.NArg() > 0 {
		return app.Usagef("waitsync takes no arguments (flags: --max-error D, --timeout D)")
	}
	maxErr, timeout, interval := c.Duration("max-error"), c.Duration("timeout"), c.Duration("interval")
	switch {
	case maxErr < 0 || timeout < 0:
		return app.Usagef("--max-error and --timeout must not be negative")
	case interval < 10*time.Millisecond:
		return app.Usagef("--interval %v: want 10ms or more", interval)
	}
	// --timeout bounds the wait for synchronisation, not a look: a look
	// under way at the deadline runs to its own bound (lookBound), so that
	// the verdict is always the daemon's last word. On a loaded host the
	// look was cut at the deadline instead, and `waitsync --timeout 2s`
	// said "no answer from the daemon (... context deadline exceeded)" of
	// a daemon that was answering, slowly.
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	cl := app.Client(c)
	last := "no answer from the daemon yet"
	for {
		s, reached, err := lookSync(c.Context, cl)
		switch {
		case err != nil:
			return err
		case c.Context.Err() != nil:
			return app.ExitError{Code: 1, Msg: "interrupted: " + last}
		case !reached:
			last = "no answer from the daemon (" + s.Why + ")"
		case s.Never:
			return app.ExitError{Code: 1, Msg: "the clock will never be synchronised here: " + s.Why}
		case s.Synchronized && (s.ErrorBoundNS == nil || maxErr == 0 || time.Duration(*s.ErrorBoundNS) <= maxErr):
			fmt.Fprintln(c.App.Writer, syncLine(s))
			return nil
		case s.Synchronized:
			last = fmt.Sprintf("synchronised to %s, but the error bound %s is above --max-error %s", s.Source,
				app.FormatBound(time.Duration(*s.ErrorBoundNS)), app.FormatDuration(maxErr))
		default:
			last = syncLine(s)
		}
		wait := interval
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return app.ExitError{Code: 1, Msg: fmt.Sprintf("not synchronised within %v: %s", timeout, last)}
			}
			// The last look is at the deadline, not up to an
			// --interval before it.
			wait = min(wait, left)
		}
		select {
		case <-c.Context.Done():
			return app.ExitError{Code: 1, Msg: "interrupted: " + last}
		case <-time.After(wait):
		}
	}
}

// lookBound bounds one look: a daemon that has not answered its status
// in that long is reported as such, and waited for again at the next look
// (a variable: a test shortens it).
var lookBound = 5 * time.Second

// lookSync reads the daemon's Sync once. A daemon that cannot be reached
// is not an error (it may be starting: reached false, s.Why says what
// happened); a daemon that is not timed is.
func lookSync(ctx context.Context, cl *ctl.Client) (s timedcore.Sync, reached bool, err error) {
	qctx, cancel := context.WithTimeout(ctx, lookBound)
	defer cancel()
	var st struct {
		Node struct {
			Core json.RawMessage `json:"core"`
		} `json:"node"`
	}
	if err := cl.Get(qctx, "/v1/status", &st); err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return timedcore.Sync{Why: fmt.Sprintf("the daemon at %s did not answer its status within %v", cl.Path(), lookBound)}, false, nil
		}
		return timedcore.Sync{Why: err.Error()}, false, nil
	}
	s, err = syncOf(st.Node.Core)
	return s, err == nil, err
}
