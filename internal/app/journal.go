package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"
)

// Under systemd a daemon's stderr is a stream into the journal, which
// reads a "<N>" at the start of each line as the line's syslog priority
// (sd-daemon(3), SyslogLevelPrefix=yes, the default): that is what makes
// `journalctl -p warning -u mutexd` find the WARN and ERROR lines. The
// daemon knows its stderr is that stream when JOURNAL_STREAM names its
// device and inode (systemd.exec(5)); it then prefixes every line. A
// terminal or a file gets no prefix.
//
// The prefix rather than the journal's native protocol (e.g.
// github.com/systemd/slog-journal v0.1.2): the stream is already there and
// already the journal; the prefix is one byte string per line, needs no
// socket, no dependency and no fallback when the socket is missing, and
// keeps the text or JSON line exactly as an operator reads it elsewhere.
// The native protocol's gain, a journal field per slog attribute, is not
// needed to find the lines by priority; if it is wanted later, it is that
// library's job.

// journalStream reports whether w is the journal's stream (JOURNAL_STREAM
// names its device and inode).
func journalStream(w io.Writer) bool {
	env := os.Getenv("JOURNAL_STREAM")
	f, ok := w.(*os.File)
	if env == "" || !ok {
		return false
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return false
	}
	return env == fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}

// syslogPriority is the syslog priority of a slog level: debug 7, info 6,
// warn 4, error 3.
func syslogPriority(l slog.Level) int {
	switch {
	case l >= slog.LevelError:
		return 3
	case l >= slog.LevelWarn:
		return 4
	case l >= slog.LevelInfo:
		return 6
	}
	return 7
}

// priorityHandler prefixes each record with its syslog priority: it
// keeps one inner handler per priority, each writing to w through its
// prefix (a slog handler writes a record in one Write).
type priorityHandler struct {
	byPriority map[int]slog.Handler
	min        slog.Leveler
}

// newPriorityHandler builds mk's handler once per priority, each writing
// "<N>" before every record it writes to w.
func newPriorityHandler(w io.Writer, opts *slog.HandlerOptions, mk func(io.Writer, *slog.HandlerOptions) slog.Handler) slog.Handler {
	h := &priorityHandler{byPriority: map[int]slog.Handler{}, min: opts.Level}
	for _, p := range []int{3, 4, 6, 7} {
		h.byPriority[p] = mk(prefixWriter{w: w, prefix: []byte(fmt.Sprintf("<%d>", p))}, opts)
	}
	return h
}

type prefixWriter struct {
	w      io.Writer
	prefix []byte
}

func (p prefixWriter) Write(b []byte) (int, error) {
	if _, err := p.w.Write(append(append([]byte(nil), p.prefix...), b...)); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (h *priorityHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.byPriority[syslogPriority(l)].Enabled(ctx, l)
}

func (h *priorityHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.byPriority[syslogPriority(r.Level)].Handle(ctx, r)
}

func (h *priorityHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := &priorityHandler{byPriority: map[int]slog.Handler{}, min: h.min}
	for p, inner := range h.byPriority {
		out.byPriority[p] = inner.WithAttrs(attrs)
	}
	return out
}

func (h *priorityHandler) WithGroup(name string) slog.Handler {
	out := &priorityHandler{byPriority: map[int]slog.Handler{}, min: h.min}
	for p, inner := range h.byPriority {
		out.byPriority[p] = inner.WithGroup(name)
	}
	return out
}
