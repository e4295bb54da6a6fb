package daemon

import (
	"context"
	"log/slog"
	"time"
)

// alerts writes the daemon's operator-relevant conditions (configuration
// disagreement, authentication failures from a member's address, a
// member unheard for long, a clock unsynchronised for long, lost locks) at
// WARN or ERROR, rate-limited per condition and member: the first
// occurrence at once, then at most one line per interval, saying how
// many more there were. A flood of bad frames is then one line every ten
// seconds, not one per frame; individual drops stay at debug.
type alerts struct {
	log   *slog.Logger
	every time.Duration
	keys  map[alertKey]*alertState
}

type alertKey struct {
	cond   string
	member uint32
}

type alertState struct {
	last       time.Time // the last line written
	suppressed uint64    // occurrences since, not written
	level      slog.Level
	msg        string
	args       []any
	every      time.Duration
}

// alertEvery is the interval of one condition's lines.
const alertEvery = 10 * time.Second

func newAlerts(log *slog.Logger) *alerts {
	return &alerts{log: log, every: alertEvery, keys: map[alertKey]*alertState{}}
}

// report notes one occurrence of condition cond about member (0: none) at
// now, and writes it unless a line about it was written within the
// interval (every; 0: the default).
func (a *alerts) report(now time.Time, level slog.Level, cond string, member uint32, every time.Duration, msg string, args ...any) {
	k := alertKey{cond, member}
	s := a.keys[k]
	if s == nil {
		s = &alertState{}
		a.keys[k] = s
	}
	s.level, s.msg, s.args = level, msg, args
	s.every = every
	if s.every <= 0 {
		s.every = a.every
	}
	if !s.last.IsZero() && now.Sub(s.last) < s.every && !now.Before(s.last) {
		s.suppressed++
		return
	}
	a.write(now, k, s)
}

// flush writes, for every condition that recurred since its last line
// and whose interval has passed, its latest occurrence with the count.
func (a *alerts) flush(now time.Time) {
	for k, s := range a.keys {
		if s.suppressed > 0 && now.Sub(s.last) >= s.every {
			a.write(now, k, s)
		}
	}
}

// flushAll writes every condition that recurred since its last line, its
// interval passed or not (the daemon stops).
func (a *alerts) flushAll(now time.Time) {
	for k, s := range a.keys {
		if s.suppressed > 0 {
			a.write(now, k, s)
		}
	}
}

func (a *alerts) write(now time.Time, k alertKey, s *alertState) {
	args := append([]any{"condition", k.cond}, s.args...)
	if k.member != 0 {
		args = append(args, "member", k.member)
	}
	if s.suppressed > 0 {
		args = append(args, "repeated", s.suppressed, "within", now.Sub(s.last).Round(time.Second).String())
	}
	a.log.Log(context.Background(), s.level, s.msg, args...)
	s.last, s.suppressed = now, 0
}
