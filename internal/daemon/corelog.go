package daemon

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"time"
)

// The core's log (core.Ready.Entries): records appended after the
// snapshot in CoreStateFile, so that a core whose state is large and
// changes a little at a time (orderd's replicated log) writes what
// changed, with one fdatasync, instead of its whole state with two
// fsyncs and a rename.
//
//	header:  "SYNCLOG2" (8 bytes) | SHA-256 of the snapshot it follows (32)
//	record:  length (4, big-endian) | CRC-32C (4) | incarnation (4) | data
//	         the CRC covers the length, the incarnation and the data
//	then:    zeros, to the end of the space allocated
//
// The file's space is allocated ahead of the records (logChunk), as
// etcd's WAL preallocates its segments: a record written into it does
// not change the file's size, so its fdatasync writes the data and no
// size through the file system's journal (on the lab's ext4, 265-275
// against 470 us p50 for a 200-byte record). The file's size therefore
// no longer marks the log's end: the records do. The log ends at the
// first record that is not whole: a zero header (never written: an
// incarnation is at least 1), a length past the file, a CRC that fails,
// or an incarnation lower than the record before it.
//
// A log follows one snapshot: its header names it by hash, so a log left
// behind by a crash between a new snapshot's rename and the old log's
// removal is recognised as stale and dropped (it was written before the
// snapshot, which holds all of it). A crash in the middle of an append
// leaves a torn batch: some of its records, or parts of them, reached
// the disk and others did not, in any order. Recovery keeps every whole
// record before the first that is not and cuts everything after it,
// counted and logged, never fatal: the core was told of none of the cut
// records that they were saved, so nothing it acknowledged is lost.
//
// Cut means gone before anything is appended again: the file is
// truncated at the end of the last whole record, its space allocated
// afresh (zeros) and the result fsynced. Otherwise a record of the torn
// batch that did reach the disk whole could follow a new record that
// happens to end where the torn one did, and a later restart would read
// it as the new record's successor: a write the core was never told was
// saved, and may since have decided otherwise, brought back. The
// incarnation in each record guards the same gap a second way: a
// restarted daemon writes with its new, higher incarnation, so a record
// left from an earlier run after one of its own is no successor.
//
// A log in the first format ("SYNCLOG1": records without incarnation, no
// preallocation, the file's size its end), written by builds before
// this one, is read and rewritten in this format when the daemon starts,
// atomically: an upgrade keeps the log. A build before this one does
// not read this format: it drops the log as damaged (see docs/orderd.md, upgrades).

// CoreLogFile is the file in the state directory that holds the core's
// log after its snapshot (CoreStateFile).
const CoreLogFile = "core.log"

