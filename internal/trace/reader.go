package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxLineBytes bounds one line a reader accepts: far above any event a
// synclab writer produces (a frame's payload is at most 64 KiB).
const MaxLineBytes = 1 << 20

// ErrVersion is wrapped by the error for a trace of another format version.
var ErrVersion = errors.New("unsupported trace format version")

// File is one trace as read.
type File struct {
	Name   string // where it was read from
	Header Header
	Events []Event // in file order, the truncated line excluded
	// Dropped is the truncated line's count: events the writer left out
	// once the file reached its bound (0: none).
	Dropped uint64
	// Partial says the last line was cut short (a writer killed in the
	// middle of a line) and was ignored.
	Partial bool
}

// ReadFile reads the trace at path.
func ReadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	return Read(f, path)
}

// ReadFiles reads every path, in order.
func ReadFiles(paths ...string) ([]*File, error) {
	files := make([]*File, 0, len(paths))
	for _, p := range paths {
		f, err := ReadFile(p)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// Read reads one trace from r; name labels errors. It refuses a first line
// that is not a header of this version, skips unknown fields, and ignores
// a last line without its newline that does not parse (a killed writer).
// Any other malformed line is an error naming its line number.
func Read(r io.Reader, name string) (*File, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	f := &File{Name: name}
	lineNo := 0
	for {
		line, err := readLine(br)
		if len(line) == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("trace: %s: line %d: %w", name, lineNo+1, err)
		}
		lineNo++
		complete := err == nil // ended by a newline
		if lineNo == 1 {
			if err := readHeader(line, &f.Header); err != nil {
				return nil, fmt.Errorf("trace: %s: %w", name, err)
			}
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e Event
		if err := decodeEvent(line, &e); err != nil {
			if !complete {
				f.Partial = true
				break
			}
			return nil, fmt.Errorf("trace: %s: line %d: %w", name, lineNo, err)
		}
		e.Line = lineNo
		if e.Ev == EvTruncated {
			f.Dropped = e.Dropped
			continue
		}
		f.Events = append(f.Events, e)
		if !complete {
			break
		}
	}
	if lineNo == 0 {
		return nil, fmt.Errorf("trace: %s: empty file, no header", name)
	}
	return f, nil
}

// readLine returns the next line without its newline; err is io.EOF when
// the line had none (the last one).
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLineBytes {
			return nil, fmt.Errorf("line longer than %d bytes", MaxLineBytes)
		}
		line = append(line, chunk...)
		switch err {
		case nil:
			return line[:len(line)-1], nil
		case bufio.ErrBufferFull:
			continue
		default:
			return line, err
		}
	}
}

func readHeader(line []byte, h *Header) error {
	var probe struct {
		Version *json.RawMessage `json:"synclab_trace"`
	}
	if err := json.Unmarshal(line, &probe); err != nil || probe.Version == nil {
		return errors.New("not a synclab trace (the first line has no \"synclab_trace\" version)")
	}
	var v int
	if err := json.Unmarshal(*probe.Version, &v); err != nil || v != Version {
		return fmt.Errorf("%w %s (this synclab reads version %d)", ErrVersion, *probe.Version, Version)
	}
	if err := json.Unmarshal(line, h); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if h.ID == 0 && len(h.Members) > 0 {
		// ID 0 is a daemon outside any cluster (timed as a plain NTP
		// client or server), which has no members.
		return errors.New("header: id is 0 (not a member) in a cluster")
	}
	return nil
}

// decodeEvent keeps numbers in fields and args as written (json.Number): a
// 64-bit term or generation must not pass through a float64.
func decodeEvent(line []byte, e *Event) error {
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if err := d.Decode(e); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data after the event")
	}
	return nil
}
