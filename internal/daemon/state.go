package daemon

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/synclab/synclab/internal/node"
)

// stateDir is the daemon's directory of durable state. It is locked for the
// life of the daemon so that two daemons can never share (and corrupt) it.
type stateDir struct {
	path string
	lock *os.File
	took writeTimes // the last write's (write, snapshot)
	// unmarked: the directory carries no daemon's mark (claim); whose
	// state it holds is not known.
	unmarked bool
}

// CoreStateFile is the file in the state directory that holds the core's
// durable state (core.Ready.State): a core factory names it when the state
// it is given cannot be restored, so the operator knows what to inspect or
// remove.
const CoreStateFile = "core.state"

const (
	lockFile        = "lock"
	incarnationFile = "incarnation"
	epochsFile      = "epochs"
	daemonFile      = "daemon"
	lamportFile     = "lamport"
	coreStateFile   = CoreStateFile
)

func openStateDir(path string) (*stateDir, error) {
	if err := os.MkdirAll(path, 0o750); err != nil {
		return nil, fmt.Errorf("state directory %s: %w", path, err)
	}
	f, err := os.OpenFile(filepath.Join(path, lockFile), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("state directory %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("state directory %s is in use by another daemon (give each daemon its own --state-dir)", path)
		}
		return nil, fmt.Errorf("locking state directory %s: %w", path, err)
	}
	return &stateDir{path: path, lock: f}, nil
}

// claim marks the directory as daemon's, or refuses it when another
// daemon's state is there: the lock keeps two daemons out of one directory
// at once, not one after the other, and each would read the other's
// core.state as a damaged file of its own (and be told to remove it). A
// directory from before the mark is marked by the first daemon whose core
// accepts its state (mark, called once the core is built): a start that
// fails on another daemon's state leaves it unmarked.
func (s *stateDir) claim(daemon string) (mark func() error, err error) {
	b, err := s.read(daemonFile)
	if err != nil {
		return nil, fmt.Errorf("state directory %s: %w", s.path, err)
	}
	if owner := strings.TrimSpace(string(b)); owner != "" {
		if owner != daemon {
			return nil, fmt.Errorf("state directory %s holds %s's state, not %s's (its file %q says so): give each daemon its own --state-dir (the default is /var/lib/%s); if the directory is %s's, write %s into that file", s.path, owner, daemon, daemonFile, daemon, daemon, daemon)
		}
		return func() error { return nil }, nil
	}
	s.unmarked = true
	return func() error {
		if err := s.write(daemonFile, []byte(daemon+"\n")); err != nil {
			return fmt.Errorf("state directory %s is not writable: %w (give the daemon's user a directory of its own)", s.path, err)
		}
		return nil
	}, nil
}

func (s *stateDir) close() error {
	if s.lock == nil {
		return nil
	}
	err := s.lock.Close() // releases the flock
	s.lock = nil
	return err
}

// file returns the path of a state file, for messages.
func (s *stateDir) file(name string) string { return filepath.Join(s.path, name) }