const (
	coreLogFile  = CoreLogFile
	logMagic     = "SYNCLOG2"
	logMagicV1   = "SYNCLOG1"
	logHeaderLen = len(logMagic) + sha256.Size
	recordHead   = 12
	recordHeadV1 = 8
	// maxRecord bounds a record's length field: a larger one is a
	// corrupt length, not a record (a core's records are kilobytes).
	maxRecord = 64 << 20
	// A new log's space is logChunk; a full one grows by its size, up to
	// logChunkMax at a time. The first write into new space commits the
	// file's size with its fdatasync; the others do not.
	logChunk    = 1 << 20
	logChunkMax = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// coreLog appends the core's records to CoreLogFile.
type coreLog struct {
	dir  string
	snap [sha256.Size]byte // hash of the snapshot the log follows
	// inc is the incarnation the records carry: the daemon's, or the last
	// record's if that is higher (a lost incarnation file), so that the
	// log's incarnations never go down.
	inc uint32
	f   *os.File // nil until the first append after a snapshot
	end int64    // where the next record goes
	// size is the file's allocated size; past end it holds zeros.
	size int64
	// onDisk: the file may exist (a snapshot must remove it). A daemon
	// whose core never appends never pays for the removal.
	onDisk bool
	buf    []byte
	// took is the last append's write(2) and fdatasync (or, for one that
	// created the log, its atomic write), for the trace (TraceLogWrite)
	// and the slow write's warning (Daemon.persisted).
	took writeTimes
}

// logRecovery is what loading the log found.
type logRecovery struct {
	Records  int   // whole records handed to the core
	CutBytes int64 // a torn or corrupt tail, cut (to its last byte that is not zero)
	Stale    bool  // the log followed another snapshot: dropped
	Upgraded bool  // the log was in the first format: rewritten in this one
}

// loadCore reads the core's snapshot and the records after it, cutting a
// torn tail from the file so that appends continue after the last whole
// record. inc is this run's incarnation, higher than every earlier run's.
func (s *stateDir) loadCore(inc uint32) (state []byte, records [][]byte, l *coreLog, rec logRecovery, err error) {
	state, err = s.read(coreStateFile)
	if err != nil {
		return nil, nil, nil, rec, fmt.Errorf("reading %s: %w", s.file(coreStateFile), err)
	}
	l = &coreLog{dir: s.path, snap: sha256.Sum256(state), inc: max(inc, 1)}
	path := s.file(coreLogFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return state, nil, l, rec, nil
	}
	if err != nil {
		return nil, nil, nil, rec, fmt.Errorf("reading %s: %w", path, err)
	}
	magic := ""
	if len(b) >= logHeaderLen {
		magic = string(b[:len(logMagic)])
	}
	if (magic != logMagic && magic != logMagicV1) || !bytes.Equal(b[len(logMagic):logHeaderLen], l.snap[:]) {
		// A header torn while the log was created, or a log written
		// after an older snapshot (which the snapshot holds): either way
		// nothing in it is newer than the snapshot.
		if magic == logMagic || magic == logMagicV1 {
			rec.Stale = true
		} else {
			rec.CutBytes = written(b)
		}
		if err := removeDurably(s.path, coreLogFile); err != nil {
			return nil, nil, nil, rec, fmt.Errorf("dropping %s: %w", path, err)
		}
		return state, nil, l, rec, nil
	}
	if magic == logMagicV1 {
		records, good := parseRecordsV1(b[logHeaderLen:])
		rec.Records, rec.Upgraded = len(records), true
		rec.CutBytes = int64(len(b) - logHeaderLen - good)
		if err := l.create(records); err != nil {
			return nil, nil, nil, rec, fmt.Errorf("rewriting %s in the current format: %w", path, err)
		}
		return state, records, l, rec, nil
	}
	records, good, last := parseRecords(b[logHeaderLen:])
	rec.Records = len(records)
	l.inc = max(l.inc, last)
	l.end, l.size = int64(logHeaderLen+good), int64(len(b))
	if rec.CutBytes = written(b[l.end:]); rec.CutBytes > 0 {
		l.size = max(l.size, l.end+logChunk)
		if err := cutDurably(path, l.end, l.size); err != nil {
			return nil, nil, nil, rec, fmt.Errorf("cutting the torn tail of %s: %w", path, err)
		}
	}
	l.onDisk = true
	if l.f, err = os.OpenFile(path, os.O_WRONLY, 0); err != nil {
		return nil, nil, nil, rec, fmt.Errorf("opening %s: %w", path, err)
	}
	return state, records, l, rec, nil
}

// written is how much of b holds something: up to its last byte that is
// not zero (the rest is allocated space never written).
func written(b []byte) int64 {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0 {
			return int64(i + 1)
		}
	}
	return 0
}

// parseRecords returns the whole records at the start of b, the bytes
// they take and the last one's incarnation: it stops at the first record
// that is zero, short, too long, fails its checksum or has a lower
// incarnation than the one before it.
func parseRecords(b []byte) (records [][]byte, n int, last uint32) {
	for len(b)-n >= recordHead {
		size := binary.BigEndian.Uint32(b[n:])
		sum := binary.BigEndian.Uint32(b[n+4:])
		inc := binary.BigEndian.Uint32(b[n+8:])
		if inc == 0 || inc < last || size > maxRecord || uint64(len(b)-n-recordHead) < uint64(size) {
			break
		}
		end := n + recordHead + int(size)
		if recordSum(b[n:n+4], b[n+8:end]) != sum {
			break
		}
		records = append(records, b[n+recordHead:end])
		n, last = end, inc
	}
	return records, n, last
}

// recordSum is a record's CRC-32C: over its length and what follows its
// CRC (incarnation, data).
func recordSum(length, rest []byte) uint32 {
	return crc32.Update(crc32.Checksum(length, castagnoli), castagnoli, rest)
}

// parseRecordsV1 is parseRecords for the first format (length | CRC of
// the data | data).
func parseRecordsV1(b []byte) (records [][]byte, n int) {
	for len(b)-n >= recordHeadV1 {
		size := binary.BigEndian.Uint32(b[n:])
		sum := binary.BigEndian.Uint32(b[n+4:])
		if size > maxRecord || uint64(len(b)-n-recordHeadV1) < uint64(size) {
			break
		}
		data := b[n+recordHeadV1 : n+recordHeadV1+int(size)]
		if crc32.Checksum(data, castagnoli) != sum {
			break
		}
		records = append(records, data)
		n += recordHeadV1 + int(size)
	}
	return records, n
}

