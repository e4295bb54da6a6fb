package main

import (
	"context"
	"encoding/json"
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
			"(starting) is waited for too. It gives up at once, exit 1, when the daemon's configuration\n" +
			"never synchronises the clock (--no-adjust, nothing to follow). timed-wait.service runs it so\n" +
			"that units ordered After=time-sync.target start on a synchronised clock.",
		Flags: []cli.Flag{app.ControlFlag(name),
			&cli.DurationFlag{Name: "max-error", Usage: "largest acceptable error bound `D` (0: any, as long as synchronised)"},
			&cli.DurationFlag{Name: "timeout", Usage: "give up after `D` (0: wait forever)"},
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
	ctx := c.Context
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cl := app.Client(c)
	last := "no answer from the daemon yet"
	for {
		s, reached, err := lookSync(ctx, cl)
		switch {
		case err != nil:
			return err
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
		select {
		case <-ctx.Done():
			if c.Context.Err() != nil {
				return app.ExitError{Code: 1, Msg: "interrupted: " + last}
			}
			return app.ExitError{Code: 1, Msg: fmt.Sprintf("not synchronised within %v: %s", timeout, last)}
		case <-time.After(interval):
		}
	}
}

// lookSync reads the daemon's Sync once. A daemon that cannot be reached
// is not an error (it may be starting: reached false, s.Why says what
// happened); a daemon that is not timed is.
func lookSync(ctx context.Context, cl *ctl.Client) (s timedcore.Sync, reached bool, err error) {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var st struct {
		Node struct {
			Core json.RawMessage `json:"core"`
		} `json:"node"`
	}
	if err := cl.Get(qctx, "/v1/status", &st); err != nil {
		return timedcore.Sync{Why: err.Error()}, false, nil
	}
	s, err = syncOf(st.Node.Core)
	return s, err == nil, err
}
