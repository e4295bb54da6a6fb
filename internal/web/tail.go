package web

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/synclab/synclab/internal/trace"
)

// tail follows a trace file as the daemon writes it: each read parses only
// the complete lines written since the last (a busy daemon's trace grows
// by megabytes a minute; reading it whole every second would cost more
// than the drawing), and trim forgets the events before the window.
type tail struct {
	path   string
	header []byte // the header line, newline included
	off    int64  // bytes parsed: whole lines
	lines  int    // lines parsed, the header's included
	file   *trace.File
}

// maxRead bounds one read of new lines: a window never needs more than
// the daemon wrote in a second or two.
const maxRead = 64 << 20

// read parses the lines added since the last read; an empty file (its
// header not flushed yet) is no error.
func (t *tail) read() error {
	f, err := os.Open(t.path)
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	if fi.Size() < t.off {
		return fmt.Errorf("trace: %s shrank from %d to %d bytes: not the file being written", t.path, t.off, fi.Size())
	}
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	buf, err := io.ReadAll(io.LimitReader(f, maxRead))
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		return nil // no whole line yet
	}
	chunk := buf[:end+1]
	var in io.Reader = bytes.NewReader(chunk)
	if t.header != nil {
		in = io.MultiReader(bytes.NewReader(t.header), in)
	}
	got, err := trace.Read(in, t.path)
	if err != nil {
		return err
	}
	if t.header == nil {
		t.header = slices.Clone(chunk[:bytes.IndexByte(chunk, '\n')+1])
		t.file = got
	} else {
		// Line numbers as in the file: the chunk's first line follows
		// the lines parsed before.
		for i := range got.Events {
			got.Events[i].Line += t.lines - 1
		}
		t.file.Events = append(t.file.Events, got.Events...)
		t.file.Dropped = max(t.file.Dropped, got.Dropped)
	}
	t.off += int64(len(chunk))
	t.lines += bytes.Count(chunk, []byte{'\n'})
	return nil
}

// trim forgets the events before from (those without a time stay).
func (t *tail) trim(from time.Time) {
	if t.file == nil {
		return
	}
	t.file.Events = slices.DeleteFunc(t.file.Events, func(e trace.Event) bool { return !e.T.IsZero() && e.T.Before(from) })
}