// encode appends records, framed, to l.buf.
func (l *coreLog) encode(records [][]byte) {
	for _, r := range records {
		i := len(l.buf)
		l.buf = binary.BigEndian.AppendUint32(l.buf, uint32(len(r)))
		l.buf = append(l.buf, 0, 0, 0, 0)
		l.buf = binary.BigEndian.AppendUint32(l.buf, l.inc)
		l.buf = append(l.buf, r...)
		binary.BigEndian.PutUint32(l.buf[i+4:], recordSum(l.buf[i:i+4], l.buf[i+8:]))
	}
}

// create writes a new log holding records after its header, with space
// allocated after them, atomically: a crash leaves the old file or the
// new one.
func (l *coreLog) create(records [][]byte) error {
	l.drop()
	l.onDisk = true
	l.buf = append(append(l.buf[:0], logMagic...), l.snap[:]...)
	l.encode(records)
	end := int64(len(l.buf))
	size := grown(end, 0)
	took, err := writeFileAtomicSized(l.dir, coreLogFile, l.buf, size)
	l.took = took
	if err != nil {
		if !unwritten(err) && removeDurably(l.dir, coreLogFile) == nil {
			// Renamed into place, and its directory's sync failed: the
			// log holds only this append's records, and is gone again.
			err = &notWrittenError{err}
		}
		return err
	}
	f, err := os.OpenFile(filepath.Join(l.dir, coreLogFile), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	l.f, l.end, l.size = f, end, size
	return nil
}

// grown is the size to allocate for a log that must hold need bytes and
// has size: a chunk more than it needs, the chunk doubling with the log.
func grown(need, size int64) int64 {
	return need + min(max(size, logChunk), logChunkMax)
}

// appendRecords appends records and makes them durable with one
// fdatasync, creating the log (atomically, with its header) on the first
// append after a snapshot.
func (l *coreLog) appendRecords(records [][]byte) error {
	l.took = writeTimes{}
	if l.f == nil {
		return l.create(records)
	}
	l.buf = l.buf[:0]
	l.encode(records)
	if need := l.end + int64(len(l.buf)); need > l.size {
		// Rare (a chunk of records at a time): this write's fdatasync
		// commits the new size too.
		size := grown(need, l.size)
		if err := preallocate(l.f, l.size, size-l.size); err != nil {
			return l.failed(err, true)
		}
		l.size = size
	}
	start := time.Now()
	if n, err := writeData(l.f, l.buf, l.end); err != nil {
		return l.failed(err, n == 0)
	}
	written := time.Now()
	if err := syncData(l.f); err != nil {
		return l.failed(err, false)
	}
	l.took = writeTimes{written.Sub(start), time.Since(written)}
	l.end += int64(len(l.buf))
	return nil
}

// failed forgets the open log after a failed append (drop) and says
// whether anything of the append can be read back: not if none of it was
// written (gone), or if the file is cut again, durably, where the append
// began (the daemon may then let the core take back what the append
// promised, core.Withdrawer: a restart cannot bring it back). A cut that
// fails too (the disk is gone) leaves the append uncertain: it may have
// reached the disk whole.
func (l *coreLog) failed(err error, gone bool) error {
	if !gone {
		gone = cutDurably(filepath.Join(l.dir, coreLogFile), l.end, l.size) == nil
	}
	l.drop()
	if gone {
		return &notWrittenError{err}
	}
	return err
}

// notWrittenError is a failed write of which nothing can be read back:
// the files hold what the last good write left.
type notWrittenError struct{ err error }

func (e *notWrittenError) Error() string { return e.err.Error() }
func (e *notWrittenError) Unwrap() error { return e.err }

// unwritten says whether err is a failed write of which nothing can be
// read back (notWrittenError).
func unwritten(err error) bool {
	var nw *notWrittenError
	return errors.As(err, &nw)
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
	s.took = writeTimes{}
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
	wrote := s.took
	start := time.Now()
	err := removeDurably(s.path, coreLogFile)
	s.took = wrote.add(writeTimes{synced: time.Since(start)})
	if err != nil {
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

// cutDurably truncates the file at path to end, allocates it afresh up to
// size (zeros) and makes that durable: nothing written past end before
// survives, on the disk or in the page cache.
func cutDurably(path string, end, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(end); err != nil {
		return err
	}
	if err := preallocate(f, end, size-end); err != nil {
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
