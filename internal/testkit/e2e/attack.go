package e2e

import (
	"cmp"
	"encoding"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/forge"
	"github.com/synclab/synclab/internal/testkit/labnet"
	"github.com/synclab/synclab/pkg/wire"
)

// Attacks on real daemons, each made as a student at another machine of the
// lab would make it: forged frames from the attacker's own host, with a
// member's address spoofed (root on a lab machine can), from a member's
// machine (a student logged on it uses its IP), recorded frames played back
// after a restart, and TCP connections that stall or just sit there. Each
// runs against the default configuration (a key) and, for the attacks that
// must fail without a key too, against --insecure; each checks that the
// attack is refused, counted in `status --json`, and that the cluster keeps
// its leader or its locks.
//
// The attack harness: what a student on another lab host does to the
// daemons, with frames forged with internal/forge and sent from a host of
// the lab that is not a member, with the source address of the member they
// claim to come from (what passes a source-address check). Each attack is
// made once against a cluster running without a key, where the cores'
// own checks must refuse it, and once against a cluster with a key, where
// the frames (sealed with a key the attacker guessed) must be refused as
// bad MAC. Either way the attack is counted in `status --json`, and the
// cluster keeps its leader, its locks and its clocks.

// InsecureFlags are the flags of a cluster run without a key.
var InsecureFlags = []string{"--insecure"}

// AttackKey is the cluster's key in the keyed runs; guessedKey is the
// attacker's.
var (
	AttackKey  = wire.Key{ID: 1, Secret: []byte(strings.Repeat("\x5a", 32))}
	GuessedKey = wire.Key{ID: 1, Secret: []byte(strings.Repeat("\xa5", 32))}
)

// AttackLab is a namespace LAN of n members running one daemon, and one
// more host, the attacker's.
type AttackLab struct {
	T       *testing.T
	Lab     *labnet.Lab
	Dir     string
	Daemon  string
	Port    int
	N       int
	Keyed   bool
	Extra   func(i int) []string // daemon-specific flags of member i
	Procs   map[int]*labnet.Proc
	nextSeq map[uint32]uint64 // the next sequence number to forge, per impersonated member
	// StateRoot holds the members' state directories (default Dir).
	StateRoot string
}

// ForEachSecurity runs an attack test twice: without a key and with one.
func ForEachSecurity(t *testing.T, f func(t *testing.T, keyed bool)) {
	labnet.Require(t)
	t.Run("no key", func(t *testing.T) { f(t, false) })
	t.Run("key", func(t *testing.T) { f(t, true) })
}

// NewAttackLab builds the lab of n members of daemon (member i at port on
// host i) and the attacker's host n+1; nothing runs yet (Start, StartAll).
func NewAttackLab(t *testing.T, daemon string, port, n int, keyed bool, extra func(i int) []string) *AttackLab {
	a := &AttackLab{T: t, Lab: labnet.New(t, n+1), Dir: ShortDir(t), Daemon: daemon, Port: port, N: n, Keyed: keyed,
		Extra: extra, Procs: map[int]*labnet.Proc{}, nextSeq: map[uint32]uint64{}}
	return a
}

// Member is member i's address.
func (a *AttackLab) Member(i int) netip.AddrPort {
	return netip.AddrPortFrom(a.Lab.Host(i).Addr(), uint16(a.Port))
}

// Control is member i's control socket.
func (a *AttackLab) Control(i int) string { return filepath.Join(a.Dir, fmt.Sprintf("h%d.sock", i)) }

// SecurityFlags are the flags that say how member i's daemon is secured.
func (a *AttackLab) SecurityFlags() []string {
	if !a.Keyed {
		return InsecureFlags
	}
	p := filepath.Join(a.Dir, "cluster.key")
	if _, err := os.Stat(p); err != nil {
		line := fmt.Sprintf("%d %x\n", AttackKey.ID, AttackKey.Secret)
		if err := os.WriteFile(p, []byte(line), 0o600); err != nil {
			a.T.Fatal(err)
		}
	}
	return []string{"--key-file", p}
}

// Start starts (or restarts) member i: every daemon of every attack test
// starts here.
func (a *AttackLab) Start(i int) {
	var members []string
	for j := 1; j <= a.N; j++ {
		members = append(members, fmt.Sprintf("%d=%s", j, a.Member(j)))
	}
	argv := NoSysTime(filepath.Join(binDir, a.Daemon), "run",
		"--id", fmt.Sprint(i), "--members", strings.Join(members, ","),
		"--control", a.Control(i), "--state-dir", filepath.Join(cmp.Or(a.StateRoot, a.Dir), fmt.Sprintf("h%d.state", i)))
	argv = append(argv, a.SecurityFlags()...)
	if a.Extra != nil {
		argv = append(argv, a.Extra(i)...)
	}
	a.Procs[i] = a.Lab.Host(i).Start(a.T, a.Daemon, argv, nil)
}

