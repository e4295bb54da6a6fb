package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/synclab/synclab/internal/ctl"
)

var (
	electTraces = flag.Bool("elect.traces", true, "trace every failover trial (electd trace start on every member before the kill, stop once the survivors agree) and keep the traces of the slow ones in -elect.keep; false: no tracing (to measure what it costs)")
	electKeep   = flag.String("elect.keep", "", "`DIR` the traces of slow trials are kept in, one directory per trial (default: a new synclab-elect-traces-TIME under $TMPDIR, made only when a trial is kept; never removed)")
)

// traceLead is how long the members trace before the trial's random
// phase starts: at least two heartbeats at electd's defaults, so that
// every trace shows the leader heard before the kill.
const traceLead = 100 * time.Millisecond

// traceTrial starts a trace on every member for trial: a new file each,
// under the run's directory. It returns the files by host, or nil when
// -elect.traces is off or the cluster does not trace its trials.
func (c *electdCluster) traceTrial(trial int) map[int]string {
	e := c.e
	e.b.Helper()
	if !*electTraces || !c.traced {
		return nil
	}
	dir := filepath.Join(e.dir, "trials", fmt.Sprintf("e%d", c.spec.port))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.fatal(err)
	}
	files := map[int]string{}
	c.attempts++ // a repeated trial traces to new files: the earlier attempt's are kept (keepEarly)
	for i := 1; i <= c.spec.members(); i++ {
		f, err := filepath.Abs(filepath.Join(dir, fmt.Sprintf("t%02d-a%d-h%d.trace", trial, c.attempts, i)))
		if err != nil {
			e.fatal(err)
		}
		os.Remove(f) // a trace never overwrites a file (a run's directory reused)
		ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
		err = c.clients[i].Post(ctx, "/v1/trace/start", map[string]any{"file": f}, nil)
		cancel()
		if err != nil {
			e.fatalf("%s: trial %d: electd trace start on h%d: %v", c.spec.label, trial, i, err)
		}
		files[i] = f
	}
	e.sleep(traceLead)
	return files
}

// untrace stops the survivors' traces (the killed leader's ended with
// it, cut at its last flush, at most 250 ms before the kill).
func (c *electdCluster) untrace(files map[int]string, killed int) {
	e := c.e
	e.b.Helper()
	for i := range files {
		if i == killed {
			continue
		}
		ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
		var st struct {
			Dropped uint64 `json:"dropped"`
			Error   string `json:"error"`
		}
		err := c.clients[i].Post(ctx, "/v1/trace/stop", struct{}{}, &st)
		cancel()
		var ce *ctl.ConnectError
		switch {
		case errors.As(err, &ce):
			e.logf("%s: h%d's trace not stopped (%v): its file ends where the daemon stopped", c.spec.label, i, err)
		case err != nil:
			e.fatalf("%s: electd trace stop on h%d: %v", c.spec.label, i, err)
		case st.Error != "" || st.Dropped > 0:
			e.logf("%s: h%d's trace %s is incomplete: %d events dropped, write error %q", c.spec.label, i, files[i], st.Dropped, st.Error)
		}
	}
}

// keepEarly keeps the traces of an attempt whose survivors had elected
// before the kill (a false suspicion of the live leader: the trial is
// repeated), named in the output: they are what explains it.
func (c *electdCluster) keepEarly(trial int, files map[int]string) {
	e := c.e
	e.b.Helper()
	if len(files) == 0 {
		return
	}
	dir := filepath.Join(e.keepDir(), Slug(c.spec.label), fmt.Sprintf("trial-%02d-attempt-%d-elected-before-the-kill", trial, c.attempts))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.fatal(err)
	}
	for h, f := range files {
		if err := moveFile(f, filepath.Join(dir, fmt.Sprintf("h%d.trace", h))); err != nil {
			e.fatal(err)
		}
	}
	e.logf("%s: trial %d: the survivors elected before the kill; its traces kept in %s: electd trace draw %s/*.trace -o trial.html", c.spec.label, trial, dir, dir)
}

