package daemon

import (
	"bytes"
	"fmt"
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
	_, recs, l, rec, err := st.loadCore()
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

	reload := func() ([]byte, [][]byte, *coreLog, logRecovery) {
		t.Helper()
		state, recs, l, rec, err := (&stateDir{path: dir}).loadCore()
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

	// A torn tail: half of a record.
	path := filepath.Join(dir, coreLogFile)
	whole, _ := os.ReadFile(path)
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte{0, 0, 0, 40, 1, 2, 3, 4, 'x', 'y'})
	f.Close()
	_, recs, l, rec = reload()
	if !slices.EqualFunc(recs, want, bytes.Equal) || rec.CutBytes != 10 {
		t.Fatalf("torn tail: %d records, %+v", len(recs), rec)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, whole) {
		t.Fatalf("the torn tail was not cut from the file: %d bytes, want %d", len(b), len(whole))
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
	os.WriteFile(path, b, 0o640)
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
	_, _, l, _, _ := st.loadCore()
	st.snapshot(l, []byte("s"))
	for i := range 4 {
		l.appendRecords([][]byte{bytes.Repeat([]byte{byte(i)}, i*3)})
	}
	l.close()
	st.close()
	path := filepath.Join(dir, coreLogFile)
	orig, _ := os.ReadFile(path)
	try := func(b []byte) {
		os.WriteFile(path, b, 0o640)
		st := openTestDir(t, dir)
		_, recs, l, _, err := st.loadCore()
		if err != nil {
			t.Fatalf("%x: %v", b, err)
		}
		l.close()
		st.close()
		if len(recs) > 4 {
			t.Fatalf("%d records from %x", len(recs), b)
		}
	}
	for n := range len(orig) {
		try(orig[:n])
	}
	for i := range orig {
		b := slices.Clone(orig)
		b[i] ^= 0xff
		try(b)
	}
}
