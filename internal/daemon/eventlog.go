package daemon

import (
	"context"
	"log/slog"
	"time"
)

// eventLog keeps the protocol's events below WARN (a lock granted, a
// member up, a leader elected) from flooding the log: per event name, the
// first eventLogBurst lines of each eventLogEvery are written, the rest
// counted, and at the end of the window the latest of them is written
// with the count (repeated=N within=10s), as alerts does for WARN.
//
// Why: a lock taken in a loop is thousands of lock_granted a second, and
// journald, by default, drops every line of a service that writes over
// 10,000 in 30 s, its WARNs among them; each line also costs the daemon a
// write. At human rates (a lab's locks, elections) nothing is held back.
// Every event still reaches the counters, GET /v1/events and the hooks.
type eventLog struct {
	log   *slog.Logger
	every time.Duration
	burst int
	names map[string]*eventLogState
}

type eventLogState struct {
	start      time.Time // the window's start
	written    int       // lines written in the window
	suppressed uint64    // events not written in the window
	level      slog.Level
	msg        string
	args       []any // the latest not written
}

const (
	eventLogEvery = 10 * time.Second
	eventLogBurst = 20
)

func newEventLog(log *slog.Logger) *eventLog {
	return &eventLog{log: log, every: eventLogEvery, burst: eventLogBurst, names: map[string]*eventLogState{}}
}

// allow says whether the event name's line at now is written; if not, it
// keeps the line to write with the count when the window ends. A nil
// eventLog (a Daemon built by hand in a test) holds nothing back.
func (l *eventLog) allow(now time.Time, name string, level slog.Level, msg string, args []any) bool {
	if l == nil {
		return true
	}
	s := l.names[name]
	if s == nil {
		s = &eventLogState{start: now}
		l.names[name] = s
	}
	if l.ended(s, now) {
		l.end(s, now)
	}
	if s.written < l.burst {
		s.written++
		return true
	}
	s.suppressed++
	s.level, s.msg, s.args = level, msg, args
	return false
}

// flush ends every window that has run its length: the names with lines
// held back get the latest of them written with the count; a name quiet
// for a whole window is forgotten.
func (l *eventLog) flush(now time.Time) {
	if l == nil {
		return
	}
	for name, s := range l.names {
		if !l.ended(s, now) {
			continue
		}
		if s.written == 0 && s.suppressed == 0 {
			delete(l.names, name)
			continue
		}
		l.end(s, now)
	}
}

// close writes what every window held back, over or not (the daemon
// stops).
func (l *eventLog) close(now time.Time) {
	if l == nil {
		return
	}
	for _, s := range l.names {
		if s.suppressed > 0 {
			l.end(s, now)
		}
	}
}

// ended says whether s's window is over at now (a clock set back ends it
// too, rather than holding lines back for as long as it was set back).
func (l *eventLog) ended(s *eventLogState, now time.Time) bool {
	return now.Sub(s.start) >= l.every || now.Before(s.start)
}

// end writes the window's held-back count, if any, and starts a new one.
func (l *eventLog) end(s *eventLogState, now time.Time) {
	if s.suppressed > 0 {
		args := append(append([]any{}, s.args...), "repeated", s.suppressed, "within", now.Sub(s.start).Round(time.Second).String())
		l.log.Log(context.Background(), s.level, s.msg, args...)
	}
	s.start, s.written, s.suppressed, s.args = now, 0, 0, nil
}