// keepSlow moves the traces of the phase's slow trials (SlowTrials) to
// -elect.keep, names them in the output with their frames, and removes the
// others' (a run of 20 trials writes about 1 MB of them).
func (c *electdCluster) keepSlow(trials []TrialRecord) {
	e := c.e
	e.b.Helper()
	if len(trials) == 0 || trials[0].Traces == nil {
		return
	}
	goal := targetFailoverP99
	if c.spec.quorum() {
		goal = targetQuorumFailoverP99
	}
	slow := SlowTrials(trials, goal)
	e.logf("%s: %d of %d trials kept for reading (over %s, more election frames than the fewest of the run, or no survivor took a port hint)", c.spec.label, len(slow), len(trials), Millis(goal))
	for _, t := range slow {
		dir := filepath.Join(e.keepDir(), Slug(c.spec.label), fmt.Sprintf("trial-%02d", t.Trial))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			e.fatal(err)
		}
		var names []string
		for _, h := range slices.Sorted(maps.Keys(t.Traces)) {
			name := fmt.Sprintf("h%d.trace", h)
			if h == t.Killed {
				name = fmt.Sprintf("h%d-killed.trace", h)
			}
			if err := moveFile(t.Traces[h], filepath.Join(dir, name)); err != nil {
				e.fatal(err)
			}
			names = append(names, name)
			delete(t.Traces, h)
		}
		if err := os.WriteFile(filepath.Join(dir, "trial.txt"), []byte(t.Account(c.spec.label)), 0o644); err != nil {
			e.fatal(err)
		}
		for h, st := range t.Status {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("h%d.status.json", h)), st, 0o644); err != nil {
				e.fatal(err)
			}
		}
		for h, log := range t.Logs {
			b, err := os.ReadFile(log)
			if err != nil {
				e.fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("h%d.log", h)), b, 0o644); err != nil {
				e.fatal(err)
			}
		}
		e.logf("%s: trial %d: leader %d killed, all on %d after %s: %s; frames sent by the survivors: %s; traces in %s (%s; trial.txt: the kill's instant; hN.log, hN.status.json: the daemons' logs, the survivors' status): electd trace draw %s/*.trace -o trial.html",
			c.spec.label, t.Trial, t.Killed, t.Leader, Millis(t.Took), t.Why, FramesByKind(t.Frames), dir, strings.Join(names, " "), dir)
	}
	for _, t := range trials {
		for _, f := range t.Traces {
			os.Remove(f)
		}
	}
}

// evidence is what the traces do not record of a trial: every member's
// log file (the killed one's too: its process is restarted after) and
// each survivor's status, read once they agreed.
func (c *electdCluster) evidence(survivors []int) (map[int]string, map[int][]byte) {
	e := c.e
	e.b.Helper()
	logs, status := map[int]string{}, map[int][]byte{}
	for i, p := range c.procs {
		logs[i] = p.LogPath()
	}
	for _, i := range survivors {
		ctx, cancel := context.WithTimeout(e.ctx, 2*time.Second)
		var st json.RawMessage
		err := c.clients[i].Get(ctx, "/v1/status", &st)
		cancel()
		if err != nil {
			e.fatalf("%s: status of node %d: %v", c.spec.label, i, err)
		}
		status[i] = st
	}
	return logs, status
}

// keepDir is -elect.keep, or the run's default one, made at the first
// call.
func (e *electBench) keepDir() string {
	if e.keep == "" {
		e.keep = *electKeep
		if e.keep == "" {
			e.keep = filepath.Join(os.TempDir(), "synclab-elect-traces-"+time.Now().UTC().Format("20060102-150405"))
		}
		e.logf("keeping the slow trials' traces in %s", e.keep)
	}
	return e.keep
}

// moveFile renames from to to, or copies it when they are on different
// file systems (the run's temporary directory and -elect.keep).
func moveFile(from, to string) error {
	if err := os.Rename(from, to); err == nil {
		return nil
	}
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		return err
	}
	return os.Remove(from)
}
