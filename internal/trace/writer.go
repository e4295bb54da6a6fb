package trace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
)

// DefaultMaxBytes is a trace file's default bound: about 200,000 events,
// minutes of a busy five-member cluster, a few seconds to draw.
const DefaultMaxBytes = 64 << 20

// truncatedReserve is room kept under the bound for the last line, so the
// file never exceeds it: t (35+), the count padded to 20 digits, the keys.
const truncatedReserve = 128

// Writer writes one trace file: the header, then events, up to MaxBytes.
// The first event that does not fit ends the file with a `truncated` line
// (written at once, so a writer killed later still says so) whose count
// Close brings up to date when the destination can be rewritten in place
// (an *os.File); every later event is only counted. A Writer is not safe
// for concurrent use (Log is).
type Writer struct {
	bw       *bufio.Writer
	dst      io.Writer
	max      int64
	n        int64 // bytes written so far (header included)
	dropped  uint64
	truncAt  int64 // offset of the truncated line, -1 while there is none
	truncLen int64
	buf      []byte
	err      error
}

// NewWriter writes h as the header of a trace on w, bounded to maxBytes
// (0: DefaultMaxBytes). h.Version is set to Version.
func NewWriter(w io.Writer, h Header, maxBytes int64) (*Writer, error) {
	if maxBytes == 0 {
		maxBytes = DefaultMaxBytes
	}
	h.Version = Version
	line, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("trace: header: %w", err)
	}
	line = append(line, '\n')
	if int64(len(line))+truncatedReserve > maxBytes {
		return nil, fmt.Errorf("trace: a bound of %d bytes does not hold the header (%d) and the last line", maxBytes, len(line))
	}
	tw := &Writer{bw: bufio.NewWriterSize(w, 32<<10), dst: w, max: maxBytes, truncAt: -1}
	tw.write(line)
	return tw, tw.err
}

func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	_, w.err = w.bw.Write(b)
	w.n += int64(len(b))
}

// Write appends e (one line). Past the bound it counts e as dropped and
// returns nil: a full trace is not an error for the traced daemon. It
// returns the destination's write error, which sticks.
func (w *Writer) Write(e *Event) error {
	if w.err != nil {
		return w.err
	}
	if w.truncAt >= 0 {
		w.dropped++
		return nil
	}
	w.buf = AppendEvent(w.buf[:0], e)
	if w.n+int64(len(w.buf))+truncatedReserve > w.max {
		w.dropped = 1
		w.truncAt = w.n
		line := truncatedLine(w.buf[:0], e.T, w.dropped)
		w.truncLen = int64(len(line))
		w.write(line)
		return w.err
	}
	w.write(w.buf)
	return w.err
}

// Bytes returns how many bytes were written, the header and what is still
// buffered included.
func (w *Writer) Bytes() int64 { return w.n }

// Dropped returns how many events did not fit.
func (w *Writer) Dropped() uint64 { return w.dropped }

// Flush writes what is buffered to the destination.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	w.err = w.bw.Flush()
	return w.err
}

// Close flushes and brings the truncated line's count up to date. It does
// not close the destination.
func (w *Writer) Close() error {
	if err := w.Flush(); err != nil {
		return err
	}
	if w.truncAt < 0 || w.dropped <= 1 {
		return nil
	}
	wa, ok := w.dst.(io.WriterAt)
	if !ok {
		return nil
	}
	// The count is padded to a fixed width: the line keeps its length.
	tail := countTail(w.dropped)
	if _, err := wa.WriteAt(tail, w.truncAt+w.truncLen-int64(len(tail))); err != nil {
		return fmt.Errorf("trace: updating the truncated count: %w", err)
	}
	return nil
}

// countTail is the end of a truncated line: the count padded to 20 digits
// with spaces (JSON allows them), the brace and the newline.
func countTail(n uint64) []byte {
	s := strconv.FormatUint(n, 10)
	b := []byte(s)
	for len(b) < 20 {
		b = append(b, ' ')
	}
	return append(b, '}', '\n')
}

func truncatedLine(b []byte, t time.Time, dropped uint64) []byte {
	b = append(b, `{"t":`...)
	b = appendTime(b, t)
	b = append(b, `,"ev":"truncated","dropped":`...)
	return append(b, countTail(dropped)...)
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000000Z07:00")
	return append(b, '"')
}

// AppendEvent appends e's line (newline included), its fields in the
// format's order; `to` is always written for send and recv (0: multicast).
func AppendEvent(b []byte, e *Event) []byte {
	b = append(b, `{"t":`...)
	b = appendTime(b, e.T)
	if e.Lamport != 0 {
		b = append(b, `,"lamport":`...)
		b = strconv.AppendUint(b, e.Lamport, 10)
	}
	if len(e.VC) > 0 {
		vc, _ := e.VC.MarshalJSON()
		b = append(b, `,"vc":`...)
		b = append(b, vc...)
	}
	if e.MaxError != 0 {
		b = append(b, `,"max_error_ns":`...)
		b = strconv.AppendInt(b, e.MaxError, 10)
	}
	if e.TrueOffset != nil {
		b = append(b, `,"true_offset_ns":`...)
		b = strconv.AppendInt(b, *e.TrueOffset, 10)
	}
	b = append(b, `,"ev":`...)
	b = appendJSONString(b, e.Ev)
	str := func(key, v string) {
		if v != "" {
			b = append(b, ',', '"')
			b = append(b, key...)
			b = append(b, '"', ':')
			b = appendJSONString(b, v)
		}
	}
	obj := func(key string, m map[string]any) {
		if len(m) == 0 {
			return
		}
		j, err := json.Marshal(m)
		if err != nil {
			j, _ = json.Marshal(map[string]string{"unencodable": err.Error()})
		}
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		b = append(b, j...)
	}
	str("kind", e.Kind)
	str("frame", e.Frame)
	if e.From != 0 {
		b = append(b, `,"from":`...)
		b = strconv.AppendUint(b, uint64(e.From), 10)
	}
	if e.Ev == EvSend || e.Ev == EvRecv || e.To != 0 {
		b = append(b, `,"to":`...)
		b = strconv.AppendUint(b, uint64(e.To), 10)
	}
	if e.Term != 0 {
		b = append(b, `,"term":`...)
		b = strconv.AppendUint(b, e.Term, 10)
	}
	str("peer", e.Peer)
	obj("fields", e.Fields)
	str("name", e.Name)
	str("msg", e.Msg)
	obj("args", e.Args)
	str("reason", e.Reason)
	if e.Dropped != 0 {
		b = append(b, `,"dropped":`...)
		b = strconv.AppendUint(b, e.Dropped, 10)
	}
	return append(b, '}', '\n')
}

// appendJSONString quotes s as JSON (strconv.Quote's escapes are Go's, not
// JSON's: \x00 is not JSON).
func appendJSONString(b []byte, s string) []byte {
	j, err := json.Marshal(s)
	if err != nil {
		return append(b, `""`...)
	}
	return append(b, j...)
}
