package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
)

// EventRecord is an event as watchers see it.
type EventRecord struct {
	Time  time.Time      `json:"time"`
	Name  string         `json:"event"`
	Msg   string         `json:"msg,omitempty"`
	Attrs map[string]any `json:"attrs,omitempty"`
	// Lost counts events this watcher missed (it read too slowly) just
	// before this one.
	Lost uint64 `json:"lost,omitempty"`
}

type subscriber struct {
	ch   chan EventRecord
	lost uint64 // owned by the loop
}

const subscriberBuffer = 256

// Subscribe returns a channel of every event from now on and a function to
// stop. A watcher that reads too slowly loses events (counted in the next
// record's Lost), never slows the loop. The channel is closed when the
// daemon stops.
func (d *Daemon) Subscribe() (<-chan EventRecord, func()) {
	s := &subscriber{ch: make(chan EventRecord, subscriberBuffer)}
	d.subMu.Lock()
	if d.subs == nil { // already stopped
		d.subMu.Unlock()
		close(s.ch)
		return s.ch, func() {}
	}
	d.subs[s] = struct{}{}
	d.subMu.Unlock()
	return s.ch, func() {
		d.subMu.Lock()
		defer d.subMu.Unlock()
		if _, ok := d.subs[s]; ok {
			delete(d.subs, s)
			close(s.ch)
		}
	}
}

func (d *Daemon) closeSubscribers() {
	d.subMu.Lock()
	defer d.subMu.Unlock()
	for s := range d.subs {
		close(s.ch)
	}
	d.subs = nil
}

// emit logs, counts, publishes an event and queues its hooks.
func (d *Daemon) emit(e core.Event) {
	d.events[e.Name]++
	d.noteTerm(e, d.wallNow())
	if d.cfg.OnEvent != nil {
		d.cfg.OnEvent(e)
	}
	msg := e.Msg
	if msg == "" {
		msg = e.Name
	}
	level := slog.LevelInfo
	if d.cfg.EventLevel != nil {
		level = d.cfg.EventLevel(e)
	}
	if e.Warn && level < slog.LevelWarn {
		level = slog.LevelWarn
	}
	if d.log.Enabled(context.Background(), level) {
		args := append([]any{"event", e.Name}, logArgs(e.Args)...)
		if level >= slog.LevelWarn || d.eventLog.allow(time.Now(), e.Name, level, msg, args) {
			d.log.Log(context.Background(), level, msg, args...)
		}
	}

	rec := EventRecord{Time: time.Now(), Name: e.Name, Msg: e.Msg, Attrs: attrs(e.Args)}
	d.subMu.Lock()
	for s := range d.subs {
		r := rec
		r.Lost = s.lost
		select {
		case s.ch <- r:
			s.lost = 0
		default:
			s.lost++
		}
	}
	d.subMu.Unlock()

	cmds := d.cfg.Hooks[e.Name]
	if len(cmds) == 0 {
		return
	}
	var env []string
	if d.cfg.HookEnv != nil {
		env = d.cfg.HookEnv(d.node.Core(), e)
	}
	for _, cmd := range cmds {
		d.hooks.enqueue(e, cmd, env)
	}
}

// logArgs is args as the log shows them: a "term" (by synclab's
// convention an owned epoch, pkg/epoch: every core's terms are) becomes an
// epoch.Term, which the text log prints "3 by 2" and the JSON log as the
// raw number.
func logArgs(args []any) []any {
	var out []any
	for i := 0; i+1 < len(args); i += 2 {
		if t, ok := termArg(args[i], args[i+1]); ok {
			if out == nil {
				out = slices.Clone(args)
			}
			out[i+1] = epoch.Term(t)
		}
	}
	if out == nil {
		return args
	}
	return out
}

// termArg says whether key and value are a term.
func termArg(key, v any) (uint64, bool) {
	if k, _ := key.(string); k != "term" {
		return 0, false
	}
	t, ok := v.(uint64)
	return t, ok
}

// TermEnv is a term in a hook's environment: NAME="3 by 2" to read,
// NAME_ROUND and NAME_OWNER, and NAME_RAW, the 64-bit number, which
// compares as terms do (a fencing token, a "newer than" test).
func TermEnv(name string, term uint64) []string {
	return []string{
		name + "=" + epoch.Format(term),
		name + "_ROUND=" + strconv.FormatUint(uint64(epoch.Round(term)), 10),
		name + "_OWNER=" + strconv.FormatUint(uint64(epoch.Owner(term)), 10),
		name + "_RAW=" + strconv.FormatUint(term, 10),
	}
}

func attrs(args []any) map[string]any {
	if len(args) == 0 {
		return nil
	}
	m := make(map[string]any, len(args)/2)
	for i := 0; i+1 < len(args); i += 2 {
		k, ok := args[i].(string)
		if !ok {
			k = fmt.Sprint(args[i])
		}
		v := args[i+1]
		if s, ok := v.(fmt.Stringer); ok {
			if _, isTime := v.(time.Time); !isTime {
				v = s.String()
			}
		}
		m[k] = v
	}
	return m
}