// StartAll starts every member.
func (a *AttackLab) StartAll() {
	for i := 1; i <= a.N; i++ {
		a.Start(i)
	}
}

// Status reads member i's `status --json`.
func (a *AttackLab) Status(i int) (map[string]any, error) {
	out, err := exec.Command(filepath.Join(binDir, a.Daemon), "status", "--json", "--control", a.Control(i)).Output()
	if err != nil {
		return nil, err
	}
	var st map[string]any
	return st, json.Unmarshal(out, &st)
}

// MustStatus is Status, failing the test on an error.
func (a *AttackLab) MustStatus(i int) map[string]any {
	a.T.Helper()
	st, err := a.Status(i)
	if err != nil {
		a.T.Fatalf("status of member %d: %v (exited: %v)\n%s", i, err, a.Procs[i].Exited(), TailString(a.Procs[i].Output(), 2000))
	}
	return st
}

// seqOf returns the sequence number of the next frame forged in member
// from's name: just above the newest one another member accepted from it,
// with a little room for its real frames in flight. It is read afresh at
// the start of every burst (cached false), as an attacker on the LAN reads
// it off the wire.
func (a *AttackLab) seqOf(from uint32, cached bool) uint64 {
	if s, ok := a.nextSeq[from]; ok && cached {
		a.nextSeq[from] = s + 1
		return s
	}
	witness := 1
	if from == 1 {
		witness = 2
	}
	s := max(PeerSeq(a.T, a.Daemon, a.Control(witness), from)+64, a.nextSeq[from])
	a.nextSeq[from] = s + 1
	return s
}

// Forged is one frame to forge: "from" member from to member to, stamped
// Lamport (0: none).
type Forged struct {
	From, To uint32
	Kind     wire.Kind
	Term     uint64
	Payload  encoding.BinaryAppender
	Lamport  uint64
}

// Forge sends one frame "from" member from to member to, with the given
// kind, term and payload, from the attacker's host with from's source
// address; sealed with the guessed key when the cluster has one.
func (a *AttackLab) Forge(from, to uint32, kind wire.Kind, term uint64, p encoding.BinaryAppender) {
	a.T.Helper()
	a.ForgeBurst(Forged{From: from, To: to, Kind: kind, Term: term, Payload: p})
}

