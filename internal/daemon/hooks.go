package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/synclab/synclab/pkg/core"
)

// hookRunner runs operator commands bound to events, one at a time and in
// the order the events happened, on its own goroutine: a slow or hanging
// hook delays later hooks (up to its timeout) but never the protocol.
type hookRunner struct {
	prefix  string // environment prefix, e.g. "ELECTD"
	id      uint32
	timeout time.Duration
	log     *slog.Logger
	queue   chan hookJob
	// afterFunc arms a hook's timeout: time.AfterFunc, or a test's
	// timer that fires when the test says (set before the first enqueue).
	afterFunc func(time.Duration, func()) (stop func() bool)

	mu      sync.Mutex
	ran     uint64
	failed  uint64
	dropped uint64

	done chan struct{}
}

type hookJob struct {
	event   core.Event
	command string
	env     []string // extra variables (Config.HookEnv)
}

const hookQueueLen = 64

func newHookRunner(prefix string, id uint32, timeout time.Duration, log *slog.Logger) *hookRunner {
	h := &hookRunner{
		prefix:  prefix,
		id:      id,
		timeout: timeout,
		log:     log,
		queue:   make(chan hookJob, hookQueueLen),
		done:    make(chan struct{}),
		afterFunc: func(d time.Duration, f func()) func() bool {
			return time.AfterFunc(d, f).Stop
		},
	}
	go h.run()
	return h
}

// enqueue never blocks: when hooks fall so far behind that the queue is
// full, the new job is dropped and counted.
func (h *hookRunner) enqueue(e core.Event, command string, env []string) {
	select {
	case h.queue <- hookJob{event: e, command: command, env: env}:
	default:
		h.mu.Lock()
		h.dropped++
		h.mu.Unlock()
		h.log.Error("hook queue full: hook not run", "event", e.Name, "command", command)
	}
}

// stop lets queued hooks finish (each still bounded by its timeout).
func (h *hookRunner) stop() {
	close(h.queue)
	<-h.done
}

func (h *hookRunner) run() {
	defer close(h.done)
	for job := range h.queue {
		err := h.exec(job)
		h.mu.Lock()
		h.ran++
		if err != nil {
			h.failed++
		}
		h.mu.Unlock()
	}
}

// errHookTimeout is why a hook's context ends when its timeout fires.
var errHookTimeout = errors.New("hook timeout")

func (h *hookRunner) exec(job hookJob) error {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stop := h.afterFunc(h.timeout, func() { cancel(errHookTimeout) })
	defer stop()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", job.command)
	cmd.Env = append(append(os.Environ(), hookEnv(h.prefix, h.id, job.event)...), job.env...)
	// Own process group, so a timeout kills the hook's children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	attrs := []any{"event", job.event.Name, "command", job.command, "duration", time.Since(start).Round(time.Millisecond)}
	if len(out) > 0 {
		attrs = append(attrs, "output", truncate(string(out), 512))
	}
	switch {
	case context.Cause(ctx) == errHookTimeout:
		h.log.Error("hook timed out and was killed", append(attrs, "timeout", h.timeout)...)
		return errHookTimeout
	case err != nil:
		h.log.Error("hook failed", append(attrs, "err", err)...)
		return err
	}
	h.log.Info("hook ran", attrs...)
	return nil
}

func (h *hookRunner) stats() map[string]uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return map[string]uint64{"ran": h.ran, "failed": h.failed, "dropped": h.dropped}
}

// hookEnv turns an event into environment variables: PREFIX_EVENT, PREFIX_ID
// and PREFIX_<KEY> for every key/value pair of the event's Args
// (e.g. "leader", 3 becomes ELECTD_LEADER=3); a term is four (TermEnv).
func hookEnv(prefix string, id uint32, e core.Event) []string {
	env := []string{
		prefix + "_EVENT=" + e.Name,
		fmt.Sprintf("%s_ID=%d", prefix, id),
	}
	for i := 0; i+1 < len(e.Args); i += 2 {
		key, ok := e.Args[i].(string)
		if !ok {
			continue
		}
		if t, ok := termArg(key, e.Args[i+1]); ok {
			env = append(env, TermEnv(prefix+"_"+envName(key), t)...)
			continue
		}
		env = append(env, prefix+"_"+envName(key)+"="+fmt.Sprint(e.Args[i+1]))
	}
	return env
}

func envName(key string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, key)
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
