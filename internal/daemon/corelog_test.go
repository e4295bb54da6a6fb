package daemon

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func openTestDir(t *testing.T, dir string) *stateDir {
	t.Helper()
	st, err := openStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.close() })
	return st
}

// Records appended after a snapshot come back in order after a restart;
// a torn last record (a crash in the middle of the write) and then a
// corrupt one (a flipped bit) are cut, counted, and appends go on after
// the last whole record; a new snapshot retires the log.
func TestCoreLogRecovery(t *testing.T) {
	dir := t.TempDir()
	st := openTestDir(t, dir)
	_, recs, l, rec, err := st.loadCore(1)
	if err != nil || recs != nil || rec != (logRecovery{}) {
		t.Fatalf("empty directory: %v %v %+v", recs, err, rec)
	}
	if err := st.snapshot(l, []byte("snapshot 1")); err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for i := range 5 {
		r := []byte(fmt.Sprintf("record %d", i))
		want = append(want, r)
		if err := l.appendRecords([][]byte{r}); err != nil {
			t.Fatal(err)
		}
	}
	l.close()

	inc := uint32(1)
	reload := func() ([]byte, [][]byte, *coreLog, logRecovery) {
		t.Helper()
		inc++
		state, recs, l, rec, err := (&stateDir{path: dir}).loadCore(inc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.close)
		return state, recs, l, rec
	}
	state, recs, l, rec := reload()
	if string(state) != "snapshot 1" || !slices.EqualFunc(recs, want, bytes.Equal) || rec.CutBytes != 0 {
		t.Fatalf("after a clean stop: %q %q %+v", state, recs, rec)
	}
	l.close()

	// A torn tail: half of a record, where the next record would go.
	path := filepath.Join(dir, coreLogFile)
	whole, _ := os.ReadFile(path)
	end := l.end
	writeAt(t, path, end, []byte{0, 0, 0, 40, 1, 2, 3, 4, 0, 0, 0, 9, 'x', 'y'})
	_, recs, l, rec = reload()
	if !slices.EqualFunc(recs, want, bytes.Equal) || rec.CutBytes != 14 {
		t.Fatalf("torn tail: %d records, %+v", len(recs), rec)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b[:end], whole[:end]) || written(b[end:]) != 0 {
		t.Fatalf("the torn tail was not cut from the file: %d bytes written after the records", written(b[end:]))
	}
	// Appends continue after the last whole record.
	if err := l.appendRecords([][]byte{[]byte("record 5"), []byte("record 6")}); err != nil {
		t.Fatal(err)
	}
	want = append(want, []byte("record 5"), []byte("record 6"))
	l.close()

	// A flipped bit in record 5: it and everything after it are cut.
	b, _ := os.ReadFile(path)
	i := bytes.Index(b, []byte("record 5"))
	b[i] ^= 1
	writeAt(t, path, int64(i), b[i:i+1])
	_, recs, l, rec = reload()
	if !slices.EqualFunc(recs, want[:5], bytes.Equal) || rec.CutBytes != int64(2*(recordHead+8)) {
		t.Fatalf("corrupt record: %d records, %+v", len(recs), rec)
	}

	// A new snapshot retires the log.
	stDir := &stateDir{path: dir}
	if err := stDir.snapshot(l, []byte("snapshot 2")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the log outlived its snapshot: %v", err)
	}
	if err := l.appendRecords([][]byte{[]byte("after 2")}); err != nil {
		t.Fatal(err)
	}
	l.close()
	state, recs, l, _ = reload()
	if string(state) != "snapshot 2" || len(recs) != 1 || string(recs[0]) != "after 2" {
		t.Fatalf("after the second snapshot: %q %q", state, recs)
	}
	l.close()

	// A log that follows another snapshot (a crash between the new
	// snapshot's rename and the log's removal) is stale: dropped.
	os.WriteFile(filepath.Join(dir, coreStateFile), []byte("snapshot 3"), 0o640)
	state, recs, _, rec = reload()
	if string(state) != "snapshot 3" || recs != nil || !rec.Stale {
		t.Fatalf("stale log: %q %q %+v", state, recs, rec)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the stale log was kept: %v", err)
	}
}

// No value in a log file makes recovery fail or panic: every prefix of a
// log, and the log with any byte changed, loads (cutting what is not
// whole).
func TestCoreLogAnyDamage(t *testing.T) {
	dir := t.TempDir()
	st := openTestDir(t, dir)
	_, _, l, _, _ := st.loadCore(1)
	st.snapshot(l, []byte("s"))
	for i := range 4 {
		l.appendRecords([][]byte{bytes.Repeat([]byte{byte(i)}, i*3)})
	}
	l.close()
	st.close()
	path := filepath.Join(dir, coreLogFile)
	orig, _ := os.ReadFile(path)
	n := written(orig) + recordHead // and a little of the zeros after
	try := func(b []byte) {
		os.WriteFile(path, b, 0o640)
		st := openTestDir(t, dir)
		_, recs, l, _, err := st.loadCore(2)
		if err != nil {
			t.Fatalf("%x: %v", b[:min(len(b), int(n))], err)
		}
		l.close()
		st.close()
		if len(recs) > 4 {
			t.Fatalf("%d records from %x", len(recs), b[:n])
		}
	}
	for i := range n {
		try(orig[:i])
	}
	for i := range n {
		b := slices.Clone(orig)
		b[i] ^= 0xff
		try(b)
	}
}

func writeAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// loadAt loads the log of dir as a daemon of incarnation inc would.
func loadAt(t *testing.T, dir string, inc uint32) ([][]byte, *coreLog, logRecovery) {
	t.Helper()
	_, recs, l, rec, err := (&stateDir{path: dir}).loadCore(inc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	return recs, l, rec
}

func texts(recs [][]byte) []string {
	out := []string{}
	for _, r := range recs {
		out = append(out, string(r))
	}
	return out
}

// A crash in the middle of a batch leaves some of its records on the
// disk whole and others not (here the first is damaged, the two after
// it whole). The restart keeps the records before the damage; it then
// appends a record exactly as long as the damaged one, so that it ends
// where the whole records of the torn batch begin; a second restart
// must not read those: the core was never told they were saved.
func TestCoreLogTornBatchIsNotBroughtBack(t *testing.T) {
	dir := t.TempDir()
	recs, l, _ := loadAt(t, dir, 1)
	if err := (&stateDir{path: dir}).snapshot(l, []byte("snap")); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"r0", "r1", "r2"} {
		if err := l.appendRecords([][]byte{[]byte(r)}); err != nil {
			t.Fatal(err)
		}
	}
	batchAt := l.end
	if err := l.appendRecords([][]byte{[]byte("t3"), []byte("t4"), []byte("t5")}); err != nil {
		t.Fatal(err)
	}
	l.close()
	path := filepath.Join(dir, coreLogFile)
	writeAt(t, path, batchAt+recordHead, []byte("T")) // t3's data: a sector that never reached the disk

	recs, l, rec := loadAt(t, dir, 2)
	if got := texts(recs); !slices.Equal(got, []string{"r0", "r1", "r2"}) || rec.CutBytes != 3*(recordHead+2) {
		t.Fatalf("after the torn batch: %q, %+v", got, rec)
	}
	if b, _ := os.ReadFile(path); written(b[l.end:]) != 0 {
		t.Fatal("the torn batch's whole records are still in the file after the restart")
	}
	if err := l.appendRecords([][]byte{[]byte("n3")}); err != nil {
		t.Fatal(err)
	}
	l.close()
	recs, _, rec = loadAt(t, dir, 3)
	if got := texts(recs); !slices.Equal(got, []string{"r0", "r1", "r2", "n3"}) || rec.CutBytes != 0 {
		t.Fatalf("after the append and a second restart: %q, %+v (t4, t5 were never saved)", got, rec)
	}
}

// The reader takes a record only as the successor of the one before it:
// a record of a lower incarnation after a higher one (bytes left by an
// earlier run after a later run's record) ends the log, as does a zero
// header (space allocated, never written).
func TestCoreLogRecordsOfAnEarlierRunAfterALaterOneEndTheLog(t *testing.T) {
	l := &coreLog{inc: 7}
	l.encode([][]byte{[]byte("a"), []byte("b")})
	l.inc = 9
	l.encode([][]byte{[]byte("c")})
	l.inc = 8
	l.encode([][]byte{[]byte("stale")})
	l.inc = 9
	l.encode([][]byte{[]byte("after")})
	recs, n, last := parseRecords(l.buf)
	if got := texts(recs); !slices.Equal(got, []string{"a", "b", "c"}) || last != 9 || n != 3*(recordHead+1) {
		t.Fatalf("%q, %d bytes, last incarnation %d", got, n, last)
	}
	recs, n, _ = parseRecords(append(l.buf[:recordHead+1:recordHead+1], make([]byte, 3*recordHead)...))
	if len(recs) != 1 || n != recordHead+1 {
		t.Fatalf("zeros after a record: %d records, %d bytes", len(recs), n)
	}
	// An empty record is a record, not the end.
	e := &coreLog{inc: 1}
	e.encode([][]byte{{}, []byte("x")})
	if recs, _, _ := parseRecords(e.buf); len(recs) != 2 {
		t.Fatalf("an empty record ended the log: %q", recs)
	}
}