// ForgeBurst sends frames back to back, as a script would.
func (a *AttackLab) ForgeBurst(frames ...Forged) {
	a.T.Helper()
	var key *wire.Key
	if a.Keyed {
		key = &GuessedKey
	}
	bufs := make([][]byte, len(frames))
	fresh := map[uint32]bool{}
	for i, f := range frames {
		seq := a.seqOf(f.From, fresh[f.From])
		fresh[f.From] = true
		b, err := forge.Frame(wire.Header{Kind: f.Kind, Cluster: wire.ServiceClusterID(a.Daemon, "synclab"), Sender: f.From, Receiver: f.To,
			Term: f.Term, Seq: seq, Lamport: f.Lamport}, f.Payload, key)
		if err != nil {
			a.T.Fatal(err)
		}
		bufs[i] = b
	}
	attacker := a.Lab.Host(a.N + 1)
	err := attacker.Do(func() error {
		for i, f := range frames {
			if err := forge.SendSpoofedUDP(a.Member(int(f.From)), a.Member(int(f.To)), bufs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		a.T.Fatalf("forging from %s: %v", attacker.Name(), err)
	}
}

// Refused checks that member i counted the attack: as bad MAC with a key,
// else under the core's reason (path into the status). The counters only
// grow, so it waits for them (up to refuseWithin): a loaded host reads the
// Forged frames late, and a check made a fixed time after sending them
// failed there, while an attack that is never counted still fails.
func (a *AttackLab) Refused(i int, min float64, path ...string) {
	a.T.Helper()
	if a.Keyed {
		path = []string{"node", "dropped", "bad_mac"}
	}
	st := a.MustStatus(i)
	for deadline := time.Now().Add(RefuseWithin); Num(st, path...) < min && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		st = a.MustStatus(i)
	}
	if got := Num(st, path...); got < min {
		b, _ := json.Marshal(st["node"])
		a.T.Errorf("member %d: %s = %v, want at least %v: the attack was not refused and counted\n%s", i, strings.Join(path, "."), got, min, TailString(string(b), 3000))
	}
}

// AttackLeaderTimeout is electd's --leader-timeout in the attack tests that
// check the term never changes. The attacks work at once (a refused
// leader, a panic) or not at all, so the timer's length does not hide
// them; but at the default 400 ms a member stalled that long on a loaded
// host (other tests, other builds) is rightly suspected, and a new term,
// which is no split, failed the tests.
const AttackLeaderTimeout = 1500 * time.Millisecond

// RefuseWithin bounds the wait for a member to count frames already sent
// to it: far above the milliseconds it takes on a quiet host, and short
// enough that a test whose attack is never counted fails promptly.
const RefuseWithin = 10 * time.Second

// WaitHeard waits until every member answers its status and has accepted
// a frame from every other member: the cluster is up, and an attacker
// reading the wire knows every member's sequence numbers (seqOf). The
// tests slept a second here, which a loaded host's slow start outlasted.
func (a *AttackLab) WaitHeard() {
	a.T.Helper()
	a.Eventually("every member hears every other", 30*time.Second, func() bool {
		for i := 1; i <= a.N; i++ {
			a.Alive(i)
			st, err := a.Status(i)
			if err != nil {
				return false
			}
			peers, _ := Field(st, "node", "peers").([]any)
			heard := 0
			for _, p := range peers {
				if p, ok := p.(map[string]any); ok && Num(p, "seq") > 0 {
					heard++
				}
			}
			if heard < a.N-1 {
				return false
			}
		}
		return true
	})
}

// LamportOf is member i's Lamport clock (exact below 2^53).
func (a *AttackLab) LamportOf(i int) uint64 { return uint64(Num(a.MustStatus(i), "node", "lamport")) }

// Alive fails the test if member i's daemon has died.
func (a *AttackLab) Alive(i int) {
	a.T.Helper()
	if a.Procs[i].Exited() {
		a.T.Fatalf("member %d's %s died:\n%s", i, a.Daemon, TailString(a.Procs[i].Output(), 3000))
	}
}

// Eventually polls cond until it holds, failing the test after within.
func (a *AttackLab) Eventually(what string, within time.Duration, cond func() bool) {
	a.T.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			a.T.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// AgreedLeader is the leader and term every member reports, or 0.
func (a *AttackLab) AgreedLeader(path ...string) (uint32, uint64) {
	return a.LeaderAmong(All(a.N), path...)
}

// LeaderAmong is the leader and term every listed member reports, or 0.
func (a *AttackLab) LeaderAmong(ids []int, path ...string) (uint32, uint64) {
	var lead uint32
	var term uint64
	for _, i := range ids {
		st, err := a.Status(i)
		if err != nil {
			return 0, 0
		}
		l, tm := LeaderOf(st, path...)
		if l == 0 || lead != 0 && (l != lead || tm != term) {
			return 0, 0
		}
		lead, term = l, tm
	}
	return lead, term
}

// AwaitLeader waits until every member reports leader want, and returns
// its term.
func (a *AttackLab) AwaitLeader(want uint32, within time.Duration) uint64 {
	a.T.Helper()
	var term uint64
	a.Eventually(fmt.Sprintf("the members agree on leader %d", want), within, func() bool {
		var lead uint32
		lead, term = a.AgreedLeader()
		return lead == want
	})
	return term
}

// Mode is a configuration the attacks run against.
type Mode struct {
	Name  string
	Keyed bool
}

// Modes are the configurations an attack runs against: a key, and none.
var Modes = []Mode{{"key", true}, {"insecure", false}}

// Send sends b from `from` (port 0: any) on host h.
func Send(t *testing.T, h *labnet.Host, from, to netip.AddrPort, b []byte) {
	t.Helper()
	if err := h.Do(func() error { return forge.SendUDP(from, to, b) }); err != nil {
		t.Fatal(err)
	}
}

// Spoof sends b from host h with the source address src.
func Spoof(t *testing.T, h *labnet.Host, src, to netip.AddrPort, b []byte) {
	t.Helper()
	if err := h.Do(func() error { return forge.SendSpoofedUDP(src, to, b) }); err != nil {
		t.Fatal(err)
	}
}

// NoSysTime runs argv without CAP_SYS_TIME: nothing a lab test starts may be
// able to move the real clock, which every namespace shares.
func NoSysTime(argv ...string) []string {
	return append([]string{"setpriv", "--bounding-set", "-sys_time", "--inh-caps", "-sys_time"}, argv...)
}