// read returns a state file's contents, or nil if it does not exist.
func (s *stateDir) read(name string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(s.path, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// write replaces a state file atomically and durably: a crash at any point
// leaves either the old contents or the new, never a mix, and a completed
// write survives power loss.
func (s *stateDir) write(name string, data []byte) error {
	var err error
	s.took, err = writeFileAtomicSized(s.path, name, data, 0)
	return err
}

// writeTimes is how long a durable write's parts took: the write(2) of
// its data, and its syncs (an atomic replacement's fsync of the new file
// and of the directory after the rename; an append's fdatasync).
type writeTimes struct {
	wrote, synced time.Duration
}

func (t writeTimes) add(u writeTimes) writeTimes {
	return writeTimes{t.wrote + u.wrote, t.synced + u.synced}
}

// writeFileAtomicSized is writeFileAtomic with the file's space
// allocated up to size (zeros after data): the core's log writes its
// records into it without growing the file.
//
// A failure before the rename leaves the old file as it was: the error is
// then a *notWrittenError (unwritten).
func writeFileAtomicSized(dir, name string, data []byte, size int64) (took writeTimes, err error) {
	renamed := false
	defer func() {
		if err != nil && !renamed {
			err = &notWrittenError{err}
		}
	}()
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return took, err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	start := time.Now()
	if _, err = tmp.Write(data); err != nil {
		return took, err
	}
	if n := int64(len(data)); size > n {
		if err = preallocate(tmp, n, size-n); err != nil {
			return took, err
		}
	}
	took.wrote = time.Since(start)
	start = time.Now()
	if err = tmp.Sync(); err != nil {
		return took, err
	}
	if err = tmp.Close(); err != nil {
		return took, err
	}
	if err = os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return took, err
	}
	renamed = true
	d, err := os.Open(dir)
	if err != nil {
		return took, err
	}
	defer d.Close()
	err = d.Sync()
	took.synced = time.Since(start)
	return took, err
}

// incarnationEpoch is where the fallback incarnation count starts.
var incarnationEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// nextIncarnation raises and persists the incarnation for this run.
//
// The persisted count is what keeps sequence numbers increasing across
// restarts. If it is lost (a wiped state directory), peers would drop the
// node's frames as replays until they restart themselves; to avoid that the
// count never falls below the minutes elapsed since incarnationEpoch, which
// exceeds any earlier incarnation unless the node restarted more than once a
// minute on average or the wall clock went back.
func (s *stateDir) nextIncarnation(now time.Time) (uint32, error) {
	b, err := s.read(incarnationFile)
	if err != nil {
		return 0, fmt.Errorf("reading incarnation: %w", err)
	}
	var prev uint64
	if b != nil {
		prev, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
		if err != nil {
			return 0, fmt.Errorf("state file %s is corrupt (%v): remove it to start a new incarnation", filepath.Join(s.path, incarnationFile), err)
		}
	}
	next := prev + 1
	if floor := uint64(max(0, now.Sub(incarnationEpoch)/time.Minute)) + 1; floor > next {
		next = floor
	}
	if next > node.MaxIncarnation {
		return 0, fmt.Errorf("incarnation %d exceeds %d: remove %s", next, node.MaxIncarnation, filepath.Join(s.path, incarnationFile))
	}
	if err := s.writeIncarnation(uint32(next)); err != nil {
		return 0, fmt.Errorf("persisting incarnation: %w", err)
	}
	return uint32(next), nil
}

func (s *stateDir) writeIncarnation(inc uint32) error {
	return s.write(incarnationFile, []byte(strconv.FormatUint(uint64(inc), 10)+"\n"))
}

// readEpochs reads the peers' epochs the node saved (node.Durable.Epochs):
// one "ID EPOCH" line per member, decimal, '#' comments. A missing file is
// no epochs (a first start).
func (s *stateDir) readEpochs() (map[uint32]uint32, error) {
	b, err := s.read(epochsFile)
	if err != nil || b == nil {
		return nil, err
	}
	corrupt := func(line int, why string) error {
		return fmt.Errorf("state file %s is corrupt (line %d: %s): remove it, and until every member has moved to a new series (one round trip) frames recorded before this restart would be accepted",
			filepath.Join(s.path, epochsFile), line, why)
	}
	epochs := map[uint32]uint32{}
	for i, f := range fieldLines(b) {
		if len(f) != 2 {
			return nil, corrupt(i, "want ID EPOCH")
		}
		id, err1 := strconv.ParseUint(f[0], 10, 32)
		ep, err2 := strconv.ParseUint(f[1], 10, 32)
		if err1 != nil || err2 != nil || id == 0 {
			return nil, corrupt(i, "want two decimal numbers")
		}
		epochs[uint32(id)] = uint32(ep)
	}
	return epochs, nil
}

// fieldLines yields the fields of each line of a state file that has any
// once '#' comments are cut, with its line number (from 1).
func fieldLines(b []byte) iter.Seq2[int, []string] {
	return func(yield func(int, []string) bool) {
		for i, line := range strings.Split(string(b), "\n") {
			if j := strings.IndexByte(line, '#'); j >= 0 {
				line = line[:j]
			}
			if f := strings.Fields(line); len(f) > 0 && !yield(i+1, f) {
				return
			}
		}
	}
}

func (s *stateDir) writeEpochs(epochs map[uint32]uint32) error {
	var b strings.Builder
	b.WriteString("# synclab: the newest epoch (incarnation<<8 | series) accepted from each member, ID EPOCH;\n")
	b.WriteString("# after a restart, frames of these epochs are refused: they may be recordings.\n")
	for _, id := range slices.Sorted(maps.Keys(epochs)) {
		fmt.Fprintf(&b, "%d %d\n", id, epochs[id])
	}
	return s.write(epochsFile, []byte(b.String()))
}

// readStamps reads the node's Lamport state (node.Durable.Stamps): a line
// "floor FLOOR TIME", then one "ID STAMP TIME" line per member, decimal
// numbers and RFC 3339 times, '#' comments. A missing file is none (a
// first start, or a state directory of an older version).
func (s *stateDir) readStamps() (node.Stamps, error) {
	b, err := s.read(lamportFile)
	if err != nil || b == nil {
		return node.Stamps{}, err
	}
	corrupt := func(line int, why string) error {
		return fmt.Errorf("state file %s is corrupt (line %d: %s): remove it; the node then resumes its Lamport clock from the first frame it takes, as on a first start",
			filepath.Join(s.path, lamportFile), line, why)
	}
	st := node.Stamps{Peers: map[uint32]node.PeerStamp{}}
	for i, f := range fieldLines(b) {
		if len(f) != 3 {
			return node.Stamps{}, corrupt(i, "want three fields")
		}
		v, err1 := strconv.ParseUint(f[1], 10, 64)
		at, err2 := time.Parse(time.RFC3339Nano, f[2])
		if err1 != nil || err2 != nil {
			return node.Stamps{}, corrupt(i, "want a decimal number and an RFC 3339 time")
		}
		if f[0] == "floor" {
			st.Floor, st.At = v, at
			continue
		}
		id, err := strconv.ParseUint(f[0], 10, 32)
		if err != nil || id == 0 {
			return node.Stamps{}, corrupt(i, "want \"floor\" or a member ID")
		}
		st.Peers[uint32(id)] = node.PeerStamp{Stamp: v, Heard: at}
	}
	if st.Floor == 0 {
		return node.Stamps{}, fmt.Errorf("state file %s is corrupt (no floor line): remove it; the node then resumes its Lamport clock from the first frame it takes, as on a first start",
			filepath.Join(s.path, lamportFile))
	}
	return st, nil
}

func (s *stateDir) writeStamps(st node.Stamps) error {
	var b strings.Builder
	b.WriteString("# synclab: Lamport time. \"floor F T\": this node's clock resumes above F (saved at T);\n")
	b.WriteString("# \"ID STAMP T\": the last stamp taken from member ID, at T. Frames are judged from them.\n")
	fmt.Fprintf(&b, "floor %d %s\n", st.Floor, st.At.UTC().Format(time.RFC3339Nano))
	for _, id := range slices.Sorted(maps.Keys(st.Peers)) {
		p := st.Peers[id]
		fmt.Fprintf(&b, "%d %d %s\n", id, p.Stamp, p.Heard.UTC().Format(time.RFC3339Nano))
	}
	return s.write(lamportFile, []byte(b.String()))
}

// durable is node.Config.Save for a daemon: it writes what changed of the
// node's durable state, each file atomically and durably, on the loop.
type durable struct {
	st     *stateDir
	inc    uint32
	epochs map[uint32]uint32
	stamps node.Stamps
}

func (d *durable) save(v node.Durable) error {
	if v.Incarnation != d.inc {
		if err := d.st.writeIncarnation(v.Incarnation); err != nil {
			return fmt.Errorf("persisting incarnation: %w", err)
		}
		d.inc = v.Incarnation
	}
	if !maps.Equal(v.Epochs, d.epochs) {
		if err := d.st.writeEpochs(v.Epochs); err != nil {
			return fmt.Errorf("persisting epochs: %w", err)
		}
		d.epochs = maps.Clone(v.Epochs)
	}
	if v.Stamps.Floor != 0 && !v.Stamps.Equal(d.stamps) {
		if err := d.st.writeStamps(v.Stamps); err != nil {
			return fmt.Errorf("persisting Lamport state: %w", err)
		}
		v.Stamps.Peers = maps.Clone(v.Stamps.Peers)
		d.stamps = v.Stamps
	}
	return nil
}
