package daemon

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// The core's log (core.Ready.Entries): records appended after the
// snapshot in CoreStateFile, so that a core whose state is large and
// changes a little at a time (orderd's replicated log) writes what
// changed, with one fdatasync, instead of its whole state with two
// fsyncs and a rename.
//
//	header:  "SYNCLOG1" (8 bytes) | SHA-256 of the snapshot it follows (32)
//	record:  length (4, big-endian) | CRC-32C of the data (4) | data
//
// A log follows one snapshot: its header names it by hash, so a log left
// behind by a crash between a new snapshot's rename and the old log's
// removal is recognised as stale and dropped (it was written before the
// snapshot, which holds all of it). A crash in the middle of an append
// leaves a torn last record: recovery keeps every whole record before it
// and cuts the rest, counted and logged, never fatal. The core was told
// of none of the cut records that they were saved, so nothing it
// acknowledged is lost.

// CoreLogFile is the file in the state directory that holds the core's
// log after its snapshot (CoreStateFile).
const CoreLogFile = "core.log"

const (
	coreLogFile  = CoreLogFile
	logMagic     = "SYNCLOG1"
	logHeaderLen = len(logMagic) + sha256.Size
	recordHead   = 8
	// maxRecord bounds a record's length field: a larger one is a
	// corrupt length, not a record (a core's records are kilobytes).
	maxRecord = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// coreLog appends the core's records to CoreLogFile.
type coreLog struct {
	dir  string
	snap [sha256.Size]byte // hash of the snapshot the log follows
	f    *os.File          // open for appending; nil until the first append after a snapshot
	// onDisk: the file may exist (a snapshot must remove it). A daemon
	// whose core never appends never pays for the removal.
	onDisk bool
	buf    []byte
}

// logRecovery is what loading the log found.
type logRecovery struct {
	Records  int   // whole records handed to the core
	CutBytes int64 // a torn or corrupt tail, cut
	Stale    bool  // the log followed another snapshot: dropped
}

// loadCore reads the core's snapshot and the records after it, cutting a
// torn tail from the file so that appends continue after the last whole
// record.
func (s *stateDir) loadCore() (state []byte, records [][]byte, l *coreLog, rec logRecovery, err error) {
	state, err = s.read(coreStateFile)
	if err != nil {
		return nil, nil, nil, rec, fmt.Errorf("reading %s: %w", s.file(coreStateFile), err)
	}
	l = &coreLog{dir: s.path, snap: sha256.Sum256(state)}
	path := s.file(coreLogFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return state, nil, l, rec, nil
	}
	if err != nil {
		return nil, nil, nil, rec, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(b) < logHeaderLen || string(b[:len(logMagic)]) != logMagic || !bytes.Equal(b[len(logMagic):logHeaderLen], l.snap[:]) {
		// A header torn while the log was created, or a log written
		// after an older snapshot (which the snapshot holds): either way
		// nothing in it is newer than the snapshot.
		if len(b) >= logHeaderLen && string(b[:len(logMagic)]) == logMagic {
			rec.Stale = true
		} else {
			rec.CutBytes = int64(len(b))
		}
		if err := removeDurably(s.path, coreLogFile); err != nil {
			return nil, nil, nil, rec, fmt.Errorf("dropping %s: %w", path, err)
		}
		return state, nil, l, rec, nil
	}
	records, good := parseRecords(b[logHeaderLen:])
	rec.Records = len(records)
	if end := int64(logHeaderLen + good); end < int64(len(b)) {
		rec.CutBytes = int64(len(b)) - end
		if err := truncateDurably(path, end); err != nil {
			return nil, nil, nil, rec, fmt.Errorf("cutting the torn tail of %s: %w", path, err)
		}
	}
	l.onDisk = true
	if l.f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err != nil {
		return nil, nil, nil, rec, fmt.Errorf("opening %s: %w", path, err)
	}
	return state, records, l, rec, nil
}

// parseRecords returns the whole records at the start of b and the bytes
// they take: it stops at the first record that is short, too long or
// fails its checksum.
func parseRecords(b []byte) (records [][]byte, n int) {
	for len(b)-n >= recordHead {
		size := binary.BigEndian.Uint32(b[n:])
		sum := binary.BigEndian.Uint32(b[n+4:])
		if size > maxRecord || uint64(len(b)-n-recordHead) < uint64(size) {
			break
		}
		data := b[n+recordHead : n+recordHead+int(size)]
		if crc32.Checksum(data, castagnoli) != sum {
			break
		}
		records = append(records, data)
		n += recordHead + int(size)
	}
	return records, n
}

// appendRecords appends records and makes them durable with one
// fdatasync, creating the log (atomically, with its header) on the first
// append after a snapshot.
func (l *coreLog) appendRecords(records [][]byte) error {
	if l.f == nil {
		l.onDisk = true
		header := append([]byte(logMagic), l.snap[:]...)
		if err := writeFileAtomic(l.dir, coreLogFile, header); err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(l.dir, coreLogFile), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		l.f = f
	}
	l.buf = l.buf[:0]
	for _, r := range records {
		l.buf = binary.BigEndian.AppendUint32(l.buf, uint32(len(r)))
		l.buf = binary.BigEndian.AppendUint32(l.buf, crc32.Checksum(r, castagnoli))
		l.buf = append(l.buf, r...)
	}
	if _, err := l.f.Write(l.buf); err != nil {
		l.drop()
		return err
	}
	if err := syncData(l.f); err != nil {
		l.drop()
		return err
	}
	return nil
}

// drop forgets the open log after a failed append: what it holds is
// uncertain, so the core writes its whole state next (core.Durable), and
// the log starts again after that snapshot.
func (l *coreLog) drop() {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// snapshot writes the core's whole state and retires the log behind it.
// The snapshot is renamed into place first: a crash before the log is
// removed leaves a log whose header names the old snapshot, dropped at
// recovery.
//
// A snapshot identical to the one on disk is not written again: the log
// is removed, durably, and the snapshot alone is the state (the log
// brought it back to where it was).
func (s *stateDir) snapshot(l *coreLog, state []byte) error {
	sum := sha256.Sum256(state)
	l.drop()
	if sum != l.snap || !l.onDisk || len(state) == 0 {
		if err := s.write(coreStateFile, state); err != nil {
			l.snap = [sha256.Size]byte{} // unknown: never taken for equal
			return err
		}
		l.snap = sum
	}
	if !l.onDisk {
		return nil
	}
	if err := removeDurably(s.path, coreLogFile); err != nil {
		return err
	}
	l.onDisk = false
	return nil
}

func (l *coreLog) close() {
	l.drop()
}

func removeDurably(dir, name string) error {
	if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return syncDir(dir)
}

func truncateDurably(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return err
	}
	return f.Sync()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
