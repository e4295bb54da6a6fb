package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/core"
)

// taker is a counter that takes a failed write's bump back
// (core.Withdrawer), as orderd takes back a send.
type taker struct {
	counter
	unsaved int // bumps since the last write handed over
	inWrite int // bumps the last Ready's write carried
	took    int
}

func (c *taker) bump() { c.counter.bump(); c.unsaved++ }
func (c *taker) Ready() core.Ready {
	rd := c.counter.Ready()
	c.inWrite, c.unsaved = c.unsaved, 0
	return rd
}
func (c *taker) Withdraw(events []core.Event) ([]core.Event, int, bool) {
	taken := c.inWrite
	c.n -= taken
	c.took += taken
	c.inWrite = 0
	return events, taken, true
}

// TestDoSavedReportsAWithdrawal: a write that fails before its file is
// renamed into place leaves nothing to read back, so a core that can
// takes back what the call did, and DoSaved (DoActiveSaved) says so:
// ErrWithdrawn, not ErrNotSaved. The next good write holds the state
// without it.
func TestDoSavedReportsAWithdrawal(t *testing.T) {
	net := transport.NewMemNetwork()
	dir := shortDir(t)
	cfg := testConfig(t, net, dir, 1, 2)
	c := &taker{}
	d, err := New(cfg, func(core.Env) (core.Core, error) { return c, nil })
	if err != nil {
		t.Fatal(err)
	}
	start(t, d)
	bump := func(n *node.Node) { n.Core().(*taker).bump() }
	ctx := context.Background()
	if err := d.DoSaved(ctx, bump); err != nil {
		t.Fatalf("a write that works: %v", err)
	}
	file := filepath.Join(cfg.StateDir, coreStateFile)
	os.Remove(file)
	os.Mkdir(file, 0o700) // the rename fails, even for root
	if err := d.DoSaved(ctx, bump); !errors.Is(err, ErrWithdrawn) {
		t.Fatalf("a write that failed before its rename: DoSaved = %v, want ErrWithdrawn", err)
	}
	if err := d.DoActiveSaved(ctx, bump); !errors.Is(err, ErrWithdrawn) {
		t.Fatalf("DoActiveSaved = %v, want ErrWithdrawn", err)
	}
	os.Remove(file)
	if err := d.DoSaved(ctx, func(*node.Node) {}); err != nil {
		t.Fatalf("the disk works again: %v", err)
	}
	var took int
	d.Do(ctx, func(*node.Node) { took = c.took })
	if b, _ := os.ReadFile(file); string(b) != "n=1" || took != 2 {
		t.Errorf("written %q with %d bumps taken back, want n=1 and 2", b, took)
	}
	var st map[string]uint64
	d.Do(ctx, func(*node.Node) { st = d.errs })
	if st["calls_withdrawn"] != 2 {
		t.Errorf("errors %v, want calls_withdrawn 2", st)
	}
}

// TestFailedAppendClassified: a failed append that wrote nothing, or
// whose bytes are cut off again, durably, cannot be read back
// (unwritten); one the daemon could not cut may have reached the disk
// whole, and is not.
func TestFailedAppendClassified(t *testing.T) {
	s := &stateDir{path: t.TempDir()}
	l := &coreLog{dir: s.path, inc: 1}
	if err := s.snapshot(l, []byte("state")); err != nil {
		t.Fatal(err)
	}
	if err := l.appendRecords([][]byte{[]byte("first")}); err != nil {
		t.Fatal(err)
	}
	if err := l.appendRecords([][]byte{[]byte("kept")}); err != nil {
		t.Fatal(err)
	}
	end := l.end
	path := filepath.Join(s.path, coreLogFile)
	// Bytes of a record past the end, as a write whose fdatasync failed
	// leaves them: cut, the restart reads the records before only.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.buf = l.buf[:0]
	l.encode([][]byte{[]byte("failed")})
	if _, err := f.WriteAt(l.buf, end); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := l.failed(errors.New("fdatasync: input/output error"), false); !unwritten(err) {
		t.Fatalf("a cut append: %v, want it unwritten", err)
	}
	_, records, l2, _, err := s.loadCore(2)
	if err != nil {
		t.Fatal(err)
	}
	l2.close()
	if len(records) != 2 || string(records[1]) != "kept" {
		t.Fatalf("after the cut the log reads %q, want the two records before it", records)
	}
	// Nothing written: unwritten without a cut.
	l.dir = filepath.Join(s.path, "gone") // a cut would fail here
	if err := l.failed(errors.New("pwrite: operation not permitted"), true); !unwritten(err) {
		t.Fatalf("an append that wrote nothing: %v, want it unwritten", err)
	}
	// Written, and the cut fails: it may be on disk.
	if err := l.failed(errors.New("fdatasync: input/output error"), false); unwritten(err) {
		t.Fatalf("an append that could not be cut: %v, want it uncertain", err)
	}
	// An atomic write that fails before its rename leaves the old file.
	if err := os.Mkdir(filepath.Join(s.path, "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := writeFileAtomicSized(s.path, "dir", []byte("x"), 0); !unwritten(err) {
		t.Fatalf("a rename onto a directory: %v, want it unwritten", err)
	}
}