// A log's space is allocated ahead of its records: appends within it do
// not change the file's size (the point: no size for fdatasync to
// commit); a log of nothing but allocated zeros loads as an empty log;
// a record larger than what is left grows the file by a chunk.
func TestCoreLogWritesIntoAllocatedSpace(t *testing.T) {
	dir := t.TempDir()
	_, l, _ := loadAt(t, dir, 1)
	st := &stateDir{path: dir}
	if err := st.snapshot(l, []byte("snap")); err != nil {
		t.Fatal(err)
	}
	if err := l.appendRecords(nil); err != nil { // the log, empty
		t.Fatal(err)
	}
	path := filepath.Join(dir, coreLogFile)
	fi, _ := os.Stat(path)
	if fi.Size() < logChunk {
		t.Fatalf("a new log of %d bytes: want at least %d allocated", fi.Size(), logChunk)
	}
	l.close()
	recs, l, rec := loadAt(t, dir, 2)
	if len(recs) != 0 || rec != (logRecovery{}) || l.end != int64(logHeaderLen) {
		t.Fatalf("a log of zeros: %q, %+v, end %d", recs, rec, l.end)
	}
	for i := range 100 {
		if err := l.appendRecords([][]byte{[]byte(fmt.Sprint("small ", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if fi2, _ := os.Stat(path); fi2.Size() != fi.Size() {
		t.Fatalf("appends into allocated space changed the size: %d -> %d", fi.Size(), fi2.Size())
	}
	big := bytes.Repeat([]byte("B"), logChunk+5)
	if err := l.appendRecords([][]byte{big, []byte("last")}); err != nil {
		t.Fatal(err)
	}
	if fi2, _ := os.Stat(path); fi2.Size() < l.end+logChunk {
		t.Fatalf("grown to %d for %d bytes of records: want a chunk more", fi2.Size(), l.end)
	}
	l.close()
	recs, _, rec = loadAt(t, dir, 3)
	if len(recs) != 102 || !bytes.Equal(recs[100], big) || string(recs[101]) != "last" || rec.CutBytes != 0 {
		t.Fatalf("%d records, %+v", len(recs), rec)
	}
}

// A log in the first format, as builds before the preallocated log wrote
// it (SYNCLOG1: length | CRC-32C of the data | data, the file's size its
// end), is read whole, torn tail cut, and rewritten in the current format
// with its records: an upgraded daemon keeps its log and appends to it.
func TestCoreLogOfTheFirstFormatIsKept(t *testing.T) {
	dir := t.TempDir()
	state := []byte("snapshot of an older build")
	if err := os.WriteFile(filepath.Join(dir, coreStateFile), state, 0o640); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(state)
	v1 := append([]byte(logMagicV1), sum[:]...)
	for _, r := range []string{"old 1", "old 2", "old 3"} {
		v1 = binary.BigEndian.AppendUint32(v1, uint32(len(r)))
		v1 = binary.BigEndian.AppendUint32(v1, crc32.Checksum([]byte(r), castagnoli))
		v1 = append(v1, r...)
	}
	v1 = append(v1, 0, 0, 0, 9, 1, 2) // torn
	path := filepath.Join(dir, coreLogFile)
	if err := os.WriteFile(path, v1, 0o640); err != nil {
		t.Fatal(err)
	}
	recs, l, rec := loadAt(t, dir, 5)
	if got := texts(recs); !slices.Equal(got, []string{"old 1", "old 2", "old 3"}) || !rec.Upgraded || rec.CutBytes != 6 {
		t.Fatalf("first format: %q, %+v", got, rec)
	}
	if b, _ := os.ReadFile(path); string(b[:len(logMagic)]) != logMagic || len(b) < logChunk {
		t.Fatalf("not rewritten in the current format: %q, %d bytes", b[:len(logMagic)], len(b))
	}
	if err := l.appendRecords([][]byte{[]byte("new 4")}); err != nil {
		t.Fatal(err)
	}
	l.close()
	recs, _, rec = loadAt(t, dir, 6)
	if got := texts(recs); !slices.Equal(got, []string{"old 1", "old 2", "old 3", "new 4"}) || rec != (logRecovery{Records: 4}) {
		t.Fatalf("after the upgrade: %q, %+v", got, rec)
	}
}

// The state main's orderd (e31b631, the first log format) left after
// three applies and a SIGKILL (testdata/synclog1): this build hands the
// same eight records to the core, in order, and keeps them across a
// restart in the current format.
func TestCoreLogWrittenByTheFirstFormatsOrderd(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{coreStateFile, coreLogFile} {
		b, err := os.ReadFile(filepath.Join("testdata", "synclog1", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	recs, l, rec := loadAt(t, dir, 1000)
	if len(recs) != 8 || !rec.Upgraded || rec.CutBytes != 0 {
		t.Fatalf("%d records, %+v: want 8, upgraded", len(recs), rec)
	}
	for i, r := range recs {
		if !bytes.HasPrefix(r, []byte(`{"clock":`)) {
			t.Fatalf("record %d is not orderd's: %.40q", i, r)
		}
	}
	want := slices.Clone(texts(recs))
	l.close()
	again, _, rec := loadAt(t, dir, 1001)
	if !slices.Equal(texts(again), want) || rec != (logRecovery{Records: 8}) {
		t.Fatalf("after the rewrite: %d records, %+v", len(again), rec)
	}
}
